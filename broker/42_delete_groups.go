package broker

// DeleteGroups (key 42), v0-v2.
//
// Deletes empty groups and their committed offsets, writing tombstones to
// __consumer_offsets (coordinator/group). GROUP_ID_NOT_FOUND for a group
// that does not exist, NON_EMPTY_GROUP for one with members, as Kafka's
// ClassicGroup.validateDeleteGroup. v2: flexible. (v3, KIP-1043 error
// messages, is not served.)

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, r *request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DeleteGroupsResponse](req)
	ids := req.Groups
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.DeleteGroups(now, id, ids) })
	if err != nil {
		return nil, err
	}
	for _, g := range out.(*group.DeleteGroupsResult).Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g.GroupID, g.ErrorCode
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

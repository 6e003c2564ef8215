package broker

// DeleteGroups (key 42), v0-v2.
//
// Behavior:
//   - deletes empty groups and their committed offsets, with tombstones in
//     __consumer_offsets (coordinator/group);
//   - GROUP_ID_NOT_FOUND for a missing group, NON_EMPTY_GROUP for one with
//     members, as Kafka's ClassicGroup.validateDeleteGroup.
//
// Version notes:
//   - v2 is flexible; v3 (KIP-1043 error messages) is not served.

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

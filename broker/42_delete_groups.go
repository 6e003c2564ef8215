package broker

// DeleteGroups (key 42), v0-v2.
//
// Behavior:
//   - deletes empty groups and their committed offsets, with tombstones in
//     __consumer_offsets (coordinator/group);
//   - GROUP_ID_NOT_FOUND for a missing group, NON_EMPTY_GROUP for one with
//     members, as Kafka's ClassicGroup.validateDeleteGroup;
//   - an empty share group's share-partition state is deleted from
//     __share_group_state first (share_groups.go); if the share
//     coordinator refuses, the group is answered with its error and kept,
//     as Kafka's GroupCoordinatorService.deleteGroups.
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
	failed, err := b.deleteShareGroupsState(r, req.Groups)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(req.Groups))
	for _, id := range req.Groups {
		if _, ok := failed[id]; !ok {
			ids = append(ids, id)
		}
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.DeleteGroups(now, id, ids) })
	if err != nil {
		return nil, err
	}
	deleted := out.(*group.DeleteGroupsResult).Groups
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		if code, ok := failed[id]; ok {
			rg.ErrorCode = code
		} else if len(deleted) > 0 {
			rg.ErrorCode = deleted[0].ErrorCode
			deleted = deleted[1:]
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

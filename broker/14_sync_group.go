package broker

// SyncGroup (key 14), v0-v5.
//
// Behavior:
//   - a follower's request is parked until the leader's arrives with the
//     assignment (coordinator/group), which is stored in __consumer_offsets
//     before anyone is answered.
//
// Version notes:
//   - v3+ carry group.instance.id; v4 is flexible;
//   - v5+ carry the protocol type and name, checked against the group's
//     (INCONSISTENT_GROUP_PROTOCOL) and echoed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(b *Broker, r *request, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.SyncGroupResponse](req)
	if b.groupElsewhere(req.Group) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	sr := group.SyncRequest{
		GroupID:    req.Group,
		Generation: req.Generation,
		MemberID:   req.MemberID,
		InstanceID: req.InstanceID,
	}
	if req.Version >= 5 {
		sr.ProtocolType, sr.Protocol = req.ProtocolType, req.Protocol
	}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.SyncGroup(now, id, sr) })
	if err != nil {
		return nil, err
	}
	res := out.(*group.SyncResult)
	resp.ErrorCode = res.ErrorCode
	resp.MemberAssignment = res.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if req.Version >= 5 {
		resp.ProtocolType, resp.Protocol = res.ProtocolType, res.Protocol
	}
	return resp, nil
}

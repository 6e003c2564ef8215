package broker

// LeaveGroup (key 13), v0-v5.
//
// Behavior:
//   - a leaving member triggers a rebalance of the rest (coordinator/group).
//
// Version notes:
//   - v0-v2 name one member and answer one error code; v3+ (KIP-345) name
//     several, by member id or group.instance.id, and answer each;
//   - v4 is flexible; v5 adds a reason.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(b *Broker, r *request, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.LeaveGroupResponse](req)
	if b.groupElsewhere(req.Group) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	lr := group.LeaveRequest{GroupID: req.Group}
	if req.Version < 3 {
		lr.Members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			lr.Members = append(lr.Members, group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.LeaveGroup(now, id, lr) })
	if err != nil {
		return nil, err
	}
	res := out.(*group.LeaveResult)
	resp.ErrorCode = res.ErrorCode
	if req.Version < 3 {
		if resp.ErrorCode == 0 && len(res.Members) == 1 {
			resp.ErrorCode = res.Members[0].ErrorCode
		}
		return resp, nil
	}
	for _, m := range res.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, m.ErrorCode
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

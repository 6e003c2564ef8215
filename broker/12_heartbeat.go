package broker

// Heartbeat (key 12), v0-v4.
//
// Behavior:
//   - keeps a member's session alive (coordinator/group);
//     REBALANCE_IN_PROGRESS tells it to rejoin; ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID that it was fenced.
//
// Version notes:
//   - v3+ carry group.instance.id (FENCED_INSTANCE_ID); v4 is flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(b *Broker, r *request, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.HeartbeatResponse](req)
	if b.groupElsewhere(req.Group) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	hr := group.HeartbeatRequest{GroupID: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.Heartbeat(now, id, hr) })
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = out.(*group.HeartbeatResult).ErrorCode
	return resp, nil
}

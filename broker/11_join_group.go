package broker

// JoinGroup (key 11), v0-v9.
//
// Behavior:
//   - the classic protocol's join, decided by coordinator/group through
//     groups.go; the request is parked until the rebalance completes, so
//     the connection's later requests wait behind it, as in Kafka.
//
// Version notes:
//   - v0 has no rebalance timeout: the session timeout stands in; v0-v1,
//     removed in Kafka 4.0 and back in 4.0.1, are served;
//   - v4+ (KIP-394): a new dynamic member gets MEMBER_ID_REQUIRED and its
//     id, and joins again with it; v5+ carry group.instance.id (KIP-345);
//     v6 is flexible; v7+ return the protocol type and name; v8 adds a
//     reason;
//   - v9 (KIP-814): a static leader restarting in a Stable group gets the
//     members with SkipAssignment.
//
// docs/apis.md#joingroup has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(b *Broker, r *request, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.JoinGroupResponse](req)
	if b.groupElsewhere(req.Group) {
		resp.ErrorCode, resp.Generation = kerr.NotCoordinator.Code, -1
		return resp, nil
	}
	jr := group.JoinRequest{
		GroupID:                req.Group,
		MemberID:               req.MemberID,
		InstanceID:             req.InstanceID,
		ProtocolType:           req.ProtocolType,
		SessionTimeoutMs:       req.SessionTimeoutMillis,
		RebalanceTimeoutMs:     req.RebalanceTimeoutMillis,
		ClientID:               clientID(r),
		ClientHost:             clientHost(r),
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	if req.Version == 0 {
		jr.RebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.JoinGroup(now, id, jr) })
	if err != nil {
		return nil, err
	}
	res := out.(*group.JoinResult)
	resp.ErrorCode = res.ErrorCode
	resp.Generation = res.Generation
	resp.MemberID = res.MemberID
	resp.LeaderID = res.Leader
	resp.SkipAssignment = res.SkipAssignment
	if res.Protocol != nil {
		resp.Protocol = res.Protocol
		if req.Version >= 7 {
			resp.ProtocolType = res.ProtocolType
		}
	} else if req.Version < 7 {
		// Below v7 the protocol name is not nullable.
		resp.Protocol = kmsg.StringPtr("")
	}
	resp.Members = make([]kmsg.JoinGroupResponseMember, 0, len(res.Members))
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

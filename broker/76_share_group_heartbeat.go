package broker

// ShareGroupHeartbeat (key 76), v1: KIP-932 share group membership, served
// by coordinator/group (coordinator/group/share.go) and only while share
// groups are switched on (share_groups.go).
//
// Behavior:
//   - every call hands the coordinator the current topics, so a topic
//     created, deleted or grown is seen at any member's next heartbeat;
//   - a member subscribing to a topic whose share-partition state is not
//     initialized yet is answered with an empty assignment; the group
//     coordinator then has the share coordinator initialize that state
//     (share_groups.go) and assigns the partitions at a later heartbeat, as
//     Kafka's GroupCoordinatorService does;
//   - a group of another type under the same id is GROUP_ID_NOT_FOUND, as
//     Kafka's getOrMaybeCreateShareGroup; in cluster mode a group this
//     broker does not coordinate is NOT_COORDINATOR.
//
// Version notes:
//   - v0 (Kafka 4.0's early access) was removed in Kafka 4.1 and is not
//     served; v1 is KIP-932's stable version.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { registerScoped(shareGroupKeys, 76, 1, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(b *Broker, r *request, req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ShareGroupHeartbeatResponse](req)
	if b.groupElsewhere(req.GroupID) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	hr := group.ShareHeartbeatRequest{
		GroupID: req.GroupID, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames, ClientID: clientID(r), ClientHost: clientHost(r),
	}
	topics := b.topicImage()
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) {
		c.ShareGroupHeartbeat(now, id, hr, topics)
	})
	if err != nil {
		return nil, err
	}
	res := out.(*group.ShareHeartbeatResult)
	resp.ErrorCode, resp.ErrorMessage = res.ErrorCode, res.ErrorMessage
	resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = res.MemberID, res.MemberEpoch, res.HeartbeatIntervalMs
	if res.Assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, t := range res.Assignment {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t.TopicID, t.Partitions
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

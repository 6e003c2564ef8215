package broker

// ConsumerGroupHeartbeat (key 68), v0-v1: the KIP-848 consumer group
// protocol, served by coordinator/group (coordinator/group/consumer.go).
//
// Behavior:
//   - every call hands the coordinator the current topics (names, ids,
//     partition counts), so a topic created, deleted or grown is seen at
//     any member's next heartbeat and starts a new target assignment.
//
// Version notes:
//   - v0: the coordinator names a member joining without an id; v1
//     (KIP-1082): the client names itself, an empty member id is
//     INVALID_REQUEST;
//   - v1 adds SubscribedTopicRegex, matched with Go's regexp (RE2, as
//     Kafka's RE2/J) against whole names, internal topics excluded,
//     resolved at the group's next heartbeat: as from Kafka, the literal
//     topics come first, the regex's a heartbeat later.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(68, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(b *Broker, r *request, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ConsumerGroupHeartbeatResponse](req)
	if b.groupElsewhere(req.Group) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	hr := group.ConsumerHeartbeatRequest{
		Version: req.Version, GroupID: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		SubscribedTopicNames: req.SubscribedTopicNames, SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: clientID(r), ClientHost: clientHost(r),
	}
	if req.Version < 1 {
		hr.SubscribedTopicRegex = nil
	}
	if req.Topics != nil {
		hr.TopicPartitions = make([]group.OwnedTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			hr.TopicPartitions = append(hr.TopicPartitions, group.OwnedTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	topics := b.topicImage()
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) {
		c.ConsumerGroupHeartbeat(now, id, hr, topics)
	})
	if err != nil {
		return nil, err
	}
	res := out.(*group.ConsumerHeartbeatResult)
	resp.ErrorCode, resp.ErrorMessage = res.ErrorCode, res.ErrorMessage
	resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = res.MemberID, res.MemberEpoch, res.HeartbeatIntervalMs
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, t := range res.Assignment {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t.TopicID, t.Partitions
			a.Topics = append(a.Topics, at)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// topicImage is every topic's name, id and partition count, for the
// consumer group coordinator.
func (b *Broker) topicImage() group.Topics {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make(group.Topics, len(b.catalog.byName))
	for name, t := range b.catalog.byName {
		out[name] = group.TopicInfo{Name: name, ID: t.id, Partitions: int32(len(t.partitions))}
	}
	return out
}

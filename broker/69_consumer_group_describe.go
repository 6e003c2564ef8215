package broker

// ConsumerGroupDescribe (key 69), v0-v1: KIP-848 consumer groups as
// coordinator/group describes them.
//
// Behavior:
//   - state ("Empty", "Assigning", "Reconciling", "Stable"), group and
//     assignment epochs, the assignor in use, and each member's current and
//     target assignment (topic ids resolved to names; a topic deleted since
//     left out);
//   - GROUP_ID_NOT_FOUND for a missing or classic group, as Kafka (its
//     admin client then falls back to DescribeGroups);
//   - authorized operations, when asked for, are all (no authorizer).
//
// Version notes:
//   - v1 adds MemberType, always 1 ("consumer"): classic members never join
//     a consumer group here.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(69, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(b *Broker, r *request, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ConsumerGroupDescribeResponse](req)
	var described []group.ConsumerDescribedGroup
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) { described = c.ConsumerGroupDescribe(req.Groups) }); err != nil {
		return nil, err
	}
	topics := b.topicImage()
	names := make(map[group.TopicID]string, len(topics))
	for n, t := range topics {
		names[t.ID] = n
	}
	assignment := func(ts []group.OwnedTopic) kmsg.Assignment {
		a := kmsg.NewAssignment()
		a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
		for _, t := range ts {
			n, ok := names[t.TopicID]
			if !ok {
				continue
			}
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, n, t.Partitions
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		return a
	}
	for _, d := range described {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.ErrorCode, g.ErrorMessage = d.GroupID, d.ErrorCode, d.ErrorMessage
		g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
		}
		g.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		for _, m := range d.Members {
			gm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.RackID, gm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			gm.ClientID, gm.ClientHost = m.ClientID, m.ClientHost
			gm.SubscribedTopics, gm.SubscribedTopicRegex = m.SubscribedTopicNames, m.SubscribedTopicRegex
			gm.Assignment, gm.TargetAssignment = assignment(m.Assignment), assignment(m.TargetAssign)
			gm.MemberType = 1
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

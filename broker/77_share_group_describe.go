package broker

// ShareGroupDescribe (key 77), v1: KIP-932 share groups as
// coordinator/group describes them (coordinator/group/share_describe.go),
// served only while share groups are switched on (share_groups.go).
//
// Behavior:
//   - state ("Empty" or "Stable"), group and assignment epochs, the
//     assignor ("simple"), and each member's subscription and current
//     assignment, topic ids resolved to names (a topic deleted since is
//     left out);
//   - GROUP_ID_NOT_FOUND for a missing group or one of another type, as
//     Kafka; in cluster mode NOT_COORDINATOR for a group this broker does
//     not coordinate;
//   - authorized operations, when asked for, are all (no authorizer).
//
// Version notes:
//   - v0 (Kafka 4.0's early access) was removed in Kafka 4.1 and is not
//     served; v1 is KIP-932's stable version.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { registerScoped(shareGroupKeys, 77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(b *Broker, r *request, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ShareGroupDescribeResponse](req)
	var here []string
	for _, id := range req.GroupIDs {
		if !b.groupElsewhere(id) {
			here = append(here, id)
		}
	}
	topics := b.topicImage()
	described := map[string]group.ShareDescribedGroup{}
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) {
		for _, d := range c.ShareGroupDescribe(here, topics) {
			described[d.GroupID] = d
		}
	}); err != nil {
		return nil, err
	}
	resp.Groups = []kmsg.ShareGroupDescribeResponseGroup{}
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		d, ok := described[id]
		if !ok {
			g.ErrorCode = kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.ErrorCode, g.ErrorMessage = d.ErrorCode, d.ErrorMessage
		if d.ErrorCode == 0 {
			g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = allGroupOperations
			}
		}
		g.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
		for _, m := range d.Members {
			gm := kmsg.NewShareGroupDescribeResponseGroupMember()
			gm.MemberID, gm.RackID, gm.MemberEpoch = m.MemberID, m.RackID, m.MemberEpoch
			gm.ClientID, gm.ClientHost, gm.SubscribedTopicNames = m.ClientID, m.ClientHost, m.SubscribedTopicNames
			gm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
			for _, t := range m.Assignment {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, t.TopicName, t.Partitions
				gm.Assignment.TopicPartitions = append(gm.Assignment.TopicPartitions, tp)
			}
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

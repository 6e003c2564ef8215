package group

import "github.com/twmb/franz-go/pkg/kerr"

// ShareDescribedTopic is one topic of a share member's assignment, with its
// name as the topic image knows it.
type ShareDescribedTopic struct {
	TopicID    TopicID
	TopicName  string
	Partitions []int32
}

// ShareDescribedMember is one member as ShareGroupDescribe shows it.
type ShareDescribedMember struct {
	MemberID             string
	RackID               *string
	MemberEpoch          int32
	ClientID, ClientHost string
	SubscribedTopicNames []string
	Assignment           []ShareDescribedTopic
}

// ShareDescribedGroup is one group as ShareGroupDescribe shows it. The
// authorized operations are the handler's (every group operation when no
// authorizer is configured, as in Kafka).
type ShareDescribedGroup struct {
	GroupID         string
	ErrorCode       int16
	ErrorMessage    *string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ShareDescribedMember
}

// ShareGroupDescribe describes share groups (Kafka's
// GroupMetadataManager.shareGroupDescribe and ShareGroup.asDescribedGroup):
// a missing group is GROUP_ID_NOT_FOUND "Group %s not found.", a group of
// another type GROUP_ID_NOT_FOUND "Group %s is not a share group.".
// Assigned topics the image no longer holds are left out, as Kafka leaves
// them out. Members are listed by id.
func (c *Coordinator) ShareGroupDescribe(ids []string, topics Topics) []ShareDescribedGroup {
	names := map[TopicID]string{}
	for n, t := range topics {
		names[t.ID] = n
	}
	out := make([]ShareDescribedGroup, 0, len(ids))
	for _, id := range ids {
		g := c.groups[id]
		if g == nil || g.sg == nil {
			msg := "Group " + id + " not found."
			if g != nil {
				msg = "Group " + id + " is not a share group."
			}
			out = append(out, ShareDescribedGroup{GroupID: id, ErrorCode: kerr.GroupIDNotFound.Code, ErrorMessage: &msg})
			continue
		}
		sg := g.sg
		d := ShareDescribedGroup{GroupID: id, State: sg.state(), Epoch: sg.epoch, AssignmentEpoch: sg.assignmentEpoch,
			AssignorName: SimpleAssignorName, Members: []ShareDescribedMember{}}
		for _, mid := range sg.sortedMemberIDs() {
			m := sg.members[mid]
			dm := ShareDescribedMember{MemberID: m.id, RackID: m.rackID, MemberEpoch: m.epoch, ClientID: m.clientID,
				ClientHost: m.clientHost, SubscribedTopicNames: append([]string{}, m.subscribedTopicNames...),
				Assignment: []ShareDescribedTopic{}}
			for _, t := range m.assigned.sortedTopics() {
				if n, ok := names[t]; ok {
					dm.Assignment = append(dm.Assignment, ShareDescribedTopic{TopicID: t, TopicName: n, Partitions: append([]int32(nil), m.assigned[t]...)})
				}
			}
			d.Members = append(d.Members, dm)
		}
		out = append(out, d)
	}
	return out
}

package group

import "github.com/twmb/franz-go/pkg/kerr"

// DescribedMember is one member as DescribeGroups shows it.
type DescribedMember struct {
	MemberID, ClientID, ClientHost string
	InstanceID                     *string
	Metadata, Assignment           []byte
}

// DescribedGroup is one group as DescribeGroups shows it.
type DescribedGroup struct {
	GroupID      string
	ErrorCode    int16
	State        string
	ProtocolType string
	Protocol     string
	Members      []DescribedMember
	// NotClassic is set for a consumer or share group, which
	// DescribeGroups reports as not found.
	NotClassic bool
}

// DescribeGroups describes groups (Kafka's
// GroupMetadataManager.describeGroups): an unknown group is reported Dead
// without an error; the protocol, metadata and assignments only for a
// Stable group.
func (c *Coordinator) DescribeGroups(ids []string) []DescribedGroup {
	out := make([]DescribedGroup, 0, len(ids))
	for _, id := range ids {
		g := c.groups[id]
		if g == nil || g.cg != nil || g.sg != nil {
			// Kafka's describeGroups sees classic groups only: a consumer
			// or share group is "not found" to it (ConsumerGroupDescribe
			// and ShareGroupDescribe describe them).
			out = append(out, DescribedGroup{GroupID: id, State: Dead.String(), Members: []DescribedMember{}, NotClassic: g != nil})
			continue
		}
		d := DescribedGroup{GroupID: id, State: g.state.String(), ProtocolType: g.protocolType, Members: []DescribedMember{}}
		stable := g.state == Stable
		if stable {
			d.Protocol = g.protocol
		}
		for _, mid := range g.order {
			m := g.members[mid]
			dm := DescribedMember{MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, InstanceID: m.instanceID,
				Metadata: []byte{}, Assignment: []byte{}}
			if stable {
				dm.Metadata = m.metadata(g.protocol)
				if m.assignment != nil {
					dm.Assignment = m.assignment
				}
			}
			d.Members = append(d.Members, dm)
		}
		out = append(out, d)
	}
	return out
}

// ListedGroup is one group as ListGroups shows it. Type is "classic",
// "consumer" or "share".
type ListedGroup struct {
	GroupID, ProtocolType, State, Type string
}

// ListGroups lists the groups, sorted by id, whose state is in states and
// whose type is in types (both case-insensitive; empty means any), as
// Kafka's GroupMetadataManager.listGroups.
func (c *Coordinator) ListGroups(states, types []string) []ListedGroup {
	var out []ListedGroup
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		l := ListedGroup{GroupID: id, ProtocolType: g.protocolType, State: g.state.String(), Type: "classic"}
		switch {
		case g.cg != nil:
			l.State, l.Type = g.cg.state(), ConsumerProtocolType
		case g.sg != nil:
			l.State, l.Type = g.sg.state(), ShareProtocolType
		}
		if len(states) > 0 && !containsFold(states, l.State) {
			continue
		}
		if len(types) > 0 && !containsFold(types, l.Type) {
			continue
		}
		out = append(out, l)
	}
	return out
}

func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if equalFold(x, s) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// DeleteGroupResult is one group's outcome.
type DeleteGroupResult struct {
	GroupID   string
	ErrorCode int16
}

// DeleteGroupsResult is the answer to a DeleteGroups.
type DeleteGroupsResult struct{ Groups []DeleteGroupResult }

// DeleteGroups deletes empty groups and their offsets with tombstones
// (Kafka's ClassicGroup.validateDeleteGroup): an unknown group is
// GROUP_ID_NOT_FOUND, a group with members NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(now int64, id ReplyID, ids []string) {
	res := &DeleteGroupsResult{}
	for _, gid := range ids {
		c.fireDueTimers(gid, now, nil)
		r := DeleteGroupResult{GroupID: gid}
		g := c.groups[gid]
		switch {
		case gid == "":
			r.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil || g.state == Dead:
			r.ErrorCode = kerr.GroupIDNotFound.Code
		case g.cg != nil && len(g.cg.members) > 0:
			r.ErrorCode = kerr.NonEmptyGroup.Code
		case g.sg != nil && len(g.sg.members) > 0:
			r.ErrorCode = kerr.NonEmptyGroup.Code
		case g.cg == nil && g.sg == nil && g.state != Empty:
			r.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			c.deleteGroup(g)
		}
		res.Groups = append(res.Groups, r)
	}
	c.reply(id, res)
}

// ConsumerDescribedMember is one member as ConsumerGroupDescribe shows it.
type ConsumerDescribedMember struct {
	MemberID                 string
	InstanceID, RackID       *string
	MemberEpoch              int32
	ClientID, ClientHost     string
	SubscribedTopicNames     []string
	SubscribedTopicRegex     *string
	Assignment, TargetAssign []OwnedTopic
}

// ConsumerDescribedGroup is one group as ConsumerGroupDescribe shows it.
type ConsumerDescribedGroup struct {
	GroupID         string
	ErrorCode       int16
	ErrorMessage    *string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerDescribedMember
}

// ConsumerGroupDescribe describes consumer groups (Kafka's
// ConsumerGroup.asDescribedGroup): a group that does not exist, or is a
// classic group, is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerGroupDescribe(ids []string) []ConsumerDescribedGroup {
	out := make([]ConsumerDescribedGroup, 0, len(ids))
	for _, id := range ids {
		g := c.groups[id]
		if g == nil || g.cg == nil || g.state == Dead {
			msg := "Group " + id + " not found."
			if g != nil && g.cg == nil { // classic or share
				msg = "Group " + id + " is not a consumer group."
			}
			out = append(out, ConsumerDescribedGroup{GroupID: id, ErrorCode: kerr.GroupIDNotFound.Code, ErrorMessage: &msg})
			continue
		}
		cg := g.cg
		d := ConsumerDescribedGroup{GroupID: id, State: cg.state(), Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch,
			AssignorName: c.preferredAssignor(cg), Members: []ConsumerDescribedMember{}}
		for _, mid := range cg.sortedMemberIDs() {
			m := cg.members[mid]
			dm := ConsumerDescribedMember{MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
				ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: append([]string{}, m.subscribedTopicNames...),
				Assignment: toOwned(m.assigned), TargetAssign: toOwned(cg.target[m.id])}
			// Kafka reports "" for a member without a regex, not null.
			dm.SubscribedTopicRegex = strp(m.subscribedTopicRegex)
			d.Members = append(d.Members, dm)
		}
		out = append(out, d)
	}
	return out
}

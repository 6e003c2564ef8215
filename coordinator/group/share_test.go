package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShareHeartbeatValidation checks each refusal of
// throwIfShareGroupHeartbeatRequestIsInvalid (Kafka 4.4's
// GroupCoordinatorService), in Kafka's order, and that a refused request
// leaves no group behind.
func TestShareHeartbeatValidation(t *testing.T) {
	names := []string{"foo"}
	for _, tc := range []struct {
		name string
		req  ShareHeartbeatRequest
		code int16
		msg  string
	}{
		{"no member id", ShareHeartbeatRequest{GroupID: "g", SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"blank member id", ShareHeartbeatRequest{GroupID: "g", MemberID: " \t", SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"member id checked before group id", ShareHeartbeatRequest{SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"no group id", ShareHeartbeatRequest{MemberID: "m", SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"blank group id", ShareHeartbeatRequest{GroupID: "  ", MemberID: "m", SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"empty rack", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", RackID: sp(""), SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "RackId can't be empty."},
		{"blank rack", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", RackID: sp(" "), SubscribedTopicNames: names}, kerr.InvalidRequest.Code, "RackId can't be empty."},
		{"join without names", ShareHeartbeatRequest{GroupID: "g", MemberID: "m"}, kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."},
		{"join with no names", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", SubscribedTopicNames: []string{}}, kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."},
		{"epoch -2", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", MemberEpoch: -2}, kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"epoch below -2", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", MemberEpoch: -100}, kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"leave needs no names", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", MemberEpoch: -1}, kerr.GroupIDNotFound.Code, "Group g not found."},
		{"heartbeat of an unknown group", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", MemberEpoch: 4}, kerr.GroupIDNotFound.Code, "Share group g not found."},
		{"valid join", ShareHeartbeatRequest{GroupID: "g", MemberID: "m", RackID: sp("r"), SubscribedTopicNames: names}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			c.ShareGroupHeartbeat(1, 1, tc.req, Topics{"foo": {Name: "foo", ID: TopicID{1}, Partitions: 1}})
			e := c.Ready()
			res := e.Replies[0].Result.(*ShareHeartbeatResult)
			if res.ErrorCode != tc.code {
				t.Fatalf("code %s, want %s", errName(res.ErrorCode), errName(tc.code))
			}
			if tc.code == 0 {
				if res.ErrorMessage != nil || res.MemberID == nil || *res.MemberID != "m" || res.MemberEpoch != 2 || res.HeartbeatIntervalMs != DefaultShareHeartbeatIntervalMs {
					t.Fatalf("answer %+v", res)
				}
				return
			}
			if res.ErrorMessage == nil || *res.ErrorMessage != tc.msg {
				t.Fatalf("message %v, want %q", res.ErrorMessage, tc.msg)
			}
			if len(e.Records) != 0 || len(c.groups) != 0 {
				t.Fatalf("a refused heartbeat left %d records and %d groups", len(e.Records), len(c.groups))
			}
		})
	}
}

// TestShareGroupInSnapshotAndLists checks that a share group shows in
// Snapshot and ListGroups with Kafka's type and state names, and that
// ConsumerGroupDescribe and DescribeGroups refuse it as Kafka does.
func TestShareGroupInSnapshotAndLists(t *testing.T) {
	c := New(Config{})
	topics := Topics{"foo": {Name: "foo", ID: TopicID{1}, Partitions: 2}}
	c.ShareGroupHeartbeat(1, 1, ShareHeartbeatRequest{GroupID: "s", MemberID: "m", SubscribedTopicNames: []string{"foo"}}, topics)
	c.Ready()
	snap := c.Snapshot()
	if len(snap) != 1 || snap[0].State != "Stable" || snap[0].Members != 1 || snap[0].Offsets != nil {
		t.Fatalf("snapshot %+v", snap)
	}
	ls := c.ListGroups(nil, []string{"SHARE"})
	if len(ls) != 1 || ls[0].Type != "share" || ls[0].ProtocolType != "share" || ls[0].State != "Stable" {
		t.Fatalf("list %+v", ls)
	}
	if ls := c.ListGroups(nil, []string{"consumer"}); len(ls) != 0 {
		t.Fatalf("a share group listed as consumer: %+v", ls)
	}
	if d := c.ConsumerGroupDescribe([]string{"s"}); d[0].ErrorCode != kerr.GroupIDNotFound.Code || *d[0].ErrorMessage != "Group s is not a consumer group." {
		t.Fatalf("consumer describe %+v", d[0])
	}
	if d := c.DescribeGroups([]string{"s"}); !d[0].NotClassic {
		t.Fatalf("describe %+v", d[0])
	}
	d := c.ShareGroupDescribe([]string{"s"}, topics)
	if d[0].ErrorCode != 0 || d[0].AssignorName != "simple" || d[0].Epoch != 2 || d[0].AssignmentEpoch != 2 || len(d[0].Members) != 1 {
		t.Fatalf("share describe %+v", d[0])
	}
	m := d[0].Members[0]
	if m.MemberID != "m" || m.MemberEpoch != 2 || len(m.Assignment) != 0 || len(m.SubscribedTopicNames) != 1 {
		t.Fatalf("member %+v", m)
	}
	c.DeleteGroups(1, 2, []string{"s"})
	if r := c.Ready().Replies[0].Result.(*DeleteGroupsResult); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete %+v", r)
	}
}

// TestShareDescribeNamesAssignedTopics checks that ShareGroupDescribe
// names each assigned topic and leaves out topics the image no longer
// holds.
func TestShareDescribeNamesAssignedTopics(t *testing.T) {
	c := New(Config{})
	topics := Topics{"foo": {Name: "foo", ID: TopicID{1}, Partitions: 2}}
	c.ShareGroupHeartbeat(1, 1, ShareHeartbeatRequest{GroupID: "s", MemberID: "m", SubscribedTopicNames: []string{"foo"}}, topics)
	inits := c.Ready().ShareStateInits
	if len(inits) != 1 || inits[0].StateEpoch != 2 || len(inits[0].Topics) != 1 || len(inits[0].Topics[0].Partitions) != 2 {
		t.Fatalf("inits %+v", inits)
	}
	c.InitializeShareGroupState(2, "s", inits[0].Topics)
	c.ShareGroupHeartbeat(3, 2, ShareHeartbeatRequest{GroupID: "s", MemberID: "m", MemberEpoch: 2}, topics)
	res := c.Ready().Replies[0].Result.(*ShareHeartbeatResult)
	if res.MemberEpoch != 3 || len(res.Assignment) != 1 {
		t.Fatalf("answer %+v", res)
	}
	d := c.ShareGroupDescribe([]string{"s"}, topics)[0]
	if a := d.Members[0].Assignment; len(a) != 1 || a[0].TopicName != "foo" || len(a[0].Partitions) != 2 {
		t.Fatalf("assignment %+v", a)
	}
	if a := c.ShareGroupDescribe([]string{"s"}, Topics{})[0].Members[0].Assignment; len(a) != 0 {
		t.Fatalf("a deleted topic is described: %+v", a)
	}
}

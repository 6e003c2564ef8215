package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAbortParkedAnswersEveryParkedRequest(t *testing.T) {
	c := New(Config{InitialRebalanceDelayMs: 1000})
	c.JoinGroup(0, 1, JoinRequest{GroupID: "g", ClientID: "c", ProtocolType: "consumer", SessionTimeoutMs: 10000,
		RebalanceTimeoutMs: 10000, Protocols: []Protocol{{Name: "range"}}})
	if e := c.Ready(); len(e.Replies) != 0 {
		t.Fatalf("the join was not parked: %+v", e.Replies)
	}
	c.AbortParked(kerr.NotCoordinator.Code)
	e := c.Ready()
	if len(e.Replies) != 1 || e.Replies[0].ID != 1 || e.Replies[0].Result.(*JoinResult).ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("replies: %+v", e.Replies)
	}
}

func TestFailWithdrawsWhatAnAnswerGranted(t *testing.T) {
	code := kerr.NotCoordinator.Code
	for _, tc := range []struct {
		in    any
		check func(any) bool
	}{
		{&JoinResult{Generation: 3, MemberID: "m", Leader: "m"}, func(r any) bool {
			j := r.(*JoinResult)
			return j.ErrorCode == code && j.Generation == -1 && j.Leader == "" && j.MemberID == "m"
		}},
		{&SyncResult{Assignment: []byte{1}}, func(r any) bool { s := r.(*SyncResult); return s.ErrorCode == code && s.Assignment == nil }},
		{&CommitResult{Topics: []TopicResult{{Topic: "t", Partitions: []PartitionResult{{Partition: 2}}}}}, func(r any) bool {
			p := r.(*CommitResult).Topics[0].Partitions[0]
			return p.Partition == 2 && p.ErrorCode == code
		}},
		{&ConsumerHeartbeatResult{MemberEpoch: 4, Assignment: []OwnedTopic{}}, func(r any) bool {
			h := r.(*ConsumerHeartbeatResult)
			return h.ErrorCode == code && h.Assignment == nil && h.MemberEpoch == 0 && h.ErrorMessage != nil
		}},
		{&DeleteGroupsResult{Groups: []DeleteGroupResult{{GroupID: "g"}}}, func(r any) bool {
			return r.(*DeleteGroupsResult).Groups[0].ErrorCode == code
		}},
		{&LeaveResult{}, func(r any) bool { return r.(*LeaveResult).ErrorCode == code }},
		{&HeartbeatResult{}, func(r any) bool { return r.(*HeartbeatResult).ErrorCode == code }},
		{&OffsetDeleteResult{}, func(r any) bool { return r.(*OffsetDeleteResult).ErrorCode == code }},
	} {
		if out := Fail(tc.in, code); !tc.check(out) {
			t.Errorf("Fail(%T) = %+v", tc.in, out)
		}
	}
}

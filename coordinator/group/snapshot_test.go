package group

import (
	"reflect"
	"testing"
)

func TestSnapshotReportsStatesMembersAndOffsetsWithoutEffects(t *testing.T) {
	h := newHarness(t, Config{})
	if got := h.c.Snapshot(); len(got) != 0 {
		t.Fatalf("empty coordinator: %+v", got)
	}
	h.wantCode(h.commit(commitOne("simple", -1, "", "t", 1, 7)), nil)
	h.wantCode(h.commit(commitOne("simple", -1, "", "t", 0, 42)), nil)
	h.wantCode(h.commit(commitOne("simple", -1, "", "a", 3, 1)), nil)
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a"})).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})

	got := h.c.Snapshot()
	want := []GroupSnapshot{
		{GroupID: "g", State: "Stable", Members: 1},
		{GroupID: "simple", State: "Empty", Members: 0, Offsets: []OffsetSnapshot{
			{Topic: "a", Partition: 3, Offset: 1}, {Topic: "t", Partition: 0, Offset: 42}, {Topic: "t", Partition: 1, Offset: 7},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot() = %+v\nwant %+v", got, want)
	}
	if eff := h.c.Ready(); len(eff.Records) != 0 || len(eff.Replies) != 0 {
		t.Fatalf("Snapshot produced effects: %+v", eff)
	}
	// The snapshot is a copy: later commits do not show through it.
	h.wantCode(h.commit(commitOne("simple", -1, "", "t", 0, 50)), nil)
	if got[1].Offsets[1].Offset != 42 {
		t.Fatal("snapshot changed after a commit")
	}
}

func TestSnapshotReportsConsumerGroupsByTheirOwnMembers(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("t", 4)
	h.join("m1", "t")
	h.join("m2", "t")
	got := h.c.Snapshot()
	if len(got) != 1 || got[0].GroupID != "g" || got[0].Members != 2 {
		t.Fatalf("Snapshot() = %+v, want group g with 2 members", got)
	}
	if got[0].State == "Empty" {
		t.Fatalf("a consumer group with members reported as %q", got[0].State)
	}
	h.hb(ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: -1})
	h.hb(ConsumerHeartbeatRequest{MemberID: "m2", MemberEpoch: -1})
	if got := h.c.Snapshot(); len(got) != 1 || got[0].State != "Empty" || got[0].Members != 0 {
		t.Fatalf("after both left: %+v, want Empty with 0 members", got)
	}
}

package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func sp(s string) *string { return &s }

// TestJoinV0NeedsNoMemberID: below v4 a new member is admitted at once.
func TestJoinV0NeedsNoMemberID(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.join(JoinRequest{GroupID: "g", ClientID: "old"})
	r := h.joinResult(j)
	if r.ErrorCode != 0 || r.MemberID == "" || r.Generation != 1 || r.Leader != r.MemberID {
		t.Fatalf("v0 join: %+v", r)
	}
}

// TestProtocolSelectionByVotes: the protocol every member supports that
// most members prefer wins; a member with no common protocol is refused.
func TestProtocolSelectionByVotes(t *testing.T) {
	h := newHarness(t, Config{})
	ps := func(names ...string) []Protocol {
		var out []Protocol
		for _, n := range names {
			out = append(out, Protocol{Name: n, Metadata: []byte(n)})
		}
		return out
	}
	j1 := h.join(JoinRequest{GroupID: "g", ClientID: "a", Protocols: ps("range", "roundrobin")})
	a := h.joinResult(j1).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})
	j2 := h.join(JoinRequest{GroupID: "g", ClientID: "b", Protocols: ps("roundrobin", "range", "sticky")})
	j3 := h.join(JoinRequest{GroupID: "g", ClientID: "c", Protocols: ps("roundrobin", "sticky", "range")})
	bad := h.join(JoinRequest{GroupID: "g", ClientID: "d", Protocols: ps("sticky")})
	h.wantCode(bad, kerr.InconsistentGroupProtocol)
	wrongType := h.join(JoinRequest{GroupID: "g", ClientID: "e", ProtocolType: "connect", Protocols: ps("range")})
	h.wantCode(wrongType, kerr.InconsistentGroupProtocol)
	ja := h.join(JoinRequest{GroupID: "g", MemberID: a, ClientID: "a", Protocols: ps("range", "roundrobin")})
	for _, id := range []ReplyID{j2, j3, ja} {
		if r := h.joinResult(id); r.ErrorCode != 0 || *r.Protocol != "roundrobin" {
			t.Fatalf("#%d: %+v, want roundrobin chosen 2 votes to 1", id, r)
		}
	}
	if ms := h.joinResult(ja).Members; len(ms) != 3 || string(ms[1].Metadata) != "roundrobin" {
		t.Fatalf("leader's members %+v", ms)
	}
	// An empty group needs a protocol type and at least one protocol.
	h.wantCode(h.join(JoinRequest{GroupID: "fresh", ClientID: "x", Protocols: []Protocol{}}), kerr.InconsistentGroupProtocol)
}

func TestJoinGroupErrors(t *testing.T) {
	h := newHarness(t, Config{MaxSize: 2})
	h.wantCode(h.join(JoinRequest{GroupID: "", ClientID: "x"}), kerr.InvalidGroupID)
	h.wantCode(h.join(JoinRequest{GroupID: "g", ClientID: "x", SessionTimeoutMs: 5999}), kerr.InvalidSessionTimeout)
	h.wantCode(h.join(JoinRequest{GroupID: "g", ClientID: "x", SessionTimeoutMs: 1800001}), kerr.InvalidSessionTimeout)
	h.wantCode(h.join(JoinRequest{GroupID: "nope", MemberID: "bogus", ClientID: "x"}), kerr.UnknownMemberID)
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a"})).MemberID
	h.wantCode(h.join(JoinRequest{GroupID: "g", MemberID: "bogus", ClientID: "x"}), kerr.UnknownMemberID)
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})
	jb := h.join(JoinRequest{GroupID: "g", ClientID: "b"})
	h.join(JoinRequest{GroupID: "g", MemberID: a, ClientID: "a"})
	if h.joinResult(jb).ErrorCode != 0 {
		t.Fatalf("b: %+v", h.joinResult(jb))
	}
	// group.max.size 2: a third member is refused (Kafka's
	// acceptJoiningMember).
	h.wantCode(h.join(JoinRequest{GroupID: "g", ClientID: "c"}), kerr.GroupMaxSizeReached)
}

func TestSyncAndHeartbeatFencing(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.sync(SyncRequest{GroupID: "nope", MemberID: "m"}), kerr.UnknownMemberID)
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "nope", MemberID: "m"}), kerr.UnknownMemberID)
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a", InstanceID: sp("i-a")})).MemberID
	h.wantCode(h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: "bogus"}), kerr.UnknownMemberID)
	h.wantCode(h.sync(SyncRequest{GroupID: "g", Generation: 7, MemberID: a}), kerr.IllegalGeneration)
	h.wantCode(h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a, InstanceID: sp("i-a"), Protocol: sp("roundrobin")}), kerr.InconsistentGroupProtocol)
	h.wantCode(h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: "other", InstanceID: sp("i-a")}), kerr.FencedInstanceID)
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: a}), nil) // CompletingRebalance
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a, InstanceID: sp("i-a")})
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 0, MemberID: a}), kerr.IllegalGeneration)
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: "bogus"}), kerr.UnknownMemberID)
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: "bogus", InstanceID: sp("i-a")}), kerr.FencedInstanceID)
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: a, InstanceID: sp("i-a")}), nil)
	// LeaveGroup: unknown group, unknown member, fenced instance.
	h.wantCode(h.leave(LeaveRequest{GroupID: "nope", Members: []LeaveMember{{MemberID: a}}}), kerr.UnknownMemberID)
	l := h.leave(LeaveRequest{GroupID: "g", Members: []LeaveMember{{MemberID: "bogus"}, {MemberID: "x", InstanceID: sp("i-a")}, {InstanceID: sp("nobody")}}})
	res := h.results[l].(*LeaveResult)
	if res.Members[0].ErrorCode != kerr.UnknownMemberID.Code || res.Members[1].ErrorCode != kerr.FencedInstanceID.Code ||
		res.Members[2].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %s", describeResult(res))
	}
}

// TestInitialRebalanceDelay: group.initial.rebalance.delay.ms holds the
// first join of an empty group, extended while members keep arriving, up
// to the rebalance timeout.
func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelayMs: 3000})
	j1 := h.join(JoinRequest{GroupID: "g", ClientID: "a", RebalanceTimeoutMs: 10000})
	h.advance(2000)
	j2 := h.join(JoinRequest{GroupID: "g", ClientID: "b", RebalanceTimeoutMs: 10000})
	h.advance(1000) // first delay over, a member arrived: wait another 3000
	if !h.parked(j1) || !h.parked(j2) {
		t.Fatal("join completed before the extended delay")
	}
	h.advance(2999)
	if !h.parked(j1) {
		t.Fatal("join completed early")
	}
	h.advance(1)
	if h.joinResult(j1).Generation != 1 || h.joinResult(j2).Generation != 1 {
		t.Fatalf("after the delay: %+v %+v", h.joinResult(j1), h.joinResult(j2))
	}
}

// TestRebalanceTimeoutRemovesStragglers: members that do not rejoin within
// the rebalance timeout are dropped; a member id handed out with
// MEMBER_ID_REQUIRED that never comes back expires after its session
// timeout.
func TestRebalanceTimeoutRemovesStragglers(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a", RebalanceTimeoutMs: 20000, SessionTimeoutMs: 30000})).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})
	// A pending member that never rejoins holds the join until its session
	// timeout.
	h.join(JoinRequest{GroupID: "g", ClientID: "p", RequireKnownMemberID: true, SessionTimeoutMs: 6000})
	jb := h.join(JoinRequest{GroupID: "g", ClientID: "b", RebalanceTimeoutMs: 20000})
	h.advance(19999)
	if !h.parked(jb) {
		t.Fatal("b's join completed while a has time to rejoin")
	}
	h.advance(1)
	r := h.joinResult(jb)
	if r.Generation != 2 || r.Leader != r.MemberID || len(r.Members) != 1 {
		t.Fatalf("after the rebalance timeout: %+v", r)
	}
	h.wantCode(h.heartbeat(HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: a}), kerr.UnknownMemberID)
}

// TestPendingSyncExpiry: a member that never sends SyncGroup after the join
// is removed after the rebalance timeout.
func TestPendingSyncExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	ja := h.join(JoinRequest{GroupID: "g", ClientID: "a", RebalanceTimeoutMs: 8000})
	a := h.joinResult(ja).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})
	jb := h.join(JoinRequest{GroupID: "g", ClientID: "b", RebalanceTimeoutMs: 8000})
	h.join(JoinRequest{GroupID: "g", MemberID: a, ClientID: "a", RebalanceTimeoutMs: 8000})
	b := h.joinResult(jb).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 2, MemberID: a, Assignments: map[string][]byte{a: []byte("A"), b: []byte("B")}})
	h.advance(8000) // b never synced
	if d := h.describe("g"); d[0].State != "PreparingRebalance" || len(d[0].Members) != 1 {
		t.Fatalf("after pending-sync expiry: %+v", d[0])
	}
}

// TestThousandMembers: 1000 v0 members join one group; the join completes
// when the last one is in, and the leader sees them all.
func TestThousandMembers(t *testing.T) {
	h := newHarness(t, Config{})
	first := h.join(JoinRequest{GroupID: "g", ClientID: "m0"})
	leader := h.joinResult(first).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: leader})
	var ids []ReplyID
	for i := 1; i < 1000; i++ {
		ids = append(ids, h.join(JoinRequest{GroupID: "g", ClientID: fmt.Sprintf("m%d", i)}))
	}
	lj := h.join(JoinRequest{GroupID: "g", MemberID: leader, ClientID: "m0"})
	if r := h.joinResult(lj); len(r.Members) != 1000 || r.Generation != 2 {
		t.Fatalf("leader got %d members, gen %d", len(r.Members), r.Generation)
	}
	for _, id := range ids {
		if r := h.joinResult(id); r.ErrorCode != 0 || r.Generation != 2 {
			t.Fatalf("#%d: %+v", id, r)
		}
	}
}

// TestLeaderLeavesNewLeaderChosen: when the leader leaves, the next member
// in join order leads.
func TestLeaderLeavesNewLeaderChosen(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a"})).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a})
	jb := h.join(JoinRequest{GroupID: "g", ClientID: "b"})
	h.join(JoinRequest{GroupID: "g", MemberID: a, ClientID: "a"})
	b := h.joinResult(jb).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 2, MemberID: a})
	h.leave(LeaveRequest{GroupID: "g", Members: []LeaveMember{{MemberID: a}}})
	r := h.joinResult(h.join(JoinRequest{GroupID: "g", MemberID: b, ClientID: "b"}))
	if r.Leader != b || r.Generation != 3 {
		t.Fatalf("after leader left: %+v", r)
	}
}

// TestConsumerGroupDeleteTheMomentSessionsExpire: the same for a KIP-848
// group whose only member stopped heartbeating.
func TestConsumerGroupDeleteTheMomentSessionsExpire(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerSessionTimeoutMs: 6000})
	h.addTopic("t", 2)
	ok(t, h.join("m", "t"))
	deleteGroup := func(now int64) int16 {
		h.now = now
		h.id++
		h.c.DeleteGroups(now, h.id, []string{"g"})
		return h.c.Ready().Replies[0].Result.(*DeleteGroupsResult).Groups[0].ErrorCode
	}
	start := h.now
	if code := deleteGroup(start + 5999); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("before the session ends: %s", errName(code))
	}
	if code := deleteGroup(start + 6000); code != 0 {
		t.Fatalf("when the session ends: %s", errName(code))
	}
}

package raftnode

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

// startLearner starts node id as a learner on a new listener (and, the
// first time, a new directory) and returns its raft address.
func (c *testCluster) startLearner(id int32, addr string) string {
	c.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln := c.listen(addr)
	if c.dirs[id] == "" {
		c.dirs[id] = filepath.Join(c.t.TempDir(), "__cluster_metadata")
	}
	c.startNode(id, ln, true)
	return ln.Addr().String()
}

// addLearner asks the leader to add id at addr until it has applied it.
func (c *testCluster) addLearner(id int32, addr string) {
	c.t.Helper()
	waitFor(c.t, "the leader adds the learner", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.nodes[c.votingLeader()].AddLearner(ctx, id, addr)
		if err != nil && !errors.Is(err, raft.ErrProposalDropped) && ctx.Err() == nil {
			c.t.Fatalf("AddLearner: %v", err)
		}
		return err == nil
	})
}

// votingLeader is leader() over the voters only (a learner that has not
// joined yet knows no leader).
func (c *testCluster) votingLeader() int32 {
	c.t.Helper()
	var lead int32 = -1
	waitFor(c.t, "a leader the voters agree on", func() bool {
		lead = -1
		for id, nd := range c.nodes {
			if _, voter := c.voters[id]; !voter {
				continue
			}
			l := nd.Status().Leader
			if l < 0 || (lead >= 0 && l != lead) {
				return false
			}
			lead = l
		}
		return lead >= 0 && c.nodes[lead] != nil
	})
	return lead
}

// TestLearnerJoinsCatchesUpFromASnapshotAndIsFollowedByRestartedVoters
// adds a learner to a quorum whose log is compacted, so the learner must
// install a snapshot; every voter then knows its address; the voters are
// restarted one at a time after their logs no longer hold the conf change
// (so the learner's address comes back from the snapshot), and the
// learner still receives what each new leader commits.
func TestLearnerJoinsCatchesUpFromASnapshotAndIsFollowedByRestartedVoters(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 8; cfg.CatchUpEntries = 2 })
	want := items("a", 30)
	for _, it := range want {
		c.propose(it)
	}
	const learner = 10
	addr := c.startLearner(learner, "")
	if st := c.nodes[learner].Status(); st.Leader != -1 {
		t.Fatalf("a learner nobody added knows leader %d", st.Leader)
	}
	c.addLearner(learner, addr)
	c.sameOnAll(want)
	if len(c.sms[learner].restored()) == 0 {
		t.Fatal("the learner caught up without installing a snapshot, though the log was compacted")
	}
	for id := range c.voters {
		waitFor(t, "every voter applies the learner's conf change", func() bool {
			m := c.nodes[id].Membership()
			return m.Learners[learner] == addr && len(m.Voters) == 3
		})
	}
	lead := c.votingLeader()
	q := c.nodes[lead].Quorum()
	if len(q.Voters) != 3 || len(q.Observers) != 1 || q.Observers[0].NodeID != learner {
		t.Fatalf("quorum on the leader: voters %v observers %v, want 3 voters and observer %d", q.Voters, q.Observers, learner)
	}
	if got := c.nodes[learner].Status().Leader; got != lead {
		t.Fatalf("the learner knows leader %d, want %d", got, lead)
	}

	// Enough entries that every voter snapshots past the conf change, then
	// each voter restarts and leads in turn.
	more := items("b", 20)
	for _, it := range more {
		c.propose(it)
	}
	want = append(want, more...)
	c.sameOnAll(want)
	for round, id := range slices.Sorted(maps.Keys(c.voters)) {
		c.stop(id)
		c.start(id, nil)
		if got := c.nodes[id].Membership().Learners[learner]; got != addr {
			t.Fatalf("restarted voter %d knows the learner at %q, want %q", id, got, addr)
		}
		// Make the restarted voter the leader, so it is the one sending.
		waitFor(t, "the restarted voter leads", func() bool {
			lead := c.votingLeader()
			if lead == id {
				return true
			}
			c.nodes[lead].raft.TransferLeadership(context.Background(), raftID(lead), raftID(id))
			time.Sleep(50 * time.Millisecond)
			return false
		})
		it := "c" + string(rune('0'+round))
		c.propose(it)
		want = append(want, it)
		c.sameOnAll(want)
	}
}

// TestLearnerIsNeverElected stops every voter: the learner alone, however
// long it waits, never campaigns (it stays a follower at its term), and
// a quorum of one voter and the learner cannot elect either.
func TestLearnerIsNeverElected(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose("x")
	const learner = 7
	addr := c.startLearner(learner, "")
	c.addLearner(learner, addr)
	c.sameOnAll([]string{"x"})
	term := c.nodes[learner].raft.Status().HardState.GetTerm()
	lead := c.votingLeader()
	for id := range c.voters {
		if id != lead {
			c.stop(id)
		}
	}
	// 20 election timeouts: a voter would have campaigned many times.
	deadline := time.Now().Add(20 * 10 * 20 * time.Millisecond)
	for time.Now().Before(deadline) {
		st := c.nodes[learner].raft.Status()
		if st.RaftState != raft.StateFollower || st.HardState.GetTerm() != term {
			t.Fatalf("the learner is %v at term %d (joined at %d)", st.RaftState, st.HardState.GetTerm(), term)
		}
		if l := c.nodes[learner].Status().Leader; l == learner {
			t.Fatal("the learner leads")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The one voter left stepped down (check quorum): the learner's vote
	// does not count, so no one leads.
	waitFor(t, "the lone voter steps down", func() bool { return c.nodes[lead].Status().Leader == -1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.nodes[learner].Propose(ctx, []byte("y")); err == nil {
		t.Fatal("a learner without a leader took a proposal")
	}
}

// TestLearnerRestartsFromItsWAL restarts a learner: it recovers what it
// had applied from its own WAL and snapshot, and goes on receiving.
func TestLearnerRestartsFromItsWAL(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 8; cfg.CatchUpEntries = 2 })
	const learner = 4
	addr := c.startLearner(learner, "")
	c.addLearner(learner, addr)
	want := items("w", 20)
	for _, it := range want {
		c.propose(it)
	}
	c.sameOnAll(want)
	c.stop(learner)
	c.startLearner(learner, addr)
	waitFor(t, "the restarted learner recovers what it had applied", func() bool {
		return slices.Equal(c.sms[learner].list(), want)
	})
	c.propose("after")
	c.sameOnAll(append(want, "after"))
}

// TestRemoveLearnerStopsReplicationToIt removes a learner: every voter
// forgets it, and entries committed afterwards do not reach it.
func TestRemoveLearnerStopsReplicationToIt(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	const learner = 5
	addr := c.startLearner(learner, "")
	c.addLearner(learner, addr)
	c.propose("before")
	c.sameOnAll([]string{"before"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes[c.votingLeader()].RemoveLearner(ctx, learner); err != nil {
		t.Fatal(err)
	}
	for id := range c.voters {
		waitFor(t, "every voter forgets the learner", func() bool { return !c.nodes[id].Membership().IsLearner(learner) })
		if p := (*c.nodes[id].tr.peers.Load())[raftID(learner)]; p != nil {
			t.Fatalf("voter %d still has the removed learner as a peer", id)
		}
	}
	lsm := c.sms[learner]
	c.stop(learner)
	delete(c.sms, learner)
	c.propose("after")
	c.sameOnAll([]string{"before", "after"})
	if slices.Contains(lsm.list(), "after") {
		t.Fatal("the removed learner received an entry committed after its removal")
	}
}

func TestStartRefusesAVoterAsLearnerAndAStrangerAsVoter(t *testing.T) {
	voters := map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name    string
		id      int32
		learner bool
		want    string
	}{
		{"voter started as learner", 2, true, "is one of the voters"},
		{"stranger started as voter", 9, false, "not among the voters"},
	} {
		_, err := Start(Config{NodeID: tc.id, Voters: voters, Learner: tc.learner, Dir: t.TempDir(), Listener: ln,
			StateMachine: &listSM{}, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestAddLearnerRefusesAVoter(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.nodes[c.leader()].AddLearner(ctx, 1, "127.0.0.1:1"); err == nil {
		t.Fatal("a voter was accepted as a learner")
	}
}

func TestSnapshotDataRoundTrip(t *testing.T) {
	learners := map[uint64]string{11: "10.0.0.1:9093", 3: "h:1"}
	b := encodeSnapshotData(learners, []byte("state"))
	got, sm, err := decodeSnapshotData(b)
	if err != nil || !maps.Equal(got, learners) || !bytes.Equal(sm, []byte("state")) {
		t.Fatalf("decoded %v %q %v", got, sm, err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0}, {0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff}, b[:10]} {
		if _, _, err := decodeSnapshotData(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

// FuzzSnapshotData decodes arbitrary bytes as a snapshot's data.
// Invariants: it never panics; damage is ErrCorrupt; it allocates no more
// learners than the input has bytes for; what decodes encodes back to the
// same bytes when the learner list was in id order without duplicates.
func FuzzSnapshotData(f *testing.F) {
	f.Add(encodeSnapshotData(map[uint64]string{2: "a:1", 5: "b:2"}, []byte("sm")))
	f.Add(encodeSnapshotData(nil, nil))
	f.Add([]byte{0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		learners, sm, err := decodeSnapshotData(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if len(learners)*10 > len(data) {
			t.Fatalf("%d learners from %d bytes", len(learners), len(data))
		}
		again := encodeSnapshotData(learners, sm)
		l2, sm2, err := decodeSnapshotData(again)
		if err != nil || !maps.Equal(l2, learners) || !bytes.Equal(sm2, sm) {
			t.Fatalf("re-encoded data differs: %v", err)
		}
	})
}

// TestLearnerAsksToJoinAndTheLeaderAddsIt starts a learner that nobody
// adds: knowing no leader, it asks every voter to join, and the leader
// adds it at its advertised address.
func TestLearnerAsksToJoinAndTheLeaderAddsIt(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose("before")
	const learner = 6
	addr := c.startLearner(learner, "")
	c.sameOnAll([]string{"before"})
	for id := range c.voters {
		waitFor(t, "every voter to know the learner", func() bool { return c.nodes[id].Membership().Learners[learner] == addr })
	}
	c.propose("after")
	c.sameOnAll([]string{"before", "after"})
}

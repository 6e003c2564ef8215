package raftnode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/gregor-broker/gregor/vfs"
)

// sameOnAll waits until every running node has applied the same list and
// that list holds every item of want.
func (c *testCluster) sameOnAll(want []string) []string {
	c.t.Helper()
	var got []string
	waitFor(c.t, "the same applied entries on every node", func() bool {
		got = nil
		first := true
		for id := range c.nodes {
			l := c.sms[id].list()
			if first {
				got, first = l, false
				continue
			}
			if !slices.Equal(l, got) {
				return false
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	return got
}

func TestSingleVoterElectsItselfAndCommits(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	if lead := c.leader(); lead != 1 {
		t.Fatalf("leader %d, want 1", lead)
	}
	for _, it := range items("a", 5) {
		c.propose(it)
	}
	c.sameOnAll(items("a", 5))
}

func TestThreeVotersElectOneLeaderAndApplyEverywhere(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.leader()
	want := items("x", 20)
	for _, it := range want {
		c.propose(it)
	}
	got := c.sameOnAll(want)
	if !slices.Equal(got, want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
}

func TestQuorumStateOnTheLeader(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose("q")
	waitFor(t, "every voter's progress at the commit index", func() bool {
		lead := c.leader()
		q := c.nodes[lead].Quorum()
		if q.Leader != lead || len(q.Voters) != 3 || q.Commit == 0 {
			return false
		}
		for i, v := range q.Voters {
			if v.NodeID != int32(i+1) || v.LogEnd < q.Commit || !v.RecentActive {
				return false
			}
		}
		return true
	})
	for id, nd := range c.nodes {
		if q := nd.Quorum(); id != c.leader() && len(q.Voters) != 0 {
			t.Fatalf("follower %d reports voter progress %+v", id, q.Voters)
		}
	}
}

func TestFollowerRefusesProposals(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	refused := map[int32]bool{}
	tookAsLeader := false
	waitFor(t, "both followers to refuse a proposal", func() bool {
		lead := c.leader()
		for id, nd := range c.nodes {
			if id == lead || refused[id] {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := nd.Propose(ctx, []byte("nope"))
			cancel()
			switch {
			case errors.Is(err, raft.ErrProposalDropped):
				refused[id] = true
			case err == nil:
				// Raft takes proposals only as leader (forwarding is off):
				// it had just been elected.
				tookAsLeader = true
			}
			// Otherwise the leadership moved meanwhile: try again.
		}
		return len(refused) == 2
	})
	for _, sm := range c.sms {
		if !tookAsLeader && slices.Contains(sm.list(), "nope") {
			t.Fatal("a proposal to a follower was applied")
		}
	}
}

func TestKilledLeaderIsReplacedAndNothingCommittedIsLost(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	want := items("before", 10)
	for _, it := range want {
		c.propose(it)
	}
	old := c.leader()
	c.stop(old)
	lead := c.leader()
	if lead == old {
		t.Fatalf("stopped node %d is still the leader", old)
	}
	more := items("after", 5)
	for _, it := range more {
		c.propose(it)
	}
	c.start(old, nil)
	all := append(slices.Clone(want), more...)
	got := c.sameOnAll(all)
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("entry %d is %q, want %q (committed order changed)", i, got[i], w)
		}
	}
}

func TestPartitionedMinorityCannotCommit(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose("start")
	lead := c.leader()
	var others []int32
	for id := range c.nodes {
		if id != lead {
			others = append(others, id)
		}
	}
	// Cut the leader off from both followers.
	c.nodes[lead].Block(others...)
	for _, id := range others {
		c.nodes[id].Block(lead)
	}
	// The majority side elects a new leader; the old one steps down (check
	// quorum) and cannot commit meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := c.nodes[lead].Propose(ctx, []byte("minority"))
	cancel()
	_ = err // it may be taken, or dropped once the leader stepped down; it must never apply
	waitFor(t, "a new leader on the majority side", func() bool {
		l := c.nodes[others[0]].Status().Leader
		return l == others[0] || l == others[1]
	})
	waitFor(t, "the isolated leader stepping down", func() bool { return c.nodes[lead].Status().Leader != lead })
	waitFor(t, "an entry committed by the majority", func() bool {
		if slices.Contains(c.sms[others[1]].list(), "majority") {
			return true
		}
		newLead := c.nodes[others[0]].Status().Leader
		if newLead != others[0] && newLead != others[1] {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.nodes[newLead].Propose(ctx, []byte("majority"))
		time.Sleep(200 * time.Millisecond)
		return slices.Contains(c.sms[others[1]].list(), "majority")
	})
	if slices.Contains(c.sms[lead].list(), "minority") {
		t.Fatal("the isolated minority applied an entry")
	}
	// Heal: the old leader catches up, and the minority's entry is gone.
	c.nodes[lead].Block()
	for _, id := range others {
		c.nodes[id].Block()
	}
	got := c.sameOnAll([]string{"start", "majority"})
	if slices.Contains(got, "minority") {
		t.Fatal("an entry proposed to an isolated leader was committed")
	}
}

func TestRestartRecoversFromWALAndSnapshot(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 8; cfg.CatchUpEntries = 2 })
	want := items("e", 30)
	for _, it := range want {
		c.propose(it)
	}
	c.sameOnAll(want)
	for id := range c.nodes {
		names, err := snapshotNames(c.nodes[id].fs, c.dirs[id])
		if err != nil || len(names) == 0 {
			t.Fatalf("node %d has no snapshot (%v)", id, err)
		}
	}
	// Restart every node: each comes back from its snapshot and WAL.
	for _, id := range []int32{1, 2, 3} {
		c.stop(id)
	}
	for _, id := range []int32{1, 2, 3} {
		c.start(id, nil)
	}
	for _, id := range []int32{1, 2, 3} {
		if len(c.sms[id].restored()) == 0 {
			t.Errorf("node %d did not restore a snapshot at start", id)
		}
	}
	got := c.sameOnAll(want)
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("after restart: %v", got)
	}
	c.propose("after-restart")
	c.sameOnAll(append(want, "after-restart"))
}

func TestLaggingNodeCatchesUpFromASnapshot(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 5; cfg.CatchUpEntries = 1 })
	c.propose("first")
	lead := c.leader()
	var lag int32
	for id := range c.nodes {
		if id != lead {
			lag = id
			break
		}
	}
	before := c.nodes[lag].Status().Applied
	c.stop(lag)
	want := items("while-down", 25)
	for _, it := range want {
		c.propose(it)
	}
	c.start(lag, nil)
	c.sameOnAll(append([]string{"first"}, want...))
	if r := c.sms[lag].restored(); len(r) == 0 || slices.Max(r) <= before {
		t.Fatalf("the lagging node (applied %d when stopped) caught up without installing the leader's snapshot (restored %v)", before, r)
	}
}

// TestStartRefusesAWALWithoutItsSnapshot: a WAL compacted after a
// snapshot cannot be replayed without that snapshot, so a node whose
// snapshots are gone (or all damaged) refuses to start instead of coming
// back with a hole in its state.
func TestStartRefusesAWALWithoutItsSnapshot(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.SnapshotEntries = 3; cfg.CatchUpEntries = 1 })
	for _, it := range items("s", 6) {
		c.propose(it)
	}
	c.stop(1)
	names, err := snapshotNames(vfs.OSFS{}, c.dirs[1])
	if err != nil || len(names) == 0 {
		t.Fatalf("no snapshots: %v", err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(c.dirs[1], n), []byte("damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Start(Config{NodeID: 1, Voters: c.voters, Dir: c.dirs[1], StateMachine: &listSM{}, Logger: quiet})
	if err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Start with damaged snapshots = %v, want ErrCorrupt", err)
	}
	for _, n := range names {
		os.Remove(filepath.Join(c.dirs[1], n))
	}
	_, err = Start(Config{NodeID: 1, Voters: c.voters, Dir: c.dirs[1], StateMachine: &listSM{}, Logger: quiet})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Start without snapshots = %v, want ErrCorrupt", err)
	}
}

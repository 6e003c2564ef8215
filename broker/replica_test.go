package broker

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// t0 is a Unix time in milliseconds for the unit tests' clocks: followers
// outside the ISR start with lastCaughtUpMs 0, long before it.
const t0 = int64(1_700_000_000_000)

func TestTruncationOffset(t *testing.T) {
	// The follower's epochs: 0 from 0, 2 from 50; its log ends at 80.
	local := func(epoch int32) (int32, int64) {
		switch {
		case epoch >= 2:
			if epoch == 2 {
				return 2, 80
			}
			return storage.UndefinedEpoch, storage.UndefinedEpochOffset
		default:
			return 0, 50
		}
	}
	cases := []struct {
		name     string
		divEpoch int32
		divEnd   int64
		want     int64
	}{
		{"leader knows no offset", 2, -1, 80},
		{"leader without epochs", -1, 30, 30},
		{"same epoch, leader ends earlier", 2, 60, 60},
		{"same epoch, leader ends later", 2, 90, 80},
		{"epoch unknown here: end of the largest epoch below it", 1, 60, 50},
		{"epoch 0 ends earlier on the leader", 0, 40, 40},
		{"epoch newer than any here", 3, 70, 70},
	}
	for _, c := range cases {
		if got := truncationOffset(c.divEpoch, c.divEnd, 80, local); got != c.want {
			t.Errorf("%s: truncate to %d, want %d", c.name, got, c.want)
		}
	}
}

// testReplica opens a partition on an in-memory log holding n one-record
// batches at leader epoch 0.
func testReplica(t *testing.T, n int) *partition {
	t.Helper()
	l, err := storage.Open(vfs.NewMemFS(), "/p", storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := newPartition("t", 0, l)
	for range n {
		b := testBatch(t, 1)
		batch.SetPartitionLeaderEpoch(b, 0)
		if _, _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// lead makes p's broker 1 the leader of replicas 1, 2, 3 with the ISR
// given, at epoch.
func lead(t *testing.T, p *partition, epoch int32, isr []int32, now int64) {
	t.Helper()
	st := &partitionState{leader: 1, leaderEpoch: epoch, partitionEpoch: epoch, replicas: []int32{1, 2, 3}, isr: isr, local: true}
	p.cluster.Store(st)
	if err := p.becomeLeader(st, now, 1000, func(int32) bool { return true }); err != nil {
		t.Fatal(err)
	}
}

func TestLeaderHighWatermarkFollowsTheISR(t *testing.T) {
	p := testReplica(t, 10)
	lead(t, p, 1, []int32{1, 2, 3}, t0+0)
	if e, off := p.log.EndOffsetForEpoch(1); e != 1 || off != 10 {
		t.Fatalf("epoch 1 in the epoch cache: (%d, %d), want it to start at the log end", e, off)
	}
	steps := []struct {
		replica int32
		offset  int64
		wantHW  int64
	}{
		{2, 5, 0},   // 3 unknown yet
		{3, 7, 5},   // min over the ISR
		{2, 10, 7},  // 3 now the slowest
		{3, 10, 10}, // all caught up
		{2, 4, 10},  // never back
	}
	for i, s := range steps {
		ok, _, _, _ := p.followerFetch(s.replica, 1, s.offset, 10, 1, true, t0+100)
		if !ok {
			t.Fatalf("step %d: fetch refused", i)
		}
		if hw := p.highWatermark(); hw != s.wantHW {
			t.Fatalf("step %d: high watermark %d, want %d", i, hw, s.wantHW)
		}
	}
	if ok, _, _, _ := p.followerFetch(4, 1, 10, 10, 1, true, t0+100); ok {
		t.Fatal("a fetch from a broker outside the replicas was recorded")
	}
}

func TestLeaderISRChanges(t *testing.T) {
	const lag = 1000
	p := testReplica(t, 10)
	lead(t, p, 1, []int32{1, 2}, t0+0)
	// 3 is outside the ISR: it joins once it reaches the high watermark at
	// the current epoch, and only if eligible.
	p.followerFetch(2, 1, 10, 10, 1, true, t0+10)
	if hw := p.highWatermark(); hw != 10 {
		t.Fatalf("high watermark %d", hw)
	}
	if _, _, expand, _ := p.followerFetch(3, 1, 5, 10, 1, true, t0+20); expand != nil {
		t.Fatalf("a follower below the high watermark joins: %v", expand)
	}
	if _, _, expand, _ := p.followerFetch(3, 1, 10, 10, 0, true, t0+30); expand != nil {
		t.Fatalf("a follower at an old epoch joins: %v", expand)
	}
	if _, _, expand, _ := p.followerFetch(3, 1, 10, 10, 1, false, t0+40); expand != nil {
		t.Fatalf("an ineligible follower joins: %v", expand)
	}
	_, _, expand, _ := p.followerFetch(3, 1, 10, 10, 1, true, t0+50)
	if !slices.Equal(expand, []int32{1, 2, 3}) {
		t.Fatalf("expand %v, want [1 2 3]", expand)
	}
	// One change in flight at a time.
	if isr := p.shrinkISR(t0+5000, lag); isr != nil {
		t.Fatalf("a shrink while an expansion is in flight: %v", isr)
	}
	gen := p.alterGeneration()
	req, epoch, ok := p.alterRequest(gen)
	if !ok || epoch != 1 || !slices.Equal(req.Partitions[0].NewISR, []int32{1, 2, 3}) {
		t.Fatalf("alter request %+v %d %v", req, epoch, ok)
	}
	p.alterDone(gen, 1, []int32{1, 2, 3}, 2, nil, t0+60)
	if isr := p.isrSnapshot(); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v after the expansion", isr)
	}

	// A follower at the log end is in sync however long ago it fetched;
	// once the log grows, lastCaughtUp counts: 3 last caught up at 50, 2
	// fetches the new end at 100.
	if isr := p.shrinkISR(t0+50+10*lag, lag); isr != nil {
		t.Fatalf("shrink of followers at the log end: %v", isr)
	}
	if _, _, err := p.log.Append(testBatch(t, 1)); err != nil {
		t.Fatal(err)
	}
	p.followerFetch(2, 1, 11, 11, 1, true, t0+100)
	if isr := p.shrinkISR(t0+50+lag, lag); isr != nil {
		t.Fatalf("shrink before the lag passed: %v", isr)
	}
	isr := p.shrinkISR(t0+50+lag+1, lag)
	if !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("shrink %v, want [1 2]", isr)
	}
	// While the shrink is pending the high watermark counts the larger ISR.
	p.followerFetch(2, 1, 11, 11, 1, true, t0+1200)
	if hw := p.highWatermark(); hw != 10 {
		t.Fatalf("high watermark %d with the shrink pending, want 10 (3 is still counted)", hw)
	}
	// A refusal that means "wait for the image" keeps it pending;
	// OPERATION_NOT_ATTEMPTED drops it.
	gen = p.alterGeneration()
	p.alterDone(gen, 1, nil, 0, kerr.InvalidUpdateVersion, t0+1300)
	if _, _, ok := p.alterRequest(gen); !ok {
		t.Fatal("INVALID_UPDATE_VERSION dropped the pending change")
	}
	p.alterDone(gen, 1, nil, 0, kerr.OperationNotAttempted, t0+1300)
	if _, _, ok := p.alterRequest(gen); ok {
		t.Fatal("OPERATION_NOT_ATTEMPTED kept the pending change")
	}
	// The image's newer ISR applies and the high watermark follows.
	st := &partitionState{leader: 1, leaderEpoch: 1, partitionEpoch: 3, replicas: []int32{1, 2, 3}, isr: []int32{1, 2}, local: true}
	if err := p.becomeLeader(st, t0+1400, lag, func(id int32) bool { return id != 3 }); err != nil {
		t.Fatal(err)
	}
	p.maybeIncrementHW(t0 + 1400)
	if hw := p.highWatermark(); hw != 11 {
		t.Fatalf("high watermark %d once 3 left the ISR and is fenced, want 11", hw)
	}
}

func TestReplicationDone(t *testing.T) {
	p := testReplica(t, 10)
	lead(t, p, 1, []int32{1, 2}, t0+0)
	if done, _ := p.replicationDone(10, 1, 2); done {
		t.Fatal("done before the follower fetched")
	}
	p.followerFetch(2, 1, 10, 10, 1, true, t0+10)
	if done, e := p.replicationDone(10, 1, 2); !done || e != nil {
		t.Fatalf("done %v, %v once the high watermark passed", done, e)
	}
	if done, e := p.replicationDone(10, 1, 3); !done || e != kerr.NotEnoughReplicasAfterAppend {
		t.Fatalf("min.insync.replicas 3 with two in sync: %v, %v", done, e)
	}
	for _, c := range []struct{ minISR, replicas, want int }{{1, 3, 1}, {2, 3, 2}, {5, 3, 3}, {0, 1, 1}} {
		if got := effectiveMinISR(c.minISR, c.replicas); got != c.want {
			t.Errorf("effectiveMinISR(%d, %d) = %d, want %d", c.minISR, c.replicas, got, c.want)
		}
	}
	if done, e := p.replicationDone(10, 0, 2); !done || e != kerr.NotLeaderForPartition {
		t.Fatalf("an append at an older epoch: %v, %v", done, e)
	}
	// The ISR shrank to the leader alone meanwhile.
	st := &partitionState{leader: 1, leaderEpoch: 1, partitionEpoch: 5, replicas: []int32{1, 2, 3}, isr: []int32{1}, local: true}
	if err := p.becomeLeader(st, t0+20, 1000, func(int32) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if done, e := p.replicationDone(10, 1, 2); !done || e != kerr.NotEnoughReplicasAfterAppend {
		t.Fatalf("ISR below min.insync.replicas: %v, %v", done, e)
	}
	p.becomeFollower(&partitionState{leader: 2, leaderEpoch: 2, replicas: []int32{1, 2, 3}, isr: []int32{2}})
	if done, e := p.replicationDone(10, 1, 1); !done || e != kerr.NotLeaderForPartition {
		t.Fatalf("after losing the lead: %v, %v", done, e)
	}
}

// FuzzAppendFromLeader feeds a follower arbitrary bytes as a fetch
// answer's records: it must never panic, and whatever it appends must be
// whole, valid batches that continue the log.
func FuzzAppendFromLeader(f *testing.F) {
	valid := testBatch(f, 3)
	f.Add(valid)
	f.Add(append(append([]byte{}, valid...), valid[:20]...))
	f.Add([]byte{})
	f.Add(valid[:batch.HeaderSize])
	f.Fuzz(func(t *testing.T, records []byte) {
		l, err := storage.Open(vfs.NewMemFS(), "/p", storage.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := newPartition("t", 0, l)
		p.becomeFollower(&partitionState{leader: 2, leaderEpoch: 1, replicas: []int32{1, 2}, isr: []int32{2}})
		in := append([]byte(nil), records...)
		end, err := p.appendFromLeader(1, 0, in)
		if err != nil || end == 0 {
			if l.EndOffset() != 0 {
				t.Fatalf("a refused answer moved the log end to %d", l.EndOffset())
			}
			return
		}
		if end != l.EndOffset() {
			t.Fatalf("appendFromLeader returned %d, the log ends at %d", end, l.EndOffset())
		}
		raw, err := l.Read(0, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Split(raw, func(b []byte) error { _, err := batch.Check(b); return err }); err != nil {
			t.Fatalf("the follower stored an invalid batch: %v", err)
		}
	})
}

// TestFollowerDropsAnEpochItStartedWithoutData: a broker that led at epoch
// 2 without appending anything, then follows a leader that never had epoch
// 2, drops that epoch when the leader's answer diverges there; otherwise
// every fetch would diverge at epoch 2 again.
func TestFollowerDropsAnEpochItStartedWithoutData(t *testing.T) {
	p := testReplica(t, 10)
	lead(t, p, 2, []int32{1, 2, 3}, t0)
	if e, _ := p.log.LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d after leading at 2", e)
	}
	p.becomeFollower(&partitionState{leader: 2, leaderEpoch: 3, replicas: []int32{1, 2, 3}, isr: []int32{2, 3}})
	// The leader's epoch 0 ends at 15: nothing here to cut below 10.
	if err := p.truncateDiverging(3, 0, 15); err != nil {
		t.Fatal(err)
	}
	if e, _ := p.log.LatestEpoch(); e != 0 || p.log.EndOffset() != 10 {
		t.Fatalf("latest epoch %d, log end %d; want 0 and 10", e, p.log.EndOffset())
	}
	if err := p.truncateDiverging(3, 0, 15); !errors.Is(err, errNoProgress) {
		t.Fatalf("the same answer again: %v, want errNoProgress", err)
	}
	// A real divergence cuts the log and rebuilds the producer state.
	if err := p.truncateDiverging(3, 0, 7); err != nil || p.log.EndOffset() != 7 {
		t.Fatalf("truncating to 7: %v, log end %d", err, p.log.EndOffset())
	}
}

func TestUncleanDefault(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"", false}, {"false", false}, {"true", true}, {"TRUE", true}} {
		defaults := map[string]string{}
		if c.v != "" {
			defaults["unclean.leader.election.enable"] = c.v
		}
		if got := uncleanDefault(defaults); got != c.want {
			t.Errorf("unclean.leader.election.enable=%q: %v, want %v", c.v, got, c.want)
		}
	}
}

func TestBecomeNoneEmptiesAReplicaNoLongerHosted(t *testing.T) {
	notHere := &partitionState{leader: 2, leaderEpoch: 5, replicas: []int32{2, 3}, isr: []int32{2, 3}}
	// Data of a partition this broker never had a role for since it started
	// stays until an image holding its registration says so.
	p := testReplica(t, 10)
	if err := p.becomeNone(notHere, false); err != nil || p.log.EndOffset() != 10 {
		t.Fatalf("an older image emptied the log: %v, end %d", err, p.log.EndOffset())
	}
	if err := p.becomeNone(notHere, true); err != nil || p.log.EndOffset() != 0 || p.highWatermark() != 0 {
		t.Fatalf("a stray replica kept its data: %v, end %d", err, p.log.EndOffset())
	}
	// A follower removed by a reassignment empties its log at once.
	p = testReplica(t, 10)
	p.becomeFollower(&partitionState{leader: 2, leaderEpoch: 4, replicas: []int32{1, 2}, isr: []int32{1, 2}})
	if err := p.becomeNone(notHere, false); err != nil || p.log.EndOffset() != 0 {
		t.Fatalf("a removed follower kept its data: %v, end %d", err, p.log.EndOffset())
	}
	if e := p.leaderEpoch.Load(); e != 5 {
		t.Fatalf("leader epoch %d, want the image's 5", e)
	}
}

package txn

import (
	"math"
	"reflect"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// step is one event of a scenario and what must follow from it.
type step struct {
	name string
	do   func(c *Coordinator) int16
	want *kerr.Error
	// state and epoch of "id" after the step; epoch -2 is not checked.
	state   State
	epoch   int16
	records int // records the step must produce
	markers int // markers the step must ask for
}

func initID(timeout int32) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.InitProducerID(1, "id", timeout, -1, -1).ErrorCode }
}

func initKIP360(pid int64, epoch int16) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.InitProducerID(1, "id", 1000, pid, epoch).ErrorCode }
}

func add(pid int64, epoch int16, parts ...Partition) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.AddPartitions(2, "id", pid, epoch, parts, 0) }
}

func end(pid int64, epoch int16, commit bool) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.EndTxn(3, "id", pid, epoch, commit, 0).ErrorCode }
}

// add2 and end2 are a transactions V2 client's: a produce that adds its
// partition, and EndTxn v5.
func add2(pid int64, epoch int16, parts ...Partition) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.AddPartitions(2, "id", pid, epoch, parts, 2) }
}

func end2(pid int64, epoch int16, commit bool) func(c *Coordinator) int16 {
	return func(c *Coordinator) int16 { return c.EndTxn(3, "id", pid, epoch, commit, 2).ErrorCode }
}

// markersDone completes every marker the coordinator asked for in the
// step before (the scenario runner keeps them).
var pendingMarkers []Marker

func markersDone(c *Coordinator) int16 {
	for _, m := range pendingMarkers {
		c.MarkersWritten(4, m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.Partitions)
	}
	return 0
}

func TestTransitions(t *testing.T) {
	const pid = 1000
	tests := []struct {
		name     string
		serverTV int16 // the cluster's transaction.version
		steps    []step
	}{
		{"a new id gets a producer id with epoch 0; another init fences it", 0, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "init again", do: initID(1000), state: Empty, epoch: 1, records: 1},
			{name: "old epoch adds", do: add(pid, 0, tpA), want: kerr.ProducerFenced, state: Empty, epoch: 1},
		}},
		{"bad timeouts", 0, []step{
			{name: "above max", do: initID(60001), want: kerr.InvalidTransactionTimeout, epoch: -2},
			{name: "zero", do: initID(0), want: kerr.InvalidTransactionTimeout, epoch: -2},
			{name: "empty id", do: func(c *Coordinator) int16 { return c.InitProducerID(1, "", 1000, -1, -1).ErrorCode }, want: kerr.InvalidRequest, epoch: -2},
		}},
		{"commit: prepare, markers, complete; EndTxn twice", 0, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "add", do: add(pid, 0, tpA, tpB), state: Ongoing, epoch: 0, records: 1},
			{name: "add again: nothing new", do: add(pid, 0, tpA), state: Ongoing, epoch: 0},
			{name: "commit", do: end(pid, 0, true), state: PrepareCommit, epoch: 0, records: 1, markers: 1},
			{name: "commit while preparing", do: end(pid, 0, true), want: kerr.ConcurrentTransactions, state: PrepareCommit, epoch: 0},
			{name: "abort while preparing commit", do: end(pid, 0, false), want: kerr.InvalidTxnState, state: PrepareCommit, epoch: 0},
			{name: "add while preparing", do: add(pid, 0, tpA), want: kerr.ConcurrentTransactions, state: PrepareCommit, epoch: 0},
			{name: "init while preparing", do: initID(1000), want: kerr.ConcurrentTransactions, state: PrepareCommit, epoch: 0},
			{name: "markers written", do: markersDone, state: CompleteCommit, epoch: 0, records: 1},
			{name: "commit again: a retry succeeds", do: end(pid, 0, true), state: CompleteCommit, epoch: 0},
			{name: "abort after commit", do: end(pid, 0, false), want: kerr.InvalidTxnState, state: CompleteCommit, epoch: 0},
			{name: "next transaction", do: add(pid, 0, tpB), state: Ongoing, epoch: 0, records: 1},
		}},
		{"bad EndTxn", 0, []step{
			{name: "unknown id", do: end(pid, 0, true), want: kerr.InvalidProducerIDMapping, epoch: -2},
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "no transaction", do: end(pid, 0, true), want: kerr.InvalidTxnState, state: Empty, epoch: 0},
			{name: "other producer id", do: end(pid+1, 0, true), want: kerr.InvalidProducerIDMapping, state: Empty, epoch: 0},
			{name: "other epoch", do: end(pid, 1, false), want: kerr.ProducerFenced, state: Empty, epoch: 0},
			{name: "empty id", do: func(c *Coordinator) int16 { return c.EndTxn(3, "", pid, 0, true, 0).ErrorCode }, want: kerr.InvalidRequest, state: Empty, epoch: 0},
		}},
		{"bad AddPartitions", 0, []step{
			{name: "unknown id", do: add(pid, 0, tpA), want: kerr.InvalidProducerIDMapping, epoch: -2},
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "other producer id", do: add(pid+1, 0, tpA), want: kerr.InvalidProducerIDMapping, state: Empty, epoch: 0},
			{name: "other epoch", do: add(pid, 3, tpA), want: kerr.ProducerFenced, state: Empty, epoch: 0},
		}},
		{"init during a transaction aborts it with the epoch bumped", 0, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "add", do: add(pid, 0, tpA), state: Ongoing, epoch: 0, records: 1},
			{name: "init fences", do: initID(1000), want: kerr.ConcurrentTransactions, state: PrepareAbort, epoch: 1, records: 1, markers: 1},
			{name: "old producer commits", do: end(pid, 0, true), want: kerr.ProducerFenced, state: PrepareAbort, epoch: 1},
			{name: "markers written", do: markersDone, state: CompleteAbort, epoch: 1, records: 1},
			{name: "init again", do: initID(1000), state: Empty, epoch: 2, records: 1},
		}},
		{"a transaction past its timeout is aborted and its producer fenced", 0, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "add at 2", do: add(pid, 0, tpA), state: Ongoing, epoch: 0, records: 1},
			{name: "not yet at 1002", do: func(c *Coordinator) int16 { c.AbortTimedOut(1002); return 0 }, state: Ongoing, epoch: 0},
			{name: "at 1003", do: func(c *Coordinator) int16 { c.AbortTimedOut(1003); return 0 }, state: PrepareAbort, epoch: 1, records: 1, markers: 1},
			{name: "markers written", do: markersDone, state: CompleteAbort, epoch: 1, records: 1},
			{name: "the zombie commits", do: end(pid, 0, true), want: kerr.ProducerFenced, state: CompleteAbort, epoch: 1},
			{name: "the zombie adds", do: add(pid, 0, tpA), want: kerr.ProducerFenced, state: CompleteAbort, epoch: 1},
		}},
		{"KIP-360 recovery", 0, []step{
			{name: "init with an id on a new transactional id", do: initKIP360(77, 3), state: Empty, epoch: 0, records: 1},
			{name: "bump from 0", do: initKIP360(pid, 0), state: Empty, epoch: 1, records: 1},
			{name: "retry of that bump: same epoch", do: initKIP360(pid, 0), state: Empty, epoch: 1, records: 1},
			{name: "another producer id", do: initKIP360(55, 1), want: kerr.ProducerFenced, state: Empty, epoch: 1},
			{name: "a stale epoch", do: initKIP360(pid, 7), want: kerr.ProducerFenced, state: Empty, epoch: 1},
		}},
		{"transactions V2: every end bumps the epoch; retries come with the epoch before", 2, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "commit with nothing to commit", do: end2(pid, 0, true), want: kerr.InvalidTxnState, state: Empty, epoch: 0},
			{name: "produce adds", do: add2(pid, 0, tpA), state: Ongoing, epoch: 0, records: 1},
			{name: "commit", do: end2(pid, 0, true), state: PrepareCommit, epoch: 1, records: 1, markers: 1},
			{name: "retry while preparing", do: end2(pid, 0, true), want: kerr.ConcurrentTransactions, state: PrepareCommit, epoch: 1},
			{name: "the new epoch while preparing", do: end2(pid, 1, true), want: kerr.ProducerFenced, state: PrepareCommit, epoch: 1},
			{name: "markers written", do: markersDone, state: CompleteCommit, epoch: 1, records: 1},
			{name: "retry after completion", do: end2(pid, 0, true), state: CompleteCommit, epoch: 1},
			{name: "abort as a retry of a commit", do: end2(pid, 0, false), want: kerr.InvalidTxnState, state: CompleteCommit, epoch: 1},
			{name: "commit with nothing new", do: end2(pid, 1, true), want: kerr.InvalidTxnState, state: CompleteCommit, epoch: 1},
			{name: "an older epoch", do: end2(pid, -1, true), want: kerr.ProducerFenced, state: CompleteCommit, epoch: 1},
			{name: "empty abort bumps", do: end2(pid, 1, false), state: PrepareAbort, epoch: 2, records: 1, markers: 1},
			{name: "no markers to write", do: markersDone, state: CompleteAbort, epoch: 2, records: 1},
			{name: "next transaction at the new epoch", do: add2(pid, 2, tpB), state: Ongoing, epoch: 2, records: 1},
			{name: "the old epoch adds", do: add2(pid, 1, tpA), want: kerr.ProducerFenced, state: Ongoing, epoch: 2},
			{name: "abort", do: end2(pid, 2, false), state: PrepareAbort, epoch: 3, records: 1, markers: 1},
		}},
		{"transactions V2 cluster: a fence bumps twice", 2, []step{
			{name: "init", do: initID(1000), state: Empty, epoch: 0, records: 1},
			{name: "add", do: add2(pid, 0, tpA), state: Ongoing, epoch: 0, records: 1},
			{name: "init fences", do: initID(1000), want: kerr.ConcurrentTransactions, state: PrepareAbort, epoch: 2, records: 1, markers: 1},
			{name: "the zombie ends", do: end2(pid, 0, true), want: kerr.ProducerFenced, state: PrepareAbort, epoch: 2},
			{name: "markers written", do: markersDone, state: CompleteAbort, epoch: 2, records: 1},
			{name: "init again", do: initID(1000), state: Empty, epoch: 3, records: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestTV(t, tt.serverTV)
			var all []Record
			pendingMarkers = nil
			for _, s := range tt.steps {
				got := s.do(c)
				if got != code(s.want) {
					t.Fatalf("%s: %s, want %s", s.name, errName(got), errName(code(s.want)))
				}
				eff := c.Ready()
				all = append(all, eff.Records...)
				if len(eff.Records) != s.records || len(eff.Markers) != s.markers {
					t.Fatalf("%s: %d records and %d markers, want %d and %d", s.name, len(eff.Records), len(eff.Markers), s.records, s.markers)
				}
				if s.markers > 0 {
					pendingMarkers = eff.Markers
				}
				if s.epoch == -2 {
					continue
				}
				d, code := c.Describe("id")
				if code != 0 || d.State != s.state || d.ProducerEpoch != s.epoch {
					t.Fatalf("%s: %v state %s epoch %d, want %s epoch %d", s.name, errName(code), d.State, d.ProducerEpoch, s.state, s.epoch)
				}
				// The log alone rebuilds the same state.
				r, _ := replayed(t, all).Describe("id")
				r.LastProducerEpoch = d.LastProducerEpoch // not persisted, as in Kafka
				if !reflect.DeepEqual(r, d) {
					t.Fatalf("%s: replayed %+v, in memory %+v", s.name, r, d)
				}
			}
		})
	}
}

func TestMarkersCarryTheTransaction(t *testing.T) {
	c := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1)
	c.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB, tpA}, 0)
	c.EndTxn(3, "id", r.ProducerID, r.ProducerEpoch, false, 0)
	eff := c.Ready()
	want := []Marker{{TransactionalID: "id", ProducerID: r.ProducerID, ProducerEpoch: 0, Commit: false, Partitions: []Partition{tpA, tpB}}}
	if !reflect.DeepEqual(eff.Markers, want) {
		t.Fatalf("markers %+v, want %+v", eff.Markers, want)
	}
	// A partial report leaves the transaction preparing; a stale one is
	// ignored.
	c.MarkersWritten(4, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpA})
	c.MarkersWritten(4, "id", r.ProducerID, r.ProducerEpoch+1, []Partition{tpB})
	if d, _ := c.Describe("id"); d.State != PrepareAbort || len(d.Partitions) != 1 {
		t.Fatalf("after a partial report: %v", d.String())
	}
	// After a restart, the markers are asked for again.
	all := newTest(t)
	all.InitProducerID(1, "id", 1000, -1, -1)
	all.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB, tpA}, 0)
	all.EndTxn(3, "id", r.ProducerID, r.ProducerEpoch, false, 0)
	re := replayed(t, all.Ready().Records)
	re.PendingMarkers()
	if eff := re.Ready(); !reflect.DeepEqual(eff.Markers, want) || len(eff.Records) != 0 {
		t.Fatalf("after replay: %+v, want markers %+v", eff, want)
	}
	c.MarkersWritten(5, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB})
	if d, _ := c.Describe("id"); d.State != CompleteAbort || len(d.Partitions) != 0 {
		t.Fatalf("after every marker: %v", d.String())
	}
}

func TestEpochExhaustionRotatesTheProducerID(t *testing.T) {
	c := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	n := c.InitProducerID(2, "id", 1000, -1, -1)
	if n.ErrorCode != 0 || n.ProducerID == r.ProducerID || n.ProducerEpoch != 0 {
		t.Fatalf("exhausted epoch: %+v, want a new producer id with epoch 0", n)
	}
	d, _ := c.Describe("id")
	if d.PreviousProducerID != r.ProducerID {
		t.Fatalf("previous producer id %d, want %d", d.PreviousProducerID, r.ProducerID)
	}
	// KIP-360: a retry naming the old id with its exhausted epoch is not
	// fenced.
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	rr := c.InitProducerID(3, "id", 1000, n.ProducerID, math.MaxInt16-1)
	if rr.ErrorCode != 0 || rr.ProducerEpoch != 0 || rr.ProducerID == n.ProducerID {
		t.Fatalf("KIP-360 with an exhausted epoch: %+v", rr)
	}
}

func TestVerifyPartitions(t *testing.T) {
	c := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1)
	c.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpA}, 0)
	c.Ready()
	top, each := c.VerifyPartitions("id", r.ProducerID, r.ProducerEpoch, []Partition{tpA, tpB})
	if top != 0 || each[tpA] != 0 || each[tpB] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify: %d %v", top, each)
	}
	for _, tt := range []struct {
		id    string
		pid   int64
		epoch int16
		want  *kerr.Error
	}{
		{"", r.ProducerID, 0, kerr.InvalidRequest},
		{"nope", r.ProducerID, 0, kerr.InvalidProducerIDMapping},
		{"id", r.ProducerID + 1, 0, kerr.InvalidProducerIDMapping},
		{"id", r.ProducerID, 1, kerr.ProducerFenced},
	} {
		if top, _ := c.VerifyPartitions(tt.id, tt.pid, tt.epoch, []Partition{tpA}); top != tt.want.Code {
			t.Errorf("verify %q %d %d: %s, want %s", tt.id, tt.pid, tt.epoch, errName(top), tt.want.Message)
		}
	}
	if e := c.Ready(); len(e.Records)+len(e.Markers) != 0 {
		t.Fatal("verification had effects")
	}
}

func TestExpireIDs(t *testing.T) {
	c := newTest(t)
	c.InitProducerID(10, "idle", 1000, -1, -1)
	r := c.InitProducerID(10, "busy", 1000, -1, -1)
	c.AddPartitions(10, "busy", r.ProducerID, 0, []Partition{tpA}, 0)
	c.Ready()
	if got := c.ExpireIDs(10 + 999999); len(got) != 0 {
		t.Fatalf("expired too early: %v", got)
	}
	if got := c.ExpireIDs(10 + 1000000); !reflect.DeepEqual(got, []string{"idle"}) {
		t.Fatalf("expired %v, want [idle] (an ongoing transaction never expires)", got)
	}
	eff := c.Ready()
	if len(eff.Records) != 1 || eff.Records[0].Value != nil {
		t.Fatalf("want one tombstone, got %+v", eff.Records)
	}
	if _, code := c.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe an expired id: %s", errName(code))
	}
	// A tombstone removes the id on replay too.
	l := newTest(t)
	l.Load(record(&Txn{ID: "idle", ProducerID: 5, State: Empty, Partitions: map[Partition]struct{}{}}).Key,
		record(&Txn{ID: "idle", ProducerID: 5, State: Empty, Partitions: map[Partition]struct{}{}}).Value)
	l.Load(eff.Records[0].Key, nil)
	if l.Len() != 0 {
		t.Fatal("tombstone did not remove the id on load")
	}
}

func TestList(t *testing.T) {
	c := newTest(t)
	a := c.InitProducerID(0, "alpha", 1000, -1, -1)
	c.InitProducerID(0, "beta", 1000, -1, -1)
	c.AddPartitions(100, "alpha", a.ProducerID, 0, []Partition{tpA}, 0)
	all := func(f ListFilter) []string {
		l, _ := c.List(1000, f)
		var ids []string
		for _, x := range l {
			ids = append(ids, x.ID)
		}
		return ids
	}
	for _, tt := range []struct {
		name string
		f    ListFilter
		want []string
	}{
		{"no filter", ListFilter{DurationMs: -1}, []string{"alpha", "beta"}},
		{"state", ListFilter{States: []string{"Ongoing"}, DurationMs: -1}, []string{"alpha"}},
		{"producer id", ListFilter{ProducerIDs: []int64{a.ProducerID}, DurationMs: -1}, []string{"alpha"}},
		{"duration: running longer than 899 ms", ListFilter{DurationMs: 899}, []string{"alpha", "beta"}},
		{"duration: running longer than 900 ms", ListFilter{DurationMs: 900}, []string{"beta"}},
		{"pattern", ListFilter{DurationMs: -1, Pattern: regexp.MustCompile(`^(?:b.*)$`)}, []string{"beta"}},
	} {
		if got := all(tt.f); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if _, unknown := c.List(0, ListFilter{States: []string{"Ongoing", "Bogus"}, DurationMs: -1}); !reflect.DeepEqual(unknown, []string{"Bogus"}) {
		t.Errorf("unknown states %v", unknown)
	}
}

func TestV2EndWithAnExhaustedEpochRotatesAtCompletion(t *testing.T) {
	c := newTestTV(t, 2)
	r := c.InitProducerID(1, "id", 1000, -1, -1)
	c.AddPartitions(2, "id", r.ProducerID, 0, []Partition{tpA}, 2)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	e := c.EndTxn(3, "id", r.ProducerID, math.MaxInt16-1, true, 2)
	if e.ErrorCode != 0 || e.ProducerID != r.ProducerID || e.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("end with an exhausted epoch: %+v", e)
	}
	eff := c.Ready()
	if len(eff.Markers) != 1 || eff.Markers[0].ProducerEpoch != math.MaxInt16 || eff.Markers[0].TransactionVersion != 2 {
		t.Fatalf("markers %+v", eff.Markers)
	}
	c.MarkersWritten(4, "id", r.ProducerID, math.MaxInt16, eff.Markers[0].Partitions)
	d, _ := c.Describe("id")
	if d.State != CompleteCommit || d.ProducerID == r.ProducerID || d.ProducerEpoch != 0 || d.PreviousProducerID != r.ProducerID {
		t.Fatalf("after completion: %+v", d)
	}
	// The client retries with the identity it had: a retry on overflow.
	if rr := c.EndTxn(5, "id", r.ProducerID, math.MaxInt16-1, true, 2); rr.ErrorCode != 0 || rr.ProducerID != d.ProducerID || rr.ProducerEpoch != 0 {
		t.Fatalf("retry after the rotation: %+v", rr)
	}
	// A fence of a V2 transaction at the last usable epoch rotates too.
	c.AddPartitions(6, "id", d.ProducerID, 0, []Partition{tpA}, 2)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	c.AbortTimedOut(1 << 40)
	f, _ := c.Describe("id")
	if f.State != PrepareAbort || f.ProducerEpoch != math.MaxInt16 || f.NextProducerID < 0 {
		t.Fatalf("fence at the last epoch: %+v", f)
	}
}

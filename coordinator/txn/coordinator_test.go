package txn

import (
	"math"
	"reflect"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestMarkersCarryTheTransaction(t *testing.T) {
	c, in := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1, in)
	c.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB, tpA}, 0, in)
	c.EndTxn(3, "id", r.ProducerID, r.ProducerEpoch, false, 0, in)
	eff := c.Ready()
	want := []Marker{{TransactionalID: "id", ProducerID: r.ProducerID, ProducerEpoch: 0, Commit: false, Partitions: []Partition{tpA, tpB}}}
	if !reflect.DeepEqual(eff.Markers, want) {
		t.Fatalf("markers %+v, want %+v", eff.Markers, want)
	}
	// A partial report leaves the transaction preparing; a stale one is
	// ignored.
	c.MarkersWritten(4, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpA})
	c.MarkersWritten(4, "id", r.ProducerID, r.ProducerEpoch+1, []Partition{tpB})
	if d, _ := c.Describe("id", in); d.State != PrepareAbort || len(d.Partitions) != 1 {
		t.Fatalf("after a partial report: %v", d.String())
	}
	// After a restart, the markers are asked for again.
	all, allIn := newTest(t)
	all.InitProducerID(1, "id", 1000, -1, -1, allIn)
	all.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB, tpA}, 0, allIn)
	all.EndTxn(3, "id", r.ProducerID, r.ProducerEpoch, false, 0, allIn)
	re := replayed(t, all.Ready().Records)
	re.PendingMarkers(in)
	if eff := re.Ready(); !reflect.DeepEqual(eff.Markers, want) || len(eff.Records) != 0 {
		t.Fatalf("after replay: %+v, want markers %+v", eff, want)
	}
	c.MarkersWritten(5, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpB})
	if d, _ := c.Describe("id", in); d.State != CompleteAbort || len(d.Partitions) != 0 {
		t.Fatalf("after every marker: %v", d.String())
	}
}

func TestEpochExhaustionRotatesTheProducerID(t *testing.T) {
	c, in := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1, in)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	n := c.InitProducerID(2, "id", 1000, -1, -1, in)
	if n.ErrorCode != 0 || n.ProducerID == r.ProducerID || n.ProducerEpoch != 0 {
		t.Fatalf("exhausted epoch: %+v, want a new producer id with epoch 0", n)
	}
	d, _ := c.Describe("id", in)
	if d.PreviousProducerID != r.ProducerID {
		t.Fatalf("previous producer id %d, want %d", d.PreviousProducerID, r.ProducerID)
	}
	// KIP-360: a retry naming the old id with its exhausted epoch is not
	// fenced.
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	rr := c.InitProducerID(3, "id", 1000, n.ProducerID, math.MaxInt16-1, in)
	if rr.ErrorCode != 0 || rr.ProducerEpoch != 0 || rr.ProducerID == n.ProducerID {
		t.Fatalf("KIP-360 with an exhausted epoch: %+v", rr)
	}
}

func TestVerifyPartitions(t *testing.T) {
	c, in := newTest(t)
	r := c.InitProducerID(1, "id", 1000, -1, -1, in)
	c.AddPartitions(2, "id", r.ProducerID, r.ProducerEpoch, []Partition{tpA}, 0, in)
	c.Ready()
	top, each := c.VerifyPartitions("id", r.ProducerID, r.ProducerEpoch, []Partition{tpA, tpB}, in)
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
		if top, _ := c.VerifyPartitions(tt.id, tt.pid, tt.epoch, []Partition{tpA}, in); top != tt.want.Code {
			t.Errorf("verify %q %d %d: %s, want %s", tt.id, tt.pid, tt.epoch, errName(top), tt.want.Message)
		}
	}
	if e := c.Ready(); len(e.Records)+len(e.Markers) != 0 {
		t.Fatal("verification had effects")
	}
}

func TestExpireIDs(t *testing.T) {
	c, in := newTest(t)
	c.InitProducerID(10, "idle", 1000, -1, -1, in)
	r := c.InitProducerID(10, "busy", 1000, -1, -1, in)
	c.AddPartitions(10, "busy", r.ProducerID, 0, []Partition{tpA}, 0, in)
	c.Ready()
	if got := c.ExpireIDs(10+999999, in); len(got) != 0 {
		t.Fatalf("expired too early: %v", got)
	}
	if got := c.ExpireIDs(10+1000000, in); !reflect.DeepEqual(got, []string{"idle"}) {
		t.Fatalf("expired %v, want [idle] (an ongoing transaction never expires)", got)
	}
	eff := c.Ready()
	if len(eff.Records) != 1 || eff.Records[0].Value != nil {
		t.Fatalf("want one tombstone, got %+v", eff.Records)
	}
	if _, code := c.Describe("idle", in); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe an expired id: %s", errName(code))
	}
	// A tombstone removes the id on replay too.
	l, _ := newTest(t)
	l.Load(record(&Txn{ID: "idle", ProducerID: 5, State: Empty, Partitions: map[Partition]struct{}{}}).Key,
		record(&Txn{ID: "idle", ProducerID: 5, State: Empty, Partitions: map[Partition]struct{}{}}).Value)
	l.Load(eff.Records[0].Key, nil)
	if l.Len() != 0 {
		t.Fatal("tombstone did not remove the id on load")
	}
}

func TestList(t *testing.T) {
	c, in := newTest(t)
	a := c.InitProducerID(0, "alpha", 1000, -1, -1, in)
	c.InitProducerID(0, "beta", 1000, -1, -1, in)
	c.AddPartitions(100, "alpha", a.ProducerID, 0, []Partition{tpA}, 0, in)
	all := func(f ListFilter) []string {
		l, _ := c.List(1000, f, in)
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
	if _, unknown := c.List(0, ListFilter{States: []string{"Ongoing", "Bogus"}, DurationMs: -1}, in); !reflect.DeepEqual(unknown, []string{"Bogus"}) {
		t.Errorf("unknown states %v", unknown)
	}
}

func TestV2EndWithAnExhaustedEpochRotatesAtCompletion(t *testing.T) {
	c, in := newTestTV(t, 2)
	r := c.InitProducerID(1, "id", 1000, -1, -1, in)
	c.AddPartitions(2, "id", r.ProducerID, 0, []Partition{tpA}, 2, in)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	e := c.EndTxn(3, "id", r.ProducerID, math.MaxInt16-1, true, 2, in)
	if e.ErrorCode != 0 || e.ProducerID != r.ProducerID || e.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("end with an exhausted epoch: %+v", e)
	}
	eff := c.Ready()
	if len(eff.Markers) != 1 || eff.Markers[0].ProducerEpoch != math.MaxInt16 || eff.Markers[0].TransactionVersion != 2 {
		t.Fatalf("markers %+v", eff.Markers)
	}
	c.MarkersWritten(4, "id", r.ProducerID, math.MaxInt16, eff.Markers[0].Partitions)
	d, _ := c.Describe("id", in)
	if d.State != CompleteCommit || d.ProducerID == r.ProducerID || d.ProducerEpoch != 0 || d.PreviousProducerID != r.ProducerID {
		t.Fatalf("after completion: %+v", d)
	}
	// The client retries with the identity it had: a retry on overflow.
	if rr := c.EndTxn(5, "id", r.ProducerID, math.MaxInt16-1, true, 2, in); rr.ErrorCode != 0 || rr.ProducerID != d.ProducerID || rr.ProducerEpoch != 0 {
		t.Fatalf("retry after the rotation: %+v", rr)
	}
	// A fence of a V2 transaction at the last usable epoch rotates too.
	c.AddPartitions(6, "id", d.ProducerID, 0, []Partition{tpA}, 2, in)
	c.txns["id"].ProducerEpoch = math.MaxInt16 - 1
	c.AbortTimedOut(1<<40, in)
	f, _ := c.Describe("id", in)
	if f.State != PrepareAbort || f.ProducerEpoch != math.MaxInt16 || f.NextProducerID < 0 {
		t.Fatalf("fence at the last epoch: %+v", f)
	}
}

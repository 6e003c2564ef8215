package share

import (
	"errors"
	"testing"
	"time"
)

// TestLoadStartOffset follows SharePartition.maybeInitialize and
// startOffsetDuringInitialization.
func TestLoadStartOffset(t *testing.T) {
	log := LogOffsets{Earliest: 5, Latest: 90, ForTimestamp: func(ts int64) int64 {
		if ts == t0.Add(-time.Hour).UnixMilli() {
			return 42
		}
		return -7
	}}
	byHour, err := ParseAutoOffsetReset("by_duration:PT1H")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		st         PersistedState
		reset      AutoOffsetReset
		start, end int64
		next       int64
	}{
		{"persisted", PersistedState{StartOffset: 17}, AutoOffsetReset{Kind: ResetEarliest}, 17, 17, 17},
		{"latest", PersistedState{StartOffset: -1}, AutoOffsetReset{Kind: ResetLatest}, 90, 90, 90},
		{"earliest", PersistedState{StartOffset: -1}, AutoOffsetReset{Kind: ResetEarliest}, 5, 5, 5},
		{"by duration", PersistedState{StartOffset: -1}, byHour, 42, 42, 42},
		// The acknowledged head is dropped at load; the start offset moves
		// to the next batch.
		{"acked head", PersistedState{StartOffset: 10, Batches: []StateBatch{
			{10, 14, Acknowledged, 1}, {15, 19, Available, 2}}}, AutoOffsetReset{}, 15, 19, 15},
		// Everything finished: the cache empties, both offsets past it.
		{"all finished", PersistedState{StartOffset: 10, Batches: []StateBatch{
			{10, 14, Acknowledged, 1}, {15, 19, Archived, 5}}}, AutoOffsetReset{}, 20, 20, 20},
		// A gap before the first batch: the next fetch fills it first.
		{"gap", PersistedState{StartOffset: 10, Batches: []StateBatch{
			{12, 14, Acknowledged, 1}, {18, 19, Available, 1}}}, AutoOffsetReset{}, 10, 19, 10},
		// ACQUIRED is never written by Kafka; were it, it loads available.
		{"acquired", PersistedState{StartOffset: 0, Batches: []StateBatch{{0, 3, Acquired, 2}}}, AutoOffsetReset{}, 0, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load(DefaultConfig(), 1, tt.st, tt.reset, log, t0)
			if err != nil {
				t.Fatal(err)
			}
			wantOffsets(t, p, tt.start, tt.end)
			if got := p.NextFetchOffset(); got != tt.next {
				t.Fatalf("next fetch offset %d, want %d", got, tt.next)
			}
		})
	}
}

// TestLoadRefusesBadState: Kafka fails initialization (IllegalStateException)
// for a batch below the start offset or reversed, and for an unknown state.
func TestLoadRefusesBadState(t *testing.T) {
	for _, b := range [][]StateBatch{
		{{4, 6, Available, 1}},
		{{12, 11, Available, 1}},
		{{10, 12, RecordState(9), 1}},
		{{10, 12, Available, 1}, {12, 13, Available, 1}},
	} {
		if _, err := Load(DefaultConfig(), 1, PersistedState{StartOffset: 5, Batches: b}, AutoOffsetReset{}, LogOffsets{}, t0); err == nil {
			t.Fatalf("loaded %v", b)
		}
	}
}

// TestLoadRestoresDeliveryCounts: a record acquired before a restart comes
// back available with its last written count and is delivered with one more.
func TestLoadRestoresDeliveryCounts(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 10))
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	acquire(p, "a", 0, batches(0, 10)) // count 2, acquisition not written
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 1, Accept)}, t0); err != nil {
		t.Fatal(err)
	}
	snap := p.Snapshot()
	want := []StateBatch{{2, 9, Available, 1}}
	if snap.StartOffset != 2 || len(snap.Batches) != 1 || snap.Batches[0] != want[0] {
		t.Fatalf("snapshot %+v, want start 2 and %v", snap, want)
	}
	q, err := Load(DefaultConfig(), 4, snap, AutoOffsetReset{}, LogOffsets{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, q, 5, Available, 1, "")
	got, _ := acquire(q, "b", q.NextFetchOffset(), batches(0, 10))
	wantRanges(t, got, AcquiredRange{2, 9, 2})
}

// TestParseAutoOffsetReset follows ShareGroupAutoOffsetResetStrategy and
// AutoOffsetResetStrategy.fromString with java.time.Duration.parse.
func TestParseAutoOffsetReset(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		kind ResetKind
		d    time.Duration
	}{
		{"earliest", true, ResetEarliest, 0},
		{"latest", true, ResetLatest, 0},
		{"by_duration:PT1H", true, ResetByDuration, time.Hour},
		{"by_duration:P1DT2H3M4.5S", true, ResetByDuration, 26*time.Hour + 3*time.Minute + 4500*time.Millisecond},
		{"by_duration:pt10m", true, ResetByDuration, 10 * time.Minute},
		{"by_duration:PT0S", true, ResetByDuration, 0},
		{"by_duration:PT-1S", false, 0, 0},
		{"by_duration:-PT1S", false, 0, 0},
		{"by_duration:PT", false, 0, 0},
		{"by_duration:P", false, 0, 0},
		{"by_duration:1H", false, 0, 0},
		{"by_duration:PT1.1234567891S", false, 0, 0},
		{"by_duration", false, 0, 0},
		{"none", false, 0, 0},
		{"EARLIEST", false, 0, 0},
		{"by_duration:PT1H30X", false, 0, 0},
	}
	for _, tt := range tests {
		r, err := ParseAutoOffsetReset(tt.in)
		if (err == nil) != tt.ok {
			t.Fatalf("%q: error %v, want ok=%v", tt.in, err, tt.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrAutoOffsetReset) {
				t.Fatalf("%q: error %v is not ErrAutoOffsetReset", tt.in, err)
			}
			continue
		}
		if r.Kind != tt.kind || r.Duration != tt.d {
			t.Fatalf("%q: %+v, want kind %d duration %v", tt.in, r, tt.kind, tt.d)
		}
	}
}

// TestAcquireNew follows acquireNewBatchRecords and createBatches.
func TestAcquireNew(t *testing.T) {
	tests := []struct {
		name      string
		mode      AcquireMode
		batchSize int
		max       int
		sizes     []int
		want      []AcquiredRange
		count     int
		end       int64
		next      int64
	}{
		{"one range", BatchOptimized, 500, 500, []int{5, 5}, []AcquiredRange{{0, 9, 1}}, 10, 9, 10},
		{"split at batch size", BatchOptimized, 5, 500, []int{5, 5, 3}, []AcquiredRange{{0, 4, 1}, {5, 9, 1}, {10, 12, 1}}, 13, 12, 13},
		// Batch optimized rounds up to the end of the batch holding the
		// last wanted offset.
		{"whole batches", BatchOptimized, 500, 3, []int{5, 5}, []AcquiredRange{{0, 4, 1}}, 5, 4, 5},
		// Record limit stops at MaxRecords; the rest of the batch is
		// tracked per offset and left available with no delivery.
		{"record limit", RecordLimit, 500, 3, []int{5, 5}, []AcquiredRange{{0, 2, 1}}, 3, 4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fresh(t, DefaultConfig(), 0)
			got, n := p.Acquire(AcquireRequest{Member: "a", Mode: tt.mode, BatchSize: tt.batchSize, MaxRecords: tt.max,
				Batches: batches(0, tt.sizes...), Now: t0})
			wantRanges(t, got, tt.want...)
			if n != tt.count {
				t.Fatalf("count %d, want %d", n, tt.count)
			}
			wantOffsets(t, p, 0, tt.end)
			if next := p.NextFetchOffset(); next != tt.next {
				t.Fatalf("next fetch offset %d, want %d", next, tt.next)
			}
		})
	}
	p := fresh(t, DefaultConfig(), 0)
	p.Acquire(AcquireRequest{Member: "a", Mode: RecordLimit, MaxRecords: 3, Batches: batches(0, 5), Now: t0})
	wantState(t, p, 3, Available, 0, "")
	got, _ := p.Acquire(AcquireRequest{Member: "b", Mode: RecordLimit, MaxRecords: 3, FetchOffset: 3, Batches: batches(0, 5, 5), Now: t0})
	wantRanges(t, got, AcquiredRange{3, 4, 1}, AcquiredRange{5, 5, 1})
}

// TestAcquireBelowStart: a fetch below the start offset begins at it.
func TestAcquireBelowStart(t *testing.T) {
	p := fresh(t, DefaultConfig(), 7)
	got, n := acquire(p, "a", 7, batches(5, 5))
	wantRanges(t, got, AcquiredRange{7, 9, 1})
	if n != 3 {
		t.Fatalf("count %d", n)
	}
	if got, _ := acquire(p, "a", 0, batches(0, 5)); len(got) != 0 {
		t.Fatalf("acquired below the start offset: %v", got)
	}
	if got, _ := p.Acquire(AcquireRequest{Member: "a", MaxRecords: 0, Batches: batches(10, 5)}); len(got) != 0 {
		t.Fatal("acquired with no records wanted")
	}
}

// TestAcquireInFlightLimit follows lastOffsetAndMaxRecordsToAcquire.
func TestAcquireInFlightLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlightRecords = 10
	p := fresh(t, cfg, 0)
	// The limit is soft: the batch holding the tenth record goes whole.
	got, n := acquire(p, "a", 0, batches(0, 8, 8))
	wantRanges(t, got, AcquiredRange{0, 15, 1})
	if n != 16 || p.InFlightCount() != 16 || p.CanAcquire() {
		t.Fatalf("count %d in flight %d can acquire %v", n, p.InFlightCount(), p.CanAcquire())
	}
	if got, _ := acquire(p, "b", 16, batches(16, 4)); len(got) != 0 {
		t.Fatalf("acquired past the limit: %v", got)
	}
	// At the limit, released records below the end offset still go.
	if _, err := p.Acknowledge("a", []AckBatch{ack(8, 15, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	if !p.CanAcquire() {
		t.Fatal("cannot acquire released records")
	}
	got, _ = acquire(p, "b", 8, batches(8, 8, 4))
	wantRanges(t, got, AcquiredRange{8, 15, 2})
}

// TestAcquireSkipsAndReacquires: acquired ranges are skipped; released
// ones go again first, with one more delivery.
func TestAcquireSkipsAndReacquires(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 5, 5))
	got, _ := acquire(p, "b", 0, batches(0, 5, 5, 5))
	wantRanges(t, got, AcquiredRange{10, 14, 1})
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	if next := p.NextFetchOffset(); next != 0 {
		t.Fatalf("next fetch offset %d", next)
	}
	got, _ = acquire(p, "c", 0, batches(0, 5, 5, 5, 5))
	wantRanges(t, got, AcquiredRange{0, 9, 2}, AcquiredRange{15, 19, 1})
	wantState(t, p, 12, Acquired, 1, "b")
}

// TestAcquirePerOffset: a partly acknowledged batch is tracked per offset
// and its available offsets are acquired one by one, merged.
func TestAcquirePerOffset(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 10))
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 2, Accept), ack(3, 5, Release), ack(6, 6, Reject)}, t0); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, p, 3, 9)
	wantState(t, p, 6, Archived, 1, "")
	got, n := acquire(p, "b", 3, batches(0, 10, 2))
	wantRanges(t, got, AcquiredRange{3, 5, 2}, AcquiredRange{10, 11, 1})
	if n != 5 {
		t.Fatalf("count %d", n)
	}
}

// TestAcquireThrottles follows acquireSubsetBatchRecords and
// shouldThrottleRecordsDelivery: from half the delivery limit, a batch
// goes in halves, and a record on its last delivery goes alone.
func TestAcquireThrottles(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0) // limit 5: throttled from 3
	fetch := batches(0, 10)
	for i := 0; i < 3; i++ {
		acquire(p, "a", 0, fetch)
		if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Release)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := acquire(p, "a", 0, fetch) // count 3: 10 >> 1 records
	wantRanges(t, got, AcquiredRange{0, 4, 4})
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 4, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	got, _ = acquire(p, "a", 0, fetch) // offset 0 on its last delivery
	wantRanges(t, got, AcquiredRange{0, 0, 5})
	got, _ = acquire(p, "b", 1, fetch) // offset 1 on its last delivery too
	wantRanges(t, got, AcquiredRange{1, 1, 5})
	w, err := p.Acknowledge("a", []AckBatch{ack(0, 0, Release)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Batches) != 1 || w.Batches[0] != (StateBatch{0, 0, Archived, 5}) {
		t.Fatalf("write %+v", w)
	}
}

// TestAcquireReadCommitted follows maybeFilterAbortedTransactionalAcquiredRecords:
// records of an aborted transaction are archived, never handed out; the
// abort marker is.
func TestAcquireReadCommitted(t *testing.T) {
	fetch := []FetchedBatch{
		{BaseOffset: 0, LastOffset: 2, ProducerID: 7, Transactional: true},
		{BaseOffset: 3, LastOffset: 4, ProducerID: 8, Transactional: true},
		{BaseOffset: 5, LastOffset: 5, ProducerID: 7, Transactional: true, Control: true, AbortMarker: true},
		{BaseOffset: 6, LastOffset: 7, ProducerID: 7, Transactional: true},
		{BaseOffset: 8, LastOffset: 9, ProducerID: -1},
	}
	for _, committed := range []bool{false, true} {
		p := fresh(t, DefaultConfig(), 0)
		got, n := p.Acquire(AcquireRequest{Member: "a", MaxRecords: 500, BatchSize: 500, Batches: fetch,
			ReadCommitted: committed, Aborted: []AbortedTxn{{ProducerID: 7, FirstOffset: 0}}, Now: t0})
		if !committed {
			wantRanges(t, got, AcquiredRange{0, 9, 1})
			continue
		}
		wantRanges(t, got, AcquiredRange{3, 9, 1})
		if n != 7 {
			t.Fatalf("count %d", n)
		}
		wantState(t, p, 1, Archived, 1, "")
		wantState(t, p, 6, Acquired, 1, "a")
		// The archived head is passed once the next change lands.
		if _, err := p.Acknowledge("a", []AckBatch{ack(3, 9, Accept)}, t0); err != nil {
			t.Fatal(err)
		}
		wantOffsets(t, p, 10, 10)
	}
}

// TestAcquireAbortedBelowStart: an aborted batch that begins below the
// start offset still has its acquired records archived. Kafka fails the
// fetch there and leaves them locked, handed to no one.
func TestAcquireAbortedBelowStart(t *testing.T) {
	p := fresh(t, DefaultConfig(), 1)
	fetch := []FetchedBatch{
		{BaseOffset: 0, LastOffset: 4, ProducerID: 9, Transactional: true},
		{BaseOffset: 5, LastOffset: 5, ProducerID: 9, Transactional: true, Control: true, AbortMarker: true},
	}
	got, n := p.Acquire(AcquireRequest{Member: "a", MaxRecords: 1, BatchSize: 7, FetchOffset: 1, Batches: fetch,
		ReadCommitted: true, Aborted: []AbortedTxn{{ProducerID: 9, FirstOffset: 0}}, Now: t0})
	if len(got) != 0 || n != 0 {
		t.Fatalf("acquired %v (%d)", got, n)
	}
	for off := int64(1); off <= 4; off++ {
		wantState(t, p, off, Archived, 1, "")
	}
}

// TestAcquireFillsPersistedGaps: offsets missing from the persisted state
// are new and acquired in order with the available ones.
func TestAcquireFillsPersistedGaps(t *testing.T) {
	p, err := Load(DefaultConfig(), 1, PersistedState{StartOffset: 10, Batches: []StateBatch{
		{12, 13, Acknowledged, 1}, {16, 17, Available, 2}}}, AutoOffsetReset{}, LogOffsets{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	got, n := acquire(p, "a", 10, batches(10, 2, 2, 2, 2, 2))
	wantRanges(t, got, AcquiredRange{10, 11, 1}, AcquiredRange{14, 15, 1}, AcquiredRange{16, 17, 3}, AcquiredRange{18, 19, 1})
	if n != 8 {
		t.Fatalf("count %d", n)
	}
}

// TestArchiveStaleBatches: a fetch that finds its first batch above the
// fetch offset archives the available offsets in between.
func TestArchiveStaleBatches(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 5, 5))
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	got, _ := acquire(p, "b", 0, batches(5, 5))
	wantRanges(t, got, AcquiredRange{5, 9, 2})
	wantState(t, p, 2, Archived, 1, "")
}

// TestAdvanceLogStart follows updateCacheAndOffsets.
func TestAdvanceLogStart(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 5, 5))
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 4, Release)}, t0); err != nil {
		t.Fatal(err)
	}
	p.AdvanceLogStart(7)
	wantOffsets(t, p, 7, 9)
	wantState(t, p, 2, Archived, 1, "")
	wantState(t, p, 6, Acquired, 1, "a") // acquired stays until it ends
	p.AdvanceLogStart(3)                 // never backwards
	wantOffsets(t, p, 7, 9)
	w := p.Tick(t0.Add(time.Minute))
	if len(w.Batches) != 5 || w.Batches[0] != (StateBatch{5, 5, Archived, 1}) || w.Batches[2] != (StateBatch{7, 7, Available, 1}) {
		t.Fatalf("write %+v", w.Batches)
	}
	q := fresh(t, DefaultConfig(), 0)
	q.AdvanceLogStart(50)
	wantOffsets(t, q, 50, 50)
}

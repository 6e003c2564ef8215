package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAcknowledge follows SharePartition.acknowledge and its helpers
// (fetchSubMapForAcknowledgementBatch, acknowledgeBatchRecords,
// acknowledgeCompleteBatch, acknowledgePerOffsetBatchRecords). Member a
// holds 0-9 (one batch) and b holds 10-14 (another); 15-19 (a third) were
// released.
func TestAcknowledge(t *testing.T) {
	tests := []struct {
		name   string
		member string
		acks   []AckBatch
		code   *kerr.Error
		msg    string
		start  int64
		writes []StateBatch
	}{
		{"accept whole batch", "a", []AckBatch{ack(0, 9, Accept)}, nil, "", 10,
			[]StateBatch{{0, 9, Acknowledged, 1}}},
		{"release whole batch", "a", []AckBatch{ack(0, 9, Release)}, nil, "", 0,
			[]StateBatch{{0, 9, Available, 1}}},
		{"reject and gap", "a", []AckBatch{ack(0, 1, Reject, Gap)}, nil, "", 2,
			[]StateBatch{{0, 0, Archived, 1}, {1, 1, Archived, 1}}},
		{"per offset types", "a", []AckBatch{ack(0, 2, Accept, Release, Accept)}, nil, "", 1,
			[]StateBatch{{0, 0, Acknowledged, 1}, {1, 1, Available, 1}, {2, 2, Acknowledged, 1}}},
		{"second batch", "b", []AckBatch{ack(10, 14, Accept)}, nil, "", 0,
			[]StateBatch{{10, 14, Acknowledged, 1}}},
		{"renew writes nothing", "a", []AckBatch{ack(0, 9, Renew)}, nil, "", 0, nil},
		{"other member's batch", "b", []AckBatch{ack(0, 9, Accept)}, kerr.InvalidRecordState,
			"Member is not the owner of batch record", 0, nil},
		{"other member's offset", "b", []AckBatch{ack(10, 10, Accept), ack(0, 0, Accept)}, kerr.InvalidRecordState,
			"Member is not the owner of batch record", 0, nil},
		{"released batch", "a", []AckBatch{ack(15, 19, Accept)}, kerr.InvalidRecordState,
			"The batch cannot be acknowledged. The batch is not in the acquired state.", 0, nil},
		{"released subset", "b", []AckBatch{ack(15, 16, Accept)}, kerr.InvalidRecordState,
			"The batch cannot be acknowledged. The batch is not in the acquired state.", 0, nil},
		{"past acquired", "b", []AckBatch{ack(18, 25, Accept)}, kerr.InvalidRequest,
			"Batch record not found. The last offset in request is past acquired records.", 0, nil},
		{"beyond everything", "b", []AckBatch{ack(30, 31, Accept)}, kerr.InvalidRequest,
			"Batch record not found. The first offset in request is past acquired records.", 0, nil},
		{"unknown type", "a", []AckBatch{ack(0, 0, AckType(5))}, kerr.InvalidRequest,
			"Invalid acknowledge type: [5]", 0, nil},
		{"wrong type count", "a", []AckBatch{ack(0, 3, Accept, Accept)}, kerr.InvalidRequest,
			"Invalid acknowledge type: [1, 1]", 0, nil},
		{"reversed", "a", []AckBatch{ack(3, 2, Accept)}, kerr.InvalidRequest,
			"Invalid acknowledgement batch 3-2", 0, nil},
		// The first batch succeeds, the second fails: the whole request
		// for the partition is refused and the first undone.
		{"partial failure undone", "a", []AckBatch{ack(0, 4, Accept), ack(10, 10, Accept)}, kerr.InvalidRecordState,
			"Member is not the owner of batch record", 0, nil},
		{"same offset twice", "a", []AckBatch{ack(0, 9, Accept), ack(0, 9, Accept)}, kerr.InvalidRecordState,
			"The batch cannot be acknowledged. The batch is not in the acquired state.", 0, nil},
		{"same offset twice per offset", "a", []AckBatch{ack(0, 1, Accept), ack(1, 1, Accept)}, kerr.InvalidRecordState,
			"The offset cannot be acknowledged. The offset is not acquired.", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fresh(t, DefaultConfig(), 0)
			acquire(p, "a", 0, batches(0, 10))
			p.Acquire(AcquireRequest{Member: "b", MaxRecords: 500, BatchSize: 5, FetchOffset: 10, Batches: batches(10, 5, 5), Now: t0})
			if _, err := p.Acknowledge("b", []AckBatch{ack(15, 19, Release)}, t0); err != nil {
				t.Fatal(err)
			}
			before := dump(p)
			w, err := p.Acknowledge(tt.member, tt.acks, t0)
			wantCode(t, err, tt.code)
			if err != nil {
				if e, ok := err.(*Error); !ok || e.Message != tt.msg {
					t.Fatalf("error %q, want %q", err, tt.msg)
				}
				if after := dump(p); !reflect.DeepEqual(before, after) {
					t.Fatalf("refusal changed the state:\n%v\n%v", before, after)
				}
				return
			}
			if !reflect.DeepEqual(w.Batches, tt.writes) {
				t.Fatalf("wrote %v, want %v", w.Batches, tt.writes)
			}
			if w.StartOffset != 0 || w.StateEpoch != 1 || w.LeaderEpoch != 3 {
				t.Fatalf("write header %+v", w)
			}
			if p.StartOffset() != tt.start {
				t.Fatalf("start offset %d, want %d", p.StartOffset(), tt.start)
			}
		})
	}
}

// TestAcknowledgeBelowStart: batches wholly below the start offset are
// finished already and skipped.
func TestAcknowledgeBelowStart(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 10))
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Accept)}, t0); err != nil {
		t.Fatal(err)
	}
	w, err := p.Acknowledge("a", []AckBatch{ack(2, 5, Accept)}, t0)
	if err != nil || !w.Empty() {
		t.Fatalf("write %+v error %v", w, err)
	}
	// Never acquired, above the start offset: not in the cache.
	_, err = p.Acknowledge("a", []AckBatch{ack(10, 12, Accept)}, t0)
	wantCode(t, err, kerr.InvalidRecordState)
}

// TestWriteCarriesCounts: the write carries the start offset and the
// delivery-complete count before the start offset moves.
func TestWriteCarriesCounts(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 10))
	w, err := p.Acknowledge("a", []AckBatch{ack(0, 4, Accept), ack(7, 7, Reject)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if w.StartOffset != 0 || w.DeliveryCompleteCount != 6 || len(w.Batches) != 6 {
		t.Fatalf("write %+v", w)
	}
	if p.StartOffset() != 5 {
		t.Fatalf("start offset %d", p.StartOffset())
	}
	w, _ = p.Acknowledge("a", []AckBatch{ack(5, 5, Accept)}, t0)
	if w.StartOffset != 5 || w.DeliveryCompleteCount != 2 {
		t.Fatalf("write %+v", w)
	}
}

// TestRenew follows the RENEW branches (KIP-1222): the lock runs from the
// renewal; disabled by share.renew.acknowledge.enable=false.
func TestRenew(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 5, 5))
	if d, ok := p.NextDeadline(); !ok || !d.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if _, err := p.Acknowledge("a", []AckBatch{ack(0, 9, Renew)}, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if w := p.Tick(t0.Add(31 * time.Second)); !w.Empty() {
		t.Fatalf("renewed lock fired: %+v", w)
	}
	// Per offset: renew 3, accept 4.
	if _, err := p.Acknowledge("a", []AckBatch{ack(3, 4, Renew, Accept)}, t0.Add(40*time.Second)); err != nil {
		t.Fatal(err)
	}
	w := p.Tick(t0.Add(50 * time.Second))
	if len(w.Batches) != 8 {
		t.Fatalf("timeout wrote %v", w.Batches)
	}
	wantState(t, p, 3, Acquired, 1, "a")
	wantState(t, p, 5, Available, 1, "")
	if w := p.Tick(t0.Add(70 * time.Second)); len(w.Batches) != 1 {
		t.Fatalf("timeout wrote %v", w.Batches)
	}

	cfg := DefaultConfig()
	cfg.RenewEnabled = false
	q := fresh(t, cfg, 0)
	acquire(q, "a", 0, batches(0, 5))
	for _, a := range []AckBatch{ack(0, 4, Renew), ack(0, 1, Renew, Accept)} {
		_, err := q.Acknowledge("a", []AckBatch{a}, t0)
		wantCode(t, err, kerr.InvalidRecordState)
	}
}

// TestLockTimeout follows releaseAcquisitionLockOnTimeout: available
// again, archived at the delivery count limit.
func TestLockTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxDeliveryCount = 2
	cfg.LockDuration = 15 * time.Second
	p := fresh(t, cfg, 0)
	now := t0
	r := AcquireRequest{Member: "a", MaxRecords: 100, BatchSize: 100, Batches: batches(0, 10)}
	r.Now = now
	got, _ := p.Acquire(r)
	wantRanges(t, got, AcquiredRange{0, 9, 1})
	if w := p.Tick(now.Add(14 * time.Second)); !w.Empty() {
		t.Fatal("fired early")
	}
	now = now.Add(15 * time.Second)
	w := p.Tick(now)
	if len(w.Batches) != 1 || w.Batches[0] != (StateBatch{0, 9, Available, 1}) {
		t.Fatalf("timeout wrote %v", w.Batches)
	}
	r.Now = now
	got, _ = p.Acquire(r)
	wantRanges(t, got, AcquiredRange{0, 9, 2})
	w = p.Tick(now.Add(15 * time.Second))
	if len(w.Batches) != 1 || w.Batches[0] != (StateBatch{0, 9, Archived, 2}) {
		t.Fatalf("timeout wrote %v", w.Batches)
	}
	wantOffsets(t, p, 10, 10)
	if _, ok := p.NextDeadline(); ok {
		t.Fatal("a lock is still armed")
	}
}

// TestReleaseMember follows releaseAcquiredRecords: only the member's
// records go back.
func TestReleaseMember(t *testing.T) {
	p := fresh(t, DefaultConfig(), 0)
	acquire(p, "a", 0, batches(0, 5))
	acquire(p, "b", 5, batches(5, 5))
	acquire(p, "a", 10, batches(10, 5))
	if _, err := p.Acknowledge("a", []AckBatch{ack(10, 11, Accept)}, t0); err != nil {
		t.Fatal(err)
	}
	w := p.ReleaseMember("a")
	want := []StateBatch{{0, 4, Available, 1}, {12, 12, Available, 1}, {13, 13, Available, 1}, {14, 14, Available, 1}}
	if !reflect.DeepEqual(w.Batches, want) {
		t.Fatalf("wrote %v, want %v", w.Batches, want)
	}
	wantState(t, p, 7, Acquired, 1, "b")
	if w := p.ReleaseMember("nobody"); !w.Empty() {
		t.Fatalf("wrote %v", w.Batches)
	}
	// Below the start offset a released record is archived.
	q := fresh(t, DefaultConfig(), 0)
	acquire(q, "a", 0, batches(0, 5))
	q.AdvanceLogStart(3)
	w = q.ReleaseMember("a")
	if len(w.Batches) != 5 || w.Batches[0].DeliveryState != Archived || w.Batches[4].DeliveryState != Available {
		t.Fatalf("wrote %v", w.Batches)
	}
}

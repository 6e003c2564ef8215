package storage

import (
	"encoding/binary"
	"testing"
)

// controlCodec is a RecordCodec for control batches: one record whose key
// is the control type.
type controlCodec struct{ typ map[int64]uint16 }

func (c controlCodec) Records(b []byte, fn func(int64, []byte, bool) bool) error {
	h, _ := parseHeader(b)
	key := binary.BigEndian.AppendUint16([]byte{0, 0}, c.typ[h.baseOffset])
	fn(h.baseOffset, key, false)
	return nil
}

func (controlCodec) Rebuild(dst, b []byte, _ func(int64) bool, _ int64) ([]byte, error) {
	return append(dst, b...), nil
}

// txnBatch is a header for the tracker: offset, producer, flags.
func txnBatch(offset, producer int64, transactional, control bool) (cleanerHeader, []byte) {
	b := withOffset(makeBatch(batchSpec{records: 1}), offset)
	var attrs uint16
	if transactional {
		attrs |= attrTransactional
	}
	if control {
		attrs |= attrControl
	}
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(producer))
	return parseCleanerHeader(b), b
}

// TestTxnTrackerFollowsKafka walks Kafka's CleanedTransactionMetadata
// cases: aborted data is discardable, an abort marker stays while its
// transaction's data is there, a commit marker stays while its
// transaction's data was seen, and plain batches are never discarded.
func TestTxnTrackerFollowsKafka(t *testing.T) {
	codec := controlCodec{typ: map[int64]uint16{2: controlAbort, 3: controlCommit, 6: controlAbort, 7: controlCommit}}
	type step struct {
		offset, producer       int64
		transactional, control bool
		wantDiscard            bool
	}
	for _, tc := range []struct {
		name    string
		aborted []AbortedTxn
		steps   []step
	}{
		{"no transactions", nil, []step{
			{0, -1, false, false, false},
			{1, 5, false, false, false},
		}},
		{"aborted data and its marker", []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 2}}, []step{
			{0, 1, true, false, true},  // aborted data: discardable
			{1, 9, true, false, false}, // another producer's committed data
			{2, 1, false, true, false}, // abort marker: data of its txn seen, kept
			{3, 9, false, true, false}, // commit marker: its data was seen, kept
		}},
		{"markers whose data is gone", []AbortedTxn{{ProducerID: 1, FirstOffset: 6, LastOffset: 6}}, []step{
			{6, 1, false, true, true}, // abort marker, no data left: discardable
			{7, 2, false, true, true}, // commit marker, no data seen: discardable
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTxnTracker(tc.aborted)
			for _, s := range tc.steps {
				h, b := txnBatch(s.offset, s.producer, s.transactional, s.control)
				var got bool
				if s.control {
					var err error
					if got, err = tr.onControlBatch(h, b, codec); err != nil {
						t.Fatal(err)
					}
				} else {
					got = tr.onBatch(h)
				}
				if got != s.wantDiscard {
					t.Fatalf("batch at %d: discardable %v, want %v", s.offset, got, s.wantDiscard)
				}
			}
		})
	}
}

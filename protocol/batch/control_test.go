package batch

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestEndTxnMarkerRoundTrip builds commit and abort markers and checks the
// batch Kafka's withEndTransactionMarker would write: a valid CRC,
// transactional and control attributes, no sequence, one record whose key
// and value are the EndTransactionMarker v0 bytes.
func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 3}, {Commit: false, CoordinatorEpoch: -1}} {
		b, err := AppendEndTxnMarker(nil, 42, 7, 5, 1700000000000, m)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(b)
		if err != nil {
			t.Fatalf("marker does not check: %v", err)
		}
		if !h.Control() || !h.Transactional() || h.ProducerID != 42 || h.ProducerEpoch != 7 || h.BaseSequence != -1 ||
			h.RecordCount != 1 || h.LastOffsetDelta != 0 || h.PartitionLeaderEpoch != 5 || h.MaxTimestamp != 1700000000000 {
			t.Fatalf("header %+v", h)
		}
		err = ForEachRecord(b, nil, func(_ *Header, r *Record) bool {
			typ := uint16(0)
			if m.Commit {
				typ = 1
			}
			wantKey := binary.BigEndian.AppendUint16([]byte{0, 0}, typ)
			wantValue := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(m.CoordinatorEpoch))
			if string(r.Key) != string(wantKey) || string(r.Value) != string(wantValue) || len(r.Headers) != 0 {
				t.Errorf("record key %x value %x, want %x %x", r.Key, r.Value, wantKey, wantValue)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := ParseEndTxnMarker(b, nil)
		if err != nil || !ok || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v, %v; want %+v", got, ok, err, m)
		}
	}
}

func TestParseEndTxnMarkerRefusals(t *testing.T) {
	control := func(key, value []byte, records bool) []byte {
		recs := []Record{{Key: key, Value: value}}
		b, err := AppendBatch(nil, BuildOptions{ProducerID: 1, ProducerEpoch: 0, BaseSequence: -1, Transactional: true,
			Control: true, PartitionLeaderEpoch: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if !records { // what the cleaner leaves of a marker: the header alone
			b = b[:61]
			binary.BigEndian.PutUint32(b[8:], 61-12)
			binary.BigEndian.PutUint32(b[57:], 0)
			binary.BigEndian.PutUint32(b[17:], computeCRC(b))
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		b       []byte
		ok      bool
		invalid bool
	}{
		{"newer value version read as v0", control([]byte{0, 0, 0, 1}, []byte{0, 1, 0, 0, 0, 9, 1}, true), true, false},
		{"emptied by the cleaner", control([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 9}, false), false, false},
		{"short key", control([]byte{0, 0, 1}, []byte{0, 0, 0, 0, 0, 9}, true), false, true},
		{"leader change is not a marker", control([]byte{0, 0, 0, 2}, []byte{0, 0, 0, 0, 0, 9}, true), false, true},
		{"short value", control([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 9}, true), false, true},
		{"negative value version", control([]byte{0, 0, 0, 0}, []byte{0xff, 0xff, 0, 0, 0, 9}, true), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := ParseEndTxnMarker(tc.b, nil)
			if ok != tc.ok || errors.Is(err, ErrInvalidRecord) != tc.invalid {
				t.Fatalf("ok %v, err %v", ok, err)
			}
		})
	}
}

// FuzzParseEndTxnMarker feeds arbitrary bytes as a control batch.
// Invariants: it never panics, and a marker it accepts re-encodes to a
// marker that parses to the same value.
func FuzzParseEndTxnMarker(f *testing.F) {
	b, _ := AppendEndTxnMarker(nil, 1, 2, 3, 4, EndTxnMarker{Commit: true, CoordinatorEpoch: 5})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok, err := ParseEndTxnMarker(b, nil)
		if err != nil || !ok {
			return
		}
		again, err := AppendEndTxnMarker(nil, 1, 0, -1, 0, m)
		if err != nil {
			t.Fatal(err)
		}
		if m2, ok, err := ParseEndTxnMarker(again, nil); err != nil || !ok || m2 != m {
			t.Fatalf("%+v re-parsed as %+v, %v, %v", m, m2, ok, err)
		}
	})
}

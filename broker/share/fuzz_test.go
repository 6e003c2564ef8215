package share

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fuzzPartition is a share partition with a bit of everything in flight:
// a holds 0-9 whole and 20-24 per offset, b holds 10-14, 15-19 were
// released, 25-29 are acknowledged in part.
func fuzzPartition(tb testing.TB) *Partition {
	tb.Helper()
	p, err := Load(DefaultConfig(), 1, PersistedState{StartOffset: 0}, AutoOffsetReset{}, LogOffsets{}, t0)
	if err != nil {
		tb.Fatal(err)
	}
	p.Acquire(AcquireRequest{Member: "a", MaxRecords: 10, BatchSize: 10, Batches: batches(0, 10), Now: t0})
	p.Acquire(AcquireRequest{Member: "b", MaxRecords: 10, BatchSize: 5, FetchOffset: 10, Batches: batches(10, 5, 5), Now: t0})
	if _, err := p.Acknowledge("b", []AckBatch{ack(15, 19, Release)}, t0); err != nil {
		tb.Fatal(err)
	}
	p.Acquire(AcquireRequest{Member: "a", Mode: RecordLimit, MaxRecords: 5, FetchOffset: 20, Batches: batches(20, 10), Now: t0})
	p.Acquire(AcquireRequest{Member: "b", MaxRecords: 5, FetchOffset: 25, Batches: batches(20, 10), Now: t0})
	if _, err := p.Acknowledge("b", []AckBatch{ack(25, 26, Accept)}, t0); err != nil {
		tb.Fatal(err)
	}
	return p
}

// decodeAcks turns fuzz bytes into a member and acknowledgement batches:
// per batch a first offset byte, a length byte, a type-count byte and
// the types. Offsets stay small so they hit the in-flight range.
func decodeAcks(data []byte) (string, []AckBatch) {
	if len(data) == 0 {
		return "", nil
	}
	member := []string{"a", "b", "c", ""}[data[0]%4]
	data = data[1:]
	var acks []AckBatch
	for len(data) >= 3 && len(acks) < 16 {
		first := int64(int8(data[0])) // may be negative
		last := first + int64(data[1]%16) - 1
		n := int(data[2] % 20)
		data = data[3:]
		n = min(n, len(data))
		types := make([]AckType, n)
		for i := range types {
			types[i] = AckType(int8(data[i]) % 7)
		}
		data = data[n:]
		acks = append(acks, AckBatch{FirstOffset: first, LastOffset: last, Types: types})
	}
	return member, acks
}

// FuzzAcknowledge feeds arbitrary acknowledgement requests to a share
// partition. It checks that Acknowledge never panics, that a refusal
// carries INVALID_RECORD_STATE or INVALID_REQUEST and changes no state
// (lock renewals aside, which stand as in Kafka), that a success changes
// only offsets the member held, and that the Write describes exactly the
// offsets changed.
func FuzzAcknowledge(f *testing.F) {
	f.Add([]byte{0, 0, 10, 1, 1})
	f.Add([]byte{1, 10, 5, 1, 2, 15, 3, 1, 1})
	f.Add([]byte{0, 20, 3, 3, 1, 2, 4})
	f.Add([]byte{0, 0, 5, 1, 4, 20, 2, 2, 0, 3})
	f.Add([]byte{2, 250, 20, 1, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := fuzzPartition(t)
		member, acks := decodeAcks(data)
		before := dump(p)
		w, err := p.Acknowledge(member, acks, t0.Add(time.Second))
		after := dump(p)
		if err != nil {
			if !errors.Is(err, kerr.InvalidRecordState) && !errors.Is(err, kerr.InvalidRequest) {
				t.Fatalf("error %v", err)
			}
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("refusal changed the state")
			}
			return
		}
		written := map[int64]bool{}
		for _, b := range w.Batches {
			for off := b.FirstOffset; off <= b.LastOffset; off++ {
				if written[off] {
					t.Fatalf("offset %d written twice", off)
				}
				written[off] = true
				s, ok := after.Offsets[off]
				if !ok && off >= p.StartOffset() {
					t.Fatalf("written offset %d is not in flight", off)
				}
				if ok && (s.State != b.DeliveryState || s.DeliveryCount != int(b.DeliveryCount)) {
					t.Fatalf("offset %d written as %+v, is %+v", off, b, s)
				}
			}
		}
		for off, s := range before.Offsets {
			a, ok := after.Offsets[off]
			if ok && a == s {
				if written[off] {
					t.Fatalf("unchanged offset %d written", off)
				}
				continue
			}
			if s.State != Acquired || s.Member != member || !written[off] {
				t.Fatalf("offset %d changed from %+v to %+v (written %v)", off, s, a, written[off])
			}
		}
	})
}

// FuzzLoad feeds arbitrary persisted state, as a share coordinator's
// ReadShareGroupState answer carries it, to Load. It checks that Load
// never panics, and that a loaded partition's Snapshot loads back to the
// same state.
func FuzzLoad(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 10, 10, 4, 2, 1, 15, 4, 0, 2})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 4, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 3, 5, 5, 4, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 8 {
			return
		}
		st := PersistedState{StateEpoch: 2, StartOffset: int64(binary.BigEndian.Uint64(data))}
		data = data[8:]
		next := max(st.StartOffset, 0)
		for len(data) >= 4 && len(st.Batches) < 64 {
			first := next + int64(data[0]%8) - 1
			last := first + int64(data[1]%8) - 1
			st.Batches = append(st.Batches, StateBatch{first, last, RecordState(int8(data[2]) % 6), int16(int8(data[3]))})
			next = last + 1
			data = data[4:]
		}
		log := LogOffsets{Earliest: 3, Latest: 7, ForTimestamp: func(int64) int64 { return 5 }}
		p, err := Load(DefaultConfig(), 1, st, AutoOffsetReset{Kind: ResetKind(len(data) % 3), Duration: time.Hour}, log, t0)
		if err != nil {
			return
		}
		if p.StartOffset() > p.EndOffset() {
			t.Fatalf("start %d past end %d", p.StartOffset(), p.EndOffset())
		}
		p.NextFetchOffset()
		q, err := Load(DefaultConfig(), 1, p.Snapshot(), AutoOffsetReset{}, LogOffsets{}, t0)
		if err != nil {
			t.Fatalf("snapshot does not load: %v", err)
		}
		a, b := dump(p), dump(q)
		for off := range a.Offsets {
			if off < p.StartOffset() {
				delete(a.Offsets, off)
			}
		}
		if a.Start != b.Start || !reflect.DeepEqual(a.Offsets, b.Offsets) {
			t.Fatalf("snapshot reloads differently:\n%+v\n%+v", a, b)
		}
	})
}

// FuzzParseAutoOffsetReset checks that parsing a share.auto.offset.reset
// value never panics and never yields a negative duration.
func FuzzParseAutoOffsetReset(f *testing.F) {
	for _, s := range []string{"earliest", "latest", "by_duration:PT1H", "by_duration:P2DT3.5S", "by_duration:-PT1S", "by_duration:PT-0.5S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseAutoOffsetReset(s)
		if err == nil && r.Duration < 0 {
			t.Fatalf("%q: negative duration %v", s, r.Duration)
		}
	})
}

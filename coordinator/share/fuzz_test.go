package share

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary key and value bytes to DecodeRecord
// and Load, as a record of __share_group_state (written by anyone)
// arrives at load. Invariants: no panic and no allocation beyond what the
// bytes hold (a batch count is checked against the bytes left); every
// refusal wraps ErrBadRecord; an accepted record writes back as a record
// that decodes to the same state; and a coordinator that loaded it still
// answers.
func FuzzDecodeRecord(f *testing.F) {
	k := Key{"group", topicA, 3}
	o := &Offset{SnapshotEpoch: 2, StateEpoch: 1, LeaderEpoch: 4, StartOffset: 10, DeliveryCompleteCount: 3,
		Batches: []Batch{{10, 19, 0, 1}, {20, 29, 2, 2}}, CreateTimestamp: 5, WriteTimestamp: 6}
	for _, r := range []Record{SnapshotRecord(k, o), UpdateRecord(k, o), TombstoneRecord(k),
		SnapshotRecord(Key{}, &Offset{DeliveryCompleteCount: -1})} {
		f.Add(r.Key, r.Value)
	}
	f.Add([]byte{0, 1, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		typ, k, o, err := DecodeRecord(key, value)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
		} else if o != nil {
			if len(o.Batches) > len(value)/recordBatchSize {
				t.Fatalf("%d batches from %d bytes", len(o.Batches), len(value))
			}
			var again Record
			if typ == SnapshotType {
				again = SnapshotRecord(k, o)
			} else {
				again = UpdateRecord(k, o)
			}
			typ2, k2, o2, err := DecodeRecord(again.Key, again.Value)
			if err != nil || typ2 != typ || k2 != k || !reflect.DeepEqual(o2, o) {
				t.Fatalf("written back, it reads %d %+v %+v %v; was %d %+v %+v", typ2, k2, o2, err, typ, k, o)
			}
		}
		c := New(DefaultConfig())
		if err := c.Load(key, value); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("Load: %v does not wrap ErrBadRecord", err)
		}
		for _, k := range c.Keys() {
			p := part{topic: k.TopicID, partition: k.Partition, leaderEpoch: 1 << 30, stateEpoch: 1 << 30}
			call(t, c, 1, readReq(k.GroupID, p), Inputs{Partitions: func([16]byte) (int32, bool) { return 1 << 30, true }})
			call(t, c, 2, writeReq(k.GroupID, p), Inputs{Partitions: func([16]byte) (int32, bool) { return 1 << 30, true }})
		}
	})
}

// FuzzCombine: Combine never panics, and on batches that begin before
// they end it agrees with the offset-by-offset model.
func FuzzCombine(f *testing.F) {
	f.Add([]byte{0, 4, 0, 1, 5, 9, 2, 1}, []byte{3, 6, 0, 2}, int64(2))
	f.Add([]byte{}, []byte{9, 3, 0, 1}, int64(-1))
	f.Fuzz(func(t *testing.T, a, b []byte, start int64) {
		decode := func(raw []byte, valid bool) []Batch {
			var out []Batch
			for ; len(raw) >= 4 && len(out) < 16; raw = raw[4:] {
				first, last := int64(raw[0]), int64(raw[1])
				if valid && last < first {
					first, last = last, first
				}
				out = append(out, Batch{first, last, int8(raw[2] % 5), int16(raw[3] % 4)})
			}
			return out
		}
		if start < -1 || start > 300 {
			start = int64(binary.BigEndian.Uint16([]byte{byte(start), byte(start >> 8)}) % 300)
		}
		if _, err := Combine(decode(a, false), decode(b, false), start); err != nil && !errors.Is(err, errCombine) {
			t.Fatalf("unexpected error %v", err)
		}
		va, vb := decode(a, true), decode(b, true)
		got, err := Combine(va, vb, start)
		want := modelCombine(va, vb, start)
		if err != nil || (len(got) != 0 || len(want) != 0) && !reflect.DeepEqual(got, want) {
			t.Fatalf("%v + %v from %d:\n got %v %v\nwant %v", va, vb, start, got, err, want)
		}
	})
}

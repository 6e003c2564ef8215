package share

import (
	"errors"
	"reflect"
	"testing"
)

// TestRecordRoundTrip: what the coordinator writes reads back the same.
func TestRecordRoundTrip(t *testing.T) {
	k := Key{"gr\u00fcppe", topicA, 12}
	o := &Offset{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 4, DeliveryCompleteCount: 5,
		Batches: []Batch{{4, 9, 2, 1}, {10, 10, 4, 7}}, CreateTimestamp: 6, WriteTimestamp: 7}
	for _, tc := range []struct {
		rec  Record
		typ  int16
		want *Offset
	}{
		{SnapshotRecord(k, o), SnapshotType, o},
		{UpdateRecord(k, o), UpdateType, &Offset{SnapshotEpoch: 1, LeaderEpoch: 3, StartOffset: 4, DeliveryCompleteCount: 5, Batches: o.Batches}},
		{TombstoneRecord(k), SnapshotType, nil},
	} {
		typ, gk, got, err := DecodeRecord(tc.rec.Key, tc.rec.Value)
		if err != nil || typ != tc.typ || gk != k || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%x: %d %+v %+v %v", tc.rec.Key, typ, gk, got, err)
		}
	}
}

// TestDecodeRefuses: every malformed key and value is refused with
// ErrBadRecord, whatever byte it is cut at.
func TestDecodeRefuses(t *testing.T) {
	k := Key{"g", topicA, 1}
	snap := SnapshotRecord(k, &Offset{DeliveryCompleteCount: 3, Batches: []Batch{{1, 2, 0, 1}}})
	upd := UpdateRecord(k, &Offset{DeliveryCompleteCount: -1, Batches: []Batch{{1, 2, 0, 1}}})
	for _, full := range []Record{snap, upd} {
		for n := range len(full.Key) {
			if _, _, _, err := DecodeRecord(full.Key[:n], full.Value); !errors.Is(err, ErrBadRecord) {
				t.Errorf("key cut at %d: %v", n, err)
			}
		}
		for n := range len(full.Value) {
			if _, _, _, err := DecodeRecord(full.Key, full.Value[:n]); !errors.Is(err, ErrBadRecord) {
				t.Errorf("value %x cut at %d: %v", full.Value, n, err)
			}
		}
	}
	with := func(b []byte, i int, v ...byte) []byte {
		c := append([]byte(nil), b...)
		copy(c[i:], v)
		return c
	}
	batchesAt := 2 + 4 + 4 + 4 + 8 + 8 + 8 // the snapshot value's StateBatches
	for name, kv := range map[string][2][]byte{
		"record type 2":          {with(snap.Key, 0, 0, 2), snap.Value},
		"record type -1":         {with(snap.Key, 0, 0xff, 0xff), snap.Value},
		"null group id":          {with(snap.Key, 2, 0xff, 0xff), snap.Value},
		"value version 1":        {snap.Key, with(snap.Value, 0, 0, 1)},
		"null batches":           {snap.Key, with(snap.Value, batchesAt, 0)},
		"a claimed 1000 batches": {snap.Key, append(with(snap.Value[:batchesAt], 0), 0xe9, 0x07)},
		"a huge varint":          {snap.Key, append(append([]byte(nil), snap.Value[:batchesAt]...), 0xff, 0xff, 0xff, 0xff, 0x7f)},
		"tag 0 of 2 bytes":       {snap.Key, append(append([]byte(nil), snap.Value[:len(snap.Value)-7]...), 1, 0, 2, 0, 3)},
		"an update tombstone":    {upd.Key, nil},
	} {
		c := New(DefaultConfig())
		if err := c.Load(kv[0], kv[1]); !errors.Is(err, ErrBadRecord) || c.Len() != 0 {
			t.Errorf("%s: %v, %d states", name, err, c.Len())
		}
	}
	// Unknown tagged fields are skipped, as Kafka keeps them aside.
	v := append(append([]byte(nil), snap.Value[:len(snap.Value)-7]...), 2, 0, 4, 0, 0, 0, 9, 5, 1, 0xaa)
	if _, _, o, err := DecodeRecord(snap.Key, v); err != nil || o.DeliveryCompleteCount != 9 {
		t.Fatalf("unknown tag: %+v %v", o, err)
	}
}

// TestPartitionForBounds: Kafka's Utils.abs at the hash's minimum, and
// no partitions.
func TestPartitionForBounds(t *testing.T) {
	if got := PartitionFor(Key{}, 0); got != -1 {
		t.Errorf("no partitions: %d", got)
	}
	for _, s := range []string{"", "a", "polygenelubricants", "\xff\xfe"} {
		h := javaStringHash(s)
		if p := PartitionFor(Key{GroupID: s}, 50); p < 0 || p >= 50 {
			t.Errorf("%q (hash %d): partition %d", s, h, p)
		}
	}
	if h := javaStringHash("polygenelubricants"); h != -1<<31 {
		t.Errorf("Java hashes \"polygenelubricants\" to MinInt32, got %d", h)
	}
}

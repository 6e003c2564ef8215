package broker

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareTestBatch encodes a v2 batch of n records from base with attrs.
func shareTestBatch(base int64, n int, attrs int16, producerID int64, keys ...[]byte) []byte {
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(n - 1), ProducerID: producerID, NumRecords: int32(n)}
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		if i < len(keys) {
			r.Key = keys[i]
		}
		recs = r.AppendTo(recs)
	}
	rb.Records = recs
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12)) // AppendTo writes Length as given
	return b
}

func TestShareFetchedBatches(t *testing.T) {
	abort := []byte{0, 0, 0, 0}
	commit := []byte{0, 0, 0, 1}
	buf := shareTestBatch(0, 3, 0, -1)
	buf = append(buf, shareTestBatch(3, 2, 0x10, 7)...)
	buf = append(buf, shareTestBatch(5, 1, 0x30, 7, abort)...)
	buf = append(buf, shareTestBatch(6, 1, 0x30, 8, commit)...)
	got, err := shareFetchedBatches(buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		base, last     int64
		txn, ctl, abrt bool
	}{{0, 2, false, false, false}, {3, 4, true, false, false}, {5, 5, true, true, true}, {6, 6, true, true, false}}
	if len(got) != len(want) {
		t.Fatalf("got %d batches, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.BaseOffset != w.base || g.LastOffset != w.last || g.Transactional != w.txn || g.Control != w.ctl || g.AbortMarker != w.abrt {
			t.Errorf("batch %d: got %+v, want %+v", i, g, w)
		}
	}
	for _, bad := range [][]byte{buf[:10], buf[:len(buf)-1], {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}} {
		if _, err := shareFetchedBatches(bad); err == nil {
			t.Errorf("a truncated read of %d bytes was accepted", len(bad))
		}
	}
}

func FuzzShareFetchedBatches(f *testing.F) {
	f.Add(shareTestBatch(0, 2, 0, -1))
	f.Add(shareTestBatch(9, 1, 0x30, 3, []byte{0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, buf []byte) {
		got, err := shareFetchedBatches(buf)
		if err != nil {
			return
		}
		for _, b := range got {
			if b.LastOffset < b.BaseOffset {
				t.Fatalf("batch %+v ends before it starts", b)
			}
		}
	})
}

package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

var codecs = []Compression{None, Gzip, Snappy, LZ4, Zstd}

// sampleRecords returns n records that exercise the encoding: null and empty
// keys and values, headers with null and empty values, negative and large
// timestamp deltas.
func sampleRecords(n int) []Record {
	rs := make([]Record, n)
	for i := range rs {
		r := Record{OffsetDelta: int32(i), TimestampDelta: int64(i*37 - 50)}
		switch i % 5 {
		case 0:
			r.Key, r.Value = nil, nil
		case 1:
			r.Key, r.Value = []byte{}, []byte{}
		case 2:
			r.Key = []byte(fmt.Sprintf("key-%d", i))
			r.Value = bytes.Repeat([]byte{byte(i)}, 300)
			r.TimestampDelta = 1 << 40
		case 3:
			r.Key = []byte("k")
			r.Value = nil
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "", Value: nil}, {Key: "empty", Value: []byte{}}}
		case 4:
			r.Value = []byte(fmt.Sprintf("value %d", i))
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte{1, 2, 3}}}
		}
		rs[i] = r
	}
	return rs
}

// valueRecords returns n records with a key and a value of size bytes each, as
// a typical producer sends.
func valueRecords(n, size int) []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	rs := make([]Record, n)
	for i := range rs {
		v := make([]byte, size)
		for j := range v {
			v[j] = "abcdefghijklmnopqrstuvwxyz"[rng.IntN(26)]
		}
		rs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte(fmt.Sprintf("key-%06d", i)), Value: v}
	}
	return rs
}

func defaultOptions(c Compression) BuildOptions {
	return BuildOptions{
		Compression:          c,
		BaseTimestamp:        1_700_000_000_000,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		PartitionLeaderEpoch: -1,
	}
}

func mustBuild(t testing.TB, opts BuildOptions, records []Record) []byte {
	t.Helper()
	b, err := AppendBatch(nil, opts, records)
	if err != nil {
		t.Fatalf("AppendBatch(%v): %v", opts.Compression, err)
	}
	return b
}

// rawBatch builds a batch around a records section given as bytes (before
// compression), with the header counts given, and a correct length and CRC:
// the way to test what a broken client could send.
func rawBatch(t testing.TB, c Compression, count, lastOffsetDelta int32, records []byte) []byte {
	t.Helper()
	b := make([]byte, HeaderSize)
	if c != None {
		var err error
		if b, err = compress(b, c, records); err != nil {
			t.Fatal(err)
		}
	} else {
		b = append(b, records...)
	}
	be := binary.BigEndian
	be.PutUint32(b[offLength:], uint32(len(b)-prefixSize))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(c))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], 1000)
	be.PutUint64(b[offMaxTimestamp:], 1000)
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(count))
	fixCRC(b)
	return b
}

// withRawBody replaces the records section of an uncompressed-codec batch with
// body given already encoded (e.g. a hand-built xerial frame) and fixes the
// length and CRC.
func withRawBody(b []byte, c Compression, body []byte) []byte {
	out := append(append([]byte(nil), b[:HeaderSize]...), body...)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-prefixSize))
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(c))
	fixCRC(out)
	return out
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], computeCRC(b))
}

// record encodes one record body by hand: the fields after the length, which
// is prepended.
func record(fields ...[]byte) []byte {
	body := bytes.Join(fields, nil)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

// collect returns deep copies of the records of b.
func collect(t testing.TB, b []byte, s *Scratch) (Header, []Record) {
	t.Helper()
	var h Header
	var out []Record
	err := ForEachRecord(b, s, func(hh *Header, r *Record) bool {
		h = *hh
		c := Record{Attributes: r.Attributes, TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta,
			Key: clone(r.Key), Value: clone(r.Value)}
		for _, rh := range r.Headers {
			c.Headers = append(c.Headers, RecordHeader{Key: rh.Key, Value: clone(rh.Value)})
		}
		out = append(out, c)
		return true
	})
	if err != nil {
		t.Fatalf("ForEachRecord: %v", err)
	}
	return h, out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func recordsEqual(t testing.TB, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Attributes != w.Attributes || g.TimestampDelta != w.TimestampDelta || g.OffsetDelta != w.OffsetDelta {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		bytesEqual(t, fmt.Sprintf("record %d key", i), g.Key, w.Key)
		bytesEqual(t, fmt.Sprintf("record %d value", i), g.Value, w.Value)
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key {
				t.Fatalf("record %d header %d: key %q, want %q", i, j, g.Headers[j].Key, w.Headers[j].Key)
			}
			bytesEqual(t, fmt.Sprintf("record %d header %d value", i, j), g.Headers[j].Value, w.Headers[j].Value)
		}
	}
}

// bytesEqual compares b with want, telling null from empty.
func bytesEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%s: got %q (nil %v), want %q (nil %v)", what, got, got == nil, want, want == nil)
	}
}

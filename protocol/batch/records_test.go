package batch

import (
	"errors"
	"testing"
)

func TestForEachRecordRoundTripsEveryCodec(t *testing.T) {
	recs := sampleRecords(41)
	var s Scratch // shared, to prove reuse across codecs is safe
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := defaultOptions(c)
			opts.BaseOffset = 500
			b := mustBuild(t, opts, recs)
			h, got := collect(t, b, &s)
			recordsEqual(t, got, recs)
			if h.BaseOffset != 500 || h.RecordCount != int32(len(recs)) {
				t.Fatalf("header %+v", h)
			}
			if ts := h.RecordTimestamp(&got[3]); ts != opts.BaseTimestamp+recs[3].TimestampDelta {
				t.Fatalf("record 3 timestamp %d", ts)
			}
		})
	}
}

func TestForEachRecordStopsWhenFnReturnsFalse(t *testing.T) {
	b := mustBuild(t, defaultOptions(Gzip), sampleRecords(10))
	n := 0
	err := ForEachRecord(b, nil, func(*Header, *Record) bool { n++; return n < 4 })
	if err != nil || n != 4 {
		t.Fatalf("err %v after %d records; want nil after 4", err, n)
	}
}

// TestForEachRecordReadsCompactedBatches: compaction leaves gaps in offset
// deltas, which Validate refuses from a client but a reader must accept.
func TestForEachRecordReadsCompactedBatches(t *testing.T) {
	recs := []Record{{OffsetDelta: 0, Key: []byte("a")}, {OffsetDelta: 3, Key: []byte("b")}, {OffsetDelta: 7, Key: []byte("c")}}
	b := mustBuild(t, defaultOptions(LZ4), recs)
	_, got := collect(t, b, nil)
	recordsEqual(t, got, recs)
	if _, err := Validate(b, nil); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Validate of gapped offsets: %v, want ErrInvalidRecord", err)
	}
	if _, err := Check(b); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestForEachRecordSkipsAnEmptyBatch(t *testing.T) {
	// Kafka's iterator reads nothing, not even the payload, when the count
	// is 0; compaction writes such batches.
	b := rawBatch(t, None, 0, 4, []byte("ignored"))
	if err := ForEachRecord(b, nil, func(*Header, *Record) bool { t.Fatal("fn called"); return false }); err != nil {
		t.Fatal(err)
	}
	b = rawBatch(t, None, -1, 4, nil)
	if err := ForEachRecord(b, nil, func(*Header, *Record) bool { return true }); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative count: %v, want ErrInvalidRecord", err)
	}
}

// TestForEachRecordHeaderKeysOutliveTheCallback: keys are reused between
// records when equal, so they must still be real, immutable strings.
func TestForEachRecordHeaderKeysOutliveTheCallback(t *testing.T) {
	recs := []Record{
		{OffsetDelta: 0, Headers: []RecordHeader{{Key: "a"}, {Key: "b"}}},
		{OffsetDelta: 1, Headers: []RecordHeader{{Key: "a"}, {Key: "c"}}},
		{OffsetDelta: 2, Headers: []RecordHeader{{Key: "d"}, {Key: "c"}, {Key: "e"}}},
		{OffsetDelta: 3},
		{OffsetDelta: 4, Headers: []RecordHeader{{Key: "d"}}},
	}
	var kept [][]string
	err := ForEachRecord(mustBuild(t, defaultOptions(None), recs), nil, func(_ *Header, r *Record) bool {
		var ks []string
		for _, h := range r.Headers {
			ks = append(ks, h.Key)
		}
		kept = append(kept, ks)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if len(kept[i]) != len(r.Headers) {
			t.Fatalf("record %d: %d keys, want %d", i, len(kept[i]), len(r.Headers))
		}
		for j, h := range r.Headers {
			if kept[i][j] != h.Key {
				t.Fatalf("record %d header %d: kept key %q, want %q", i, j, kept[i][j], h.Key)
			}
		}
	}
}

func TestForEachRecordRejectsWhatValidateRejectsStructurally(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"magic 1", func() []byte { b := mustBuild(t, defaultOptions(None), sampleRecords(1)); b[offMagic] = 1; return b }(), ErrUnsupportedMagic},
		{"codec 6", func() []byte {
			b := mustBuild(t, defaultOptions(None), sampleRecords(1))
			b[offAttributes+1] = 6
			return b
		}(), ErrUnsupportedCompression},
		{"truncated", mustBuild(t, defaultOptions(None), sampleRecords(3))[:70], ErrTruncated},
		{"bad record", rawBatch(t, Zstd, 1, 0, vi(-3)), ErrInvalidRecord},
		{"records left over", rawBatch(t, None, 1, 0, append(record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0)), 0)), ErrInvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ForEachRecord(tc.b, nil, func(*Header, *Record) bool { return true })
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestVarintsDecodeAsKafkaReadsThem pins the edge cases of ByteUtils.readVarint
// and readVarlong.
func TestVarintsDecodeAsKafkaReadsThem(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		v    int32
		n    int
		name string
	}{
		{[]byte{0}, 0, 1, "zero"},
		{[]byte{1}, -1, 1, "minus one"},
		{[]byte{2}, 1, 1, "one"},
		{[]byte{0xfe, 0xff, 0xff, 0xff, 0x0f}, 2147483647, 5, "max int32"},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, -2147483648, 5, "min int32"},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x70}, 0, 5, "fifth byte's high bits dropped, as Java's int shift does"},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, "six bytes"},
		{[]byte{0x80, 0x80}, 0, 0, "cut short"},
		{nil, 0, 0, "empty"},
	} {
		v, n := varint32(tc.in)
		if v != tc.v || n != tc.n {
			t.Errorf("varint32 %s: %d, %d; want %d, %d", tc.name, v, n, tc.v, tc.n)
		}
	}
	for _, tc := range []struct {
		in   []byte
		v    int64
		n    int
		name string
	}{
		{[]byte{3}, -2, 1, "minus two"},
		{[]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 9223372036854775807, 10, "max int64"},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, -9223372036854775808, 10, "tenth byte's high bits dropped"},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00}, 0, 0, "eleven bytes"},
	} {
		v, n := varint64(tc.in)
		if v != tc.v || n != tc.n {
			t.Errorf("varint64 %s: %d, %d; want %d, %d", tc.name, v, n, tc.v, tc.n)
		}
	}
}

func TestAppendBatchRefusesWhatCannotBeABatch(t *testing.T) {
	dst := []byte("keep")
	if out, err := AppendBatch(dst, defaultOptions(None), nil); err == nil || string(out) != "keep" {
		t.Fatalf("no records: %q, %v", out, err)
	}
	opts := defaultOptions(7)
	if out, err := AppendBatch(dst, opts, sampleRecords(1)); !errors.Is(err, ErrUnsupportedCompression) || string(out) != "keep" {
		t.Fatalf("codec 7: %q, %v", out, err)
	}
}

func TestAppendBatchAppends(t *testing.T) {
	first := mustBuild(t, defaultOptions(Zstd), sampleRecords(3))
	both, err := AppendBatch(append([]byte(nil), first...), defaultOptions(Snappy), sampleRecords(4))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = Split(both, func(b []byte) error {
		n++
		_, err := Validate(b, nil)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("%d batches, err %v", n, err)
	}
}

// TestConcurrentBuildAndValidate runs the pooled encoders and per-goroutine
// Scratches side by side (meaningful under -race).
func TestConcurrentBuildAndValidate(t *testing.T) {
	recs := sampleRecords(20)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var s Scratch
			for i := 0; i < 20; i++ {
				c := codecs[(g+i)%len(codecs)]
				b, err := AppendBatch(nil, defaultOptions(c), recs)
				if err == nil {
					_, err = Validate(b, &s)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

package batch

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseHeaderReadsWhatAppendBatchWrote(t *testing.T) {
	opts := BuildOptions{
		Compression:          LZ4,
		BaseOffset:           1234567890123,
		BaseTimestamp:        1_700_000_000_000,
		ProducerID:           77,
		ProducerEpoch:        3,
		BaseSequence:         41,
		Transactional:        true,
		PartitionLeaderEpoch: 9,
	}
	recs := sampleRecords(7)
	b := mustBuild(t, opts, recs)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{
		BaseOffset:           opts.BaseOffset,
		BatchLength:          int32(len(b) - 12),
		PartitionLeaderEpoch: 9,
		Magic:                2,
		CRC:                  computeCRC(b),
		Attributes:           int16(LZ4) | attrTransactional,
		LastOffsetDelta:      6,
		BaseTimestamp:        opts.BaseTimestamp,
		MaxTimestamp:         opts.BaseTimestamp + 1<<40,
		ProducerID:           77,
		ProducerEpoch:        3,
		BaseSequence:         41,
		RecordCount:          7,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.Compression() != LZ4 || !h.Transactional() || h.Control() || h.LogAppendTime() || h.DeleteHorizon() {
		t.Fatalf("attribute accessors disagree with %#x", h.Attributes)
	}
	if h.LastOffset() != opts.BaseOffset+6 {
		t.Fatalf("LastOffset %d", h.LastOffset())
	}
}

func TestParseHeaderNeedsAWholeHeader(t *testing.T) {
	b := mustBuild(t, defaultOptions(None), sampleRecords(1))
	for n := 0; n < HeaderSize; n++ {
		if _, err := ParseHeader(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ParseHeader of %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	if _, err := ParseHeader(b[:HeaderSize]); err != nil {
		t.Fatalf("ParseHeader of exactly a header: %v", err)
	}
}

func TestMagicIsByte16(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want int8
		ok   bool
	}{
		{nil, 0, false},
		{make([]byte, 16), 0, false},
		{append(make([]byte, 16), 2), 2, true},
		{append(make([]byte, 16), 1, 9, 9), 1, true},
		{append(make([]byte, 16), 0xff), -1, true},
	} {
		m, ok := Magic(tc.b)
		if m != tc.want || ok != tc.ok {
			t.Errorf("Magic(%d bytes) = %d, %v; want %d, %v", len(tc.b), m, ok, tc.want, tc.ok)
		}
	}
}

func TestCodecAndIsTransactionalAgreeWithParseHeader(t *testing.T) {
	for _, c := range codecs {
		for _, txn := range []bool{false, true} {
			opts := defaultOptions(c)
			opts.Transactional, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = txn, 5, 0, 0
			b := mustBuild(t, opts, sampleRecords(2))
			b[offAttributes] = 0x7f // high byte: unused bits, ignored by both
			h, _ := ParseHeader(b)
			if got, ok := Codec(b); !ok || got != h.Compression() {
				t.Errorf("%v: Codec = %v, %v; want %v", c, got, ok, h.Compression())
			}
			if got := IsTransactional(b); got != h.Transactional() || got != txn {
				t.Errorf("%v transactional=%v: IsTransactional = %v", c, txn, got)
			}
			b[offAttributes+1] |= attrCompressionMask // an unknown codec is read as is
			if got, _ := Codec(b); got != 7 {
				t.Errorf("%v: Codec of codec bits 7 = %v", c, got)
			}
			if _, ok := Codec(b[:HeaderSize-1]); ok || IsTransactional(b[:HeaderSize-1]) {
				t.Errorf("%v: a short header was read", c)
			}
		}
	}
}

func TestCompressionString(t *testing.T) {
	for c, want := range map[Compression]string{None: "none", Gzip: "gzip", Snappy: "snappy", LZ4: "lz4", Zstd: "zstd", 5: "unknown(5)", -1: "unknown(-1)"} {
		if got := c.String(); got != want {
			t.Errorf("Compression(%d).String() = %q, want %q", int8(c), got, want)
		}
	}
}

func TestSetBaseOffsetAndLeaderEpochLeaveCRCValid(t *testing.T) {
	for _, c := range codecs {
		b := mustBuild(t, defaultOptions(c), sampleRecords(5))
		before := append([]byte(nil), b...)
		SetBaseOffset(b, 1<<50+3)
		SetPartitionLeaderEpoch(b, 17)
		h, err := Check(b)
		if err != nil {
			t.Fatalf("%v: Check after stamping: %v", c, err)
		}
		if h.BaseOffset != 1<<50+3 || h.PartitionLeaderEpoch != 17 {
			t.Fatalf("%v: header after stamping: %+v", c, h)
		}
		if !bytes.Equal(b[offMagic:], before[offMagic:]) {
			t.Fatalf("%v: bytes from the magic on changed", c)
		}
	}
}

func TestSetLogAppendTimeKeepsCRCValid(t *testing.T) {
	for _, c := range codecs {
		opts := defaultOptions(c)
		opts.Transactional = true
		b := mustBuild(t, opts, sampleRecords(5))
		const now = 1_800_000_000_000
		SetLogAppendTime(b, now)
		h, err := Check(b)
		if err != nil {
			t.Fatalf("%v: Check after SetLogAppendTime: %v", c, err)
		}
		if !h.LogAppendTime() || h.MaxTimestamp != now || h.BaseTimestamp != opts.BaseTimestamp ||
			h.Compression() != c || !h.Transactional() {
			t.Fatalf("%v: header after SetLogAppendTime: %+v", c, h)
		}
		info, err := Validate(b, nil)
		if err != nil {
			t.Fatalf("%v: Validate: %v", c, err)
		}
		if info.MaxTimestamp != now || info.MinTimestamp != now {
			t.Fatalf("%v: timestamps %d..%d, want all %d", c, info.MinTimestamp, info.MaxTimestamp, now)
		}
		err = ForEachRecord(b, nil, func(h *Header, r *Record) bool {
			if ts := h.RecordTimestamp(r); ts != now {
				t.Fatalf("%v: record timestamp %d, want %d", c, ts, now)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestSetMaxTimestampRebuildsAttributesLikeKafka(t *testing.T) {
	b := mustBuild(t, defaultOptions(Gzip), sampleRecords(3))
	b[offAttributes] = 0xab // unknown high byte
	b[offAttributes+1] |= 0x80
	fixCRC(b)
	SetMaxTimestamp(b, false, 42)
	h, err := Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Attributes != int16(Gzip) || h.MaxTimestamp != 42 {
		t.Fatalf("attributes %#x max %d; want %#x, 42", h.Attributes, h.MaxTimestamp, int16(Gzip))
	}

	// Unchanged type and timestamp: nothing is written, not even the CRC.
	b[offCRC] ^= 0xff
	SetMaxTimestamp(b, false, 42)
	if _, err := Check(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("SetMaxTimestamp with nothing to change rewrote the CRC")
	}
}

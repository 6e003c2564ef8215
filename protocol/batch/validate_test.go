package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestValidateAcceptsEveryCodec(t *testing.T) {
	recs := sampleRecords(23)
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := defaultOptions(c)
			b := mustBuild(t, opts, recs)
			var s Scratch
			info, err := Validate(b, &s)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := appendRecords(nil, recs)
			wantMax, wantMin := opts.BaseTimestamp+1<<40, opts.BaseTimestamp-50
			if info.NumRecords != len(recs) || info.RecordCount != int32(len(recs)) ||
				info.MaxTimestamp != wantMax || info.MinTimestamp != wantMin ||
				info.NullKeys != 9 || info.UncompressedBytes != len(raw) || info.Compression() != c {
				t.Fatalf("info %+v; want %d records, timestamps %d..%d, 9 null keys, %d bytes",
					info, len(recs), wantMin, wantMax, len(raw))
			}
			if info.Header.MaxTimestamp != wantMax {
				t.Fatalf("header max timestamp %d", info.Header.MaxTimestamp)
			}
		})
	}
}

func TestValidateTimestampsIgnoreNoTimestamp(t *testing.T) {
	opts := defaultOptions(None)
	opts.BaseTimestamp = NoTimestamp
	recs := []Record{{OffsetDelta: 0}, {OffsetDelta: 1}}
	info, err := Validate(mustBuild(t, opts, recs), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxTimestamp != NoTimestamp || info.MinTimestamp != NoTimestamp {
		t.Fatalf("timestamps %d..%d; want both NoTimestamp", info.MinTimestamp, info.MaxTimestamp)
	}
}

// TestValidateErrorKinds covers each rule of Validate with the error Kafka maps
// it to.
func TestValidateErrorKinds(t *testing.T) {
	good := func(c Compression) []byte { return mustBuild(t, defaultOptions(c), sampleRecords(5)) }
	edit := func(b []byte, f func(b []byte), crc bool) []byte {
		b = append([]byte(nil), b...)
		f(b)
		if crc {
			fixCRC(b)
		}
		return b
	}
	be := binary.BigEndian
	putLength := func(n int) func([]byte) { return func(b []byte) { be.PutUint32(b[offLength:], uint32(n)) } }
	// A valid record body for offset delta d: attributes, timestamp delta,
	// offset delta, key, value, no headers.
	rec := func(d int64) []byte { return record([]byte{0}, vi(0), vi(d), vi(1), []byte("k"), vi(-1), vi(0)) }
	two := append(rec(0), rec(1)...)

	type tc struct {
		name string
		b    []byte
		want error
	}
	cases := []tc{
		{"empty", nil, ErrTruncated},
		{"prefix cut short", good(None)[:10], ErrTruncated},
		{"length below 14", edit(good(None), putLength(13), false), ErrCorrupt},
		{"negative length", edit(good(None), putLength(-5), false), ErrCorrupt},
		{"length past the end", edit(good(None), putLength(len(good(None))), false), ErrTruncated},
		{"trailing bytes", append(good(None), 0), ErrCorrupt},
		{"magic 3", edit(good(None), func(b []byte) { b[offMagic] = 3 }, false), ErrCorrupt},
		{"magic -2", edit(good(None), func(b []byte) { b[offMagic] = 0xfe }, false), ErrCorrupt},
		{"magic 1", edit(good(None), func(b []byte) { b[offMagic] = 1 }, false), ErrUnsupportedMagic},
		{"magic 0", edit(good(None), func(b []byte) { b[offMagic] = 0 }, false), ErrUnsupportedMagic},
		{"base offset not 0", edit(good(None), func(b []byte) { be.PutUint64(b, 5) }, false), ErrInvalidRecord},
		{"smaller than a header", edit(good(None)[:40], putLength(28), false), ErrCorrupt},
		{"crc field flipped", edit(good(None), func(b []byte) { b[offCRC] ^= 1 }, false), ErrCorrupt},
		{"record byte flipped", edit(good(None), func(b []byte) { b[len(b)-3] ^= 0x10 }, false), ErrCorrupt},
		{"compressed byte flipped", edit(good(Zstd), func(b []byte) { b[HeaderSize+5] ^= 0x10 }, false), ErrCorrupt},
		{"header field flipped", edit(good(None), func(b []byte) { b[offRecordCount] ^= 0x10 }, false), ErrCorrupt},
		{"codec 5", edit(good(None), func(b []byte) { b[offAttributes+1] |= 5 }, true), ErrUnsupportedCompression},
		{"codec 7", edit(good(None), func(b []byte) { b[offAttributes+1] |= 7 }, true), ErrUnsupportedCompression},
		{"last offset delta -1", rawBatch(t, None, 0, -1, nil), ErrInvalidRecord},
		{"record count 0", rawBatch(t, None, 0, 0, rec(0)), ErrInvalidRecord},
		{"record count negative", rawBatch(t, None, -1, 0, rec(0)), ErrInvalidRecord},
		{"count and last offset delta differ", rawBatch(t, None, 2, 0, two), ErrInvalidRecord},
		{"control batch", edit(good(None), func(b []byte) { b[offAttributes+1] |= attrControl }, true), ErrInvalidRecord},
		{"producer id without sequence", edit(good(None), func(b []byte) { be.PutUint64(b[offProducerID:], 7) }, true), ErrInvalidRecord},
		{"fewer records than counted", rawBatch(t, None, 3, 2, two), ErrInvalidRecord},
		{"more records than counted", rawBatch(t, None, 1, 0, two), ErrInvalidRecord},
		{"offset deltas 0,2", rawBatch(t, None, 2, 1, append(rec(0), rec(2)...)), ErrInvalidRecord},
		{"offset deltas 1,2", rawBatch(t, None, 2, 1, append(rec(1), rec(2)...)), ErrInvalidRecord},
		{"record length past the end", rawBatch(t, None, 1, 0, append(vi(50), rec(0)[1:]...)), ErrInvalidRecord},
		{"record length negative", rawBatch(t, None, 1, 0, vi(-3)), ErrInvalidRecord},
		{"record length varint too long", rawBatch(t, None, 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}), ErrInvalidRecord},
		{"record length varint cut short", rawBatch(t, None, 1, 0, []byte{0x80}), ErrInvalidRecord},
		{"empty record", rawBatch(t, None, 1, 0, vi(0)), ErrInvalidRecord},
		{"timestamp varlong too long", rawBatch(t, None, 1, 0, record([]byte{0}, bytes.Repeat([]byte{0xff}, 11), vi(0))), ErrInvalidRecord},
		{"key past the record end", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(9), []byte("k"))), ErrInvalidRecord},
		{"value past the record end", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(4), []byte("v"))), ErrInvalidRecord},
		{"header count missing", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1))), ErrInvalidRecord},
		{"header count negative", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(-1))), ErrInvalidRecord},
		{"header count beyond the record", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(3), vi(0))), ErrInvalidRecord},
		{"header key length negative", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), ErrInvalidRecord},
		{"header value past the end", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("h"), vi(5))), ErrInvalidRecord},
		{"record length larger than its fields", rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0), []byte{0})), ErrInvalidRecord},
		{"record length smaller than its fields", rawBatch(t, None, 1, 0, append(vi(4), []byte{0, 0, 0, 1, 2, 0}...)), ErrInvalidRecord},
	}
	for _, c := range codecs[1:] {
		cases = append(cases,
			tc{c.String() + " garbage payload", withRawBody(good(None), c, bytes.Repeat([]byte{0x5a}, 40)), ErrDecompress},
			tc{c.String() + " fewer records than counted", rawBatch(t, c, 3, 2, two), ErrInvalidRecord},
			tc{c.String() + " more records than counted", rawBatch(t, c, 1, 0, two), ErrInvalidRecord},
			tc{c.String() + " bad record", rawBatch(t, c, 1, 0, vi(-3)), ErrInvalidRecord},
			tc{c.String() + " offset deltas 0,2", rawBatch(t, c, 2, 1, append(rec(0), rec(2)...)), ErrInvalidRecord},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.b, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrCorrupt, ErrInvalidRecord, ErrUnsupportedMagic, ErrUnsupportedCompression, ErrDecompress, ErrTooLarge} {
				if other != tc.want && !errors.Is(tc.want, other) && errors.Is(err, other) {
					t.Fatalf("err %v also matches %v", err, other)
				}
			}
			if tc.want == ErrInvalidRecord && len(tc.b) > 0 {
				if _, err := Check(tc.b); err != nil && !errors.Is(err, ErrInvalidRecord) {
					// Check applies no client rule; it may only fail where Validate's
					// earlier steps would have.
					t.Fatalf("Check: %v", err)
				}
			}
		})
	}
}

// TestValidateTruncatedNeverPanics cuts valid batches of every codec at every
// length, both as is and with the length and CRC fixed so that the cut reaches
// the record decoder.
func TestValidateTruncatedNeverPanics(t *testing.T) {
	s := &Scratch{MaxUncompressed: 1 << 16}
	for _, c := range codecs {
		b := mustBuild(t, defaultOptions(c), sampleRecords(9))
		for n := 0; n < len(b); n++ {
			if _, err := Validate(b[:n], s); err == nil {
				t.Fatalf("%v: Validate of %d of %d bytes succeeded", c, n, len(b))
			}
			_ = ForEachRecord(b[:n], s, func(*Header, *Record) bool { return true })
			if n < HeaderSize {
				continue
			}
			cut := append([]byte(nil), b[:n]...)
			binary.BigEndian.PutUint32(cut[offLength:], uint32(n-prefixSize))
			fixCRC(cut)
			_, err := Validate(cut, s)
			if err == nil {
				t.Fatalf("%v: Validate of a batch cut to %d of %d bytes succeeded", c, n, len(b))
			}
			if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrDecompress) {
				t.Fatalf("%v: cut to %d bytes: %v; want ErrInvalidRecord or ErrDecompress", c, n, err)
			}
			_ = ForEachRecord(cut, s, func(*Header, *Record) bool { return true })
		}
	}
}

func TestValidateBoundsDecompression(t *testing.T) {
	// 4 MiB of zeros in one record: a bomb for a 1 MiB limit.
	bomb := []Record{{Value: make([]byte, 4<<20)}}
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			b := mustBuild(t, defaultOptions(c), bomb)
			s := &Scratch{MaxUncompressed: 1 << 20}
			_, err := Validate(b, s)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err %v, want ErrTooLarge", err)
			}
			if cap(s.buf) > s.MaxUncompressed+64<<10 {
				t.Fatalf("scratch buffer grew to %d bytes, limit %d", cap(s.buf), s.MaxUncompressed)
			}
			if err := ForEachRecord(b, s, func(*Header, *Record) bool { return true }); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ForEachRecord: %v, want ErrTooLarge", err)
			}

			// The same Scratch with room enough decodes it.
			s.MaxUncompressed = 8 << 20
			if _, err := Validate(b, s); err != nil {
				t.Fatalf("with an 8 MiB limit: %v", err)
			}
		})
	}
}

func TestValidateAllowsExactlyTheLimit(t *testing.T) {
	recs := sampleRecords(10)
	raw, _ := appendRecords(nil, recs)
	for _, c := range codecs[1:] {
		b := mustBuild(t, defaultOptions(c), recs)
		if _, err := Validate(b, &Scratch{MaxUncompressed: len(raw)}); err != nil {
			t.Fatalf("%v with the limit at the exact size: %v", c, err)
		}
		if _, err := Validate(b, &Scratch{MaxUncompressed: len(raw) - 1}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v with the limit one byte short: %v, want ErrTooLarge", c, err)
		}
	}
}

func TestCheckIgnoresClientRules(t *testing.T) {
	opts := defaultOptions(Snappy)
	opts.Control = true
	opts.BaseOffset = 99
	b := mustBuild(t, opts, sampleRecords(1))
	if _, err := Check(b); err != nil {
		t.Fatalf("Check of a broker-written control batch: %v", err)
	}
	if _, err := Validate(b, nil); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Validate of a control batch: %v, want ErrInvalidRecord", err)
	}
}

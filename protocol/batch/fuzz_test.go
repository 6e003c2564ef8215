package batch

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"
)

// fuzzLimit keeps fuzzing fast and makes the decompression bound observable.
const fuzzLimit = 1 << 20

// seedBatches returns valid batches of every codec, and mutations of them with
// the length and CRC fixed so that the fuzzer starts past the CRC check.
func seedBatches(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range codecs {
		for _, recs := range [][]Record{sampleRecords(1), sampleRecords(12), valueRecords(20, 50)} {
			b, err := AppendBatch(nil, defaultOptions(c), recs)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, b)

			lat := append([]byte(nil), b...)
			SetLogAppendTime(lat, 1_800_000_000_000)
			seeds = append(seeds, lat)

			cut := append([]byte(nil), b[:len(b)-len(b)/3]...)
			binary.BigEndian.PutUint32(cut[offLength:], uint32(len(cut)-prefixSize))
			fixCRC(cut)
			seeds = append(seeds, cut)

			flipped := append([]byte(nil), b...)
			flipped[len(flipped)-2] ^= 0x41
			seeds = append(seeds, flipped)
			fixed := append([]byte(nil), flipped...)
			fixCRC(fixed)
			seeds = append(seeds, fixed)
		}
	}
	seeds = append(seeds, rawBatch(t, None, 1, 0, vi(-3)), rawBatch(t, Snappy, 2, 1, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0))))
	return seeds
}

// FuzzValidate feeds arbitrary bytes to Validate, both as they are and
// repaired (length and CRC made to match, so the fuzzer reaches the codecs and
// the record decoder), and checks these invariants:
//   - it never panics;
//   - every error wraps one of the package's sentinels;
//   - the Scratch never keeps a buffer larger than MaxUncompressed (the
//     decompression bound), and reports more output as ErrTooLarge;
//   - a batch that validates passes Check, and re-iterates with ForEachRecord
//     to the same record count with offset deltas 0..n-1, the same null-key
//     count and the same max timestamp;
//   - validating does not modify the input.
func FuzzValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkValidate(t, b)
		if len(b) >= HeaderSize {
			fixed := append([]byte(nil), b...)
			binary.BigEndian.PutUint32(fixed[offLength:], uint32(len(fixed)-prefixSize))
			fixCRC(fixed)
			checkValidate(t, fixed)
		}
	})
}

// refused checks what every decode of fuzzed bytes must hold, whatever its
// outcome: the scratch buffer stayed within the limit, and an error wraps
// one of the package's sentinels. It reports whether the decode failed.
func refused(t *testing.T, s *Scratch, err error) bool {
	t.Helper()
	if cap(s.buf) > fuzzLimit {
		t.Fatalf("scratch buffer of %d bytes, limit %d", cap(s.buf), fuzzLimit)
	}
	if err != nil && !isSentinel(err) {
		t.Fatalf("error %v wraps no sentinel", err)
	}
	return err != nil
}

func checkValidate(t *testing.T, b []byte) {
	orig := string(b)
	s := &Scratch{MaxUncompressed: fuzzLimit}
	info, err := Validate(b, s)
	if string(b) != orig {
		t.Fatal("Validate modified its input")
	}
	checkStreamAgreesWithWhole(t, b, s, info, err)
	if refused(t, s, err) {
		return
	}
	if info.UncompressedBytes > fuzzLimit {
		t.Fatalf("%d uncompressed bytes passed a %d limit", info.UncompressedBytes, fuzzLimit)
	}
	if _, err := Check(b); err != nil {
		t.Fatalf("validated, but Check: %v", err)
	}
	n, nullKeys, maxTs := 0, 0, NoTimestamp
	err = ForEachRecord(b, s, func(h *Header, r *Record) bool {
		if r.OffsetDelta != int32(n) {
			t.Fatalf("record %d has offset delta %d", n, r.OffsetDelta)
		}
		if r.Key == nil {
			nullKeys++
		}
		maxTs = max(maxTs, h.RecordTimestamp(r))
		n++
		return true
	})
	if err != nil {
		t.Fatalf("validated, but ForEachRecord: %v", err)
	}
	if n != info.NumRecords || nullKeys != info.NullKeys || maxTs != info.MaxTimestamp {
		t.Fatalf("ForEachRecord: %d records, %d null keys, max ts %d; Validate said %+v", n, nullKeys, maxTs, info)
	}

	// Rebuilt with AppendBatch, the records validate and read back the same.
	_, recs := collect(t, b, s)
	h := info.Header
	rebuilt, err := AppendBatch(nil, BuildOptions{Compression: h.Compression(), BaseTimestamp: h.BaseTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Transactional: h.Transactional(), PartitionLeaderEpoch: h.PartitionLeaderEpoch}, recs)
	if err != nil {
		t.Fatalf("AppendBatch of validated records: %v", err)
	}
	if _, err := Validate(rebuilt, s); err != nil {
		t.Fatalf("rebuilt batch: %v", err)
	}
	_, again := collect(t, rebuilt, s)
	recordsEqual(t, again, recs)
}

// FuzzSplit feeds arbitrary bytes to Split and checks these invariants:
//   - it never panics;
//   - each entry is a subslice of the input at the position after the last,
//     with its capacity cut at its end, at least 26 bytes (prefix and minimum
//     length) and with a magic of 0, 1 or 2;
//   - with no error the entries cover the input exactly; an error wraps
//     ErrCorrupt.
func FuzzSplit(f *testing.F) {
	seeds := seedBatches(f)
	for _, b := range seeds {
		f.Add(b)
	}
	f.Add(append(append(append([]byte(nil), seeds[0]...), legacyMessage("v1")...), seeds[5]...))
	f.Add(append(append([]byte(nil), seeds[0]...), 0, 0, 0))
	f.Fuzz(func(t *testing.T, blob []byte) {
		pos := 0
		err := Split(blob, func(b []byte) error {
			if len(b) < prefixSize+minEntryLength || cap(b) != len(b) {
				t.Fatalf("entry of len %d cap %d", len(b), cap(b))
			}
			if &b[0] != &blob[pos] {
				t.Fatalf("entry does not start at byte %d", pos)
			}
			if m, ok := Magic(b); !ok || m < 0 || m > 2 {
				t.Fatalf("entry with magic %d", m)
			}
			pos += len(b)
			return nil
		})
		if err == nil && pos != len(blob) {
			t.Fatalf("entries cover %d of %d bytes", pos, len(blob))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
	})
}

// FuzzForEachRecord feeds arbitrary bytes to ForEachRecord, which skips the CRC,
// so the fuzzer reaches the record decoder directly. Invariants:
//   - it never panics, and errors wrap a sentinel;
//   - the Scratch never keeps a buffer larger than MaxUncompressed;
//   - fn sees at most RecordCount records, and every slice it gets lies
//     within the batch or the Scratch's buffer;
//   - with no error and fn never stopping, fn saw exactly RecordCount records.
func FuzzForEachRecord(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &Scratch{MaxUncompressed: fuzzLimit}
		n := 0
		var count int32
		err := ForEachRecord(b, s, func(h *Header, r *Record) bool {
			n++
			count = h.RecordCount
			if int32(n) > h.RecordCount {
				t.Fatalf("record %d of %d", n, h.RecordCount)
			}
			for _, p := range [][]byte{r.Key, r.Value} {
				if !within(p, b) && !within(p, s.buf[:cap(s.buf)]) {
					t.Fatal("a record slice points outside the batch and the scratch")
				}
			}
			for _, h := range r.Headers {
				if !within(h.Value, b) && !within(h.Value, s.buf[:cap(s.buf)]) {
					t.Fatal("a header value points outside the batch and the scratch")
				}
			}
			return true
		})
		if refused(t, s, err) {
			return
		}
		if n > 0 && int32(n) != count {
			t.Fatalf("no error after %d of %d records", n, count)
		}
	})
}

// within reports whether p (if non-empty) lies inside buf.
func within(p, buf []byte) bool {
	if len(p) == 0 {
		return true
	}
	if len(buf) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= lo && at+uintptr(len(p)) <= lo+uintptr(len(buf))
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrCorrupt, ErrInvalidRecord, ErrUnsupportedMagic, ErrUnsupportedCompression, ErrDecompress, ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzScanRecords feeds arbitrary record sections, record counts and batch
// timestamps to Validate's two record walks and checks that they agree:
//   - neither panics;
//   - scanRecords accepts exactly what validateRecords (the full record
//     decoder) accepts;
//   - when both accept, they report the same maximum and minimum timestamp
//     and the same number of null keys.
func FuzzScanRecords(f *testing.F) {
	for _, b := range seedBatches(f) {
		if h, err := ParseHeader(b); err == nil && len(b) >= HeaderSize && h.Compression() == None {
			f.Add(b[HeaderSize:], h.RecordCount, h.BaseTimestamp, h.MaxTimestamp, h.LogAppendTime())
		}
	}
	f.Add([]byte{0x02, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00}, int32(1), int64(-1), int64(0), false)
	f.Fuzz(func(t *testing.T, records []byte, count int32, base, maxTs int64, appendTime bool) {
		h := Header{Magic: 2, RecordCount: count, BaseTimestamp: base, MaxTimestamp: maxTs}
		if appendTime {
			h.Attributes |= attrLogAppendTime
		}
		var s Scratch
		want, err := s.validateRecords(records, h)
		got := Info{Header: h, MaxTimestamp: NoTimestamp, MinTimestamp: NoTimestamp}
		ok := scanRecords(records, &got)
		switch {
		case ok != (err == nil):
			t.Fatalf("scanRecords says %v, validateRecords %v", ok, err)
		case ok && (got.MaxTimestamp != want.MaxTimestamp || got.MinTimestamp != want.MinTimestamp || got.NullKeys != want.NullKeys):
			t.Fatalf("scanRecords: max %d min %d null keys %d; validateRecords: max %d min %d null keys %d",
				got.MaxTimestamp, got.MinTimestamp, got.NullKeys, want.MaxTimestamp, want.MinTimestamp, want.NullKeys)
		}
	})
}

// checkStreamAgreesWithWhole holds Validate's streamed walk of a compressed
// batch (stream.go) against decompressing the records whole and walking
// them with scanRecords: the same verdict and the same Info. The whole
// decompression may refuse more as too large (its zstd window bound is the
// limit), which is the only difference allowed.
func checkStreamAgreesWithWhole(t *testing.T, b []byte, s *Scratch, info Info, err error) {
	t.Helper()
	h, herr := Check(b)
	if herr != nil || h.Compression() == None || !h.Compression().known() || binary.BigEndian.Uint64(b[offBaseOffset:]) != 0 || checkClientHeader(&h) != nil {
		return
	}
	buf, derr := s.decompress(h.Compression(), b[HeaderSize:])
	whole := Info{Header: h, MaxTimestamp: NoTimestamp, MinTimestamp: NoTimestamp, NumRecords: int(h.RecordCount), UncompressedBytes: len(buf)}
	wholeOK := derr == nil && scanRecords(buf, &whole)
	switch {
	case err == nil && !wholeOK && !errors.Is(derr, ErrTooLarge):
		t.Fatalf("streamed walk accepted a batch the whole walk refuses (%v)", derr)
	case err != nil && wholeOK:
		t.Fatalf("streamed walk refused (%v) a batch the whole walk accepts", err)
	case err == nil && wholeOK && (info.MaxTimestamp != whole.MaxTimestamp || info.MinTimestamp != whole.MinTimestamp ||
		info.NullKeys != whole.NullKeys || info.UncompressedBytes != whole.UncompressedBytes):
		t.Fatalf("streamed %+v, whole %+v", info, whole)
	}
}

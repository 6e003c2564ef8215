package batch

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestValidateStreamsABomb: a small compressed batch whose one record
// decompresses to 64 MiB validates with a few MiB of allocations (the
// window and the codec's state), not the 64 MiB: the records are walked as
// they decompress (issue #19: 16 connections producing such batches
// OOM-killed the broker).
func TestValidateStreamsABomb(t *testing.T) {
	const size = 64 << 20
	recs := []Record{{OffsetDelta: 0, Key: []byte("k"), Value: make([]byte, size)}}
	for _, c := range []Compression{Gzip, LZ4, Zstd, Snappy} {
		b := mustBuild(t, defaultOptions(c), recs)
		if len(b) > size/16 {
			t.Fatalf("%s: the bomb is %d bytes", c, len(b))
		}
		s := &Scratch{Pool: NewDecompressionPool(1)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		info, err := Validate(b, s)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if info.UncompressedBytes < size || info.NumRecords != 1 {
			t.Fatalf("%s: %+v", c, info)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 24<<20 {
			t.Errorf("%s: validating a batch of %d bytes that decompresses to 64 MiB allocated %d MiB", c, len(b), got>>20)
		}
		n := 0
		if err := ForEachRecordMeta(b, s, func(m RecordMeta) bool { n++; return !m.NullKey }); err != nil || n != 1 {
			t.Fatalf("%s: ForEachRecordMeta: %d records, %v", c, n, err)
		}
		small := &Scratch{MaxUncompressed: size / 2, Pool: s.Pool}
		if _, err := Validate(b, small); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: over a 32 MiB limit: %v, want ErrTooLarge", c, err)
		}
	}
}

// TestDecompressionPoolBoundsConcurrency: with every decoder set taken, a
// compressed batch waits for one; an uncompressed batch needs none.
func TestDecompressionPoolBoundsConcurrency(t *testing.T) {
	pool := NewDecompressionPool(1)
	s := &Scratch{Pool: pool}
	compressed := mustBuild(t, defaultOptions(Zstd), sampleRecords(5))
	plain := mustBuild(t, defaultOptions(None), sampleRecords(5))
	held := pool.get()
	if _, err := Validate(plain, s); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := Validate(compressed, &Scratch{Pool: pool})
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("a compressed batch was validated while the pool's only decoder set was taken")
	case <-time.After(50 * time.Millisecond):
	}
	pool.put(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestForEachRecordMetaAgreesWithForEachRecord: the index, timestamp and
// key nullness of every record, in every codec and with LogAppendTime.
func TestForEachRecordMetaAgreesWithForEachRecord(t *testing.T) {
	recs := sampleRecords(12)
	recs[3].Key = nil
	for _, c := range codecs {
		for _, appendTime := range []bool{false, true} {
			b := mustBuild(t, defaultOptions(c), recs)
			if appendTime {
				SetLogAppendTime(b, 1_800_000_000_000)
			}
			var want []RecordMeta
			if err := ForEachRecord(b, nil, func(h *Header, r *Record) bool {
				want = append(want, RecordMeta{Index: r.OffsetDelta, Timestamp: h.RecordTimestamp(r), NullKey: r.Key == nil})
				return true
			}); err != nil {
				t.Fatal(err)
			}
			var got []RecordMeta
			if err := ForEachRecordMeta(b, nil, func(m RecordMeta) bool { got = append(got, m); return true }); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d records, want %d", c, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s append time %v: record %d %+v, want %+v", c, appendTime, i, got[i], want[i])
				}
			}
		}
	}
}

// FuzzForEachRecordMeta holds ForEachRecordMeta against ForEachRecord on
// arbitrary batches: both accept the same batches, but for offset deltas
// out of order, which only ForEachRecordMeta refuses, and see the same
// records.
func FuzzForEachRecordMeta(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []RecordMeta
		s := &Scratch{MaxUncompressed: fuzzLimit}
		werr := ForEachRecord(b, s, func(h *Header, r *Record) bool {
			want = append(want, RecordMeta{Index: r.OffsetDelta, Timestamp: h.RecordTimestamp(r), NullKey: r.Key == nil})
			return true
		})
		var got []RecordMeta
		gerr := ForEachRecordMeta(b, s, func(m RecordMeta) bool { got = append(got, m); return true })
		if gerr != nil && !isSentinel(gerr) {
			t.Fatalf("error %v wraps no sentinel", gerr)
		}
		if werr == nil && gerr != nil && !errors.Is(gerr, ErrTooLarge) {
			// ForEachRecordMeta keeps Validate's rule that offset deltas
			// count 0, 1, ...; ForEachRecord reads stored batches and
			// does not check it.
			for i, m := range want {
				if m.Index != int32(i) {
					return
				}
			}
			t.Fatalf("ForEachRecord read %d records; ForEachRecordMeta: %v", len(want), gerr)
		}
		if werr != nil && gerr == nil && !errors.Is(werr, ErrTooLarge) {
			t.Fatalf("ForEachRecord: %v; ForEachRecordMeta accepted", werr)
		}
		if werr != nil || gerr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, ForEachRecord read %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("record %d: %+v, ForEachRecord %+v", i, got[i], want[i])
			}
		}
	})
}

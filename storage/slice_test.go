package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"testing"
)

// sliceBytes reads through ReadSlice and returns the bytes the slice names.
func sliceBytes(t testing.TB, l *Log, offset int64, maxBytes int, maxOffset int64) []byte {
	t.Helper()
	s, err := l.ReadSlice(offset, maxBytes, maxOffset)
	if err != nil {
		t.Fatalf("ReadSlice(%d, %d, %d): %v", offset, maxBytes, maxOffset, err)
	}
	defer s.Release()
	got, err := s.AppendTo(nil)
	if err != nil {
		t.Fatalf("AppendTo: %v", err)
	}
	if int64(len(got)) != s.Len() {
		t.Fatalf("Len = %d, read %d bytes", s.Len(), len(got))
	}
	return got
}

// TestReadSliceMatchesReadInto compares ReadSlice with ReadInto for every
// offset, several byte limits and offset limits, on a log of many small
// segments, so that slices spanning segments, stopping at maxOffset, at the
// budget and at the log end are all covered.
func TestReadSliceMatchesReadInto(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Delete()
		rng := rand.New(rand.NewSource(1))
		var m model
		for range 120 {
			m.append(t, l, batchSpec{records: 1 + rng.Intn(5), maxTs: 1, valueSize: rng.Intn(300)})
		}
		if len(l.segments) < 5 {
			t.Fatalf("want several segments, have %d", len(l.segments))
		}
		end := l.EndOffset()
		for off := int64(0); off <= end; off++ {
			for _, maxBytes := range []int{0, 1, 100, 700, 5000, 1 << 20} {
				for _, maxOffset := range []int64{off, off + 3, end - 7, end} {
					want, err := l.Read(off, maxBytes, maxOffset)
					if err != nil {
						t.Fatal(err)
					}
					got := sliceBytes(t, l, off, maxBytes, maxOffset)
					if !bytes.Equal(got, want) {
						t.Fatalf("ReadSlice(%d, %d, %d) = %d bytes, ReadInto %d", off, maxBytes, maxOffset, len(got), len(want))
					}
					if len(want) > 0 {
						checkNextOffset(t, l, want, off, maxBytes, maxOffset)
					}
				}
			}
		}
		for _, off := range []int64{-1, end + 1} {
			if _, err := l.ReadSlice(off, 100, end); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("ReadSlice(%d) error = %v, want ErrOffsetOutOfRange", off, err)
			}
		}
		if _, err := l.ReadSlice(0, -1, end); err == nil {
			t.Fatal("negative maxBytes accepted")
		}
	})
}

// TestSliceOutlivesRemovedSegments holds a slice across the removal of every
// segment it names (by moving the start offset and then deleting the whole
// log) and still reads the original bytes: the files stay open until
// Release.
func TestSliceOutlivesRemovedSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		for range 60 {
			m.append(t, l, batchSpec{records: 3, maxTs: 1, valueSize: 200})
		}
		want, err := l.Read(0, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.ReadSlice(0, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Ranges()) < 3 {
			t.Fatalf("slice spans %d segments, want several", len(s.Ranges()))
		}
		if err := l.SetStartOffset(l.EndOffset() - 1); err != nil {
			t.Fatal(err)
		}
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
		got, err := s.AppendTo(nil)
		if err != nil {
			t.Fatalf("read after delete: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes after delete, want the %d read before", len(got), len(want))
		}
		f := s.Ranges()[0].File
		s.Release()
		if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
			t.Fatal("file still open after the last Release")
		}
	})
}

// TestSliceOfTruncatedFileReadsShort shows the documented failure mode: a
// truncation below a held slice makes its read fail with
// io.ErrUnexpectedEOF rather than return other bytes silently short.
func TestSliceOfTruncatedFileReadsShort(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Delete()
		var m model
		for range 10 {
			m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 100})
		}
		s, err := l.ReadSlice(0, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		if err := l.TruncateTo(4); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendTo(nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read of a truncated range: %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

// TestConcurrentSlicesOfOneSegment has many goroutines slice and read the
// same segments while appends roll new ones and the start offset moves.
// Run with -race.
func TestConcurrentSlicesOfOneSegment(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Delete()
		var m model
		for range 40 {
			m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 150})
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					start := l.StartOffset()
					off := start + int64((g*31+i)%10)
					s, err := l.ReadSlice(off, 2000, l.EndOffset())
					if errors.Is(err, ErrOffsetOutOfRange) {
						continue // the start moved past off meanwhile
					}
					if err != nil {
						errs <- err
						return
					}
					b, err := s.AppendTo(nil)
					s.Release()
					if err != nil {
						errs <- err
						return
					}
					if _, reason := parseHeader(b); len(b) > 0 && reason != "" {
						errs <- errors.New(reason)
						return
					}
				}
			}()
		}
		for i := range 40 {
			m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 150})
			if i%10 == 9 {
				if err := l.SetStartOffset(l.StartOffset() + 8); err != nil {
					t.Fatal(err)
				}
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// BenchmarkReadSlice is BenchmarkRead without the copy: it walks batch
// headers only, so its allocations do not grow with the bytes read.
func BenchmarkReadSlice(b *testing.B) {
	for _, env := range benchFS(b) {
		b.Run(env.name, func(b *testing.B) {
			batch := makeBatch(batchSpec{records: 10, maxTs: 1, valueSize: 1024/10 - 8})
			l := openReadBenchLog(b, env.fs, env.dir, batch)
			defer l.Delete()
			end := l.EndOffset()
			for _, size := range []int{64 << 10, 1 << 20} {
				b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
					b.SetBytes(int64(size))
					b.ReportAllocs()
					i := int64(0)
					for b.Loop() {
						off := (i * 7919 * 10) % (end - 20000)
						i++
						s, err := l.ReadSlice(off, size, end)
						if err != nil || s.Len() < int64(size)-2*int64(len(batch)) {
							b.Fatalf("read %d bytes: %v", s.Len(), err)
						}
						s.Release()
					}
				})
			}
		})
	}
}

// TestReadSliceAcrossReopenedSegments reads slices spanning every segment
// of a reopened log, whose closed segments' indexes are loaded lazily.
func TestReadSliceAcrossReopenedSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		for range 60 {
			m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 150})
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Delete()
		if len(l.segments) < 3 {
			t.Fatalf("want several segments, have %d", len(l.segments))
		}
		end := l.EndOffset()
		for _, off := range []int64{0, 7, end / 2} {
			want, err := l.Read(off, 1<<20, end)
			if err != nil {
				t.Fatal(err)
			}
			if got := sliceBytes(t, l, off, 1<<20, end); !bytes.Equal(got, want) {
				t.Fatalf("ReadSlice(%d) = %d bytes, Read %d", off, len(got), len(want))
			}
		}
	})
}

// checkNextOffset checks that the slice of a read reports as next offset
// the one after the last batch of data, the batches the read returned: with
// no gaps in the log, that is where the batch left out (or the next
// segment) begins.
func checkNextOffset(t *testing.T, l *Log, data []byte, off int64, maxBytes int, maxOffset int64) {
	t.Helper()
	var next int64
	for len(data) >= batchHeaderSize {
		h, _ := parseHeader(data)
		next = h.lastOffset() + 1
		data = data[h.size:]
	}
	s, err := l.ReadSlice(off, maxBytes, maxOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.NextOffset() != next {
		t.Fatalf("ReadSlice(%d, %d, %d).NextOffset() = %d, want %d", off, maxBytes, maxOffset, s.NextOffset(), next)
	}
}

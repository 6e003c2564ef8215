package storage

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentAppendReadSync runs appenders, readers, timestamp lookups,
// Sync and SetStartOffset at once (run it with -race). Readers check that
// whatever they get is whole batches with contiguous offsets that match
// what was appended.
func TestConcurrentAppendReadSync(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		const appenders, perAppender = 4, 150
		var stop atomic.Bool
		var written sync.Map // base offset -> batch bytes
		var wg sync.WaitGroup
		errc := make(chan error, 16)
		report := func(err error) {
			select {
			case errc <- err:
			default:
			}
		}
		var appending sync.WaitGroup
		for a := 0; a < appenders; a++ {
			appending.Add(1)
			go func() {
				defer appending.Done()
				for i := 0; i < perAppender; i++ {
					b := makeBatch(batchSpec{records: 1 + (a+i)%4, maxTs: int64(i), valueSize: 30 + a*10})
					first, _, err := l.Append(b)
					if err != nil {
						report(err)
						return
					}
					written.Store(first, b)
				}
			}()
		}
		for r := 0; r < 3; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var dst []byte
				for !stop.Load() {
					start, end := l.StartOffset(), l.EndOffset()
					if end == start {
						continue
					}
					off := start + (end-start)/int64(2+r)
					var err error
					dst, err = l.ReadInto(dst[:0], off, 2000, end)
					if errors.Is(err, ErrOffsetOutOfRange) {
						continue // the start moved meanwhile
					}
					if err != nil {
						report(err)
						return
					}
					next := int64(-1)
					for p := 0; p < len(dst); {
						h, reason := parseHeader(dst[p:])
						if reason != "" {
							report(errors.New("read returned a broken batch: " + reason))
							return
						}
						if next >= 0 && h.baseOffset != next {
							report(errors.New("read returned non-contiguous batches"))
							return
						}
						if want, ok := written.Load(h.baseOffset); ok && !bytes.Equal(dst[p:p+int(h.size)], want.([]byte)) {
							report(errors.New("read returned different bytes"))
							return
						}
						next = h.nextOffset()
						p += int(h.size)
					}
					if _, _, err := l.BatchAtTimestamp(50); err != nil {
						report(err)
						return
					}
					if _, _, err := l.MaxTimestampBatch(); err != nil {
						report(err)
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if err := l.Sync(); err != nil {
					report(err)
					return
				}
				if i%5 == 4 {
					if err := l.SetStartOffset(l.EndOffset() / 3); err != nil {
						report(err)
						return
					}
				}
			}
		}()
		appending.Wait()
		stop.Store(true)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		var total int64
		written.Range(func(k, v any) bool {
			h, _ := parseHeader(v.([]byte))
			total += int64(h.lastOffsetDelta) + 1
			return true
		})
		if l.EndOffset() != total {
			t.Fatalf("EndOffset %d, appended %d records", l.EndOffset(), total)
		}
	})
}

// TestConcurrentReadersLoadClosedSegmentIndexes reopens a log of many
// segments, whose closed indexes are mapped on first use, and has several
// readers race to load them (offset and timestamp lookups) while an
// appender rolls new segments (run it with -race).
func TestConcurrentReadersLoadClosedSegmentIndexes(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 120)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		end := m.end
		var wg sync.WaitGroup
		errc := make(chan error, 8)
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range m.batches {
					b := m.batches[(i*(r+1)*7919)%len(m.batches)]
					got, err := l.Read(b.first, 1, end)
					if err != nil || !bytes.Equal(got, b.data) {
						errc <- fmt.Errorf("Read(%d) = base %d, %v", b.first, baseOf(got), err)
						return
					}
					if _, _, err := l.BatchAtTimestamp(b.maxTs); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				if _, _, err := l.Append(makeBatch(batchSpec{records: 2, maxTs: int64(5000 + i), valueSize: 200})); err != nil {
					errc <- err
					return
				}
			}
		}()
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	})
}

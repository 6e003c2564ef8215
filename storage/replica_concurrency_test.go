package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTruncationWaitsForACleaningRound truncates a compacted log while a
// cleaning round is reading it, as retention and DeleteRecords may: the
// truncation waits for the round (which holds cleanMu), the round swaps
// its cleaned segments in first, and the truncation then cuts them, so
// nothing at or past the truncation point comes back, now or after a
// reopen, and the cleaner checkpoint is clamped to the new end.
func TestTruncationWaitsForACleaningRound(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				l := mustOpen(t, env.fs, env.dir, testConfig())
				fillKeyed(t, l, 4)
				bases, _ := segmentLayout(l)
				target := bases[1] + 1 // inside a segment the round cleans
				codec, entered, release := blockingKeyCodec(5)
				cleaned := make(chan error, 1)
				go func() {
					_, err := l.Clean(context.Background(), keyPolicy(codec), 5000)
					cleaned <- err
				}()
				<-entered
				truncated := make(chan error, 1)
				go func() {
					if full {
						truncated <- l.TruncateFullyAndStartAt(target)
					} else {
						truncated <- l.TruncateTo(target)
					}
				}()
				for i := 0; i < 100; i++ {
					runtime.Gosched()
				}
				select {
				case err := <-truncated:
					t.Fatalf("the truncation returned (%v) while a cleaning round held the log", err)
				default:
				}
				close(release)
				if err := <-cleaned; err != nil {
					t.Fatalf("Clean: %v", err)
				}
				if err := <-truncated; err != nil {
					t.Fatalf("truncation: %v", err)
				}
				check := func(stage string) {
					t.Helper()
					if l.EndOffset() > target {
						t.Fatalf("%s: EndOffset %d past the truncation point %d", stage, l.EndOffset(), target)
					}
					batches := walkLog(t, l)
					for _, b := range batches {
						if b.last >= target {
							t.Fatalf("%s: batch %d..%d is back", stage, b.base, b.last)
						}
					}
					checkLookups(t, l, batches)
					if fd, err := l.FirstDirtyOffset(); err != nil || fd > l.EndOffset() {
						t.Fatalf("%s: FirstDirtyOffset = %d, %v; the log ends at %d", stage, fd, err, l.EndOffset())
					}
					l.cleanMu.Lock()
					fd := l.firstDirty
					l.cleanMu.Unlock()
					if fd > l.EndOffset() {
						t.Fatalf("%s: cleaner checkpoint %d past the end %d", stage, fd, l.EndOffset())
					}
				}
				check("after both")
				crash(l)
				l = mustOpen(t, env.fs, env.dir, testConfig())
				defer l.Close()
				check("after a crash")
				// The log cleans again from where it now ends.
				fillKeyed(t, l, 4)
				if _, err := l.Clean(context.Background(), keyPolicy(keyCodec{keys: 5}), 5000); err != nil {
					t.Fatal(err)
				}
				checkLookups(t, l, walkLog(t, l))
			})
		})
	}
}

// TestConcurrentReadsDuringReplication runs a follower's writer
// (AppendReplicated of a leader's batches, truncations back to a random
// point and re-appends, Sync, high-watermark checkpoints) against readers
// of every kind (run it with -race). Whatever a reader gets is whole
// batches, each byte for byte the leader's batch at its offset.
func TestConcurrentReadsDuringReplication(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		// The leader's log, as a list of batches with their offsets.
		var leader [][]byte
		byBase := map[int64][]byte{}
		for off, i := int64(0), 0; i < 300; i++ {
			b := withOffset(makeBatch(batchSpec{records: 1 + i%4, maxTs: int64(1000 + i%50), valueSize: 20 + i%90}), off)
			leader = append(leader, b)
			byBase[off] = b
			off += int64(1 + i%4)
		}
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var stop atomic.Bool
		errc := make(chan error, 16)
		report := func(err error) {
			select {
			case errc <- err:
			default:
			}
		}
		checkBatches := func(what string, b []byte) bool {
			for p := 0; p < len(b); {
				h, reason := parseHeader(b[p:])
				if reason != "" || p+int(h.size) > len(b) {
					report(fmt.Errorf("%s: broken batch at byte %d: %s", what, p, reason))
					return false
				}
				if want := byBase[h.baseOffset]; !bytes.Equal(b[p:p+int(h.size)], want) {
					report(fmt.Errorf("%s: the batch at %d is not the leader's", what, h.baseOffset))
					return false
				}
				p += int(h.size)
			}
			return true
		}
		var readers sync.WaitGroup
		var reads atomic.Int64
		for r := 0; r < 3; r++ {
			readers.Add(1)
			go func() {
				defer readers.Done()
				var dst []byte
				for i := 0; !stop.Load(); i++ {
					reads.Add(1)
					start, end := l.StartOffset(), l.EndOffset()
					off := start + (end-start)/int64(2+r)
					var err error
					switch i % 4 {
					case 0:
						dst, err = l.ReadInto(dst[:0], off, 3000, math.MaxInt64)
						if err == nil && !checkBatches("ReadInto", dst) {
							return
						}
					case 1:
						var s Slice
						s, err = l.ReadSlice(off, 3000, math.MaxInt64)
						if err == nil {
							b, rerr := s.AppendTo(nil)
							s.Release()
							// A truncation may shorten the file under a
							// slice (a short read); what the re-appends
							// write there again is the same leader bytes.
							if rerr == nil && !checkBatches("ReadSlice", b) {
								return
							}
						}
					case 2:
						var b []byte
						b, _, err = l.BatchAtTimestamp(int64(1000 + i%60))
						if err == nil && !checkBatches("BatchAtTimestamp", b) {
							return
						}
					default:
						l.Epochs()
						l.EndOffsetForEpoch(0)
						l.HighWatermarkCheckpoint()
						l.DurableOffset()
					}
					if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
						report(err)
						return
					}
				}
			}()
		}
		next := 0 // index in leader of the next batch to replicate
		for round := 0; round < 150; round++ {
			n := min(1+round%5, len(leader)-next)
			if n > 0 {
				if _, _, err := l.AppendReplicated(bytes.Join(leader[next:next+n], nil)); err != nil {
					t.Fatal(err)
				}
				next += n
			}
			switch round % 6 {
			case 2:
				// Back to a batch boundary a few batches down, as a follower
				// whose log diverged, then on again from there.
				next = max(0, next-1-round%4)
				if err := l.TruncateTo(baseOf(leader[next])); err != nil {
					t.Fatal(err)
				}
			case 4:
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			case 5:
				if err := l.WriteHighWatermark(l.EndOffset()); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-errc:
				t.Fatal(err)
			default:
			}
		}
		stop.Store(true)
		readers.Wait()
		t.Logf("%d reads during the replication", reads.Load())
		close(errc)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}

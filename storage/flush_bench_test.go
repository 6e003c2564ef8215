package storage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// Durability benchmarks, all on a real directory (b.TempDir, so $TMPDIR)
// so that the figures can be read against each other:
//
//	go test -run '^$' -bench 'AppendPolicy|RawSequentialWrite|ReadSequential' -benchmem ./storage
//
// BenchmarkAppendPolicy appends batches of 100 records under each flush
// policy; BenchmarkRawSequentialWrite writes the same number of bytes per
// call to a plain os.File, with and without an fsync after each write,
// which is the disk's own ceiling for each case. MB/s is the batch bytes.

// benchRecordSizes are the record value sizes benchmarked, 100 records a batch.
var benchRecordSizes = []struct {
	name  string
	value int
}{{"100B", 100}, {"1KB", 1000}}

// benchDiskCap bounds the bytes a benchmark leaves on disk: the log is
// emptied (timer stopped) whenever it holds more.
const benchDiskCap = 512 << 20

func BenchmarkAppendPolicy(b *testing.B) {
	policies := []struct {
		name      string
		policy    FlushPolicy
		appenders int
	}{
		{"os", OSFlush(), 1},
		{"interval-100ms", FlushPolicy{Messages: math.MaxInt64, Ms: 100}, 1},
		{"interval-1000msgs", FlushPolicy{Messages: 1000, Ms: math.MaxInt64}, 1},
		{"per-append-1", FlushPolicy{Messages: 1}, 1},
		{"per-append-8", FlushPolicy{Messages: 1}, 8},
	}
	for _, size := range benchRecordSizes {
		for _, pc := range policies {
			b.Run(size.name+"/"+pc.name, func(b *testing.B) {
				cfg := DefaultConfig() // 1 GiB segments: benchDiskCap is reached before a roll
				cfg.Logger = quietLogger
				l := mustOpen(b, vfs.OSFS{}, filepath.Join(b.TempDir(), "bench-0"), cfg)
				defer l.Delete()
				l.SetFlushPolicy(pc.policy)
				batch := makeBatch(batchSpec{records: 100, maxTs: 1, valueSize: size.value})
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				if pc.appenders == 1 {
					appendLoop(b, l, batch)
					return
				}
				appendParallel(b, l, batch, pc.appenders)
			})
		}
	}
}

func appendLoop(b *testing.B, l *Log, batch []byte) {
	written := 0
	for b.Loop() {
		_, last, err := l.Append(batch)
		if err == nil {
			err = l.FlushAfterAppend(last + 1)
		}
		if err != nil {
			b.Fatal(err)
		}
		if written += len(batch); written > benchDiskCap {
			b.StopTimer()
			if err := l.TruncateFullyAndStartAt(l.EndOffset()); err != nil {
				b.Fatal(err)
			}
			written = 0
			b.StartTimer()
		}
	}
}

// appendParallel runs b.N appends spread over n goroutines, each with its
// own batch buffer (Append rewrites the base offset in place). The log is
// not emptied while they run, so b.N is capped to what fits benchDiskCap
// by running it in rounds.
func appendParallel(b *testing.B, l *Log, batch []byte, n int) {
	perRound := max(benchDiskCap/len(batch), n)
	b.ResetTimer()
	for done := 0; done < b.N; {
		round := min(b.N-done, perRound)
		var (
			wg   sync.WaitGroup
			next = make(chan struct{}, round)
		)
		for range round {
			next <- struct{}{}
		}
		close(next)
		for range n {
			mine := bytes.Clone(batch)
			wg.Go(func() {
				for range next {
					_, last, err := l.Append(mine)
					if err == nil {
						err = l.FlushAfterAppend(last + 1)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		done += round
		if done < b.N {
			b.StopTimer()
			if err := l.TruncateFullyAndStartAt(l.EndOffset()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// BenchmarkRawSequentialWrite is the disk's ceiling for the appends above:
// plain sequential os.File writes of one batch's bytes, with no fsync
// ("os") and with an fsync after every write ("fsync").
func BenchmarkRawSequentialWrite(b *testing.B) {
	for _, size := range benchRecordSizes {
		for _, fsync := range []bool{false, true} {
			name := size.name + "/os"
			if fsync {
				name = size.name + "/fsync"
			}
			b.Run(name, func(b *testing.B) {
				buf := makeBatch(batchSpec{records: 100, maxTs: 1, valueSize: size.value})
				f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				written := 0
				for b.Loop() {
					if _, err := f.Write(buf); err != nil {
						b.Fatal(err)
					}
					if fsync {
						if err := f.Sync(); err != nil {
							b.Fatal(err)
						}
					}
					if written += len(buf); written > benchDiskCap {
						b.StopTimer()
						if err := f.Truncate(0); err != nil {
							b.Fatal(err)
						}
						if _, err := f.Seek(0, 0); err != nil {
							b.Fatal(err)
						}
						written = 0
						b.StartTimer()
					}
				}
			})
		}
	}
}

// BenchmarkReadSequential reads a 64 MiB log of 100-record batches from
// start to end in 1 MiB reads (Kafka's default max.partition.fetch.bytes)
// into a reused buffer, as a consumer catching up would.
func BenchmarkReadSequential(b *testing.B) {
	for _, size := range benchRecordSizes {
		b.Run(size.name, func(b *testing.B) {
			batch := makeBatch(batchSpec{records: 100, maxTs: 1, valueSize: size.value})
			l := openReadBenchLog(b, vfs.OSFS{}, filepath.Join(b.TempDir(), "bench-0"), batch)
			defer l.Delete()
			end := l.EndOffset()
			dst := make([]byte, 0, 1<<20+len(batch))
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if off >= end {
					off = 0
				}
				var err error
				dst, err = l.ReadInto(dst[:0], off, 1<<20, end)
				if err != nil || len(dst) == 0 {
					b.Fatalf("read at %d: %d bytes, %v", off, len(dst), err)
				}
				off = nextOffsetAfter(dst)
			}
		})
	}
}

// nextOffsetAfter returns the offset after the last whole batch in b.
func nextOffsetAfter(b []byte) int64 {
	var next int64
	for p := 0; p < len(b); {
		h, reason := parseHeader(b[p:])
		if reason != "" {
			panic(fmt.Sprintf("bad batch at byte %d: %s", p, reason))
		}
		next = h.nextOffset()
		p += int(h.size)
	}
	return next
}

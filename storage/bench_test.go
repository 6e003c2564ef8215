package storage

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

func benchFS(b *testing.B) []testEnv {
	return []testEnv{
		{name: "os", fs: vfs.OSFS{}, dir: filepath.Join(b.TempDir(), "bench-0")},
		{name: "mem", fs: vfs.NewMemFS(), dir: "/bench-0"},
	}
}

// BenchmarkAppend appends one batch per call (records of 1 KiB total or 64
// KiB total) with default settings, so segments roll at 1 GiB; MemFS
// segments are recreated every 256 MiB to bound memory.
func BenchmarkAppend(b *testing.B) {
	benchAppend(b, func(l *Log, batch []byte) error {
		_, _, err := l.Append(batch)
		return err
	})
}

// BenchmarkAppendValidated is BenchmarkAppend through a leader's entry
// point: the same batches, appended with the shape their validation
// learned, which AppendValidated takes instead of walking the header.
func BenchmarkAppendValidated(b *testing.B) {
	var shape BatchShape
	benchAppend(b, func(l *Log, batch []byte) error {
		if shape == (BatchShape{}) {
			h, _ := parseHeader(batch)
			shape = BatchShape{LastOffsetDelta: h.lastOffsetDelta, MaxTimestamp: h.maxTimestamp}
		}
		_, _, err := l.AppendValidated(batch, shape)
		return err
	})
}

// BenchmarkAppendReplicated is BenchmarkAppend for a follower: the same
// batches, each carrying the offset the leader gave it, appended with
// AppendReplicated, which also checks their CRC-32C. The batch's base
// offset is set before each call, outside the timer's interest (it is
// outside the CRC, as the leader's fetch response carries it).
func BenchmarkAppendReplicated(b *testing.B) {
	benchAppend(b, func(l *Log, batch []byte) error {
		binary.BigEndian.PutUint64(batch, uint64(l.EndOffset()))
		_, _, err := l.AppendReplicated(batch)
		return err
	})
}

// benchAppend runs appendBatch once per iteration, for batches of 1 KiB and
// 64 KiB on each file system, as BenchmarkAppend describes.
func benchAppend(b *testing.B, appendBatch func(l *Log, batch []byte) error) {
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, env := range benchFS(b) {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, env.name), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Logger = quietLogger
				l := mustOpen(b, env.fs, env.dir, cfg)
				defer l.Delete()
				batch := makeBatch(batchSpec{records: 10, maxTs: 1, valueSize: size/10 - 8})
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				written := 0
				for b.Loop() {
					if err := appendBatch(l, batch); err != nil {
						b.Fatal(err)
					}
					if written += len(batch); env.name == "mem" && written > 256<<20 {
						b.StopTimer()
						if err := l.TruncateFullyAndStartAt(l.EndOffset()); err != nil {
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

// openReadBenchLog opens a log of 16 MiB segments in dir and appends batch
// until it holds 64 MiB, for the read benchmarks.
func openReadBenchLog(b *testing.B, fsys vfs.FS, dir string, batch []byte) *Log {
	b.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	cfg.Logger = quietLogger
	l := mustOpen(b, fsys, dir, cfg)
	for written := 0; written < 64<<20; written += len(batch) {
		if _, _, err := l.Append(batch); err != nil {
			l.Delete()
			b.Fatal(err)
		}
	}
	return l
}

// BenchmarkRead fetches 1 MiB (Kafka's default max.partition.fetch.bytes)
// at offsets spread over a 64 MiB log of 1 KiB batches, into a reused
// buffer, as a fetch handler would.
func BenchmarkRead(b *testing.B) {
	for _, env := range benchFS(b) {
		b.Run(env.name, func(b *testing.B) {
			batch := makeBatch(batchSpec{records: 10, maxTs: 1, valueSize: 1024/10 - 8})
			l := openReadBenchLog(b, env.fs, env.dir, batch)
			defer l.Delete()
			end := l.EndOffset()
			dst := make([]byte, 0, 1<<20+len(batch))
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				off := (i * 7919 * 10) % (end - 20000)
				i++
				var err error
				dst, err = l.ReadInto(dst[:0], off, 1<<20, end)
				if err != nil || len(dst) < 1<<20-2*len(batch) {
					b.Fatalf("read %d bytes: %v", len(dst), err)
				}
			}
		})
	}
}

// BenchmarkIndexLookup looks up random offsets and timestamps in one
// segment's mapped indexes (OSFS) or heap entries (MemFS): 100,000 batches
// each with an entry in both, binary searches over 800 KB of offset index
// and 1.2 MB of time index. locate
// adds the header reads that finish an offset lookup. None allocates.
func BenchmarkIndexLookup(b *testing.B) {
	for _, env := range benchFS(b) {
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 0
		cfg.Logger = quietLogger
		l := mustOpen(b, env.fs, env.dir, cfg)
		for u := range 1000 {
			var unit []byte
			for i := range 100 {
				unit = append(unit, makeBatch(batchSpec{records: 1, maxTs: int64(u*100 + i), valueSize: 1})...)
			}
			if _, _, err := l.Append(unit); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		l = mustOpen(b, env.fs, env.dir, cfg)
		seg := l.active()
		end := l.EndOffset()
		if seg.offsets.entries() < 90_000 {
			b.Fatalf("%d index entries", seg.offsets.entries())
		}
		scratch := make([]byte, batchHeaderSize)
		for _, kind := range []string{"offset", "time", "locate"} {
			b.Run(env.name+"/"+kind, func(b *testing.B) {
				b.ReportAllocs()
				i := int64(0)
				for b.Loop() {
					i++
					target := (i * 7919) % end
					switch kind {
					case "offset":
						if o, _ := seg.offsets.lookup(target); o > target {
							b.Fatal(o)
						}
					case "time":
						if ts, _ := seg.times.lookup(target); ts > target {
							b.Fatal(ts)
						}
					case "locate":
						if _, h, found, err := seg.locate(target, scratch); err != nil || !found || h.lastOffset() < target {
							b.Fatal(err)
						}
					}
				}
			})
		}
		l.Delete()
	}
}

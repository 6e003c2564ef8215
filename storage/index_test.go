package storage

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// indexFileSizes returns the lengths of a segment's two index files.
func indexFileSizes(t testing.TB, env testEnv, base int64) (idx, tim int64) {
	t.Helper()
	return fileSize(t, env.fs, segmentPath(env.dir, base, indexSuffix)),
		fileSize(t, env.fs, segmentPath(env.dir, base, timeIndexSuffix))
}

// checkIndexLayout checks Kafka's layout: every segment but the active one
// has index files of exactly its entries; the active one's are
// preallocated to SegmentIndexBytes rounded down to whole entries on OSFS
// (MemFS keeps only the entries). activeOpen is false after Close, when
// every file is trimmed.
func checkIndexLayout(t *testing.T, env testEnv, l *Log, cfg Config, activeOpen bool) {
	t.Helper()
	for i, seg := range l.segments {
		idx, tim := indexFileSizes(t, env, seg.base)
		wantIdx, wantTim := int64(seg.offsets.entries()*offsetEntrySize), int64(seg.times.entries()*timeEntrySize)
		if activeOpen && i == len(l.segments)-1 && env.mem == nil {
			wantIdx = int64(cfg.SegmentIndexBytes / offsetEntrySize * offsetEntrySize)
			wantTim = int64(cfg.SegmentIndexBytes / timeEntrySize * timeEntrySize)
		}
		if idx != wantIdx || tim != wantTim {
			t.Fatalf("segment %d (%d of %d, active open %v): index files %d and %d bytes, want %d and %d",
				seg.base, i, len(l.segments), activeOpen, idx, tim, wantIdx, wantTim)
		}
	}
}

func TestIndexFilesPreallocatedWhileActiveAndTrimmedWhenClosed(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentIndexBytes = 1000 // not a multiple of 8 or 12: rounded down
		l := mustOpen(t, env.fs, env.dir, cfg)
		checkIndexLayout(t, env, l, cfg, true) // a new, empty log
		var m model
		fillLog(t, l, &m, 80)
		if len(l.segments) < 4 {
			t.Fatalf("only %d segments", len(l.segments))
		}
		checkIndexLayout(t, env, l, cfg, true)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		checkIndexLayout(t, env, l, cfg, false) // Close trims the active segment's too
		// Open trusts the trimmed files and preallocates the active
		// segment's again, as Kafka's resizeIndexes.
		l = mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		if r := l.Recovery(); !r.CleanShutdown || r.SegmentsScanned != 0 {
			t.Fatalf("Recovery = %+v, want a clean open that trusts the trimmed files", r)
		}
		checkIndexLayout(t, env, l, cfg, true)
		fillLog(t, l, &m, 20)
		checkIndexLayout(t, env, l, cfg, true)
		m.check(t, l)

		// Truncating into a closed segment makes it active again,
		// preallocated again, as Kafka's LogSegment.truncateTo.
		target := l.segments[1].base + 1
		if err := l.TruncateTo(target); err != nil {
			t.Fatal(err)
		}
		m.truncate(target)
		checkIndexLayout(t, env, l, cfg, true)
		m.check(t, l)
		fillLog(t, l, &m, 40)
		checkIndexLayout(t, env, l, cfg, true)
		m.check(t, l)
	})
}

// TestRecoveryRebuildsZeroFilledPreallocatedIndexAfterCrash crashes with
// the active segment's index files preallocated and mostly zeros (on MemFS
// the zeros are written by hand): recovery takes none of the zero slots for
// an entry; it rebuilds the indexes from the log, the same bytes Close
// would have left.
func TestRecoveryRebuildsZeroFilledPreallocatedIndexAfterCrash(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		l := mustOpen(t, env.fs, env.dir, cfg)
		var m model
		fillLog(t, l, &m, 50)
		for i := 0; l.active().offsets.entries() < 2; i++ {
			m.append(t, l, batchSpec{records: 2, maxTs: int64(5000 + i), valueSize: 90})
		}
		activeBase := l.active().base
		crash(l)
		idxPath, timPath := segmentPath(env.dir, activeBase, indexSuffix), segmentPath(env.dir, activeBase, timeIndexSuffix)
		for _, p := range []struct {
			path string
			size int
		}{{idxPath, cfg.SegmentIndexBytes / offsetEntrySize * offsetEntrySize}, {timPath, cfg.SegmentIndexBytes / timeEntrySize * timeEntrySize}} {
			b := readFile(t, env.fs, p.path)
			if env.mem != nil {
				b = append(b, make([]byte, p.size-len(b))...)
				writeFile(t, env.fs, p.path, b)
			}
			if len(b) != p.size || !isZero(b[len(b)-timeEntrySize:]) {
				t.Fatalf("%s: %d bytes ending in %x, want a preallocated %d", p.path, len(b), b[len(b)-timeEntrySize:], p.size)
			}
		}
		l = mustOpen(t, env.fs, env.dir, cfg)
		if r := l.Recovery(); r.CleanShutdown || r.SegmentsScanned == 0 || r.TruncatedBytes != 0 {
			t.Fatalf("Recovery = %+v", r)
		}
		m.check(t, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// What recovery rebuilt and Close trimmed is what a scan gives.
		logBytes := readFile(t, env.fs, segmentPath(env.dir, activeBase, logSuffix))
		res, err := scanSegment(memFileOf(t, logBytes), int64(len(logBytes)), activeBase, cfg.IndexIntervalBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, env.fs, idxPath); !bytes.Equal(got, res.offsets) || len(got) == 0 {
			t.Fatalf("rebuilt offset index %x, want %x", got, res.offsets)
		}
		l = mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		m.check(t, l)
	})
}

// TestClosedSegmentIndexesAreLoadedLazily: after Open only the active
// segment's indexes are mapped; a read maps the segment it reads; Close
// unmaps everything.
func TestClosedSegmentIndexesAreLoadedLazily(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 60)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		loaded := func() (n int) {
			for _, seg := range l.segments {
				if seg.offsets.ready.Load() {
					n++
				}
			}
			return n
		}
		if got := loaded(); got != 1 || !l.active().offsets.ready.Load() {
			t.Fatalf("%d of %d segments loaded after Open, want only the active one", got, len(l.segments))
		}
		if _, err := l.Read(l.segments[1].base+1, 1, l.EndOffset()); err != nil {
			t.Fatal(err)
		}
		if got := loaded(); got != 2 || !l.segments[1].offsets.ready.Load() {
			t.Fatalf("%d segments loaded after reading segment 1, want 2", got)
		}
		m.check(t, l)
		segs := l.segments
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for _, seg := range segs {
			if seg.offsets.ready.Load() || seg.times.ready.Load() || seg.offsets.data != nil {
				t.Fatalf("segment %d still loaded after Close", seg.base)
			}
		}
	})
}

// TestIndexMemoryDoesNotGrowWithLogSize opens a log on OSFS whose index
// files hold far more bytes than the heap may grow by, and looks up every
// segment: the heap holds no index entries, only the mapped pages do.
func TestIndexMemoryDoesNotGrowWithLogSize(t *testing.T) {
	env := testEnv{name: "os", fs: vfs.OSFS{}, dir: t.TempDir() + "/big-0"}
	cfg := Config{SegmentBytes: 512 << 10, IndexIntervalBytes: 0, SegmentIndexBytes: 1 << 20, Logger: quietLogger}
	l := mustOpen(t, env.fs, env.dir, cfg)
	batch := makeBatch(batchSpec{records: 1, maxTs: 1, valueSize: 1})
	unit := bytes.Repeat(batch, 100)
	for l.Size() < 8<<20 {
		if _, _, err := l.Append(unit); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = nil // its buffers must not be counted either way
	var indexBytes int64
	for _, base := range segmentFiles(t, env.fs, env.dir) {
		idx, tim := indexFileSizes(t, env, base)
		indexBytes += idx + tim
	}

	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	l = mustOpen(t, env.fs, env.dir, cfg)
	defer l.Close()
	end := l.EndOffset()
	for _, seg := range l.segments {
		if _, err := l.Read(seg.base+int64(seg.offsets.entries()/2), 1, end); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("%d segments, %d bytes of index files, heap grew %d bytes", len(l.segments), indexBytes, grew)
	if indexBytes < 800<<10 || grew > indexBytes/8 {
		t.Fatalf("heap grew %d bytes for %d bytes of index files; index entries must not be in the heap", grew, indexBytes)
	}
	runtime.KeepAlive(l)
}

// TestLookupsMatchLinearScan checks every offset and a range of timestamps
// against the model (a linear scan of what was appended), on a log of many
// segments with index entries on most batches, before and after a reopen
// (which maps the closed segments' indexes lazily).
func TestLookupsMatchLinearScan(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.IndexIntervalBytes = 100
		l := mustOpen(t, env.fs, env.dir, cfg)
		var m model
		for i := 0; i < 300; i++ {
			// Timestamps go up and down so that the time index must be
			// used as Kafka does, not as a sorted list of batches.
			ts := int64(10000 + i*7 - (i%5)*20)
			m.append(t, l, batchSpec{records: 1 + i%4, maxTs: ts, valueSize: 20 + i%60})
		}
		check := func() {
			t.Helper()
			if len(l.segments) < 10 {
				t.Fatalf("only %d segments", len(l.segments))
			}
			for _, b := range m.batches {
				for off := b.first; off <= b.last; off++ {
					got, err := l.Read(off, 1, m.end)
					if err != nil || !bytes.Equal(got, b.data) {
						t.Fatalf("Read(%d) = base %d, %v; want the batch %d..%d", off, baseOf(got), err, b.first, b.last)
					}
				}
			}
			var probes []int64
			for ts := int64(9900); ts < 12200; ts += 3 {
				probes = append(probes, ts)
			}
			checkTimestamps(t, l, &m, probes)
		}
		check()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		check()
	})
}

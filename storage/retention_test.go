package storage

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// segmentLayout returns the bases and sizes of l's segments.
func segmentLayout(l *Log) (bases []int64, sizes []int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segments {
		bases, sizes = append(bases, s.base), append(sizes, s.size)
	}
	return bases, sizes
}

// fillSegments appends batches with maxTs ts+i until the log has n closed
// segments.
func fillSegments(t *testing.T, l *Log, m *model, n int, ts int64) {
	t.Helper()
	for i := 0; ; i++ {
		if bases, _ := segmentLayout(l); len(bases) > n {
			return
		}
		m.append(t, l, batchSpec{records: 3, maxTs: ts + int64(i), valueSize: 200})
	}
}

func TestRetentionByTime(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		fillSegments(t, l, &m, 3, 1000) // old segments: timestamps from 1000
		bases, _ := segmentLayout(l)
		// Newer data in the active segment only.
		m.append(t, l, batchSpec{records: 1, maxTs: 50_000, valueSize: 10})
		p := RetentionPolicy{Delete: true, RetentionMs: 10_000, RetentionBytes: -1, HighWatermark: l.EndOffset()}
		// At 5000 nothing is older than 10 s.
		if res, err := l.DeleteOldSegments(p, 5000); err != nil || res.Segments != 0 {
			t.Fatalf("DeleteOldSegments = %+v, %v; want nothing deleted", res, err)
		}
		// At 20000 the closed segments (max ts < 10000) go; the active one
		// holds 50000 and stays.
		res, err := l.DeleteOldSegments(p, 20_000)
		if err != nil {
			t.Fatal(err)
		}
		if res.Segments != 3 || l.StartOffset() != bases[3] || res.RolledLog {
			t.Fatalf("result %+v, start %d; want 3 segments gone and start %d", res, l.StartOffset(), bases[3])
		}
		m.start = bases[3]
		m.check(t, l)
		if _, err := l.Read(bases[3]-1, 100, math.MaxInt64); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the new start = %v, want ErrOffsetOutOfRange", err)
		}
		if got := segmentFiles(t, env.fs, env.dir); len(got) != 1 {
			t.Fatalf("segment files %v after retention, want one", got)
		}
	})
}

func TestRetentionRollsActiveSegmentWhenItAloneBreaches(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		m.append(t, l, batchSpec{records: 2, maxTs: 1000, valueSize: 10})
		p := RetentionPolicy{Delete: true, RetentionMs: 100, RetentionBytes: -1, HighWatermark: l.EndOffset()}
		res, err := l.DeleteOldSegments(p, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if !res.RolledLog || res.Segments != 1 || l.StartOffset() != 2 || l.EndOffset() != 2 {
			t.Fatalf("result %+v start %d end %d; want the active segment rolled and deleted", res, l.StartOffset(), l.EndOffset())
		}
		// An empty active segment is never deleted.
		if res, err := l.DeleteOldSegments(p, 10_000); err != nil || res.Segments != 0 {
			t.Fatalf("second pass %+v, %v", res, err)
		}
		m.start = 2
		m.batches = nil
		m.check(t, l)
		m.append(t, l, batchSpec{records: 1, maxTs: 20_000, valueSize: 10})
		m.check(t, l)
	})
}

func TestRetentionKeepsSegmentsAtHighWatermark(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/p", testConfig())
	defer l.Close()
	var m model
	fillSegments(t, l, &m, 3, 1000)
	bases, _ := segmentLayout(l)
	p := RetentionPolicy{Delete: true, RetentionMs: 0, RetentionBytes: -1, HighWatermark: bases[1]}
	res, err := l.DeleteOldSegments(p, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 1 || l.StartOffset() != bases[1] {
		t.Fatalf("result %+v start %d; want only the segment below the high watermark %d deleted", res, l.StartOffset(), bases[1])
	}
}

func TestRetentionBySize(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		fillSegments(t, l, &m, 4, 1000)
		bases, sizes := segmentLayout(l)
		var total int64
		for _, s := range sizes {
			total += s
		}
		// The log exceeds the limit by two segments and a byte: two go, as
		// Kafka deletes a segment only while the excess covers it whole.
		limit := total - sizes[0] - sizes[1] - 1
		p := RetentionPolicy{Delete: true, RetentionMs: -1, RetentionBytes: limit, HighWatermark: l.EndOffset()}
		res, err := l.DeleteOldSegments(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Segments != 2 || l.StartOffset() != bases[2] || res.Bytes != sizes[0]+sizes[1] {
			t.Fatalf("result %+v start %d; want 2 segments gone, start %d", res, l.StartOffset(), bases[2])
		}
		if l.Size() > limit+sizes[2] {
			t.Fatalf("size %d after retention of %d", l.Size(), limit)
		}
		m.start = bases[2]
		m.check(t, l)
		// Without "delete" in the policy, size and time do nothing.
		p.Delete, p.RetentionBytes = false, 0
		if res, err := l.DeleteOldSegments(p, 0); err != nil || res.Segments != 0 {
			t.Fatalf("compact-only policy deleted %+v, %v", res, err)
		}
	})
}

func TestRetentionAfterDeleteRecords(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.FileDeleteDelay = time.Hour
		l := mustOpen(t, env.fs, env.dir, cfg)
		var m model
		fillSegments(t, l, &m, 3, 1000)
		bases, _ := segmentLayout(l)
		// DeleteRecords into the middle of the third segment.
		mid := bases[2] + 1
		if err := l.SetStartOffset(mid); err != nil {
			t.Fatal(err)
		}
		m.start = mid
		if l.PendingDeletes() != 2 {
			t.Fatalf("%d retired segments pending, want 2", l.PendingDeletes())
		}
		// Retention by time would take everything; the start stays at mid,
		// which is above the first remaining segment's base.
		res, err := l.DeleteOldSegments(RetentionPolicy{Delete: false, RetentionMs: -1, RetentionBytes: -1, HighWatermark: l.EndOffset()}, 0)
		if err != nil || res.Segments != 0 || l.StartOffset() != mid {
			t.Fatalf("start-offset pass %+v, %v, start %d", res, err, l.StartOffset())
		}
		m.check(t, l)
		// Restart in the middle: the start offset and the files hold.
		crash(l)
		l = mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		m.check(t, l)
		for _, name := range dirNames(t, env.fs, env.dir) {
			if strings.HasSuffix(name, deletedSuffix) {
				t.Fatalf("Open left %s", name)
			}
		}
	})
}

func dirNames(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestRetiredSegmentsRemovedAfterDelay(t *testing.T) {
	cfg := testConfig()
	cfg.FileDeleteDelay = 10 * time.Millisecond
	fsys := vfs.NewMemFS()
	l := mustOpen(t, fsys, "/p", cfg)
	defer l.Close()
	var m model
	fillSegments(t, l, &m, 2, 1000)
	if _, err := l.DeleteOldSegments(RetentionPolicy{Delete: true, RetentionMs: 0, RetentionBytes: -1, HighWatermark: l.EndOffset()}, 1<<40); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.PendingDeletes() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("retired segments never removed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, name := range dirNames(t, fsys, "/p") {
		if strings.HasSuffix(name, deletedSuffix) {
			t.Fatalf("%s left after the delay", name)
		}
	}
}

// TestRetentionWithConcurrentReaders deletes segments while readers read
// from the start: every read returns whole batches at the offset asked or
// ErrOffsetOutOfRange, never garbage.
// On OSFS the deleted segments' indexes are mapped (readers map them as
// they go) and unmapped at once, the delay being 0.
func TestRetentionWithConcurrentReaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		testRetentionWithConcurrentReaders(t, env)
	})
}

func testRetentionWithConcurrentReaders(t *testing.T, env testEnv) {
	cfg := testConfig()
	cfg.FileDeleteDelay = 0
	l := mustOpen(t, env.fs, env.dir, cfg)
	defer l.Close()
	var m model
	fillSegments(t, l, &m, 30, 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				off := l.StartOffset()
				b, err := l.Read(off, 4096, math.MaxInt64)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				// A timestamp lookup maps time indexes of segments that
				// retention is about to delete.
				tb, found, err := l.BatchAtTimestamp(1000 + off/3)
				if err != nil {
					errs <- err
					return
				}
				if found {
					b = append(b, tb...)
				}
				for p := 0; p < len(b); {
					h, reason := parseHeader(b[p:])
					if reason != "" || !crcValid(b[p:p+int(h.size)]) {
						errs <- errors.New("garbage read during retention")
						return
					}
					p += int(h.size)
				}
			}
		}()
	}
	bases, _ := segmentLayout(l)
	for i := 1; i < len(bases); i++ {
		p := RetentionPolicy{Delete: true, RetentionMs: -1, RetentionBytes: -1, HighWatermark: l.EndOffset()}
		if err := l.SetStartOffset(bases[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := l.DeleteOldSegments(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRetiredSegmentsUnmappedWhenRemoved checks on OSFS that segments taken
// out of the log keep their files, renamed .deleted, until
// FileDeleteDelay, and have their index mappings released and files closed
// when the files are removed: at once with no delay, at Close otherwise.
func TestRetiredSegmentsUnmappedWhenRemoved(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Hour} {
		t.Run(delay.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.FileDeleteDelay = delay
			dir := filepath.Join(t.TempDir(), "p-0")
			l := mustOpen(t, vfs.OSFS{}, dir, cfg)
			var m model
			fillSegments(t, l, &m, 3, 1000)
			for _, b := range m.visible() { // maps every segment's indexes
				if _, err := l.Read(b.first, 1, math.MaxInt64); err != nil {
					t.Fatal(err)
				}
				if _, _, err := l.BatchAtTimestamp(b.maxTs); err != nil {
					t.Fatal(err)
				}
			}
			l.mu.RLock()
			dead := slices.Clone(l.segments[:2])
			newStart := l.segments[2].base
			l.mu.RUnlock()
			for _, s := range dead {
				if s.offsets.entries() == 0 || !s.offsets.ready.Load() || !s.times.ready.Load() {
					t.Fatalf("segment %d: indexes not loaded by the reads", s.base)
				}
			}
			if err := l.SetStartOffset(newStart); err != nil {
				t.Fatal(err)
			}
			released := func(s *segment) bool {
				return s.log == nil && s.offsets.data == nil && !s.offsets.ready.Load() &&
					s.times.data == nil && !s.times.ready.Load()
			}
			for _, s := range dead {
				_, err := os.Stat(segmentPath(dir, s.base, logSuffix) + deletedSuffix)
				switch {
				case delay == 0 && (!released(s) || !errors.Is(err, os.ErrNotExist)):
					t.Fatalf("segment %d: not closed, unmapped and removed at once (file: %v)", s.base, err)
				case delay > 0 && (released(s) || err != nil):
					t.Fatalf("segment %d: not kept as .deleted until the delay (file: %v)", s.base, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, s := range dead {
				if !released(s) {
					t.Fatalf("segment %d: still open or mapped after Close", s.base)
				}
			}
			for _, name := range dirNames(t, vfs.OSFS{}, dir) {
				if strings.HasSuffix(name, deletedSuffix) {
					t.Fatalf("%s left after Close", name)
				}
			}
		})
	}
}

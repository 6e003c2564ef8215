package storage

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// The cleaner against the index files of the indexes branch: cleaned
// segments get trimmed index files that lookups read through the mapping,
// the segments they replace are unmapped when their files are removed, and
// recovery's rules hold for logs with cleaned segments.

// keyCodec is a RecordCodec for makeBatch's one-record batches: the record's
// key is its offset modulo keys. A one-record batch is kept or dropped
// whole, and there are no tombstones, so the cleaner never asks for a
// rebuild. block, if set, runs at the start of every Records call.
type keyCodec struct {
	keys  int64
	block func()
}

// blockingKeyCodec returns a keyCodec whose first call closes entered and
// then waits until release is closed: a cleaning round using it stops,
// holding cleanMu, until the test lets it go on.
func blockingKeyCodec(keys int64) (c keyCodec, entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	c = keyCodec{keys: keys, block: func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}}
	return c, entered, release
}

func (c keyCodec) Records(b []byte, fn func(int64, []byte, bool) bool) error {
	if c.block != nil {
		c.block()
	}
	h := parseCleanerHeader(b)
	if h.recordCount > 0 { // the cleaner's empty batches hold none
		fn(h.baseOffset, []byte{byte(h.baseOffset % c.keys)}, false)
	}
	return nil
}

func (keyCodec) Rebuild([]byte, []byte, func(int64) bool, int64) ([]byte, error) {
	return nil, errors.New("keyCodec: a one-record batch is never rebuilt")
}

func keyPolicy(c keyCodec) CompactionPolicy {
	return CompactionPolicy{Codec: c, MaxCompactionLagMs: math.MaxInt64, LastStableOffset: math.MaxInt64}
}

// fillKeyed appends one-record batches, timestamps from 1000 up, until the
// log has n closed segments.
func fillKeyed(t *testing.T, l *Log, n int) {
	t.Helper()
	m := model{start: l.StartOffset(), end: l.EndOffset()}
	for i := int64(0); ; i++ {
		if bases, _ := segmentLayout(l); len(bases) > n {
			return
		}
		m.append(t, l, batchSpec{records: 1, maxTs: 1000 + i, valueSize: 100})
	}
}

// logBatch is one batch read back: its offsets, max timestamp and bytes.
type logBatch struct {
	base, last, maxTs int64
	data              []byte
}

// walkLog reads the whole log in one read, which locates only its first
// batch through an index and then reads the segments from end to end: the
// reference that index lookups are checked against.
func walkLog(t *testing.T, l *Log) []logBatch {
	t.Helper()
	all, err := l.Read(l.StartOffset(), math.MaxInt32, math.MaxInt64)
	if err != nil {
		t.Fatalf("Read all: %v", err)
	}
	var out []logBatch
	for p := 0; p < len(all); {
		h, reason := parseHeader(all[p:])
		if reason != "" {
			t.Fatalf("batch at byte %d: %s", p, reason)
		}
		out = append(out, logBatch{h.baseOffset, h.lastOffset(), h.maxTimestamp, all[p : p+int(h.size)]})
		p += int(h.size)
	}
	return out
}

// checkLookups checks every offset and timestamp lookup against want.
func checkLookups(t *testing.T, l *Log, want []logBatch) {
	t.Helper()
	for off := l.StartOffset(); off < l.EndOffset(); off++ {
		got, err := l.Read(off, 1, math.MaxInt64)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		i := slices.IndexFunc(want, func(b logBatch) bool { return b.last >= off })
		if i < 0 {
			t.Fatalf("Read(%d): no batch ends at or after it, but the log ends at %d", off, l.EndOffset())
		}
		if !bytes.Equal(got, want[i].data) {
			t.Fatalf("Read(%d) = batch at %d, want the one at %d", off, baseOf(got), want[i].base)
		}
	}
	for ts := int64(990); ts < 1300; ts++ {
		got, found, err := l.BatchAtTimestamp(ts)
		if err != nil {
			t.Fatalf("BatchAtTimestamp(%d): %v", ts, err)
		}
		i := slices.IndexFunc(want, func(b logBatch) bool { return b.maxTs >= ts })
		if found != (i >= 0) || found && !bytes.Equal(got, want[i].data) {
			t.Fatalf("BatchAtTimestamp(%d) = batch at %d (found %v), want index %d", ts, baseOf(got), found, i)
		}
	}
}

// closedSegments returns the log's segments but the active one.
func closedSegments(l *Log) []*segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.segments[:len(l.segments)-1])
}

func TestCleanedSegmentIndexesTrimmedAndReadThroughMapping(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	cfg := testConfig()
	cfg.FileDeleteDelay = 0
	l := mustOpen(t, vfs.OSFS{}, dir, cfg)
	fillKeyed(t, l, 6)
	old := closedSegments(l)
	checkLookups(t, l, walkLog(t, l)) // maps the old segments' indexes

	res, err := l.Clean(context.Background(), keyPolicy(keyCodec{keys: 40}), 5000)
	if err != nil {
		t.Fatal(err)
	}
	if res.SegmentsOut == 0 || res.BytesOut >= res.BytesIn {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	cleaned := closedSegments(l)
	for _, s := range old {
		if slices.Contains(cleaned, s) {
			continue
		}
		if s.log != nil || s.offsets.data != nil || s.times.data != nil || s.offsets.mapped {
			t.Fatalf("segment %d replaced by the cleaner is still open or mapped", s.base)
		}
	}
	entries := 0
	for _, s := range cleaned {
		for _, x := range []*indexFile{&s.offsets.indexFile, &s.times.indexFile} {
			fi, err := x.f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if x.prealloc || fi.Size() != int64(x.n*x.entrySize) {
				t.Fatalf("segment %d: index file of %d bytes for %d entries (preallocated %v), want it trimmed",
					s.base, fi.Size(), x.n, x.prealloc)
			}
			if x.ready.Load() {
				t.Fatalf("segment %d: index loaded before any lookup", s.base)
			}
		}
		entries += s.offsets.entries()
	}
	if entries == 0 {
		t.Fatal("the cleaned segments have no offset index entries: lookups were not tested")
	}

	want := walkLog(t, l)
	checkLookups(t, l, want)
	for _, s := range cleaned {
		if _, ok := canMap(s.offsets.f); ok && s.offsets.entries() > 0 &&
			(!s.offsets.mapped || len(s.offsets.data) < s.offsets.n*offsetEntrySize) {
			t.Fatalf("segment %d: offset index not read through a mapping", s.base)
		}
	}

	// A clean restart trusts the cleaned segments' index files as they are.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, vfs.OSFS{}, dir, cfg)
	defer l.Close()
	if r := l.Recovery(); !r.CleanShutdown || r.SegmentsScanned != 0 {
		t.Fatalf("reopening after a clean shutdown: %+v, want no segment scanned", r)
	}
	checkLookups(t, l, want)
}

// TestRecoveryOfCleanedLog checks that Kafka's recovery rules, as Open
// applies them, hold for a log whose closed segments the cleaner rewrote
// (offsets with gaps, a first batch after the base), with a cleaning's
// leftovers in the directory.
func TestRecoveryOfCleanedLog(t *testing.T) {
	cfg := testConfig()
	cfg.FileDeleteDelay = time.Hour // the replaced segments stay as .deleted
	build := func(t *testing.T) (string, []logBatch, []int64) {
		dir := filepath.Join(t.TempDir(), "p-0")
		l := mustOpen(t, vfs.OSFS{}, dir, cfg)
		fillKeyed(t, l, 6)
		if _, err := l.Clean(context.Background(), keyPolicy(keyCodec{keys: 40}), 5000); err != nil {
			t.Fatal(err)
		}
		m := model{start: l.StartOffset(), end: l.EndOffset()}
		m.append(t, l, batchSpec{records: 2, maxTs: 1200, valueSize: 10})
		want := walkLog(t, l)
		if want[0].base == 0 && want[1].base == want[0].last+1 {
			t.Fatal("the cleaning left no gap at the start of the log")
		}
		crash(l)
		// A cleaning's leftovers: a retired segment, an uncommitted output
		// and an index swap file whose log was never committed.
		writeFile(t, vfs.OSFS{}, segmentPath(dir, 7, logSuffix)+deletedSuffix, []byte("retired"))
		writeFile(t, vfs.OSFS{}, segmentPath(dir, 0, logSuffix)+cleanedSuffix, []byte("uncommitted"))
		writeFile(t, vfs.OSFS{}, segmentPath(dir, 0, indexSuffix)+swapSuffix, []byte("stray"))
		return dir, want, segmentFiles(t, vfs.OSFS{}, dir)
	}
	noLeftovers := func(t *testing.T, dir string) {
		for _, name := range dirNames(t, vfs.OSFS{}, dir) {
			switch {
			case name == checkpointName, name == cleanerCheckpointName, name == leaderEpochCheckpointName,
				strings.HasSuffix(name, snapshotSuffix):
				continue
			}
			if _, _, ok := parseSegmentName(name); !ok {
				t.Fatalf("%s left after Open", name)
			}
		}
	}

	t.Run("torn tail cut, cleaned segments scanned and kept", func(t *testing.T) {
		dir, want, bases := build(t)
		last := segmentPath(dir, bases[len(bases)-1], logSuffix)
		writeFile(t, vfs.OSFS{}, last, append(readFile(t, vfs.OSFS{}, last), make([]byte, 30)...))
		l := mustOpen(t, vfs.OSFS{}, dir, cfg)
		defer l.Close()
		r := l.Recovery()
		if r.SegmentsScanned != len(bases) || r.TruncatedBytes != 30 || r.SegmentsDeleted != 0 {
			t.Fatalf("recovery %+v, want %d segments scanned, 30 bytes cut, none deleted", r, len(bases))
		}
		checkLookups(t, l, want)
		noLeftovers(t, dir)
	})
	t.Run("damage in an unflushed cleaned segment cuts it and deletes the rest", func(t *testing.T) {
		dir, want, bases := build(t)
		first := segmentPath(dir, bases[0], logSuffix)
		b := readFile(t, vfs.OSFS{}, first)
		b[len(b)-1] ^= 0xff // in the segment's last batch
		writeFile(t, vfs.OSFS{}, first, b)
		l := mustOpen(t, vfs.OSFS{}, dir, cfg)
		defer l.Close()
		r := l.Recovery()
		if r.SegmentsDeleted != len(bases)-1 || r.TruncatedBytes == 0 {
			t.Fatalf("recovery %+v, want the %d segments after the first deleted", r, len(bases)-1)
		}
		// The cut is at the segment's last batch: the end is where the
		// batch before it ends, or the segment's base if it was the only one.
		i := slices.IndexFunc(want, func(b logBatch) bool { return b.last+1 == bases[1] })
		wantEnd := bases[0]
		if i > 0 {
			wantEnd = want[i-1].last + 1
		}
		if l.EndOffset() != wantEnd {
			t.Fatalf("EndOffset %d, want %d", l.EndOffset(), wantEnd)
		}
		checkLookups(t, l, want[:i])
		noLeftovers(t, dir)
		// The cleaner checkpoint names an offset past the new end: the next
		// round starts from the log start, as Kafka's does.
		if fd, err := l.FirstDirtyOffset(); err != nil || fd != l.StartOffset() {
			t.Fatalf("FirstDirtyOffset = %d, %v after the cut; want the start %d", fd, err, l.StartOffset())
		}
	})
	t.Run("damage in a flushed cleaned segment is refused", func(t *testing.T) {
		dir, _, bases := build(t)
		if err := writeCheckpoint(vfs.OSFS{}, dir, checkpoint{logStart: 0, recoveryPoint: bases[len(bases)-1]}); err != nil {
			t.Fatal(err)
		}
		first := segmentPath(dir, bases[0], logSuffix)
		b := readFile(t, vfs.OSFS{}, first)
		b[len(b)-1] ^= 0xff
		writeFile(t, vfs.OSFS{}, first, b)
		// Record bytes are not among the cheap checks of a flushed
		// segment; a missing index makes Open scan it.
		if err := (vfs.OSFS{}).Remove(segmentPath(dir, bases[0], indexSuffix)); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(vfs.OSFS{}, dir, cfg); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open = %v, want ErrCorrupt", err)
		}
	})
}

// TestCloseAndDeleteStopACleaningRound runs Close or Delete while a
// cleaning round is reading the log: they wait for the round, which stops
// with ErrClosed, instead of closing files under it.
func TestCloseAndDeleteStopACleaningRound(t *testing.T) {
	for _, op := range []struct {
		name string
		do   func(*Log) error
	}{{"Close", (*Log).Close}, {"Delete", (*Log).Delete}} {
		t.Run(op.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				l := mustOpen(t, env.fs, env.dir, testConfig())
				fillKeyed(t, l, 3)
				codec, entered, release := blockingKeyCodec(5)
				cleaned := make(chan error, 1)
				go func() {
					_, err := l.Clean(context.Background(), keyPolicy(codec), 5000)
					cleaned <- err
				}()
				<-entered
				done := make(chan error, 1)
				go func() { done <- op.do(l) }()
				deadline := time.Now().Add(30 * time.Second)
				for !l.cleanAbort.Load() {
					if time.Now().After(deadline) {
						t.Fatalf("%s never asked the cleaning round to stop", op.name)
					}
					time.Sleep(time.Millisecond)
				}
				// The round is blocked inside the codec, holding cleanMu.
				select {
				case err := <-done:
					t.Fatalf("%s returned (%v) while a cleaning round was reading the log", op.name, err)
				default:
				}
				close(release)
				if err := <-cleaned; !errors.Is(err, ErrClosed) {
					t.Fatalf("Clean = %v, want ErrClosed", err)
				}
				if err := <-done; err != nil {
					t.Fatalf("%s: %v", op.name, err)
				}
			})
		})
	}
}

// TestSetConfigDuringCleaning alters the log's settings while a cleaning
// round runs; the round keeps the settings it started with, read under
// appendMu (the race detector checks that), and cleans correctly.
func TestSetConfigDuringCleaning(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/p", testConfig())
	defer l.Close()
	fillKeyed(t, l, 3)
	codec, entered, release := blockingKeyCodec(5)
	type result struct {
		res CleanResult
		err error
	}
	cleaned := make(chan result, 1)
	go func() {
		res, err := l.Clean(context.Background(), keyPolicy(codec), 5000)
		cleaned <- result{res, err}
	}()
	<-entered
	close(release)
	// Nothing orders this alteration with the round's progress.
	cfg := testConfig()
	cfg.SegmentBytes, cfg.IndexIntervalBytes, cfg.SegmentIndexBytes = 1<<20, 1, 1<<20
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r := <-cleaned
	if r.err != nil || r.res.SegmentsOut == 0 {
		t.Fatalf("Clean = %+v, %v", r.res, r.err)
	}
	checkLookups(t, l, walkLog(t, l))
}

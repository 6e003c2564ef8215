package storage

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// fillLog appends n single- or multi-batch units of varied shapes.
func fillLog(t testing.TB, l *Log, m *model, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			m.append(t, l, batchSpec{records: 1 + i%5, maxTs: int64(1000 + i), valueSize: 40})
		case 1:
			m.append(t, l, batchSpec{records: 3, maxTs: int64(1000 + i), valueSize: 10},
				batchSpec{records: 2, maxTs: int64(1000 + i), valueSize: 100})
		case 2:
			m.append(t, l, batchSpec{records: 7, maxTs: int64(1000 + i), valueSize: 3})
		default:
			m.append(t, l, batchSpec{records: 1, maxTs: int64(1000 + i), valueSize: 300})
		}
	}
}

func TestAppendAssignsContiguousOffsetsAndRewritesBaseOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		a, b := makeBatch(batchSpec{records: 3, maxTs: 5}), makeBatch(batchSpec{records: 2, maxTs: 6})
		unit := append(append([]byte{}, a...), b...)
		first, last, err := l.Append(unit)
		if err != nil || first != 0 || last != 4 {
			t.Fatalf("Append = %d, %d, %v; want 0, 4, nil", first, last, err)
		}
		if got := baseOf(unit[len(a):]); got != 3 {
			t.Fatalf("second batch base offset in caller's buffer = %d, want 3", got)
		}
		first, last, err = l.Append(makeBatch(batchSpec{records: 1, maxTs: 7}))
		if err != nil || first != 5 || last != 5 {
			t.Fatalf("Append = %d, %d, %v; want 5, 5, nil", first, last, err)
		}
		if l.EndOffset() != 6 || l.StartOffset() != 0 {
			t.Fatalf("offsets [%d, %d), want [0, 6)", l.StartOffset(), l.EndOffset())
		}
	})
}

func TestAppendRejectsMalformedInput(t *testing.T) {
	good := makeBatch(batchSpec{records: 2, maxTs: 1})
	badMagic := bytes.Clone(good)
	badMagic[offMagic] = 1
	negDelta := bytes.Clone(good)
	copy(negDelta[offLastOffsetDelta:], []byte{0xff, 0xff, 0xff, 0xff})
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short header", good[:40]},
		{"truncated batch", good[:len(good)-1]},
		{"trailing bytes", append(bytes.Clone(good), 1, 2, 3)},
		{"magic 1", badMagic},
		{"negative lastOffsetDelta", negDelta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, vfs.NewMemFS(), "/p-0", testConfig())
			defer l.Close()
			if _, _, err := l.Append(tc.in); !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("Append = %v, want ErrInvalidBatch", err)
			}
			if l.EndOffset() != 0 {
				t.Fatalf("EndOffset = %d after a rejected append", l.EndOffset())
			}
		})
	}
}

func TestReadAtEveryOffsetReturnsContainingBatch(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		fillLog(t, l, &m, 60)
		if len(l.segments) < 3 {
			t.Fatalf("want several segments, got %d", len(l.segments))
		}
		var rest []byte
		for i := len(m.batches) - 1; i >= 0; i-- {
			rest = append(append([]byte{}, m.batches[i].data...), rest...)
			b := m.batches[i]
			for off := b.first; off <= b.last; off++ {
				got, err := l.Read(off, 1, m.end)
				if err != nil || !bytes.Equal(got, b.data) {
					t.Fatalf("Read(%d, 1) = base %d, %v; want batch at %d", off, baseOf(got), err, b.first)
				}
				got, err = l.Read(off, 1<<20, m.end)
				if err != nil || !bytes.Equal(got, rest) {
					t.Fatalf("Read(%d, 1MiB) = %d bytes, %v; want %d bytes to the end", off, len(got), err, len(rest))
				}
			}
		}
	})
}

func TestReadMaxBytesReturnsWholeBatchesAndAlwaysTheFirst(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		m.append(t, l, batchSpec{records: 1, maxTs: 1, valueSize: 500}) // big
		m.append(t, l, batchSpec{records: 1, maxTs: 2, valueSize: 10})
		m.append(t, l, batchSpec{records: 1, maxTs: 3, valueSize: 10})
		big, s1, s2 := len(m.batches[0].data), len(m.batches[1].data), len(m.batches[2].data)
		for _, tc := range []struct {
			offset   int64
			maxBytes int
			want     int // batches returned, from the one holding offset
		}{
			{0, 0, 1},
			{0, 1, 1},
			{0, big - 1, 1},
			{0, big + s1 - 1, 1},
			{0, big + s1, 2},
			{0, big + s1 + s2, 3},
			{0, 1 << 20, 3},
			{1, 0, 1},
			{1, s1 + s2 - 1, 1},
			{1, s1 + s2, 2},
		} {
			got, err := l.Read(tc.offset, tc.maxBytes, m.end)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, b := range m.batches[tc.offset : int(tc.offset)+tc.want] {
				want = append(want, b.data...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Read(%d, %d) = %d bytes, want %d batches (%d bytes)", tc.offset, tc.maxBytes, len(got), tc.want, len(want))
			}
		}
	})
}

func TestReadStopsBeforeMaxOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		fillLog(t, l, &m, 40)
		for _, hw := range []int64{0, 1, 5, 17, 33, m.end - 1, m.end} {
			for off := int64(0); off < m.end; off += 3 {
				got, err := l.Read(off, 1<<20, hw)
				if err != nil {
					t.Fatal(err)
				}
				var want []byte
				for _, b := range m.batches {
					if b.last >= off && b.first < hw {
						want = append(want, b.data...)
					}
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("Read(%d, maxOffset %d) = %d bytes, want %d", off, hw, len(got), len(want))
				}
			}
		}
	})
}

func TestReadOutOfRange(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if got, err := l.Read(0, 100, 0); err != nil || len(got) != 0 {
			t.Fatalf("Read at end of empty log = %d bytes, %v", len(got), err)
		}
		var m model
		fillLog(t, l, &m, 10)
		if err := l.SetStartOffset(5); err != nil {
			t.Fatal(err)
		}
		for _, off := range []int64{-1, 4, m.end + 1} {
			if _, err := l.Read(off, 100, m.end); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Errorf("Read(%d) = %v, want ErrOffsetOutOfRange", off, err)
			}
		}
		if got, err := l.Read(m.end, 100, m.end); err != nil || len(got) != 0 {
			t.Errorf("Read(end) = %d bytes, %v; want empty, nil", len(got), err)
		}
	})
}

func TestReadIntoAppendsToDst(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/p-0", testConfig())
	defer l.Close()
	var m model
	fillLog(t, l, &m, 5)
	dst := []byte("prefix")
	got, err := l.ReadInto(dst, 0, 1, m.end)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[6:], m.batches[0].data) {
		t.Fatalf("ReadInto did not append the first batch after dst")
	}
}

func TestRollAtSegmentBytes(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		fillLog(t, l, &m, 80)
		// A unit larger than a segment goes alone into an empty one.
		m.append(t, l, batchSpec{records: 2, maxTs: 9, valueSize: int(cfg.SegmentBytes)})
		m.append(t, l, batchSpec{records: 1, maxTs: 9})
		bases := segmentFiles(t, env.fs, env.dir)
		if len(bases) != len(l.segments) || len(bases) < 5 {
			t.Fatalf("segment files %v, segments %d", bases, len(l.segments))
		}
		for i, seg := range l.segments {
			if seg.base != bases[i] {
				t.Fatalf("segment %d base %d, file %d", i, seg.base, bases[i])
			}
			size := fileSize(t, env.fs, segmentPath(env.dir, seg.base, logSuffix))
			if size != seg.size {
				t.Fatalf("segment %d: file %d bytes, in memory %d", seg.base, size, seg.size)
			}
			if size > cfg.SegmentBytes && seg.offsets.entries() > 0 {
				t.Fatalf("segment %d has %d bytes, more than SegmentBytes and more than one unit", seg.base, size)
			}
			if i+1 < len(l.segments) && seg.end != l.segments[i+1].base {
				t.Fatalf("segment %d ends at %d, next starts at %d", seg.base, seg.end, l.segments[i+1].base)
			}
		}
		m.check(t, l)
	})
}

func TestRollWhenIndexIsFull(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		cfg.IndexIntervalBytes = 0    // index every batch after the first
		cfg.SegmentIndexBytes = 8 * 4 // four offset entries, one time entry + final
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		for i := 0; i < 30; i++ {
			m.append(t, l, batchSpec{records: 1, maxTs: int64(i)})
		}
		for _, seg := range l.segments {
			if seg.offsets.entries() > seg.offsets.maxEntries || seg.times.entries() > seg.times.maxEntries {
				t.Fatalf("segment %d: %d offset and %d time entries, max %d and %d", seg.base,
					seg.offsets.entries(), seg.times.entries(), seg.offsets.maxEntries, seg.times.maxEntries)
			}
		}
		if len(l.segments) < 5 {
			t.Fatalf("only %d segments: full indexes did not roll", len(l.segments))
		}
		m.check(t, l)
	})
}

// TestIndexesMatchKafkaRules checks every segment's index files against a
// rebuild by scanning (Kafka's recover rule), and performs kafka-dump-log's
// own index checks: each offset entry's position holds a batch ending at the
// entry's offset; each time entry names a batch ending at its offset whose
// max timestamp is the entry's, with timestamps increasing.
func TestIndexesMatchKafkaRules(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		l := mustOpen(t, env.fs, env.dir, cfg)
		var m model
		ts := []int64{50, 10, 70, 70, 20, 90, 85, 100, 5, 130}
		for i := 0; i < 120; i++ {
			m.append(t, l, batchSpec{records: 1 + i%3, maxTs: ts[i%len(ts)] + int64(i/len(ts))*200, valueSize: 60})
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		byLast := map[int64]modelBatch{}
		for _, b := range m.batches {
			byLast[b.last] = b
		}
		for _, base := range segmentFiles(t, env.fs, env.dir) {
			logBytes := readFile(t, env.fs, segmentPath(env.dir, base, logSuffix))
			idx := readFile(t, env.fs, segmentPath(env.dir, base, indexSuffix))
			tim := readFile(t, env.fs, segmentPath(env.dir, base, timeIndexSuffix))
			res, err := scanSegment(memFileOf(t, logBytes), int64(len(logBytes)), base, cfg.IndexIntervalBytes)
			if err != nil || res.valid != int64(len(logBytes)) {
				t.Fatalf("segment %d does not scan clean: %v %s", base, err, res.reason)
			}
			seg := &segment{base: base, maxTs: res.maxTs, maxTsOffset: res.maxTsOffset, times: newTimeIndex(base)}
			fillIndex(&seg.times.indexFile, res.times)
			wantTim := append(bytes.Clone(res.times), seg.finalTimeEntry()...)
			if !bytes.Equal(idx, res.offsets) || !bytes.Equal(tim, wantTim) {
				t.Fatalf("segment %d: index files differ from a rebuild", base)
			}
			oi := newOffsetIndex(base)
			fillIndex(&oi.indexFile, idx)
			for i := range oi.entries() {
				off, pos := oi.entry(i)
				h, reason := parseHeader(logBytes[pos:])
				if reason != "" || h.lastOffset() != off {
					t.Fatalf("segment %d index entry %d: offset %d, batch at %d ends at %d (%s)", base, i, off, pos, h.lastOffset(), reason)
				}
			}
			ti := newTimeIndex(base)
			fillIndex(&ti.indexFile, tim)
			prev := int64(-1)
			for i := range ti.entries() {
				ts, off := ti.entry(i)
				b, ok := byLast[off]
				if !ok || b.maxTs != ts || ts <= prev {
					t.Fatalf("segment %d time entry %d (%d, %d): no batch ends there with that max timestamp", base, i, ts, off)
				}
				prev = ts
			}
		}
	})
}

func TestReopenAfterCloseReturnsSameData(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 50)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if _, _, err := l.Append(makeBatch(batchSpec{records: 1})); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Close = %v, want ErrClosed", err)
		}
		if _, err := l.Read(0, 1, 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Close = %v, want ErrClosed", err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		if r := l.Recovery(); !r.CleanShutdown || r.SegmentsScanned != 0 || r.TruncatedBytes != 0 {
			t.Fatalf("Recovery after a clean close = %+v, want clean and no scan", r)
		}
		m.check(t, l)
		fillLog(t, l, &m, 10)
		m.check(t, l)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if r := l.Recovery(); r.CleanShutdown || r.SegmentsScanned == 0 {
			t.Fatalf("Recovery after a crash = %+v, want a scan", r)
		}
		m.check(t, l)
	})
}

func TestSyncLimitsTheRecoveryScan(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 60)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, &m, 3)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if r := l.Recovery(); r.SegmentsScanned > 2 {
			t.Fatalf("scanned %d segments after a Sync, want at most the last two", r.SegmentsScanned)
		}
		m.check(t, l)
	})
}

func TestNoRecordAllocationsOnAppend(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/p-0", DefaultConfig())
	defer l.Close()
	unit := append(makeBatch(batchSpec{records: 100, valueSize: 10}), makeBatch(batchSpec{records: 50, valueSize: 10})...)
	for i := 0; i < 10; i++ { // warm up scratch buffers and the file
		l.Append(unit)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := l.Append(unit); err != nil {
			t.Fatal(err)
		}
	})
	// MemFS may grow its buffer and the in-memory index its slice now and
	// then; nothing may scale with records or batches.
	if allocs > 1 {
		t.Fatalf("Append allocates %.1f times per call", allocs)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{SegmentBytes: 0, IndexIntervalBytes: 1, SegmentIndexBytes: 100},
		{SegmentBytes: 1 << 31, IndexIntervalBytes: 1, SegmentIndexBytes: 100},
		{SegmentBytes: 100, IndexIntervalBytes: -1, SegmentIndexBytes: 100},
		{SegmentBytes: 100, IndexIntervalBytes: 1, SegmentIndexBytes: 3},
	} {
		if _, err := Open(vfs.NewMemFS(), "/p", cfg); err == nil {
			t.Errorf("Open with %+v succeeded", cfg)
		}
	}
	if _, err := Open(vfs.NewMemFS(), "/p", DefaultConfig()); err != nil {
		t.Errorf("Open with defaults: %v", err)
	}
}

func TestDeleteRemovesDirectory(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 20)
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
		if _, err := env.fs.Stat(env.dir); err == nil {
			t.Fatalf("%s still exists", env.dir)
		}
		if _, err := l.Read(0, 1, 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Delete = %v", err)
		}
	})
}

func TestErrorsArePrefixed(t *testing.T) {
	for _, err := range []error{ErrOffsetOutOfRange, ErrCorrupt, ErrClosed, ErrInvalidBatch, ErrFailed,
		&CorruptError{Path: "x", Reason: "y"}, &failedError{cause: fmt.Errorf("z")}} {
		if msg := err.Error(); len(msg) < 9 || msg[:9] != "storage: " {
			t.Errorf("error %q lacks the storage: prefix", msg)
		}
	}
}

func TestSyncObserverSeesEveryDataFileSync(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		var calls atomic.Int64
		cfg := testConfig()
		cfg.SyncObserver = func(d time.Duration) {
			if d < 0 {
				t.Errorf("SyncObserver got a negative duration %v", d)
			}
			calls.Add(1)
		}
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		fillLog(t, l, &m, 80) // rolls several segments, each synced as it is left
		rolled := len(l.segments) - 1
		if l.SegmentCount() != len(l.segments) {
			t.Fatalf("SegmentCount() = %d, want %d", l.SegmentCount(), len(l.segments))
		}
		if rolled < 2 {
			t.Fatalf("only %d segments rolled", rolled)
		}
		if got := calls.Load(); got != int64(rolled) {
			t.Fatalf("%d observed fsyncs after %d rolls, want one per rolled segment", got, rolled)
		}
		// Sync covers the active segment; a config change keeps the observer.
		plain := testConfig()
		if err := l.SetConfig(plain); err != nil {
			t.Fatal(err)
		}
		before := calls.Load()
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() <= before {
			t.Fatal("Sync after SetConfig was not observed")
		}
	})
}

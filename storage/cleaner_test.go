package storage_test

// The cleaner's tests drive storage through its exported API only, with the
// broker's record codec (protocol/batch), which storage itself must not
// import.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// rec is one record the tests write: a key (nil for none), a value (nil
// for a tombstone) and a timestamp.
type rec struct {
	key, value []byte
	ts         int64
}

// storedRec is a record read back with its offset.
type storedRec struct {
	offset     int64
	key, value string
	null       bool
}

// buildBatch builds one v2 batch of recs.
func buildBatch(t tb, c batch.Compression, producerID int64, recs ...rec) []byte {
	t.Helper()
	rs := make([]batch.Record, len(recs))
	for i, r := range recs {
		rs[i] = batch.Record{OffsetDelta: int32(i), TimestampDelta: r.ts - recs[0].ts, Key: r.key, Value: r.value}
	}
	opts := batch.BuildOptions{Compression: c, BaseTimestamp: recs[0].ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}
	if producerID >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = producerID, 0, 0
	}
	b, err := batch.AppendBatch(nil, opts, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll reads every record from offset to the end, checking each batch.
func readAll(t tb, l *storage.Log, from int64) []storedRec {
	t.Helper()
	var out []storedRec
	for off := from; off < l.EndOffset(); {
		b, err := l.Read(off, 1<<20, math.MaxInt64)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("read at %d below the end %d returned nothing", off, l.EndOffset())
		}
		err = batch.Split(b, func(one []byte) error {
			h, err := batch.Check(one)
			if err != nil {
				return err
			}
			if h.LastOffset() < off {
				return fmt.Errorf("batch ending at %d returned for offset %d", h.LastOffset(), off)
			}
			ferr := batch.ForEachRecord(one, nil, func(h *batch.Header, r *batch.Record) bool {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= off {
					out = append(out, storedRec{offset: o, key: string(r.Key), value: string(r.Value), null: r.Value == nil})
				}
				return true
			})
			off = h.LastOffset() + 1
			return ferr
		})
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	return out
}

// firstRecordFrom reads one batch at a time from off and returns the first
// record at or after off.
func firstRecordFrom(t tb, l *storage.Log, off int64) (storedRec, bool) {
	t.Helper()
	for off < l.EndOffset() {
		b, err := l.Read(off, 1, math.MaxInt64)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %d bytes, %v", off, len(b), err)
		}
		var found storedRec
		ok := false
		if err := batch.ForEachRecord(b, nil, func(h *batch.Header, r *batch.Record) bool {
			if o := h.BaseOffset + int64(r.OffsetDelta); o >= off {
				found, ok = storedRec{offset: o, key: string(r.Key), value: string(r.Value), null: r.Value == nil}, true
				return false
			}
			return true
		}); err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if ok {
			return found, true
		}
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() < off {
			t.Fatalf("read at %d returned a batch ending at %d", off, h.LastOffset())
		}
		off = h.LastOffset() + 1
	}
	return storedRec{}, false
}

func openLog(t tb, fsys vfs.FS, dir string, segmentBytes int64) *storage.Log {
	t.Helper()
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.IndexIntervalBytes = 64
	cfg.FileDeleteDelay = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	l, err := storage.Open(fsys, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func policy(now int64) storage.CompactionPolicy {
	return storage.CompactionPolicy{
		Codec:              &batch.CleanerCodec{},
		MinCleanableRatio:  0.5,
		MaxCompactionLagMs: math.MaxInt64,
		DeleteRetentionMs:  1000,
		LastStableOffset:   math.MaxInt64,
	}
}

func kv(k, v string, ts int64) rec {
	r := rec{key: []byte(k), ts: ts}
	if v != "" {
		r.value = []byte(v)
	}
	return r
}

func TestCleanKeepsLatestPerKeyAndOffsets(t *testing.T) {
	for _, c := range []batch.Compression{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			l := openLog(t, vfs.NewMemFS(), "/p", 300)
			defer l.Close()
			for i := range 40 {
				b := buildBatch(t, c, -1, kv(fmt.Sprint("k", i%4), fmt.Sprint("v", i), int64(1000+i)), kv(fmt.Sprint("j", i%3), fmt.Sprint("w", i), int64(1000+i)))
				if _, _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
			}
			before := readAll(t, l, 0)
			res, err := l.Clean(context.Background(), policy(2000), 2000)
			if err != nil {
				t.Fatal(err)
			}
			if res.SegmentsIn == 0 || res.BytesOut >= res.BytesIn {
				t.Fatalf("nothing cleaned: %+v", res)
			}
			after := readAll(t, l, 0)
			checkCompacted(t, before, after, res.NewFirstDirty)
			checkSlicesMatchReads(t, l)
			if fd, _ := l.FirstDirtyOffset(); fd != res.NewFirstDirty {
				t.Fatalf("first dirty %d, result says %d", fd, res.NewFirstDirty)
			}
		})
	}
}

// checkSlicesMatchReads checks that the zero-copy read path serves the
// cleaned segments, whose files the cleaner opened itself, byte for byte as
// Read does.
func checkSlicesMatchReads(t *testing.T, l *storage.Log) {
	t.Helper()
	for off := l.StartOffset(); off < l.EndOffset(); off++ {
		want, err := l.Read(off, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.ReadSlice(off, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatalf("ReadSlice(%d) after cleaning: %v", off, err)
		}
		got, err := s.AppendTo(nil)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("ReadSlice(%d) = %d bytes, Read %d", off, len(got), len(want))
		}
	}
}

// checkCompacted checks the cleaner's contract: offsets strictly increase
// and are original; every key's latest record below cleanedTo is there
// (tombstones may be gone); records at or above cleanedTo are untouched.
func checkCompacted(t tb, before, after []storedRec, cleanedTo int64) {
	t.Helper()
	orig := map[int64]storedRec{}
	latest := map[string]int64{}
	for _, r := range before {
		orig[r.offset] = r
		latest[r.key] = r.offset
	}
	prev := int64(-1)
	got := map[int64]bool{}
	for _, r := range after {
		if r.offset <= prev {
			t.Fatalf("offset %d after %d", r.offset, prev)
		}
		prev = r.offset
		if o, ok := orig[r.offset]; !ok || o != r {
			t.Fatalf("record at %d is %+v, was %+v", r.offset, r, o)
		}
		got[r.offset] = true
	}
	for key, off := range latest {
		if !got[off] && !orig[off].null {
			t.Fatalf("latest record of key %q at %d is gone", key, off)
		}
	}
	for _, r := range before {
		if r.offset >= cleanedTo && !got[r.offset] {
			t.Fatalf("record %d at or above the cleaned point %d is gone", r.offset, cleanedTo)
		}
	}
}

func TestCleanNeverTouchesActiveSegment(t *testing.T) {
	l := openLog(t, vfs.NewMemFS(), "/p", 1<<20)
	defer l.Close()
	for i := range 10 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv("k", fmt.Sprint(i), 1))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Clean(context.Background(), policy(5), 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.SegmentsIn != 0 || len(readAll(t, l, 0)) != 10 {
		t.Fatalf("the active segment was cleaned: %+v", res)
	}
}

func TestCleanTombstonesKeptForDeleteRetention(t *testing.T) {
	l := openLog(t, vfs.NewMemFS(), "/p", 200)
	defer l.Close()
	app := func(recs ...rec) {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, recs...)); err != nil {
			t.Fatal(err)
		}
	}
	app(kv("a", "1", 10), kv("b", "1", 10))
	app(kv("a", "", 11)) // tombstone for a
	for i := range 8 {
		app(kv(fmt.Sprint("x", i), "filler-filler", 12))
	}
	p := policy(0)
	p.DeleteRetentionMs = 1000
	if _, err := l.Clean(context.Background(), p, 100); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, l, 0)
	if !slices.ContainsFunc(recs, func(r storedRec) bool { return r.key == "a" && r.null }) {
		t.Fatalf("tombstone removed on first cleaning: %+v", recs)
	}
	if slices.ContainsFunc(recs, func(r storedRec) bool { return r.key == "a" && !r.null }) {
		t.Fatalf("value under a tombstone survived: %+v", recs)
	}
	// Before the horizon (100 + 1000) it stays; after, it goes.
	if _, err := l.Clean(context.Background(), p, 1000); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, l, 0); !slices.ContainsFunc(recs, func(r storedRec) bool { return r.key == "a" }) {
		t.Fatalf("tombstone removed before its delete horizon: %+v", recs)
	}
	if _, err := l.Clean(context.Background(), p, 1101); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, l, 0); slices.ContainsFunc(recs, func(r storedRec) bool { return r.key == "a" }) {
		t.Fatalf("tombstone kept past its delete horizon: %+v", recs)
	}
}

func TestCleanRetainsLastBatchOfProducerEmpty(t *testing.T) {
	l := openLog(t, vfs.NewMemFS(), "/p", 200)
	defer l.Close()
	// Producer 7's last batch holds only k=1, superseded later.
	if _, _, err := l.Append(buildBatch(t, batch.None, 7, kv("k", "1", 1), kv("k", "2", 1))); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv("k", fmt.Sprint("later", i), 2))); err != nil {
			t.Fatal(err)
		}
	}
	p := policy(0)
	p.Producers = map[int64]storage.ProducerLastBatch{7: {LastDataOffset: 1}}
	if _, err := l.Clean(context.Background(), p, 10); err != nil {
		t.Fatal(err)
	}
	b, err := l.Read(0, 1<<20, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 7 || h.RecordCount != 0 || h.BaseOffset != 0 || h.LastOffset() != 1 || h.BaseSequence != 0 {
		t.Fatalf("producer's last batch not kept empty: %+v", h)
	}
	if _, err := batch.Check(b[:12+h.BatchLength]); err != nil {
		t.Fatalf("empty batch does not check: %v", err)
	}
}

func TestCleanHonoursMinCompactionLag(t *testing.T) {
	l := openLog(t, vfs.NewMemFS(), "/p", 150)
	defer l.Close()
	for i := range 12 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv("k", fmt.Sprint(i), int64(i*100)))); err != nil {
			t.Fatal(err)
		}
	}
	p := policy(0)
	p.MinCompactionLagMs = 500
	c, err := l.Cleanable(p, 1000) // records with timestamp > 500 are too young
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), p, 1000); err != nil {
		t.Fatal(err)
	}
	for _, r := range readAll(t, l, 0) {
		if r.offset < c.FirstUncleanable && r.value != "" && r.offset != c.FirstUncleanable-1 {
			// Below the point only the latest of k, or the round's last batch.
			t.Fatalf("record %d below %d survived: %+v", r.offset, c.FirstUncleanable, r)
		}
	}
	if got := readAll(t, l, c.FirstUncleanable); len(got) != int(l.EndOffset()-c.FirstUncleanable) {
		t.Fatalf("records newer than min.compaction.lag.ms were cleaned: %d left of %d", len(got), l.EndOffset()-c.FirstUncleanable)
	}
}

func TestCleanedLogSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprint("clean shutdown ", clean), func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, vfs.OSFS{}, dir, 300)
			for i := range 40 {
				if _, _, err := l.Append(buildBatch(t, batch.Zstd, -1, kv(fmt.Sprint("k", i%5), fmt.Sprint(i), int64(i)))); err != nil {
					t.Fatal(err)
				}
			}
			res, err := l.Clean(context.Background(), policy(0), 100)
			if err != nil {
				t.Fatal(err)
			}
			want := readAll(t, l, 0)
			if clean {
				l.Close()
			} else {
				os.Remove(filepath.Join(dir, ".gregor_cleanshutdown"))
				l.Close()
				os.Remove(filepath.Join(dir, ".gregor_cleanshutdown"))
			}
			l2 := openLog(t, vfs.OSFS{}, dir, 300)
			defer l2.Close()
			if got := readAll(t, l2, 0); !slices.Equal(got, want) {
				t.Fatalf("after restart:\n got %+v\nwant %+v", got, want)
			}
			if fd, _ := l2.FirstDirtyOffset(); fd != res.NewFirstDirty {
				t.Fatalf("cleaner checkpoint %d after restart, want %d", fd, res.NewFirstDirty)
			}
		})
	}
}

// TestOpenCompletesInterruptedSwap builds the two states a crash can leave
// a swap in and checks that Open finishes or discards it.
func TestOpenCompletesInterruptedSwap(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, vfs.OSFS{}, dir, 300)
	for i := range 30 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv(fmt.Sprint("k", i%3), fmt.Sprint(i), int64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	before := readAll(t, l, 0)
	l.Close()
	// Clean a copy, and take its first segment as the "cleaned" output.
	copyDir := t.TempDir()
	copyFiles(t, dir, copyDir)
	lc := openLog(t, vfs.OSFS{}, copyDir, 300)
	if _, err := lc.Clean(context.Background(), policy(0), 100); err != nil {
		t.Fatal(err)
	}
	cleaned := readAll(t, lc, 0)
	lc.Close()
	first := firstSegment(t, copyDir)

	t.Run("cleaned not committed is discarded", func(t *testing.T) {
		d := t.TempDir()
		copyFiles(t, dir, d)
		mustCopy(t, filepath.Join(copyDir, first), filepath.Join(d, first+".cleaned"))
		l := openLog(t, vfs.OSFS{}, d, 300)
		defer l.Close()
		if got := readAll(t, l, 0); !slices.Equal(got, before) {
			t.Fatalf("uncommitted clean changed the log")
		}
		if _, err := os.Stat(filepath.Join(d, first+".cleaned")); !os.IsNotExist(err) {
			t.Fatalf(".cleaned file left: %v", err)
		}
	})
	t.Run("committed swap is completed", func(t *testing.T) {
		d := t.TempDir()
		copyFiles(t, dir, d)
		// The crash came after .swap and after one old segment went to .deleted.
		mustCopy(t, filepath.Join(copyDir, first), filepath.Join(d, first+".swap"))
		if err := os.Rename(filepath.Join(d, first), filepath.Join(d, first+".deleted")); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, vfs.OSFS{}, d, 300)
		defer l.Close()
		got := readAll(t, l, 0)
		checkCompacted(t, before, got, baseOfSecond(t, copyDir))
		// The swapped segment holds what the cleaned copy's first one did.
		for _, r := range cleaned {
			if r.offset < baseOfSecond(t, copyDir) && !slices.Contains(got, r) {
				t.Fatalf("record %+v of the swap segment missing", r)
			}
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".swap") || strings.HasSuffix(e.Name(), ".deleted") {
				t.Fatalf("leftover %s", e.Name())
			}
		}
	})
}

func copyFiles(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		mustCopy(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}

func mustCopy(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func segmentLogs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			logs = append(logs, e.Name())
		}
	}
	return logs
}

func firstSegment(t *testing.T, dir string) string { return segmentLogs(t, dir)[0] }

func baseOfSecond(t *testing.T, dir string) int64 {
	var base int64
	fmt.Sscanf(segmentLogs(t, dir)[1], "%d.log", &base)
	return base
}

// TestCleanProperties is the property test: for random logs of keyed
// records, values and tombstones over random segment sizes, codecs and
// offset-map sizes,
// a cleaning keeps the latest value of every key, keeps every surviving
// record at its original offset in increasing order, changes nothing at or
// above the cleaned point, and a read from any offset returns the batch
// holding it or the next surviving one.
func TestCleanProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		segBytes := rapid.Int64Range(100, 2000).Draw(rt, "segmentBytes")
		codec := rapid.SampledFrom([]batch.Compression{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}).Draw(rt, "codec")
		nBatches := rapid.IntRange(1, 60).Draw(rt, "batches")
		l := openLog(rt, vfs.NewMemFS(), "/p", segBytes)
		defer l.Close()
		ts := int64(1000)
		for range nBatches {
			n := rapid.IntRange(1, 5).Draw(rt, "records")
			recs := make([]rec, n)
			for i := range recs {
				k := fmt.Sprint("k", rapid.IntRange(0, 7).Draw(rt, "key"))
				v := ""
				if !rapid.Bool().Draw(rt, "tombstone") || i%2 == 0 {
					v = fmt.Sprint("v", ts, i)
				}
				recs[i] = kv(k, v, ts)
				ts++
			}
			if _, _, err := l.Append(buildBatch(rt, codec, -1, recs...)); err != nil {
				rt.Fatal(err)
			}
		}
		before := readAll(rt, l, 0)
		rounds := rapid.IntRange(1, 3).Draw(rt, "rounds")
		var cleanedTo int64
		now := ts
		// A small offset map makes rounds stop part way, as a full dedupe
		// buffer does in Kafka.
		mapEntries := rapid.IntRange(0, 6).Draw(rt, "mapEntries")
		for range rounds {
			p := policy(now)
			p.MaxMapEntries = mapEntries
			res, err := l.Clean(context.Background(), p, now)
			if err != nil {
				rt.Fatal(err)
			}
			cleanedTo = max(cleanedTo, res.NewFirstDirty)
			now += rapid.Int64Range(0, 3000).Draw(rt, "advance")
		}
		after := readAll(rt, l, 0)
		checkCompacted(rt, before, after, cleanedTo)
		// A read at every offset returns the first surviving record at or
		// after it.
		for off := int64(0); off < l.EndOffset(); off++ {
			got, ok := firstRecordFrom(rt, l, off)
			i := slices.IndexFunc(after, func(r storedRec) bool { return r.offset >= off })
			if i < 0 {
				if ok {
					rt.Fatalf("read at %d returned %+v, nothing survives there", off, got)
				}
				continue
			}
			if !ok || got != after[i] {
				rt.Fatalf("read at %d starts with %+v, want %+v", off, got, after[i])
			}
		}
	})
}

func TestCancelledCleaningLeavesLogAsItWas(t *testing.T) {
	fsys := vfs.NewMemFS()
	l := openLog(t, fsys, "/p", 300)
	defer l.Close()
	for i := range 30 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv(fmt.Sprint("k", i%3), fmt.Sprint(i), int64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	before := readAll(t, l, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Clean(ctx, policy(0), 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("Clean with a cancelled context = %v", err)
	}
	if got := readAll(t, l, 0); !slices.Equal(got, before) {
		t.Fatal("a cancelled cleaning changed the log")
	}
	entries, _ := fsys.ReadDir("/p")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
			t.Fatalf("leftover %s", e.Name())
		}
	}
	if fd, _ := l.FirstDirtyOffset(); fd != 0 {
		t.Fatalf("checkpoint moved to %d by a cancelled cleaning", fd)
	}
	res, err := l.Clean(context.Background(), policy(0), 100)
	if err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, before, readAll(t, l, 0), res.NewFirstDirty)
}

func TestCleanabilityDue(t *testing.T) {
	for _, tc := range []struct {
		c        storage.Cleanability
		minRatio float64
		want     bool
	}{
		{storage.Cleanability{CleanBytes: 100, CleanableBytes: 100}, 0.5, false}, // ratio 0.5 is not above 0.5
		{storage.Cleanability{CleanBytes: 99, CleanableBytes: 101}, 0.5, true},
		{storage.Cleanability{CleanBytes: 900, CleanableBytes: 100}, 0.5, false},
		{storage.Cleanability{CleanBytes: 900, CleanableBytes: 100, CompactionDelayMs: 1}, 0.5, true}, // past max.compaction.lag.ms
		{storage.Cleanability{CleanBytes: 900, CompactionDelayMs: 1}, 0.5, false},                     // nothing cleanable
		{storage.Cleanability{}, 0, false},
	} {
		if got := tc.c.Due(tc.minRatio); got != tc.want {
			t.Errorf("%+v.Due(%v) = %v, want %v", tc.c, tc.minRatio, got, tc.want)
		}
	}
}

// TestCleanKeepsTheIndexOfAbortsItKeeps: cleaning drops an aborted
// transaction's data (the index feeding CompactionPolicy.AbortedTxns),
// keeps its abort marker, and the cleaned segment's .txnindex still lists
// the transaction, also after a restart.
func TestCleanKeepsTheIndexOfAbortsItKeeps(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, vfs.OSFS{}, dir, 300)
	data, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: 1, ProducerID: 5, ProducerEpoch: 0, BaseSequence: 0,
		Transactional: true, PartitionLeaderEpoch: -1}, []batch.Record{{Key: []byte("aborted"), Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	marker, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: 2, ProducerID: 5, ProducerEpoch: 0, BaseSequence: -1,
		Transactional: true, Control: true, PartitionLeaderEpoch: -1},
		[]batch.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 1}}}) // abort, coordinator epoch 1
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{data, marker} {
		if _, _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	aborted := storage.AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: 1, LastStableOffset: 0}
	if err := l.AppendAbortedTxn(aborted); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, _, err := l.Append(buildBatch(t, batch.None, -1, kv(fmt.Sprint("k", i%3), fmt.Sprint(i), int64(10+i)))); err != nil {
			t.Fatal(err)
		}
	}
	p := policy(0)
	p.AbortedTxns = l.AbortedTxns
	if _, err := l.Clean(context.Background(), p, 100); err != nil {
		t.Fatal(err)
	}
	for _, r := range readAll(t, l, 0) {
		if string(r.key) == "aborted" {
			t.Fatalf("aborted record survived cleaning: %+v", r)
		}
	}
	if got := l.AbortedTxns(0, l.EndOffset()); !slices.Equal(got, []storage.AbortedTxn{aborted}) {
		t.Fatalf("after cleaning: %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.OSFS{}, dir, 300)
	defer l.Close()
	if got := l.AbortedTxns(0, l.EndOffset()); !slices.Equal(got, []storage.AbortedTxn{aborted}) {
		t.Fatalf("after restart: %v", got)
	}
}

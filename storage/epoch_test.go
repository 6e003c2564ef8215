package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// epochBatch is a test batch stamped with a partition leader epoch.
func epochBatch(epoch int32, records int) []byte {
	b := makeBatch(batchSpec{records: records, maxTs: 1, valueSize: 10})
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch)) // outside the CRC
	return b
}

func memCache(entries ...EpochEntry) *epochCache {
	fsys := vfs.NewMemFS()
	fsys.MkdirAll("/p", 0o755)
	return &epochCache{fsys: fsys, dir: "/p", entries: entries}
}

// TestEpochCacheAssign follows Kafka's LeaderEpochFileCache.assign: a
// repeated epoch is ignored unless it moves earlier, and a new entry first
// removes every later entry it contradicts.
func TestEpochCacheAssign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []EpochEntry
		epoch  int32
		start  int64
		want   []EpochEntry
	}{
		{"first", nil, 0, 0, []EpochEntry{{0, 0}}},
		{"newer epoch", []EpochEntry{{0, 0}}, 2, 10, []EpochEntry{{0, 0}, {2, 10}}},
		{"same epoch later offset is ignored", []EpochEntry{{0, 0}, {2, 10}}, 2, 15, []EpochEntry{{0, 0}, {2, 10}}},
		{"same epoch earlier offset replaces", []EpochEntry{{0, 0}, {2, 10}}, 2, 5, []EpochEntry{{0, 0}, {2, 5}}},
		{"older epoch truncates newer", []EpochEntry{{0, 0}, {2, 10}, {4, 20}}, 3, 25, []EpochEntry{{0, 0}, {2, 10}, {3, 25}}},
		{"lower offset truncates later entries", []EpochEntry{{0, 0}, {2, 10}, {4, 20}}, 5, 10, []EpochEntry{{0, 0}, {5, 10}}},
		{"same start offset replaces", []EpochEntry{{0, 0}, {2, 10}}, 3, 10, []EpochEntry{{0, 0}, {3, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := memCache(tc.before...)
			if err := c.assign(tc.epoch, tc.start); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.entries, tc.want) {
				t.Fatalf("entries %v, want %v", c.entries, tc.want)
			}
		})
	}
	if err := memCache().assign(-1, 0); err == nil {
		t.Fatal("negative epoch accepted")
	}
}

// TestEpochCacheEndOffsetFor covers every branch of Kafka's endOffsetFor.
func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := memCache(EpochEntry{2, 10}, EpochEntry{4, 30}, EpochEntry{7, 50})
	const logEnd = 80
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset},
		{7, 7, logEnd}, // the latest epoch ends at the log end
		{8, UndefinedEpoch, UndefinedEpochOffset}, // above every entry
		{4, 4, 50}, // ends where the next begins
		{5, 4, 50}, // unknown epoch between: the largest below it
		{2, 2, 30},
		{1, 1, 10}, // below every entry: the first start offset
		{0, 0, 10},
		{1<<31 - 1, UndefinedEpoch, UndefinedEpochOffset},
	} {
		e, off := c.endOffsetFor(tc.epoch, logEnd)
		if e != tc.wantEpoch || off != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, off, tc.wantEpoch, tc.wantEnd)
		}
	}
	if e, off := memCache().endOffsetFor(0, logEnd); e != UndefinedEpoch || off != UndefinedEpochOffset {
		t.Errorf("empty cache: (%d, %d)", e, off)
	}
}

// TestEpochCacheTruncation covers truncateFromEnd (entries at or past the
// new end go) and truncateFromStart (the entry covering the new start is
// moved up to it, earlier ones go), and epochForOffset.
func TestEpochCacheTruncation(t *testing.T) {
	base := []EpochEntry{{2, 10}, {4, 30}, {7, 50}}
	for _, tc := range []struct {
		name string
		op   func(c *epochCache) error
		want []EpochEntry
	}{
		{"end past all", func(c *epochCache) error { return c.truncateFromEnd(60) }, base},
		{"end at an entry", func(c *epochCache) error { return c.truncateFromEnd(50) }, base[:2]},
		{"end inside an epoch", func(c *epochCache) error { return c.truncateFromEnd(31) }, base[:2]},
		{"end below all", func(c *epochCache) error { return c.truncateFromEnd(5) }, []EpochEntry{}},
		{"start below all", func(c *epochCache) error { return c.truncateFromStart(5) }, base},
		{"start at the first", func(c *epochCache) error { return c.truncateFromStart(10) }, base},
		{"start inside the first", func(c *epochCache) error { return c.truncateFromStart(20) }, []EpochEntry{{2, 20}, {4, 30}, {7, 50}}},
		{"start at the second", func(c *epochCache) error { return c.truncateFromStart(30) }, []EpochEntry{{4, 30}, {7, 50}}},
		{"start past all", func(c *epochCache) error { return c.truncateFromStart(70) }, []EpochEntry{{7, 70}}},
		{"remove", func(c *epochCache) error { return c.remove() }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := memCache(slices.Clone(base)...)
			if err := tc.op(c); err != nil {
				t.Fatal(err)
			}
			if len(c.entries) != len(tc.want) || !slices.Equal(c.entries, tc.want) && len(tc.want) > 0 {
				t.Fatalf("entries %v, want %v", c.entries, tc.want)
			}
		})
	}
	c := memCache(base...)
	for _, tc := range []struct {
		offset int64
		epoch  int32
		ok     bool
	}{{5, UndefinedEpoch, false}, {10, 2, true}, {29, 2, true}, {30, 4, true}, {99, 7, true}} {
		if e, ok := c.epochForOffset(tc.offset); e != tc.epoch || ok != tc.ok {
			t.Errorf("epochForOffset(%d) = %d, %v; want %d, %v", tc.offset, e, ok, tc.epoch, tc.ok)
		}
	}
}

// TestEpochFileFormatIsKafkas checks the exact bytes Kafka's
// LeaderEpochCheckpointFile writes and that Kafka-written variants parse.
func TestEpochFileFormatIsKafkas(t *testing.T) {
	got := formatEpochFile([]EpochEntry{{0, 0}, {3, 1200}})
	if want := "0\n2\n0 0\n3 1200\n"; string(got) != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	for _, tc := range []struct {
		text string
		want []EpochEntry
		ok   bool
	}{
		{"", nil, true},
		{"0\n", nil, true},
		{"0\n0\n", nil, true},
		{"0\n1\n5  17\n", []EpochEntry{{5, 17}}, true},
		{"0\n2\n1 0\n4 9", []EpochEntry{{1, 0}, {4, 9}}, true},
		{"1\n0\n", nil, false},           // unknown version
		{"0\n2\n1 0\n", nil, false},      // fewer entries than announced
		{"0\n1\n1 0\n2 5\n", nil, false}, // more
		{"0\n1\n1\n", nil, false},        // malformed line
		{"0\n2\n3 0\n2 5\n", nil, false}, // epochs out of order
		{"0\n2\n1 9\n2 5\n", nil, false}, // offsets out of order
		{"0\n1\n-1 5\n", nil, false},     // negative
		{"0\nx\n", nil, false},
	} {
		got, err := parseEpochFile([]byte(tc.text))
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parse %q = %v, %v; want %v, ok=%v", tc.text, got, err, tc.want, tc.ok)
		}
	}
}

// TestLogTracksLeaderEpochs appends batches of several epochs and checks
// the entries through truncation, start offset moves, reopening and
// TruncateFully, on both file systems; the file always matches memory.
func TestLogTracksLeaderEpochs(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		check := func(want ...EpochEntry) {
			t.Helper()
			if got := l.Epochs(); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("epochs %v, want %v", got, want)
			}
			b := readFile(t, env.fs, filepath.Join(env.dir, leaderEpochCheckpointName))
			if !bytes.Equal(b, formatEpochFile(want)) {
				t.Fatalf("checkpoint file %q, want %q", b, formatEpochFile(want))
			}
		}
		for _, e := range []int32{0, 0, 3, 3, 3, 5} { // 2 records each
			if _, _, err := l.Append(epochBatch(e, 2)); err != nil {
				t.Fatal(err)
			}
		}
		check(EpochEntry{0, 0}, EpochEntry{3, 4}, EpochEntry{5, 10})
		if _, _, err := l.Append(epochBatch(-1, 1)); err != nil { // no epoch: ignored
			t.Fatal(err)
		}
		if e, off := l.EndOffsetForEpoch(5); e != 5 || off != 13 {
			t.Fatalf("EndOffsetForEpoch(5) = %d, %d", e, off)
		}
		if e, off := l.EndOffsetForEpoch(4); e != 3 || off != 10 {
			t.Fatalf("EndOffsetForEpoch(4) = %d, %d", e, off)
		}
		if err := l.TruncateTo(10); err != nil {
			t.Fatal(err)
		}
		check(EpochEntry{0, 0}, EpochEntry{3, 4})
		if err := l.SetStartOffset(6); err != nil {
			t.Fatal(err)
		}
		check(EpochEntry{3, 6})
		if err := l.AssignEpoch(7, l.EndOffset()); err != nil { // a new leader takes over
			t.Fatal(err)
		}
		check(EpochEntry{3, 6}, EpochEntry{7, 10})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		// Reopening drops the entry at the log end, as Kafka's loader does,
		// in memory; the file follows at the first append.
		if got := l.Epochs(); !slices.Equal(got, []EpochEntry{{3, 6}}) {
			t.Fatalf("epochs after reopen %v", got)
		}
		if _, _, err := l.Append(epochBatch(3, 1)); err != nil {
			t.Fatal(err)
		}
		check(EpochEntry{3, 6})
		if e, ok := l.LatestEpoch(); !ok || e != 3 {
			t.Fatalf("LatestEpoch = %d, %v", e, ok)
		}
		if err := l.TruncateFullyAndStartAt(100); err != nil {
			t.Fatal(err)
		}
		check()
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEpochsAfterCrash crashes (power loss: only synced bytes survive)
// after appending a new epoch's batches without a Sync, and checks that the
// reopened log's epochs agree with what recovery kept: the checkpoint,
// written durably before the data, names an epoch whose batches are lost,
// and Open drops it.
func TestEpochsAfterCrash(t *testing.T) {
	fsys := vfs.NewMemFS()
	l := mustOpen(t, fsys, "/d/t-0", testConfig())
	for range 3 {
		if _, _, err := l.Append(epochBatch(1, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := l.Append(epochBatch(4, 3)); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fsys.CrashClone()
	l2 := mustOpen(t, crashed, "/d/t-0", testConfig())
	if l2.EndOffset() != 9 {
		t.Fatalf("recovered end %d, want 9", l2.EndOffset())
	}
	if got, want := l2.Epochs(), []EpochEntry{{1, 0}}; !slices.Equal(got, want) {
		t.Fatalf("epochs after crash %v, want %v", got, want)
	}
	// A crash with a half-written checkpoint leaves the temporary file,
	// which Open removes; the old file still holds.
	writeFile(t, crashed, "/d/t-0/"+leaderEpochTempName, []byte("0\n3\n1 0"))
	l2.Close()
	l3 := mustOpen(t, crashed, "/d/t-0", testConfig())
	if got, want := l3.Epochs(), []EpochEntry{{1, 0}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if _, err := crashed.Stat("/d/t-0/" + leaderEpochTempName); err == nil {
		t.Fatal("temporary checkpoint left in place")
	}
	l3.Close()
}

// TestMissingEpochCheckpointIsRebuilt removes the file (a log written
// before it existed) and checks Open rebuilds it from the batch headers;
// a corrupt file makes Open refuse the log.
func TestMissingEpochCheckpointIsRebuilt(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		for i := range 60 { // several segments
			if _, _, err := l.Append(epochBatch(int32(i/20)*2, 4)); err != nil {
				t.Fatal(err)
			}
		}
		want := l.Epochs()
		if len(want) != 3 || len(l.segments) < 2 {
			t.Fatalf("setup: epochs %v, %d segments", want, len(l.segments))
		}
		l.Close()
		path := filepath.Join(env.dir, leaderEpochCheckpointName)
		if err := env.fs.Remove(path); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		if got := l.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("rebuilt %v, want %v", got, want)
		}
		if err := l.AssignEpoch(4, l.EndOffset()); err != nil { // writes what Open derived
			t.Fatal(err)
		}
		if b := readFile(t, env.fs, path); !bytes.Equal(b, formatEpochFile(want)) {
			t.Fatalf("rebuilt file %q", b)
		}
		l.Close()
		writeFile(t, env.fs, path, []byte("0\n2\n0 0\n"))
		if _, err := Open(env.fs, env.dir, testConfig()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open with a corrupt checkpoint: %v, want ErrCorrupt", err)
		}
	})
}

// FuzzParseEpochFile parses arbitrary bytes as a leader-epoch checkpoint.
// Invariants: never panics; what parses is strictly ascending in epoch,
// non-decreasing in offset, non-negative, and formats back to text that
// parses to the same entries.
func FuzzParseEpochFile(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 1200\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n1\n2147483647 9223372036854775807\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseEpochFile(b)
		if err != nil {
			return
		}
		for i, e := range entries {
			if e.Epoch < 0 || e.StartOffset < 0 || i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset < entries[i-1].StartOffset) {
				t.Fatalf("invalid entries %v", entries)
			}
		}
		again, err := parseEpochFile(formatEpochFile(entries))
		if err != nil || !slices.Equal(again, entries) {
			t.Fatalf("round trip: %v, %v; want %v", again, err, entries)
		}
	})
}

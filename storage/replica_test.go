package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// replicate copies leader's batches from the follower's end offset to the
// leader's end into follower with AppendReplicated, in reads of at most
// maxBytes (at least one batch each), as a replica fetcher does.
func replicate(t testing.TB, leader, follower *Log, maxBytes int) {
	t.Helper()
	for follower.EndOffset() < leader.EndOffset() {
		b, err := leader.Read(follower.EndOffset(), maxBytes, math.MaxInt64)
		if err != nil {
			t.Fatalf("leader Read(%d): %v", follower.EndOffset(), err)
		}
		first, last, err := follower.AppendReplicated(b)
		if err != nil {
			t.Fatalf("AppendReplicated at %d: %v", follower.EndOffset(), err)
		}
		if first != baseOf(b) || last+1 != follower.EndOffset() {
			t.Fatalf("AppendReplicated = %d, %d; input starts at %d, end now %d", first, last, baseOf(b), follower.EndOffset())
		}
	}
}

// checkIndexesAsRecoveryBuilds checks that every segment's offset and time
// index entries are exactly those recovery would rebuild from its batches
// (a closed segment's time index ending with its max timestamp), and that
// its max timestamp is the one recovery finds.
func checkIndexesAsRecoveryBuilds(t testing.TB, l *Log) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i, seg := range l.segments {
		if err := seg.loadIndexes(); err != nil {
			t.Fatal(err)
		}
		res, err := scanSegment(seg.log, seg.size, seg.base, l.cfg.IndexIntervalBytes)
		if err != nil || res.valid != seg.size {
			t.Fatalf("segment %d: scan: %v (valid %d of %d: %s)", seg.base, err, res.valid, seg.size, res.reason)
		}
		wantTimes := res.times
		if i < len(l.segments)-1 && res.maxTs > res.lastTimeTs() {
			wantTimes = appendTimeEntry(slices.Clone(wantTimes), seg.base, res.maxTs, res.maxTsOffset)
		}
		gotIdx := seg.offsets.data[:seg.offsets.entries()*offsetEntrySize]
		gotTim := seg.times.data[:seg.times.entries()*timeEntrySize]
		if !bytes.Equal(gotIdx, res.offsets) || !bytes.Equal(gotTim, wantTimes) {
			t.Fatalf("segment %d: index entries %x / time entries %x, recovery builds %x / %x",
				seg.base, gotIdx, gotTim, res.offsets, wantTimes)
		}
		if seg.maxTs != res.maxTs || seg.maxTs != noTimestamp && seg.maxTsOffset != res.maxTsOffset {
			t.Fatalf("segment %d: max timestamp %d at %d, recovery finds %d at %d", seg.base, seg.maxTs, seg.maxTsOffset, res.maxTs, res.maxTsOffset)
		}
		if seg.end != res.end && seg.size > 0 {
			t.Fatalf("segment %d: end %d, batches end at %d", seg.base, seg.end, res.end)
		}
	}
}

// fillEpochs appends n varied units to l, stamping them with leader epochs
// that rise every few units, and records them in m.
func fillEpochs(t testing.TB, l *Log, m *model, n int, rng *rand.Rand) {
	t.Helper()
	epoch := int32(0)
	if e, ok := l.LatestEpoch(); ok {
		epoch = e
	}
	for i := 0; i < n; i++ {
		if rng.Intn(6) == 0 {
			epoch += int32(1 + rng.Intn(2))
		}
		k := 1 + rng.Intn(3)
		var unit []byte
		var specs []batchSpec
		for j := 0; j < k; j++ {
			s := batchSpec{records: 1 + rng.Intn(5), maxTs: 1000 + rng.Int63n(300), valueSize: rng.Intn(150)}
			b := makeBatch(s)
			binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
			unit = append(unit, b...)
			specs = append(specs, s)
		}
		first, _, err := l.Append(unit)
		if err != nil {
			t.Fatal(err)
		}
		off := first
		for p, j := 0, 0; p < len(unit); j++ {
			h, _ := parseHeader(unit[p:])
			m.batches = append(m.batches, modelBatch{first: off, last: h.lastOffset(), maxTs: specs[j].maxTs, data: bytes.Clone(unit[p : p+int(h.size)])})
			off = h.nextOffset()
			p += int(h.size)
		}
		m.end = off
	}
}

// TestAppendReplicatedCopiesTheLeaderByteForByte feeds a follower with the
// leader's Read output in fetches of varied sizes: the follower holds the
// same bytes, the same epochs, answers every offset and timestamp lookup
// as the leader does, builds the indexes recovery would, and still does
// after a clean and an unclean reopen.
func TestAppendReplicatedCopiesTheLeaderByteForByte(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		for _, fetch := range []int{1, 700, 5000, 1 << 20} {
			rng := rand.New(rand.NewSource(int64(fetch)))
			leader := mustOpen(t, env.fs, env.dir+"-leader", testConfig())
			fcfg := testConfig()
			fcfg.SegmentBytes = 3000 // the follower rolls at other places than the leader
			follower := mustOpen(t, env.fs, env.dir+"-follower", fcfg)
			var m model
			fillEpochs(t, leader, &m, 60, rng)
			replicate(t, leader, follower, fetch)
			check := func(stage string) {
				t.Helper()
				m.check(t, follower)
				want := walkLog(t, leader)
				if got := walkLog(t, follower); !slices.EqualFunc(got, want, func(a, b logBatch) bool { return bytes.Equal(a.data, b.data) }) {
					t.Fatalf("fetch %d, %s: follower's bytes differ from the leader's", fetch, stage)
				}
				checkLookups(t, follower, want)
				checkTimestamps(t, follower, &m, []int64{0, 999, 1000, 1150, 1299, 1300})
				if got, want := follower.Epochs(), leader.Epochs(); !slices.Equal(got, want) {
					t.Fatalf("fetch %d, %s: epochs %v, leader's %v", fetch, stage, got, want)
				}
				latest, _ := leader.LatestEpoch()
				for e := int32(-1); e <= latest+1; e++ {
					ge, go_ := follower.EndOffsetForEpoch(e)
					we, wo := leader.EndOffsetForEpoch(e)
					if ge != we || go_ != wo {
						t.Fatalf("fetch %d, %s: EndOffsetForEpoch(%d) = %d, %d; leader %d, %d", fetch, stage, e, ge, go_, we, wo)
					}
				}
			}
			check("live")
			checkIndexesAsRecoveryBuilds(t, follower)
			if err := follower.Close(); err != nil {
				t.Fatal(err)
			}
			follower = mustOpen(t, env.fs, env.dir+"-follower", fcfg)
			check("after a clean reopen")
			fillEpochs(t, leader, &m, 10, rng)
			replicate(t, leader, follower, fetch)
			crash(follower)
			follower = mustOpen(t, env.fs, env.dir+"-follower", fcfg)
			check("after a crash")
			if err := errors.Join(leader.Delete(), follower.Delete()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestAppendReplicatedValidates: what AppendReplicated refuses, with
// ErrInvalidBatch and nothing appended, and what it accepts.
func TestAppendReplicatedValidates(t *testing.T) {
	at := func(off int64, records int) []byte {
		return withOffset(makeBatch(batchSpec{records: records, maxTs: 10, valueSize: 5}), off)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	badCRC := at(10, 2)
	badCRC[len(badCRC)-1] ^= 1
	magic1 := at(10, 1)
	magic1[offMagic] = 1
	for _, tc := range []struct {
		name    string
		input   []byte
		ok      bool
		wantEnd int64 // after a successful append; the log ends at 10 before
	}{
		{"continues at the end", cat(at(10, 3), at(13, 2)), true, 15},
		{"empty input is a no-op", nil, true, 10},
		{"a gap before the first batch (compacted leader)", at(25, 2), true, 27},
		{"a gap between batches (compacted leader)", cat(at(10, 2), at(20, 1)), true, 21},
		{"first batch overlaps the log", at(9, 2), false, 0},
		{"first batch far below the end", at(0, 1), false, 0},
		{"second batch overlaps the first", cat(at(10, 3), at(12, 1)), false, 0},
		{"second batch goes backwards", cat(at(10, 3), at(5, 1)), false, 0},
		{"CRC mismatch", badCRC, false, 0},
		{"CRC mismatch in the second batch", cat(at(10, 1), badCRC[:]), false, 0},
		{"magic 1", magic1, false, 0},
		{"short header", at(10, 1)[:40], false, 0},
		{"batch runs past the input", at(10, 3)[:70], false, 0},
		{"trailing garbage", cat(at(10, 1), []byte{1, 2, 3}), false, 0},
		{"last offset at 2^31-1 past the end", at(10+math.MaxInt32, 1), true, 11 + math.MaxInt32},
		{"offsets beyond 32 bits of the end", at(11+math.MaxInt32, 1), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, vfs.NewMemFS(), "/p-0", testConfig())
			defer l.Close()
			var m model
			m.append(t, l, batchSpec{records: 10, maxTs: 5, valueSize: 20})
			input := bytes.Clone(tc.input)
			first, last, err := l.AppendReplicated(input)
			if !bytes.Equal(input, tc.input) {
				t.Fatal("AppendReplicated modified its input")
			}
			if !tc.ok {
				if !errors.Is(err, ErrInvalidBatch) {
					t.Fatalf("AppendReplicated = %d, %d, %v; want ErrInvalidBatch", first, last, err)
				}
				m.check(t, l)
				return
			}
			if err != nil {
				t.Fatalf("AppendReplicated: %v", err)
			}
			if last+1 != tc.wantEnd || l.EndOffset() != tc.wantEnd {
				t.Fatalf("AppendReplicated = %d, %d; EndOffset %d; want the log to end at %d", first, last, l.EndOffset(), tc.wantEnd)
			}
			if len(tc.input) == 0 {
				if first != 10 {
					t.Fatalf("no-op returned first %d, want the end 10", first)
				}
				m.check(t, l)
				return
			}
			if first != baseOf(tc.input) {
				t.Fatalf("first = %d, want %d", first, baseOf(tc.input))
			}
			// Every offset from the old end reads the batch holding it or
			// the next one, across the gaps.
			got, err := l.Read(10, 1<<20, math.MaxInt64)
			if err != nil || !bytes.Equal(got, tc.input) {
				t.Fatalf("Read(10) = %d bytes, %v; want the input", len(got), err)
			}
			for off := int64(10); off < min(tc.wantEnd, 100); off++ {
				b, err := l.Read(off, 1, math.MaxInt64)
				if err != nil || len(b) == 0 {
					t.Fatalf("Read(%d) = %d bytes, %v", off, len(b), err)
				}
				if h, _ := parseHeader(b); h.lastOffset() < off {
					t.Fatalf("Read(%d) returned the batch ending at %d", off, h.lastOffset())
				}
			}
			crash(l)
			l = mustOpen(t, l.fsys, "/p-0", testConfig())
			if l.EndOffset() != tc.wantEnd {
				t.Fatalf("after reopen EndOffset %d, want %d", l.EndOffset(), tc.wantEnd)
			}
		})
	}
}

// TestAppendReplicatedStartsLeaderEpochs: a batch stamped with a newer
// epoch starts it at its base offset; a repeated or older epoch and a
// batch without one (-1) add nothing. The checkpoint file is written
// before the data.
func TestAppendReplicatedStartsLeaderEpochs(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		off := int64(0)
		var unit []byte
		for _, e := range []int32{-1, 0, 0, 2, 1, 2, 5} {
			b := withOffset(epochBatch(e, 3), off)
			unit = append(unit, b...)
			off += 3
			if e == 2 {
				if _, _, err := l.AppendReplicated(unit); err != nil {
					t.Fatal(err)
				}
				unit = nil
			}
		}
		if _, _, err := l.AppendReplicated(unit); err != nil {
			t.Fatal(err)
		}
		want := []EpochEntry{{0, 3}, {2, 9}, {5, 18}}
		if got := l.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("Epochs = %v, want %v", got, want)
		}
		if b := readFile(t, env.fs, env.dir+"/"+leaderEpochCheckpointName); !bytes.Equal(b, formatEpochFile(want)) {
			t.Fatalf("checkpoint %q, want %q", b, formatEpochFile(want))
		}
		if e, end := l.EndOffsetForEpoch(2); e != 2 || end != 18 {
			t.Fatalf("EndOffsetForEpoch(2) = %d, %d; want 2, 18", e, end)
		}
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if got := l.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("Epochs after a crash = %v, want %v", got, want)
		}
	})
}

// TestAppendReplicatedFlushPolicy: FlushAfterAppend after AppendReplicated
// applies the flush policy as after Append.
func TestAppendReplicatedFlushPolicy(t *testing.T) {
	mem := vfs.NewMemFS()
	l := mustOpen(t, mem, "/p-0", testConfig())
	defer l.Close()
	l.SetFlushPolicy(FlushPolicy{Messages: 1, Ms: math.MaxInt64})
	_, last, err := l.AppendReplicated(withOffset(makeBatch(batchSpec{records: 4, maxTs: 3}), 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FlushAfterAppend(last + 1); err != nil {
		t.Fatal(err)
	}
	if got := l.DurableOffset(); got != 4 {
		t.Fatalf("DurableOffset = %d, want 4", got)
	}
	lost := mustOpen(t, mem.CrashClone(), "/p-0", testConfig())
	defer lost.Close()
	if lost.EndOffset() != 4 {
		t.Fatalf("after a power loss EndOffset = %d, want 4", lost.EndOffset())
	}
}

// TestTruncateToWhereOffsetsSkip: in a log with gaps (a compacted leader's
// batches), a truncation ends the log after the last batch kept, which is
// also where Open finds it ends.
func TestTruncateToWhereOffsetsSkip(t *testing.T) {
	at := func(off int64, records int) []byte {
		return withOffset(makeBatch(batchSpec{records: records, maxTs: off, valueSize: 5}), off)
	}
	for _, tc := range []struct {
		offset, wantEnd int64
	}{
		{0, 0}, {2, 0}, {3, 3}, {4, 3}, {5, 3}, {6, 3}, {7, 7}, {9, 7}, {10, 7}, {11, 11}, {12, 12},
	} {
		forEachFS(t, func(t *testing.T, env testEnv) {
			l := mustOpen(t, env.fs, env.dir, testConfig())
			// Offsets 0-2, 5-6, 10, 11: gaps 3-4 and 7-9.
			if _, _, err := l.AppendReplicated(bytes.Join([][]byte{at(0, 3), at(5, 2), at(10, 1), at(11, 1)}, nil)); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateTo(tc.offset); err != nil {
				t.Fatal(err)
			}
			if got := l.EndOffset(); got != tc.wantEnd {
				t.Fatalf("TruncateTo(%d): EndOffset %d, want %d", tc.offset, got, tc.wantEnd)
			}
			crash(l)
			l = mustOpen(t, env.fs, env.dir, testConfig())
			defer l.Close()
			if got := l.EndOffset(); got != tc.wantEnd {
				t.Fatalf("TruncateTo(%d), reopened: EndOffset %d, want %d", tc.offset, got, tc.wantEnd)
			}
			if _, _, err := l.AppendReplicated(at(tc.wantEnd, 1)); err != nil {
				t.Fatalf("AppendReplicated at the new end: %v", err)
			}
		})
	}
}

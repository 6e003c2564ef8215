package storage

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// TestTruncateToClampsDurableOffsetAndFirstDirty: the recovery point (the
// DurableOffset) and the cleaner checkpoint come down to the new end, and
// stay there across a reopen; a log without a cleaner checkpoint gets none.
func TestTruncateToClampsDurableOffsetAndFirstDirty(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 40)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		off := m.batches[len(m.batches)/2].first
		if err := l.TruncateTo(off); err != nil {
			t.Fatal(err)
		}
		m.truncate(off)
		if got := l.DurableOffset(); got != m.end {
			t.Fatalf("DurableOffset = %d, want %d", got, m.end)
		}
		if _, err := env.fs.Stat(env.dir + "/" + cleanerCheckpointName); err == nil {
			t.Fatal("truncation wrote a cleaner checkpoint for a log that had none")
		}

		// Now with a cleaner checkpoint at the end.
		fillLog(t, l, &m, 20)
		l.cleanMu.Lock()
		err := l.writeFirstDirty(m.end)
		l.cleanMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		off = m.batches[len(m.batches)-10].first
		if err := l.TruncateTo(off); err != nil {
			t.Fatal(err)
		}
		m.truncate(off)
		fillLog(t, l, &m, 20) // past the old first dirty offset again
		if got, err := l.FirstDirtyOffset(); err != nil || got != off {
			t.Fatalf("FirstDirtyOffset = %d, %v; want %d", got, err, off)
		}
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		m.check(t, l)
		if got, err := l.FirstDirtyOffset(); err != nil || got != off {
			t.Fatalf("FirstDirtyOffset after reopen = %d, %v; want %d", got, err, off)
		}
	})
}

// TestTruncateToAtTheEndDropsAnEpochWithoutData: as Kafka's truncateTo, a
// truncation at or past the end removes no data but drops the leader-epoch
// entries starting there, which a leader assigned on taking over and never
// wrote in.
func TestTruncateToAtTheEndDropsAnEpochWithoutData(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		if _, _, err := l.Append(epochBatch(3, 5)); err != nil {
			t.Fatal(err)
		}
		m.batches = append(m.batches, modelBatch{first: 0, last: 4, maxTs: 1, data: withOffset(epochBatch(3, 5), 0)})
		m.end = 5
		for _, off := range []int64{5, 50} {
			if err := l.AssignEpoch(7, 5); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			if got, want := l.Epochs(), []EpochEntry{{3, 0}}; !slices.Equal(got, want) {
				t.Fatalf("TruncateTo(%d): epochs %v, want %v", off, got, want)
			}
			m.check(t, l)
		}
	})
}

// TestTruncateToInsideTheStartBatch: the start offset lies inside a batch
// (DeleteRecords) and the truncation removes that batch: the log is empty
// at the batch's base, and stays so after a crash.
func TestTruncateToInsideTheStartBatch(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 30)
		b := m.batches[len(m.batches)-3]
		if b.last == b.first {
			t.Fatal("the test needs a batch of several records")
		}
		m.start = b.first + 1
		if err := l.SetStartOffset(m.start); err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(m.start); err != nil {
			t.Fatal(err)
		}
		m.truncate(m.start)
		if m.start != b.first || m.end != b.first {
			t.Fatalf("model [%d, %d)", m.start, m.end)
		}
		m.check(t, l)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		m.check(t, l)
		fillLog(t, l, &m, 3)
		m.check(t, l)
	})
}

// TestTruncateCrashAtEveryStepLeavesAPrefix fails the n-th FS operation of
// a truncation for every n until one succeeds, then reopens the files as a
// killed process leaves them and as a power loss does (only fsynced bytes):
// the reopened log is always a prefix of the log before the truncation
// (at least the part the truncation keeps, for TruncateTo), byte for byte,
// with no deleted record shown again, leader epochs that agree with its
// batches, the aborted transactions of its batches and no others, no
// producer snapshot past its end, a cleaner checkpoint inside it, and
// lookups that work; and it takes appends. Once the truncation
// succeeds, both reopen to exactly the truncated log.
func TestTruncateCrashAtEveryStepLeavesAPrefix(t *testing.T) {
	type op struct {
		name string
		// do truncates and returns the end the truncation keeps at least
		// (-1: none) and the exact end and start it leaves.
		do func(l *Log) (keep, end, start int64, err error)
	}
	truncateTo := func(pick func(l *Log) int64) func(l *Log) (int64, int64, int64, error) {
		return func(l *Log) (int64, int64, int64, error) {
			off := pick(l)
			var scratch [batchHeaderSize]byte
			seg := l.segments[l.segmentFor(off)]
			_, h, _, err := seg.locate(off, scratch[:])
			if err != nil {
				return 0, 0, 0, err
			}
			return h.baseOffset, h.baseOffset, l.StartOffset(), l.TruncateTo(off)
		}
	}
	ops := []op{
		{"TruncateTo inside the active segment", truncateTo(func(l *Log) int64 { return l.EndOffset() - 3 })},
		{"TruncateTo into an older segment", truncateTo(func(l *Log) int64 { return l.segments[1].base + 1 })},
		{"TruncateTo a segment's base", truncateTo(func(l *Log) int64 { return l.segments[2].base })},
		{"TruncateTo below the start", func(l *Log) (int64, int64, int64, error) {
			off := l.StartOffset() - 2
			return -1, off, off, l.TruncateTo(off)
		}},
		{"TruncateFullyAndStartAt past the end", func(l *Log) (int64, int64, int64, error) {
			end := l.EndOffset() + 100
			return -1, end, end, l.TruncateFullyAndStartAt(end)
		}},
	}
	// failOnly fails the n-th operation alone: a transient error, after
	// which the truncation's own later steps (inside one, such as removing
	// a segment's files) would go on if the code let them.
	failOnly := func(n int) vfs.Injector {
		seen := 0
		return func(vfs.Op, string, int) vfs.Fault {
			seen++
			if seen == n+1 {
				return vfs.Fault{Err: vfs.ErrInjected}
			}
			return vfs.Fault{}
		}
	}
	faults := []struct {
		name string
		inj  func(n int) vfs.Injector
	}{
		{"every operation from the n-th fails", func(n int) vfs.Injector { return vfs.FailAfter(n, vfs.ErrInjected) }},
		{"only the n-th operation fails", failOnly},
	}
	cfg := testConfig()
	for _, o := range ops {
		for _, f := range faults {
			t.Run(o.name+"/"+f.name, func(t *testing.T) { sweepTruncation(t, cfg, o.do, f.inj) })
		}
	}
}

// sweepTruncation is TestTruncateCrashAtEveryStepLeavesAPrefix for one
// truncation and one kind of fault.
func sweepTruncation(t *testing.T, cfg Config, do func(l *Log) (keep, end, start int64, err error), inj func(n int) vfs.Injector) {
	for n := 0; ; n++ {
		mem := vfs.NewMemFS()
		ffs := vfs.NewFaultFS(mem, nil)
		const dir = "/p-0"
		l := mustOpen(t, ffs, dir, cfg)
		var m model
		fillEpochs(t, l, &m, 50, rand.New(rand.NewSource(3)))
		// A start at a segment base: BatchAtTimestamp, as Kafka's,
		// searches only the first segment reaching a timestamp,
		// whose batches below the start checkLookups does not model.
		if err := l.SetStartOffset(l.segments[1].base); err != nil {
			t.Fatal(err)
		}
		for _, seg := range l.segments[1:] {
			if err := l.WriteProducerSnapshot(seg.base, sampleSnapshot()); err != nil {
				t.Fatal(err)
			}
		}
		// An aborted transaction ending at every fifth batch.
		var aborted []AbortedTxn
		for i, b := range walkLog(t, l) {
			if i%5 == 4 {
				a := AbortedTxn{ProducerID: int64(i), FirstOffset: b.base, LastOffset: b.last, LastStableOffset: b.last}
				if err := l.AppendAbortedTxn(a); err != nil {
					t.Fatal(err)
				}
				aborted = append(aborted, a)
			}
		}
		l.cleanMu.Lock()
		err := l.writeFirstDirty(l.EndOffset() - 1)
		l.cleanMu.Unlock()
		if err == nil {
			err = l.Sync()
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(l.segments) < 4 {
			t.Fatalf("only %d segments", len(l.segments))
		}
		old, oldStart, oldEpochs := walkLog(t, l), l.StartOffset(), l.Epochs()

		ffs.Arm(inj(n))
		keep, wantEnd, wantStart, err := do(l)
		ffs.Arm(nil)
		crash(l)
		lost := mem.CrashClone() // before the reopen below writes to mem
		for _, kind := range []string{"process crash", "power loss"} {
			fsys := vfs.FS(mem)
			if kind == "power loss" {
				fsys = lost
			}
			where := fmt.Sprintf("n=%d (err %v), %s", n, err, kind)
			r, oerr := Open(fsys, dir, cfg)
			if oerr != nil {
				t.Fatalf("%s: Open: %v", where, oerr)
			}
			checkPrefixOf(t, where, r, old, oldStart, oldEpochs, keep)
			var wantAborted []AbortedTxn
			for _, a := range aborted {
				if a.LastOffset >= r.StartOffset() && a.LastOffset < r.EndOffset() {
					wantAborted = append(wantAborted, a)
				}
			}
			if got := r.AbortedTxns(r.StartOffset(), r.EndOffset()); !slices.Equal(got, wantAborted) {
				t.Fatalf("%s: aborted transactions %v, want %v", where, got, wantAborted)
			}
			if err == nil && (r.EndOffset() != wantEnd || r.StartOffset() != wantStart) {
				t.Fatalf("%s: a completed truncation reopens as [%d, %d), want [%d, %d)",
					where, r.StartOffset(), r.EndOffset(), wantStart, wantEnd)
			}
			end := r.EndOffset()
			if _, _, aerr := r.Append(epochBatch(90, 2)); aerr != nil {
				t.Fatalf("%s: Append after reopen: %v", where, aerr)
			}
			if got := r.Epochs(); len(got) == 0 || got[len(got)-1] != (EpochEntry{90, end}) {
				t.Fatalf("%s: epochs after an append at %d: %v", where, end, got)
			}
			crash(r)
		}
		if err == nil {
			if n == 0 {
				t.Fatal("no operation was failed")
			}
			return
		}
	}
}

// checkPrefixOf checks that r holds a prefix of the log that held old
// (from oldStart, with oldEpochs): see TestTruncateCrashAtEveryStepLeavesAPrefix.
func checkPrefixOf(t *testing.T, where string, r *Log, old []logBatch, oldStart int64, oldEpochs []EpochEntry, keep int64) {
	t.Helper()
	start, end := r.StartOffset(), r.EndOffset()
	if end > start && start < oldStart {
		t.Fatalf("%s: start %d below the old start %d: deleted records are back", where, start, oldStart)
	}
	if keep >= 0 && end < keep {
		t.Fatalf("%s: end %d, but the truncation keeps everything below %d", where, end, keep)
	}
	var want []logBatch
	for _, b := range old {
		if b.last >= start && b.base < end {
			want = append(want, b)
		}
	}
	if len(want) > 0 && want[len(want)-1].last >= end {
		t.Fatalf("%s: end %d inside the batch %d..%d", where, end, want[len(want)-1].base, want[len(want)-1].last)
	}
	got := walkLog(t, r)
	if !slices.EqualFunc(got, want, func(a, b logBatch) bool { return bytes.Equal(a.data, b.data) }) {
		t.Fatalf("%s: the log [%d, %d) holds %d batches, not the old log's %d there", where, start, end, len(got), len(want))
	}
	checkLookups(t, r, got)
	wantEpochs, _ := epochsBelow(oldEpochs, end)
	wantEpochs, _ = epochsFrom(wantEpochs, start)
	if gotEpochs := r.Epochs(); !slices.Equal(gotEpochs, wantEpochs) && !(start == end && len(gotEpochs) == 0) {
		t.Fatalf("%s: epochs %v, want %v", where, gotEpochs, wantEpochs)
	}
	snaps, err := r.listSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) > 0 && snaps[len(snaps)-1] > end {
		t.Fatalf("%s: snapshots %v past the end %d", where, snaps, end)
	}
	if fd, err := r.FirstDirtyOffset(); err != nil || fd < start || fd > end {
		t.Fatalf("%s: FirstDirtyOffset = %d, %v; outside [%d, %d]", where, fd, err, start, end)
	}
}

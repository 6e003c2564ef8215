package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gatedFS wraps an FS and counts fsyncs of .log files; while a gate is set,
// every such fsync blocks until the gate is closed, so a test can hold one
// fsync in flight and see what other callers do meanwhile.
type gatedFS struct {
	vfs.FS
	logSyncs atomic.Int64
	inSync   chan struct{} // receives once per .log fsync that reaches the gate
	mu       sync.Mutex
	gate     chan struct{}
}

func (g *gatedFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return &gatedFile{File: f, g: g}, nil
}

type gatedFile struct {
	vfs.File
	g *gatedFS
}

func (f *gatedFile) Sync() error {
	f.g.logSyncs.Add(1)
	f.g.mu.Lock()
	gate := f.g.gate
	f.g.mu.Unlock()
	if gate != nil {
		f.g.inSync <- struct{}{}
		<-gate
	}
	return f.File.Sync()
}

func TestFlushPolicyDefaultNeverSyncs(t *testing.T) {
	g := &gatedFS{FS: vfs.NewMemFS()}
	l := mustOpen(t, g, "/d/t-0", testConfig())
	defer l.Close()
	if p := l.FlushPolicy(); p != OSFlush() {
		t.Fatalf("a new log's policy is %+v, want OSFlush", p)
	}
	batch := makeBatch(batchSpec{records: 1, maxTs: 1})
	for range 10 {
		_, last, err := l.Append(batch)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.FlushAfterAppend(last + 1); err != nil {
			t.Fatal(err)
		}
	}
	l.flush.mu.Lock()
	pending := l.flush.timer != nil || l.flush.running
	l.flush.mu.Unlock()
	if n := g.logSyncs.Load(); n != 0 || pending {
		t.Fatalf("the default policy fsynced %d times (and has a flush pending: %v)", n, pending)
	}
	if d := l.DurableOffset(); d != 0 {
		t.Fatalf("DurableOffset = %d, want 0", d)
	}
}

func TestFlushMessagesSyncsEveryNthOffset(t *testing.T) {
	for _, n := range []int64{1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l := mustOpen(t, vfs.NewMemFS(), "/d/t-0", testConfig())
			defer l.Close()
			l.SetFlushPolicy(FlushPolicy{Messages: n, Ms: math.MaxInt64})
			batch := makeBatch(batchSpec{records: 1, maxTs: 1})
			for i := int64(1); i <= 7; i++ {
				_, last, err := l.Append(batch)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.FlushAfterAppend(last + 1); err != nil {
					t.Fatal(err)
				}
				// Kafka's rule: flush once logEndOffset - recoveryPoint >= flush.messages.
				want := i / n * n
				if got := l.DurableOffset(); got != want {
					t.Fatalf("after %d appends DurableOffset = %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestFlushMsSyncsInBackground(t *testing.T) {
	for _, ms := range []int64{0, 5} {
		t.Run(fmt.Sprint(ms), func(t *testing.T) {
			l := mustOpen(t, vfs.NewMemFS(), "/d/t-0", testConfig())
			defer l.Close()
			l.SetFlushPolicy(FlushPolicy{Messages: math.MaxInt64, Ms: ms})
			_, last, err := l.Append(makeBatch(batchSpec{records: 4, maxTs: 1}))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.FlushAfterAppend(last + 1); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the background flush", func() bool { return l.DurableOffset() == last+1 })
		})
	}
}

func TestFlushAfterAppendAsyncDoesNotWait(t *testing.T) {
	g := &gatedFS{FS: vfs.NewMemFS(), inSync: make(chan struct{}, 1)}
	l := mustOpen(t, g, "/d/t-0", testConfig())
	l.SetFlushPolicy(FlushPolicy{Messages: 1})
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.mu.Unlock()
	_, last, err := l.Append(makeBatch(batchSpec{records: 1, maxTs: 1}))
	if err != nil {
		t.Fatal(err)
	}
	l.FlushAfterAppendAsync(last + 1) // must return although the fsync is held
	<-g.inSync
	if l.DurableOffset() != 0 {
		t.Fatal("durable before the fsync finished")
	}
	g.mu.Lock()
	g.gate = nil
	g.mu.Unlock()
	close(gate)
	waitFor(t, "the background fsync", func() bool { return l.DurableOffset() == last+1 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitSharesOneFsync holds the first appender's fsync on the
// disk while seven more append; when it completes, one more fsync must
// release all seven.
func TestGroupCommitSharesOneFsync(t *testing.T) {
	g := &gatedFS{FS: vfs.NewMemFS(), inSync: make(chan struct{}, 8)}
	l := mustOpen(t, g, "/d/t-0", DefaultConfig())
	defer l.Close()
	l.SetFlushPolicy(FlushPolicy{Messages: 1})
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.mu.Unlock()

	batch := makeBatch(batchSpec{records: 1, maxTs: 1})
	errs := make(chan error, 8)
	appendAndFlush := func() {
		b := bytes.Clone(batch)
		_, last, err := l.Append(b)
		if err == nil {
			err = l.FlushAfterAppend(last + 1)
		}
		errs <- err
	}
	go appendAndFlush()
	<-g.inSync // the first fsync is on the disk
	for range 7 {
		go appendAndFlush()
	}
	waitFor(t, "seven more appends", func() bool { return l.EndOffset() == 8 })
	g.mu.Lock()
	g.gate = nil
	g.mu.Unlock()
	close(gate)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := g.logSyncs.Load(); n != 2 {
		t.Fatalf("8 appends took %d fsyncs of the segment, want 2 (group commit)", n)
	}
	if d := l.DurableOffset(); d != 8 {
		t.Fatalf("DurableOffset = %d, want 8", d)
	}
}

func TestFlushFailureFailsLogAndKeepsReads(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	l := mustOpen(t, ffs, "/d/t-0", testConfig())
	defer l.Close()
	l.SetFlushPolicy(FlushPolicy{Messages: 1})
	batch := makeBatch(batchSpec{records: 2, maxTs: 1})
	if _, last, err := l.Append(bytes.Clone(batch)); err != nil || l.FlushAfterAppend(last+1) != nil {
		t.Fatalf("first append: %v", err)
	}
	ffs.Arm(vfs.FailAfter(0, vfs.ErrInjected, vfs.OpSync))
	_, last, err := l.Append(bytes.Clone(batch))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FlushAfterAppend(last + 1); !errors.Is(err, ErrFailed) {
		t.Fatalf("FlushAfterAppend with a failing fsync = %v, want ErrFailed", err)
	}
	ffs.Arm(nil)
	if _, _, err := l.Append(bytes.Clone(batch)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after a failed fsync = %v, want ErrFailed", err)
	}
	got, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil || len(got) != 2*len(batch) {
		t.Fatalf("Read after the failure: %d bytes, %v", len(got), err)
	}
}

func TestCloseStopsPendingFlushTimer(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/d/t-0", testConfig())
	l.SetFlushPolicy(FlushPolicy{Messages: math.MaxInt64, Ms: int64(time.Hour / time.Millisecond)})
	_, last, err := l.Append(makeBatch(batchSpec{records: 1, maxTs: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FlushAfterAppend(last + 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.flush.mu.Lock()
	defer l.flush.mu.Unlock()
	if l.flush.timer != nil {
		t.Fatal("Close left the flush.ms timer armed")
	}
}

// TestPowerLossKeepsEveryFsyncedAppend is the storage-level crash test:
// eight appenders write under flush.messages=1 while power losses are
// simulated (MemFS.CrashClone keeps only fsynced bytes) at arbitrary
// moments. Every append acknowledged before a power loss must be in the
// log recovered from it, byte for byte at its offset, and the recovered
// log must be whole batches with contiguous offsets.
func TestPowerLossKeepsEveryFsyncedAppend(t *testing.T) {
	mem := vfs.NewMemFS()
	l := mustOpen(t, mem, "/d/t-0", testConfig()) // 4 KiB segments: rolls often
	defer l.Close()
	l.SetFlushPolicy(FlushPolicy{Messages: 1})

	type acked struct {
		first int64
		data  []byte
	}
	const losses, perLoss = 25, 48
	var (
		mu   sync.Mutex
		done []acked
		wg   sync.WaitGroup
		// Each token lets one append start. The losses come while the last
		// few tokens' appends are still in flight.
		tokens = make(chan struct{}, losses*perLoss)
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if _, ok := <-tokens; !ok {
					return
				}
				b := makeBatch(batchSpec{records: 1 + (w+i)%5, maxTs: int64(i), valueSize: 10 + w})
				first, last, err := l.Append(b)
				if err == nil {
					err = l.FlushAfterAppend(last + 1)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				done = append(done, acked{first, b}) // Append set b's base offset
				mu.Unlock()
			}
		}()
	}
	defer func() { close(tokens); wg.Wait() }() // before l.Close, also on failure
	for c := range losses {
		for range perLoss {
			tokens <- struct{}{}
		}
		waitFor(t, "more appends", func() bool { mu.Lock(); defer mu.Unlock(); return len(done) >= perLoss*c+perLoss-8 })
		mu.Lock()
		ackedNow := append([]acked(nil), done...)
		mu.Unlock()
		lost := mem.CrashClone() // after the snapshot: everything in it was fsynced before
		r, err := Open(lost, "/d/t-0", testConfig())
		if err != nil {
			t.Fatalf("power loss %d: Open: %v", c, err)
		}
		all, err := r.Read(r.StartOffset(), math.MaxInt32, r.EndOffset())
		if err != nil {
			t.Fatalf("power loss %d: Read: %v", c, err)
		}
		byOffset := map[int64][]byte{}
		next := r.StartOffset()
		for p := 0; p < len(all); {
			h, reason := parseHeader(all[p:])
			if reason != "" {
				t.Fatalf("power loss %d: batch at byte %d: %s", c, p, reason)
			}
			if h.baseOffset != next {
				t.Fatalf("power loss %d: batch at offset %d, want %d", c, h.baseOffset, next)
			}
			byOffset[h.baseOffset] = all[p : p+int(h.size)]
			next = h.nextOffset()
			p += int(h.size)
		}
		if next != r.EndOffset() {
			t.Fatalf("power loss %d: batches end at %d, log end is %d", c, next, r.EndOffset())
		}
		for _, a := range ackedNow {
			if got := byOffset[a.first]; !bytes.Equal(got, a.data) {
				t.Fatalf("power loss %d: acknowledged batch at offset %d lost or changed (%d of %d bytes)", c, a.first, len(got), len(a.data))
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package storage

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// reopenAfterCrash abandons l and opens the directory again on the
// underlying FS, without faults.
func reopenAfterCrash(t *testing.T, l *Log, env testEnv) *Log {
	t.Helper()
	crash(l)
	return mustOpen(t, env.fs, env.dir, testConfig())
}

func TestAppendFailureLeavesLogUnchanged(t *testing.T) {
	faults := []struct {
		name string
		inj  func() vfs.Injector // a fresh one per run: injectors count
	}{
		{"data write fails", func() vfs.Injector { return vfs.FailAfter(0, vfs.ErrInjected, vfs.OpWrite) }},
		{"data write torn", func() vfs.Injector { return vfs.TornWriteAfter(0, 100) }},
		{"data write torn at 1 byte", func() vfs.Injector { return vfs.TornWriteAfter(0, 1) }},
		{"offset index write torn", func() vfs.Injector { return vfs.TornWriteAfter(1, 5) }},
		{"time index write fails", func() vfs.Injector { return vfs.FailAfter(2, vfs.ErrInjected, vfs.OpWrite) }},
		{"no space", func() vfs.Injector { return vfs.NoSpaceAfter(150) }},
		{"roll cannot create files", func() vfs.Injector { return vfs.FailAfter(0, vfs.ErrInjected, vfs.OpOpen) }},
		{"roll cannot write the final time entry", func() vfs.Injector {
			return func(op vfs.Op, name string, _ int) vfs.Fault {
				if op == vfs.OpWrite && strings.HasSuffix(name, timeIndexSuffix) {
					return vfs.Fault{Err: vfs.ErrInjected, Keep: 5}
				}
				return vfs.Fault{}
			}
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				ffs := vfs.NewFaultFS(env.fs, nil)
				l := mustOpen(t, ffs, env.dir, testConfig())
				var m model
				fillLog(t, l, &m, 20)
				// Grow the active segment until the next append would add index
				// entries (and, for the open fault, until it rolls).
				for l.active().bytesSinceIndexEntry() <= int64(testConfig().IndexIntervalBytes) {
					m.append(t, l, batchSpec{records: 1, maxTs: 1 << 20, valueSize: 50})
				}
				unit := append(makeBatch(batchSpec{records: 2, maxTs: 1<<20 + 1, valueSize: 300}),
					makeBatch(batchSpec{records: 3, maxTs: 1<<20 + 2, valueSize: 300})...)
				switch f.name {
				case "roll cannot write the final time entry":
					// An indexed batch, then one raising the max timestamp
					// without an index entry: the roll owes a final entry.
					m.append(t, l, batchSpec{records: 1, maxTs: 1<<20 + 7, valueSize: 10})
					m.append(t, l, batchSpec{records: 1, maxTs: 1<<20 + 8, valueSize: 10})
					fallthrough
				case "roll cannot create files":
					unit = makeBatch(batchSpec{records: 1, maxTs: 5, valueSize: int(testConfig().SegmentBytes)})
				}
				ffs.Arm(f.inj())
				if _, _, err := l.Append(bytes.Clone(unit)); err == nil {
					t.Fatal("Append succeeded despite the fault")
				} else if errors.Is(err, ErrFailed) {
					t.Fatalf("Append = %v: the rollback should have worked", err)
				}
				ffs.Arm(nil)
				m.check(t, l)
				for _, seg := range l.segments {
					if size := fileSize(t, env.fs, seg.path); size != seg.size {
						t.Fatalf("segment %d is %d bytes on disk, %d in memory", seg.base, size, seg.size)
					}
				}
				m.append(t, l, batchSpec{records: 2, maxTs: 9, valueSize: 10})
				m.check(t, l)
				l = reopenAfterCrash(t, l, env)
				defer l.Close()
				m.check(t, l)
			})
		})
	}
}

func TestFailedRollbackFailsLogButKeepsAcknowledgedData(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		ffs := vfs.NewFaultFS(env.fs, nil)
		l := mustOpen(t, ffs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 20)
		torn := vfs.TornWriteAfter(0, 70)
		noTruncate := vfs.FailAfter(0, vfs.ErrInjected, vfs.OpTruncate)
		ffs.Arm(func(op vfs.Op, name string, n int) vfs.Fault {
			if f := torn(op, name, n); f.Err != nil {
				return f
			}
			return noTruncate(op, name, n)
		})
		_, _, err := l.Append(makeBatch(batchSpec{records: 4, maxTs: 3, valueSize: 100}))
		if !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("Append = %v, want ErrFailed wrapping the injected error", err)
		}
		ffs.Arm(nil)
		if _, _, err := l.Append(makeBatch(batchSpec{records: 1})); !errors.Is(err, ErrFailed) {
			t.Fatalf("Append on a failed log = %v", err)
		}
		for _, op := range []func() error{l.Sync, func() error { return l.TruncateTo(1) }, func() error { return l.SetStartOffset(1) }} {
			if err := op(); !errors.Is(err, ErrFailed) {
				t.Fatalf("mutation on a failed log = %v", err)
			}
		}
		m.check(t, l) // reads still work
		if err := l.Close(); !errors.Is(err, ErrFailed) {
			t.Fatalf("Close of a failed log = %v", err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if r := l.Recovery(); r.CleanShutdown || r.TruncatedBytes != 70 {
			t.Fatalf("Recovery = %+v, want an unclean start cutting the 70 torn bytes", r)
		}
		m.check(t, l)
	})
}

func TestSyncFailureFailsLog(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpSync, vfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				ffs := vfs.NewFaultFS(env.fs, nil)
				l := mustOpen(t, ffs, env.dir, testConfig())
				var m model
				fillLog(t, l, &m, 20)
				ffs.Arm(vfs.FailAfter(0, vfs.ErrInjected, op))
				if err := l.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("Sync = %v", err)
				}
				ffs.Arm(nil)
				if _, _, err := l.Append(makeBatch(batchSpec{records: 1})); !errors.Is(err, ErrFailed) {
					t.Fatalf("Append after a failed Sync = %v", err)
				}
				l = reopenAfterCrash(t, l, env)
				defer l.Close()
				m.check(t, l)
			})
		})
	}
}

func TestTruncateFailureFailsLogAndReopenRecovers(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		ffs := vfs.NewFaultFS(env.fs, nil)
		l := mustOpen(t, ffs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 40)
		off := m.batches[len(m.batches)/2].first
		ffs.Arm(vfs.FailAfter(0, vfs.ErrInjected, vfs.OpTruncate))
		if err := l.TruncateTo(off); !errors.Is(err, ErrFailed) {
			t.Fatalf("Truncate = %v", err)
		}
		ffs.Arm(nil)
		l = reopenAfterCrash(t, l, env)
		defer l.Close()
		// The batches below the truncation point are all there; whatever
		// survives above it is intact.
		keep := m
		keep.truncate(off)
		for _, b := range m.batches {
			got, err := l.Read(b.first, 1, l.EndOffset())
			if b.first < off && (err != nil || !bytes.Equal(got, b.data)) {
				t.Fatalf("batch %d lost: %v", b.first, err)
			}
			if b.first >= off && err == nil && len(got) > 0 && !bytes.Equal(got, b.data) {
				t.Fatalf("batch %d changed", b.first)
			}
		}
		if l.EndOffset() < keep.end {
			t.Fatalf("EndOffset %d below %d", l.EndOffset(), keep.end)
		}
	})
}

func TestNoSpaceKeepsAcknowledgedData(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		for _, limit := range []int64{0, 1, 61, 500, 5000, 12345} {
			ffs := vfs.NewFaultFS(env.fs, nil)
			l := mustOpen(t, ffs, env.dir, testConfig())
			var m model
			ffs.Arm(vfs.NoSpaceAfter(limit))
			for i := 0; ; i++ {
				b := makeBatch(batchSpec{records: 1 + i%3, maxTs: int64(i), valueSize: 70})
				first, _, err := l.Append(b)
				if err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("limit %d: Append = %v, want ENOSPC", limit, err)
					}
					break
				}
				m.batches = append(m.batches, modelBatch{first: first, last: first + int64(1+i%3) - 1, maxTs: int64(i), data: b})
				m.end = first + int64(1+i%3)
			}
			m.check(t, l)
			ffs.Arm(nil) // space freed
			m.append(t, l, batchSpec{records: 1, maxTs: 1})
			l = reopenAfterCrash(t, l, env)
			m.check(t, l)
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestFaultSweepNeverLosesAcknowledgedData fails the n-th FS operation of a
// workload (opening, appending with rolls, syncing, closing) for every n,
// then reopens without faults: every acknowledged batch must be there,
// byte for byte, and anything beyond must be whole batches.
func TestFaultSweepNeverLosesAcknowledgedData(t *testing.T) {
	for n := 0; ; n++ {
		mem := vfs.NewMemFS()
		ffs := vfs.NewFaultFS(mem, vfs.FailAfter(n, vfs.ErrInjected))
		env := testEnv{fs: mem, mem: mem, dir: "/p-0"}
		var m model
		failed := false
		l, err := Open(ffs, env.dir, testConfig())
		if err != nil {
			failed = true
		}
		for i := 0; i < 40 && !failed; i++ {
			b := makeBatch(batchSpec{records: 1 + i%4, maxTs: int64(i * 3 % 17), valueSize: 90})
			first, _, err := l.Append(b)
			if err != nil {
				failed = true
				break
			}
			m.batches = append(m.batches, modelBatch{first: first, last: first + int64(i%4), maxTs: int64(i * 3 % 17), data: b})
			m.end = first + int64(1+i%4)
			if i%9 == 8 && l.Sync() != nil {
				failed = true
			}
		}
		if !failed && l.Close() != nil {
			failed = true
		}
		if !failed {
			if n == 0 {
				t.Fatal("no operation was failed")
			}
			t.Logf("swept %d operations", n)
			return
		}
		if l != nil {
			crash(l)
		}
		l = mustOpen(t, mem, env.dir, testConfig())
		if l.EndOffset() < m.end {
			t.Fatalf("n=%d: EndOffset %d, acknowledged up to %d", n, l.EndOffset(), m.end)
		}
		for _, b := range m.batches {
			got, err := l.Read(b.first, 1, l.EndOffset())
			if err != nil || !bytes.Equal(got, b.data) {
				t.Fatalf("n=%d: acknowledged batch %d: %v", n, b.first, err)
			}
		}
		if _, err := l.Read(m.end, 1<<20, l.EndOffset()); err != nil {
			t.Fatalf("n=%d: reading past the acknowledged end: %v", n, err)
		}
		crash(l)
	}
}

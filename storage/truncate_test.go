package storage

import (
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

func TestTruncateTo(t *testing.T) {
	cases := []struct {
		name   string
		offset func(m *model, l *Log) int64
	}{
		{"at end is a no-op", func(m *model, _ *Log) int64 { return m.end }},
		{"past end is a no-op", func(m *model, _ *Log) int64 { return m.end + 10 }},
		{"last batch", func(m *model, _ *Log) int64 { return m.batches[len(m.batches)-1].first }},
		{"mid batch", func(m *model, _ *Log) int64 { return m.batches[len(m.batches)/2].first + 1 }},
		{"segment boundary", func(_ *model, l *Log) int64 { return l.segments[2].base }},
		{"just after a segment boundary", func(_ *model, l *Log) int64 { return l.segments[2].base + 1 }},
		{"to zero", func(*model, *Log) int64 { return 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				for _, reopen := range []string{"close", "crash"} {
					l := mustOpen(t, env.fs, env.dir, testConfig())
					var m model
					fillLog(t, l, &m, 60)
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					off := tc.offset(&m, l)
					m.truncate(off)
					if err := l.TruncateTo(off); err != nil {
						t.Fatalf("Truncate(%d): %v", off, err)
					}
					m.check(t, l)
					checkTimestamps(t, l, &m, []int64{0, 1000, 1030, 1059, 5000})
					if bases := segmentFiles(t, env.fs, env.dir); len(bases) != len(l.segments) {
						t.Fatalf("segment files %v, want %d", bases, len(l.segments))
					}
					fillLog(t, l, &m, 10)
					m.check(t, l)
					if reopen == "close" {
						if err := l.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						crash(l)
					}
					l = mustOpen(t, env.fs, env.dir, testConfig())
					m.check(t, l)
					checkTimestamps(t, l, &m, []int64{0, 1000, 1030, 1059, 5000})
					if err := l.Delete(); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}

func TestTruncateFullyAndStartAtRestartsAtOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		for _, newStart := range []int64{0, 5, 1000} {
			l := mustOpen(t, env.fs, env.dir, testConfig())
			var m model
			fillLog(t, l, &m, 30)
			if err := l.TruncateFullyAndStartAt(newStart); err != nil {
				t.Fatal(err)
			}
			m = model{start: newStart, end: newStart}
			m.check(t, l)
			if bases := segmentFiles(t, env.fs, env.dir); len(bases) != 1 || bases[0] != newStart {
				t.Fatalf("segments %v, want [%d]", bases, newStart)
			}
			fillLog(t, l, &m, 8)
			m.check(t, l)
			crash(l)
			l = mustOpen(t, env.fs, env.dir, testConfig())
			m.check(t, l)
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestTruncateToBelowStartTruncatesFully(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		var m model
		fillLog(t, l, &m, 40)
		if err := l.SetStartOffset(l.segments[2].base); err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(3); err != nil {
			t.Fatal(err)
		}
		m = model{start: 3, end: 3}
		m.check(t, l)
	})
}

func TestSetStartOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 60)
		before := len(l.segments)
		// Mid-batch, inside the third segment.
		m.start = l.segments[2].base + 2
		if err := l.SetStartOffset(m.start); err != nil {
			t.Fatal(err)
		}
		m.check(t, l)
		if got := len(segmentFiles(t, env.fs, env.dir)); got != before-2 || len(l.segments) != before-2 {
			t.Fatalf("%d segment files, %d segments; want %d", got, len(l.segments), before-2)
		}
		if _, err := l.Read(m.start-1, 100, m.end); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read below start = %v", err)
		}
		if err := l.SetStartOffset(1); err != nil || l.StartOffset() != m.start {
			t.Fatalf("moving the start back: %v, start %d", err, l.StartOffset())
		}
		if err := l.SetStartOffset(m.end + 1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("start past the end = %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		m.check(t, l)
		// Survives a crash too, and can reach the end (the active segment stays).
		m.start = m.end
		if err := l.SetStartOffset(m.end); err != nil {
			t.Fatal(err)
		}
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		m.check(t, l)
		fillLog(t, l, &m, 5)
		m.check(t, l)
	})
}

func TestSetStartOffsetCrashBeforeSegmentsDeleted(t *testing.T) {
	fsys := vfs.NewMemFS()
	l := mustOpen(t, fsys, "/p-0", testConfig())
	var m model
	fillLog(t, l, &m, 60)
	m.start = l.segments[3].base
	// The checkpoint is written, then retiring the first segment (renaming
	// its files to .deleted) fails.
	ffs := vfs.NewFaultFS(fsys, nil)
	l.fsys = ffs
	ffs.Arm(vfs.FailAfter(1, vfs.ErrInjected, vfs.OpRename)) // the checkpoint's rename passes
	if err := l.SetStartOffset(m.start); err == nil {
		t.Fatal("SetStartOffset succeeded despite the failed removal")
	}
	m.check(t, l)
	crash(l)
	l = mustOpen(t, fsys, "/p-0", testConfig())
	defer l.Close()
	m.check(t, l)
	if got := len(segmentFiles(t, fsys, "/p-0")); got != len(l.segments) {
		t.Fatalf("%d segment files for %d segments", got, len(l.segments))
	}
}

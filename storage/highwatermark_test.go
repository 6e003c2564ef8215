package storage

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

func TestParseHighWatermark(t *testing.T) {
	for _, tc := range []struct {
		in   string
		hw   int64
		fail bool
	}{
		{"0\nhigh-watermark 0\n", 0, false},
		{"0\nhigh-watermark 1234\n", 1234, false},
		{"0\nhigh-watermark 1234", 1234, false}, // the last newline may be missing
		{"0\nhigh-watermark 9223372036854775807\n", math.MaxInt64, false},
		{"", 0, true},
		{"0", 0, true},
		{"0\n", 0, true},
		{"1\nhigh-watermark 5\n", 0, true},
		{"00\nhigh-watermark 5\n", 0, true},
		{"0\nhigh-watermark -5\n", 0, true},
		{"0\nhigh-watermark +5\n", 0, true},
		{"0\nhigh-watermark \n", 0, true},
		{"0\nhigh-watermark 5x\n", 0, true},
		{"0\nhigh-watermark 9223372036854775808\n", 0, true},
		{"0\nhigh-watermark  5\n", 0, true},
		{"0\nhigh-watermark 05\n", 0, true},
		{"0\nhigh-watermark 5\n\n", 0, true},
		{"0\nhigh-watermark 5\nhigh-watermark 6\n", 0, true},
		{"0\nlog-start-offset 5\n", 0, true},
		{"0\r\nhigh-watermark 5\r\n", 0, true},
		{"\x00\x00\x00\x00", 0, true},
	} {
		hw, err := parseHighWatermark([]byte(tc.in))
		if tc.fail != (err != nil) || !tc.fail && hw != tc.hw {
			t.Errorf("parseHighWatermark(%q) = %d, %v; want %d, fail %v", tc.in, hw, err, tc.hw, tc.fail)
		}
	}
}

// TestHighWatermarkCheckpoint: written, read back at once and after a
// clean or unclean reopen (clamped to the recovered log), replaced
// atomically, refused when negative or after Close.
func TestHighWatermarkCheckpoint(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		if hw, ok := l.HighWatermarkCheckpoint(); ok {
			t.Fatalf("a new log has a checkpoint %d", hw)
		}
		var m model
		fillLog(t, l, &m, 20)
		for _, hw := range []int64{0, 7, m.end} {
			if err := l.WriteHighWatermark(hw); err != nil {
				t.Fatal(err)
			}
			if got, ok := l.HighWatermarkCheckpoint(); !ok || got != hw {
				t.Fatalf("HighWatermarkCheckpoint = %d, %v; want %d", got, ok, hw)
			}
		}
		path := filepath.Join(env.dir, highWatermarkName)
		if got := readFile(t, env.fs, path); !bytes.Equal(got, formatHighWatermark(m.end)) {
			t.Fatalf("file %q", got)
		}
		if err := l.WriteHighWatermark(-1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("WriteHighWatermark(-1) = %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.WriteHighWatermark(3); !errors.Is(err, ErrClosed) {
			t.Fatalf("WriteHighWatermark after Close = %v", err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		if got, ok := l.HighWatermarkCheckpoint(); !ok || got != m.end {
			t.Fatalf("after reopen HighWatermarkCheckpoint = %d, %v; want %d", got, ok, m.end)
		}
		// A checkpoint past the log (the log lost its tail, or was
		// truncated after the write) is clamped to the end at Open, one
		// below the start to the start.
		if err := l.WriteHighWatermark(m.end + 100); err != nil {
			t.Fatal(err)
		}
		off := m.batches[5].first
		if err := l.TruncateTo(off); err != nil {
			t.Fatal(err)
		}
		m.truncate(off)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		if got, ok := l.HighWatermarkCheckpoint(); !ok || got != m.end {
			t.Fatalf("after a truncation and a crash HighWatermarkCheckpoint = %d, %v; want %d", got, ok, m.end)
		}
		if err := l.WriteHighWatermark(1); err != nil {
			t.Fatal(err)
		}
		if err := l.SetStartOffset(3); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if got, ok := l.HighWatermarkCheckpoint(); !ok || got != 3 {
			t.Fatalf("below the start HighWatermarkCheckpoint = %d, %v; want 3", got, ok)
		}
	})
}

// TestDamagedHighWatermarkCheckpointIsIgnored: Open warns about a damaged
// file and treats it as absent, never fails; the next write replaces it.
// A temporary file a crash left is removed.
func TestDamagedHighWatermarkCheckpointIsIgnored(t *testing.T) {
	for _, damage := range []string{"", "0\n", "garbage", "0\nhigh-watermark -3\n", "1\nhigh-watermark 3\n",
		"0\nhigh-watermark 3\n" + strings.Repeat("x", 100)} {
		fsys := vfs.NewMemFS()
		l := mustOpen(t, fsys, "/p-0", testConfig())
		var m model
		fillLog(t, l, &m, 5)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fsys, "/p-0/"+highWatermarkName, []byte(damage))
		writeFile(t, fsys, "/p-0/"+highWatermarkTempName, []byte("0\nhigh-watermark 4\n"))
		var logged bytes.Buffer
		cfg := testConfig()
		cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		l = mustOpen(t, fsys, "/p-0", cfg)
		if hw, ok := l.HighWatermarkCheckpoint(); ok {
			t.Fatalf("damage %q: HighWatermarkCheckpoint = %d, true", damage, hw)
		}
		if !strings.Contains(logged.String(), "damaged high-watermark checkpoint") {
			t.Fatalf("damage %q: no warning logged: %s", damage, logged.String())
		}
		if _, err := fsys.Stat("/p-0/" + highWatermarkTempName); err == nil {
			t.Fatalf("damage %q: the temporary file is still there", damage)
		}
		if err := l.WriteHighWatermark(2); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, fsys, "/p-0", testConfig())
		if hw, ok := l.HighWatermarkCheckpoint(); !ok || hw != 2 {
			t.Fatalf("damage %q: after a new write HighWatermarkCheckpoint = %d, %v", damage, hw, ok)
		}
		l.Close()
	}
}

// TestHighWatermarkWriteCrashLeavesOldOrNew fails the n-th FS operation of
// a WriteHighWatermark for every n: a reopen after a process crash or a
// power loss reads either the old value or the new one, never nothing or
// damage.
func TestHighWatermarkWriteCrashLeavesOldOrNew(t *testing.T) {
	for n := 0; ; n++ {
		mem := vfs.NewMemFS()
		ffs := vfs.NewFaultFS(mem, nil)
		l := mustOpen(t, ffs, "/p-0", testConfig())
		var m model
		fillLog(t, l, &m, 10)
		if err := errors.Join(l.Sync(), l.WriteHighWatermark(4)); err != nil {
			t.Fatal(err)
		}
		ffs.Arm(vfs.FailAfter(n, vfs.ErrInjected))
		err := l.WriteHighWatermark(9)
		ffs.Arm(nil)
		crash(l)
		lost := mem.CrashClone()
		for _, fsys := range []vfs.FS{mem, lost} {
			r := mustOpen(t, fsys, "/p-0", testConfig())
			hw, ok := r.HighWatermarkCheckpoint()
			if !ok || hw != 4 && hw != 9 || err == nil && hw != 9 {
				t.Fatalf("n=%d (err %v): HighWatermarkCheckpoint = %d, %v", n, err, hw, ok)
			}
			crash(r)
		}
		if err == nil {
			return
		}
	}
}

// TestWriteHighWatermarkConcurrently: concurrent writers, appends and
// truncations leave one of the written values, whole.
func TestWriteHighWatermarkConcurrently(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 10)
		var wg sync.WaitGroup
		for w := int64(1); w <= 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int64(0); i < 20; i++ {
					if err := l.WriteHighWatermark(w*1000 + i); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		fillLog(t, l, &m, 20)
		wg.Wait()
		hw, ok := l.HighWatermarkCheckpoint()
		if !ok || hw%1000 != 19 {
			t.Fatalf("HighWatermarkCheckpoint = %d, %v; want some writer's last value", hw, ok)
		}
		b := readFile(t, env.fs, filepath.Join(env.dir, highWatermarkName))
		if got, err := parseHighWatermark(b); err != nil || got != hw {
			t.Fatalf("file %q holds %d, %v; memory %d", b, got, err, hw)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCloseWaitsForAHighWatermarkWrite closes and deletes logs while
// writers checkpoint: a write either completes before Close (the file
// holds a whole value, no temporary file is left) or returns ErrClosed,
// and nothing is written into a deleted directory.
func TestCloseWaitsForAHighWatermarkWrite(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		for _, del := range []bool{false, true} {
			l := mustOpen(t, env.fs, env.dir, testConfig())
			var wg sync.WaitGroup
			for w := int64(1); w <= 3; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int64(0); ; i++ {
						if err := l.WriteHighWatermark(w*1000 + i); err != nil {
							if !errors.Is(err, ErrClosed) {
								t.Error(err)
							}
							return
						}
					}
				}()
			}
			for i := 0; i < 50; i++ {
				runtime.Gosched()
			}
			var err error
			if del {
				err = l.Delete()
			} else {
				err = l.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.fs.Stat(filepath.Join(env.dir, highWatermarkTempName)); err == nil {
				t.Fatal("a temporary checkpoint file is left after Close")
			}
			wg.Wait()
			if del {
				if _, err := env.fs.Stat(env.dir); err == nil {
					t.Fatal("the deleted log's directory exists again")
				}
				continue
			}
			hw, ok := l.HighWatermarkCheckpoint()
			l = mustOpen(t, env.fs, env.dir, testConfig())
			if got, gotOK := l.HighWatermarkCheckpoint(); gotOK != ok || ok && got != 0 {
				// The log is empty: a checkpoint reads back clamped to 0.
				t.Fatalf("after reopen HighWatermarkCheckpoint = %d, %v; before Close %d, %v", got, gotOK, hw, ok)
			}
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

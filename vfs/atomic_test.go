package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicReplaces(t *testing.T) {
	for _, env := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", OSFS{}, t.TempDir()}, {"mem", NewMemFS(), "/d"}} {
		t.Run(env.name, func(t *testing.T) {
			if err := env.fs.MkdirAll(env.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(env.dir, "f")
			if err := WriteFileAtomic(env.fs, name, []byte("a longer old file"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(env.fs, name, []byte("new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := string(readAll(t, env.fs, name)); got != "new" {
				t.Fatalf("%s = %q, want new", name, got)
			}
			if _, err := env.fs.Stat(name + TempSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("temporary file after success: %v, want none", err)
			}
			if env.name == "os" {
				fi, err := env.fs.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
				}
			}
		})
	}
}

// TestWriteFileAtomicFailureLeavesOldFile fails each step in turn: before
// the rename the old file stays and the temporary file is gone; a failed
// directory fsync comes after the rename, with all of the new file in
// place.
func TestWriteFileAtomicFailureLeavesOldFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inj     Injector
		wantNew bool
	}{
		{"open", FailAfter(0, ErrInjected, OpOpen), false},
		{"write", FailAfter(0, ErrInjected, OpWrite), false},
		{"torn write", TornWriteAfter(0, 2), false},
		{"sync", FailAfter(0, ErrInjected, OpSync), false},
		{"close", FailAfter(0, ErrInjected, OpClose), false},
		{"rename", FailAfter(0, ErrInjected, OpRename), false},
		{"sync dir", FailAfter(0, ErrInjected, OpSyncDir), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemFS()
			if err := m.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			create(t, m, "/d/f", []byte("old"), true)
			ffs := NewFaultFS(m, tc.inj)
			err := WriteFileAtomic(ffs, "/d/f", []byte("new contents"), 0o644)
			if !errors.Is(err, ErrInjected) {
				t.Fatalf("WriteFileAtomic = %v, want the injected error", err)
			}
			want := "old"
			if tc.wantNew {
				want = "new contents"
			}
			if got := string(readAll(t, m, "/d/f")); got != want {
				t.Fatalf("/d/f = %q, want %q", got, want)
			}
			if _, err := m.Stat("/d/f" + TempSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("temporary file after the failure: %v, want none", err)
			}
		})
	}
}

// TestWriteFileAtomicPowerLossLeavesOldOrNew stops the machine (every
// operation fails) after n operations for every n, takes what a power
// loss would leave, and finds the old file or the new one, whole. Once
// WriteFileAtomic has returned nil it finds the new one.
func TestWriteFileAtomicPowerLossLeavesOldOrNew(t *testing.T) {
	const oldData, newData = "old", "the new contents"
	for n := 0; ; n++ {
		m := NewMemFS()
		if err := m.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		create(t, m, "/d/f", []byte(oldData), true)
		if err := m.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		err := WriteFileAtomic(NewFaultFS(m, FailAfter(n, ErrInjected)), "/d/f", []byte(newData), 0o644)
		lost := m.CrashClone()
		got := string(readAll(t, lost, "/d/f"))
		if err == nil && got != newData {
			t.Fatalf("stopped after %d operations, WriteFileAtomic returned nil, but /d/f = %q after the power loss, want %q",
				n, got, newData)
		}
		if got != oldData && got != newData {
			t.Fatalf("stopped after %d operations (%v): /d/f = %q after the power loss, want %q or %q",
				n, err, got, oldData, newData)
		}
		if err == nil {
			if n < 5 {
				t.Fatalf("WriteFileAtomic succeeded with only %d operations", n)
			}
			return
		}
	}
}

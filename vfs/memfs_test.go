package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"
)

func readAll(t *testing.T, fsys FS, name string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

func create(t *testing.T, fsys FS, name string, data []byte, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMemFSBasics(t *testing.T) {
	m := NewMemFS()
	if _, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in a missing directory: %v, want ErrNotExist", err)
	}
	if err := m.MkdirAll("/d/e", 0o755); err != nil {
		t.Fatal(err)
	}
	create(t, m, "/d/b", []byte("bee"), false)
	create(t, m, "/d/a", []byte("ay"), false)
	if _, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on an existing file: %v, want ErrExist", err)
	}
	des, err := m.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if got := names; len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "e" || !des[2].IsDir() {
		t.Fatalf("ReadDir = %v, want [a b e/] sorted", got)
	}
	if err := m.Remove("/d"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Remove of a non-empty directory: %v, want ErrExist", err)
	}

	// An open handle survives a rename over its file's name.
	old, err := m.OpenFile("/d/a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Rename("/d/b", "/d/a"); err != nil {
		t.Fatal(err)
	}
	if got := string(readAll(t, m, "/d/a")); got != "bee" {
		t.Fatalf("after rename /d/a = %q, want bee", got)
	}
	buf := make([]byte, 2)
	if _, err := old.ReadAt(buf, 0); err != nil || string(buf) != "ay" {
		t.Fatalf("old handle reads %q, %v; want the replaced file's ay", buf, err)
	}
	old.Close()
	if _, err := m.Stat("/d/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a renamed-away name: %v, want ErrNotExist", err)
	}
	if err := m.RemoveAll("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/d/e"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after RemoveAll: %v, want ErrNotExist", err)
	}
}

func TestMemFSCrashCloneKeepsOnlySyncedContents(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	create(t, m, "/d/synced", []byte("kept"), true)
	create(t, m, "/d/unsynced", []byte("lost"), false)
	f, err := m.OpenFile("/d/synced", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("KEPT and more"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}

	c := m.CrashClone()
	if got := string(readAll(t, c, "/d/synced")); got != "kept" {
		t.Errorf("synced file after crash = %q, want its last synced contents kept", got)
	}
	if got := readAll(t, c, "/d/unsynced"); len(got) != 0 {
		t.Errorf("never synced file after crash = %q, want empty", got)
	}
	// The clone is independent of the original.
	create(t, c, "/d/new", nil, true)
	if _, err := m.Stat("/d/new"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file created in the clone shows in the original: %v", err)
	}
}

func TestMemFSCrashCloneKeepsNamesOnlyOnceTheirDirectoryIsSynced(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	create(t, m, "/d/old", []byte("old"), true)
	create(t, m, "/d/gone", []byte("gone"), true)
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	create(t, m, "/d/new", []byte("new"), true)
	if err := m.Rename("/d/new", "/d/old"); err != nil {
		t.Fatal(err)
	}
	create(t, m, "/d/created", []byte("created"), true)
	if err := m.Remove("/d/gone"); err != nil {
		t.Fatal(err)
	}

	c := m.CrashClone()
	if got := string(readAll(t, c, "/d/old")); got != "old" {
		t.Errorf("after an unsynced rename over it /d/old = %q, want the old file", got)
	}
	if got := string(readAll(t, c, "/d/gone")); got != "gone" {
		t.Errorf("after an unsynced removal /d/gone = %q, want it back", got)
	}
	for _, name := range []string{"/d/new", "/d/created"} {
		if _, err := c.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s, never made durable by SyncDir, after the crash: %v, want ErrNotExist", name, err)
		}
	}

	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	c = m.CrashClone()
	if got := string(readAll(t, c, "/d/old")); got != "new" {
		t.Errorf("after the rename and SyncDir /d/old = %q, want the renamed file", got)
	}
	if got := string(readAll(t, c, "/d/created")); got != "created" {
		t.Errorf("after SyncDir /d/created = %q, want it", got)
	}
	if _, err := c.Stat("/d/gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the removal and SyncDir /d/gone: %v, want ErrNotExist", err)
	}
}

package vfs

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestFailAfterCountsOnlyTheGivenOps(t *testing.T) {
	m := NewMemFS()
	ffs := NewFaultFS(m, FailAfter(1, ErrInjected, OpSync))
	f, err := ffs.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("write, not a counted op: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("second sync: %v, want ErrInjected", err)
	}
	ffs.Arm(nil)
	if err := f.Sync(); err != nil {
		t.Fatalf("sync after disarming: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTornWriteKeepsItsPrefix(t *testing.T) {
	m := NewMemFS()
	ffs := NewFaultFS(m, TornWriteAfter(1, 2))
	f, err := ffs.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write([]byte("defg")); n != 2 || !errors.Is(err, ErrInjected) {
		t.Fatalf("torn write = %d, %v; want 2, ErrInjected", n, err)
	}
	if _, err := f.WriteAt([]byte("h"), 5); err != nil {
		t.Fatalf("write after the torn one: %v", err)
	}
	f.Close()
	if got := string(readAll(t, m, "/a")); got != "abcdeh" {
		t.Fatalf("file = %q, want abcdeh", got)
	}
}

func TestNoSpaceAfterFillsThenFails(t *testing.T) {
	m := NewMemFS()
	ffs := NewFaultFS(m, NoSpaceAfter(5))
	f, err := ffs.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write([]byte("defg")); n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("crossing write = %d, %v; want 2, ENOSPC", n, err)
	}
	if n, err := f.Write([]byte("h")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("later write = %d, %v; want 0, ENOSPC", n, err)
	}
	f.Close()
	if got := string(readAll(t, m, "/a")); got != "abcde" {
		t.Fatalf("file = %q, want abcde", got)
	}
}

func TestFaultFileUnwrapReachesTheOSFile(t *testing.T) {
	ffs := NewFaultFS(OSFS{}, nil)
	f, err := ffs.OpenFile(t.TempDir()+"/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, ok := f.(interface{ Unwrap() File })
	if !ok {
		t.Fatal("a FaultFS file has no Unwrap")
	}
	if _, ok := u.Unwrap().(*os.File); !ok {
		t.Fatalf("Unwrap = %T, want *os.File", u.Unwrap())
	}
}

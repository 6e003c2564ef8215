package vfs

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Op names an FS or File operation for fault injection.
type Op int

const (
	OpOpen Op = iota
	OpRemove
	OpRename
	OpMkdirAll
	OpReadDir
	OpStat
	OpSyncDir
	OpRead  // File.ReadAt
	OpWrite // File.WriteAt and File.Write
	OpSync  // File.Sync
	OpTruncate
	OpClose
)

var opNames = [...]string{"open", "remove", "rename", "mkdirall", "readdir", "stat", "syncdir",
	"read", "write", "sync", "truncate", "close"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "op?"
}

// Fault is what an Injector decides for one operation. The zero Fault lets
// the operation through.
type Fault struct {
	// Err fails the operation.
	Err error
	// Keep, for a failing write, is how many leading bytes of it still reach
	// the file: a torn write. Zero persists nothing.
	Keep int
}

// Injector decides the fault for each operation. name is the path given to
// the FS, or the file's path for File operations; n is the length of a read
// or write. It is called with FaultFS's lock held, so it needs none of its
// own.
type Injector func(op Op, name string, n int) Fault

// FaultFS wraps an FS and fails operations as its Injector decides, in the
// manner of pebble's errorfs. It is safe for concurrent use.
type FaultFS struct {
	fs  FS
	mu  sync.Mutex
	inj Injector
}

// NewFaultFS wraps fsys. With a nil Injector nothing fails until Arm.
func NewFaultFS(fsys FS, inj Injector) *FaultFS { return &FaultFS{fs: fsys, inj: inj} }

// Arm replaces the Injector; nil disarms.
func (f *FaultFS) Arm(inj Injector) {
	f.mu.Lock()
	f.inj = inj
	f.mu.Unlock()
}

func (f *FaultFS) fault(op Op, name string, n int) Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inj == nil {
		return Fault{}
	}
	return f.inj(op, name, n)
}

// ErrInjected is the error FailAfter and TornWriteAfter inject.
var ErrInjected = &fs.PathError{Op: "fault", Path: "injected", Err: syscall.EIO}

// FailAfter lets n operations of the given kinds through (all kinds when
// none are given) and fails every later one with err.
func FailAfter(n int, err error, ops ...Op) Injector {
	seen := 0
	return func(op Op, _ string, _ int) Fault {
		if len(ops) > 0 && !containsOp(ops, op) {
			return Fault{}
		}
		seen++
		if seen > n {
			return Fault{Err: err}
		}
		return Fault{}
	}
}

// TornWriteAfter lets n writes through, then makes the next write persist
// only its first keep bytes and fail with ErrInjected; later writes succeed.
func TornWriteAfter(n, keep int) Injector {
	seen := 0
	return func(op Op, _ string, _ int) Fault {
		if op != OpWrite {
			return Fault{}
		}
		seen++
		if seen == n+1 {
			return Fault{Err: ErrInjected, Keep: keep}
		}
		return Fault{}
	}
}

// NoSpaceAfter lets writes through until they add up to limit bytes; the
// write that crosses it persists what fits and fails with ENOSPC, as do all
// later writes.
func NoSpaceAfter(limit int64) Injector {
	used := int64(0)
	return func(op Op, _ string, n int) Fault {
		if op != OpWrite {
			return Fault{}
		}
		if used+int64(n) <= limit {
			used += int64(n)
			return Fault{}
		}
		keep := limit - used
		used = limit
		return Fault{Err: &fs.PathError{Op: "write", Path: "nospace", Err: syscall.ENOSPC}, Keep: int(keep)}
	}
}

func containsOp(ops []Op, op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

var _ FS = (*FaultFS)(nil)

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if ft := f.fault(OpOpen, name, 0); ft.Err != nil {
		return nil, ft.Err
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{f: file, fs: f, name: name}, nil
}

func (f *FaultFS) Remove(name string) error {
	if ft := f.fault(OpRemove, name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.fs.Remove(name)
}

func (f *FaultFS) RemoveAll(name string) error {
	if ft := f.fault(OpRemove, name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.fs.RemoveAll(name)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if ft := f.fault(OpRename, oldname, 0); ft.Err != nil {
		return ft.Err
	}
	return f.fs.Rename(oldname, newname)
}

func (f *FaultFS) MkdirAll(name string, perm os.FileMode) error {
	if ft := f.fault(OpMkdirAll, name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.fs.MkdirAll(name, perm)
}

func (f *FaultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if ft := f.fault(OpReadDir, name, 0); ft.Err != nil {
		return nil, ft.Err
	}
	return f.fs.ReadDir(name)
}

func (f *FaultFS) Stat(name string) (fs.FileInfo, error) {
	if ft := f.fault(OpStat, name, 0); ft.Err != nil {
		return nil, ft.Err
	}
	return f.fs.Stat(name)
}

func (f *FaultFS) SyncDir(name string) error {
	if ft := f.fault(OpSyncDir, name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.fs.SyncDir(name)
}

type faultFile struct {
	f    File
	fs   *FaultFS
	name string
}

// Unwrap returns the file f wraps, so that a caller can reach what the
// wrapped file offers beyond File (the descriptor of an *os.File, to
// memory-map it).
func (f *faultFile) Unwrap() File { return f.f }

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if ft := f.fs.fault(OpRead, f.name, len(p)); ft.Err != nil {
		return 0, ft.Err
	}
	return f.f.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if ft := f.fs.fault(OpWrite, f.name, len(p)); ft.Err != nil {
		keep := min(max(ft.Keep, 0), len(p))
		n, err := f.f.WriteAt(p[:keep], off)
		if err != nil {
			return n, err
		}
		return n, ft.Err
	}
	return f.f.WriteAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if ft := f.fs.fault(OpWrite, f.name, len(p)); ft.Err != nil {
		keep := min(max(ft.Keep, 0), len(p))
		n, err := f.f.Write(p[:keep])
		if err != nil {
			return n, err
		}
		return n, ft.Err
	}
	return f.f.Write(p)
}

func (f *faultFile) Sync() error {
	if ft := f.fs.fault(OpSync, f.name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.f.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if ft := f.fs.fault(OpTruncate, f.name, 0); ft.Err != nil {
		return ft.Err
	}
	return f.f.Truncate(size)
}

func (f *faultFile) Stat() (fs.FileInfo, error) {
	if ft := f.fs.fault(OpStat, f.name, 0); ft.Err != nil {
		return nil, ft.Err
	}
	return f.f.Stat()
}

func (f *faultFile) Close() error {
	if ft := f.fs.fault(OpClose, f.name, 0); ft.Err != nil {
		f.f.Close() // the handle is gone either way, as with close(2)
		return ft.Err
	}
	return f.f.Close()
}

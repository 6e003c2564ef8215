package vfs

import (
	"io/fs"
	"os"
)

// FS is the file-system seam every disk access of the project goes
// through, in the manner of pebble's vfs.FS. OSFS uses real files,
// NewMemFS keeps files in memory, and FaultFS wraps either to inject
// failures.
//
// Paths are slash- or OS-separated strings as the implementation expects;
// callers only join names with path/filepath.
type FS interface {
	// OpenFile opens name with os.O_* flags as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	// Rename replaces newname atomically if it exists.
	Rename(oldname, newname string) error
	MkdirAll(name string, perm os.FileMode) error
	// ReadDir lists a directory sorted by name, as os.ReadDir does.
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the directory entries of name (creations, removals,
	// renames) durable.
	SyncDir(name string) error
}

// File is an open file of an FS. ReadAt and WriteAt may be called
// concurrently with each other; Write is never called concurrently on one
// handle.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Write writes at the file's current offset and advances it.
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Close() error
}

// OSFS is the FS of the operating system.
type OSFS struct{}

var _ FS = OSFS{}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (OSFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (OSFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (OSFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

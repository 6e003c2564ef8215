package vfs

import (
	"io"
	"os"
	"path/filepath"
)

// TempSuffix is what WriteFileAtomic appends to a name for its temporary
// file. A crash can leave name+TempSuffix behind; whoever owns the
// directory removes it when it next opens it.
const TempSuffix = ".tmp"

// WriteFileAtomic replaces name with data durably: it writes
// name+TempSuffix in the same directory, fsyncs it, closes it, renames it
// over name and fsyncs the directory. A power loss at any point leaves
// either the old file under name or the new one, never part of data.
//
// On an error before the rename name is untouched and the temporary file
// is removed (unless the FS fails that too). An error from the
// directory fsync comes after the rename: name then holds all of data,
// but the rename may not survive a power loss.
//
// Two writers of one name must not run at once: they share the temporary
// file.
func WriteFileAtomic(fsys FS, name string, data []byte, perm os.FileMode) error {
	tmp := name + TempSuffix
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	n, err := f.Write(data)
	if err == nil && n < len(data) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		// Best effort: an FS that fails the removal too leaves the
		// temporary file for the directory's owner to remove on open.
		_ = fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

package vfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS, used by tests and by the broker's in-memory
// mode. It is safe for concurrent use. Open handles keep working after their
// file is removed or renamed, as on Unix.
//
// MemFS remembers what each file held at its last Sync, and which file
// each name of a directory named at its last SyncDir, so CrashClone can
// show what a power loss would leave: a file's contents are durable once
// synced, and a file's name (its creation, a rename to or from it, its
// removal) once its directory is synced. Directories themselves, and
// RemoveAll, count as durable at once.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
	// durable is files as of the last SyncDir of each file's directory;
	// pending, by directory, the names changed since.
	durable map[string]*memNode
	pending map[string]map[string]bool
}

// memNode is one file's contents. mu guards data and synced.
type memNode struct {
	mu      sync.RWMutex
	data    []byte
	synced  []byte
	modTime time.Time
}

// NewMemFS returns an empty in-memory FS.
func NewMemFS() *MemFS {
	return &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{},
		durable: map[string]*memNode{}, pending: map[string]map[string]bool{}}
}

// changed notes that the name p now names another file, or none; m.mu must
// be held.
func (m *MemFS) changed(p string) {
	dir := filepath.Dir(p)
	if m.pending[dir] == nil {
		m.pending[dir] = map[string]bool{}
	}
	m.pending[dir][p] = true
}

var _ FS = (*MemFS)(nil)

func memClean(name string) string { return filepath.Clean(name) }

// dirExists reports whether dir exists; m.mu must be held.
func (m *MemFS) dirExists(dir string) bool {
	return dir == "/" || dir == "." || m.dirs[dir]
}

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if !m.dirExists(filepath.Dir(name)) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	n, ok := m.files[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		n = &memNode{modTime: time.Now()}
		m.files[name] = n
		m.changed(name)
	}
	if flag&os.O_APPEND != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &memFile{node: n, name: filepath.Base(name),
		read: acc == os.O_RDONLY || acc == os.O_RDWR, write: acc == os.O_WRONLY || acc == os.O_RDWR}
	if flag&os.O_TRUNC != 0 && f.write {
		n.mu.Lock()
		n.data = n.data[:0]
		n.mu.Unlock()
	}
	return f, nil
}

func (m *MemFS) Remove(name string) error {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		m.changed(name)
		return nil
	}
	if m.dirs[name] {
		prefix := name + string(filepath.Separator)
		for p := range m.files {
			if strings.HasPrefix(p, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrExist}
			}
		}
		for p := range m.dirs {
			if strings.HasPrefix(p, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrExist}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) RemoveAll(name string) error {
	name = memClean(name)
	prefix := name + string(filepath.Separator)
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.files {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(m.files, p)
		}
	}
	for p := range m.durable {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(m.durable, p)
		}
	}
	for d := range m.pending {
		if d == name || strings.HasPrefix(d, prefix) {
			delete(m.pending, d)
		}
	}
	for p := range m.dirs {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(m.dirs, p)
		}
	}
	return nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = memClean(oldname), memClean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.dirExists(filepath.Dir(newname)) || m.dirs[newname] {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrInvalid}
	}
	delete(m.files, oldname)
	m.files[newname] = n
	m.changed(oldname)
	m.changed(newname)
	return nil
}

func (m *MemFS) MkdirAll(name string, perm os.FileMode) error {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := name; !m.dirExists(d); d = filepath.Dir(d) {
		if _, ok := m.files[d]; ok {
			return &fs.PathError{Op: "mkdir", Path: d, Err: fs.ErrExist}
		}
		m.dirs[d] = true
	}
	return nil
}

func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for p, n := range m.files {
		if filepath.Dir(p) == name {
			out = append(out, fs.FileInfoToDirEntry(n.info(filepath.Base(p))))
		}
	}
	for p := range m.dirs {
		if p != name && filepath.Dir(p) == name {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: filepath.Base(p), dir: true}))
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.files[name]; ok {
		return n.info(filepath.Base(name)), nil
	}
	if m.dirExists(name) {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) SyncDir(name string) error {
	name = memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(name) {
		return &fs.PathError{Op: "sync", Path: name, Err: fs.ErrNotExist}
	}
	for p := range m.pending[name] {
		if n, ok := m.files[p]; ok {
			m.durable[p] = n
		} else {
			delete(m.durable, p)
		}
	}
	delete(m.pending, name)
	return nil
}

// CrashClone returns a copy of m as a power loss would leave it: a
// directory holds the names it held at its last SyncDir (for a file
// renamed since, the old name and not the new one), and every file holds
// what it held at its last Sync (nothing if it was never synced). The
// clone starts with all of that durable.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMemFS()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	clones := map[*memNode]*memNode{} // one file under two names stays one
	for p, n := range m.durable {
		if !c.dirExists(filepath.Dir(p)) {
			continue
		}
		cn, ok := clones[n]
		if !ok {
			n.mu.RLock()
			cn = &memNode{data: slices.Clone(n.synced), synced: slices.Clone(n.synced), modTime: n.modTime}
			n.mu.RUnlock()
			clones[n] = cn
		}
		c.files[p] = cn
		c.durable[p] = cn
	}
	return c
}

func (n *memNode) info(name string) memInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memInfo{name: name, size: int64(len(n.data)), modTime: n.modTime}
}

type memInfo struct {
	name    string
	size    int64
	modTime time.Time
	dir     bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// memFile is an open handle; pos is used only by Write, which the log never
// calls concurrently on one handle.
type memFile struct {
	node        *memNode
	name        string
	read, write bool
	pos         int64
	mu          sync.Mutex // guards closed and pos
	closed      bool
}

func (f *memFile) check(write bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	if write && !f.write || !write && !f.read {
		return fs.ErrPermission
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(false); err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check(true); err != nil {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			grown := make([]byte, end, max(end, 2*int64(cap(n.data))))
			copy(grown, n.data)
			n.data = grown
		} else {
			old := len(n.data)
			n.data = n.data[:end]
			clear(n.data[old:])
		}
	}
	copy(n.data[off:], p)
	n.modTime = time.Now()
	return len(p), nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	pos := f.pos
	f.mu.Unlock()
	n, err := f.WriteAt(p, pos)
	f.mu.Lock()
	f.pos += int64(n)
	f.mu.Unlock()
	return n, err
}

func (f *memFile) Sync() error {
	if err := f.check(false); err != nil && err != fs.ErrPermission {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	n := f.node
	n.mu.Lock()
	n.synced = append(n.synced[:0], n.data...)
	n.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check(true); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	}
	n.modTime = time.Now()
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	if err := f.check(false); err != nil && err != fs.ErrPermission {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return f.node.info(f.name), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

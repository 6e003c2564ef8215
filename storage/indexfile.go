package storage

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/vfs"
)

// indexFile is the file under an offset or time index: a prefix of n
// fixed-size entries, and the bytes lookups read them from.
//
// On a file that can be memory-mapped (OSFS) lookups read the file through
// a read-only shared mapping, never a copy: the heap holds nothing per
// entry, and only the index pages lookups touch are resident. Entries are
// written with pwrite (WriteAt), which the mapping sees at once because the
// page cache is shared. The active segment's index files are preallocated to
// their capacity, as Kafka's AbstractIndex does, and mapped whole; a segment
// that stops being active has its files trimmed to their entries (roll,
// Close), and a closed segment's index is mapped lazily on the first lookup
// and unmapped when the segment's files are closed. On other files (MemFS)
// the entries are kept in the heap and the file is never preallocated.
//
// n, data (once ready), mapped, prealloc and maxEntries change only with
// Log.mu held for writing, or before the segment is published; readers hold
// Log.mu for reading and call ensure before reading entries. ensure may map
// concurrently with other readers, so it publishes data through ready.
type indexFile struct {
	f         vfs.File
	entrySize int
	n         int // valid entries, the file's first n*entrySize bytes

	// maxEntries is the capacity the index had while active: a segment
	// whose index is full is rolled.
	maxEntries int

	// prealloc reports that the file is longer than its entries: the
	// active segment's preallocated file. Trimming clears it.
	prealloc bool

	mapMu  sync.Mutex  // serializes lazy loading by concurrent readers
	ready  atomic.Bool // data holds the entries (set after data)
	mapped bool        // data is a mapping of the file, not a heap copy
	data   []byte      // the mapping (at least n entries long) or the heap copy (exactly n)
}

// entries returns the number of valid entries.
func (x *indexFile) entries() int { return x.n }

// slot returns entry i's bytes; ensure must have succeeded and i < n.
func (x *indexFile) slot(i int) []byte {
	return x.data[i*x.entrySize : (i+1)*x.entrySize]
}

// ensure makes the entries readable, mapping the file (or reading it, on a
// file that cannot be mapped) on first use. Safe for concurrent readers.
func (x *indexFile) ensure() error {
	if x.ready.Load() {
		return nil
	}
	x.mapMu.Lock()
	defer x.mapMu.Unlock()
	if x.ready.Load() {
		return nil
	}
	if err := x.load(x.n * x.entrySize); err != nil {
		return err
	}
	x.ready.Store(true)
	return nil
}

// load maps the first size bytes of the file, or on a file that cannot be
// mapped reads its n entries into the heap. The caller holds mapMu or has
// the index to itself, and nothing is loaded.
func (x *indexFile) load(size int) error {
	fd, ok := canMap(x.f)
	if !ok {
		b := make([]byte, x.n*x.entrySize)
		if got, err := x.f.ReadAt(b, 0); got < len(b) {
			return fmt.Errorf("storage: read index: %d of %d bytes: %w", got, len(b), err)
		}
		x.data, x.mapped = b, false
		return nil
	}
	x.data, x.mapped = nil, true
	if size == 0 {
		return nil // nothing to map; a later grow maps
	}
	b, err := mapFile(fd, size)
	if err != nil {
		return err
	}
	x.data = b
	return nil
}

// release drops the mapping or heap copy; the next ensure loads again. No
// reader may be using the index: Log.mu is held for writing, or the segment
// is no longer reachable.
func (x *indexFile) release() error {
	var err error
	if x.mapped && x.data != nil {
		err = unmapFile(x.data)
	}
	x.data, x.mapped = nil, false
	x.ready.Store(false)
	return err
}

// activate makes the index the active segment's: able to take maxEntries
// entries (at least those it has) before the segment rolls, its file
// preallocated to them and mapped whole when the file can be mapped. Kafka
// does the same to a segment it opens as active (resizeIndexes) and to one
// that truncation makes active again. Log.mu held for writing, or the
// segment not yet published.
func (x *indexFile) activate(maxEntries int) error {
	x.maxEntries = max(maxEntries, x.n)
	if _, ok := canMap(x.f); !ok {
		return x.ensure()
	}
	if err := x.release(); err != nil {
		return err
	}
	size := x.maxEntries * x.entrySize
	if err := x.f.Truncate(int64(size)); err != nil {
		return fmt.Errorf("storage: preallocate index: %w", err)
	}
	x.prealloc = size > x.n*x.entrySize
	if err := x.load(size); err != nil {
		return err
	}
	x.ready.Store(true)
	return nil
}

// trim cuts the file to its entries, as Kafka's trimToValidSize does when a
// segment stops being active, so that the file's length says how many
// entries it holds. The mapping stays; nothing reads past n.
func (x *indexFile) trim() error {
	if err := x.f.Truncate(int64(x.n * x.entrySize)); err != nil {
		return fmt.Errorf("storage: trim index: %w", err)
	}
	x.prealloc = false
	return nil
}

// room reports whether k more entries fit in what is loaded: the mapping
// of a mapped file (a heap copy always has room). appendMu held.
func (x *indexFile) room(k int) bool {
	return !x.mapped || (x.n+k)*x.entrySize <= len(x.data)
}

// grow extends the file and the mapping to take k more entries, for an
// append of several batches to an empty segment whose index is smaller
// than the entries they need. Log.mu held for writing.
func (x *indexFile) grow(k int) error {
	size := (x.n + k) * x.entrySize
	if err := x.release(); err != nil {
		return err
	}
	if err := x.f.Truncate(int64(size)); err != nil {
		return fmt.Errorf("storage: grow index: %w", err)
	}
	x.prealloc = true
	if err := x.load(size); err != nil {
		return err
	}
	x.ready.Store(true)
	return nil
}

// write writes entries after the valid ones without publishing them.
// appendMu held (no other writer).
func (x *indexFile) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return writeFull(x.f, b, int64(x.n*x.entrySize))
}

// publish makes entries written by write visible to lookups. Log.mu held
// for writing.
func (x *indexFile) publish(b []byte) {
	x.n += len(b) / x.entrySize
	if !x.mapped {
		x.data = append(x.data, b...)
	}
}

// undo cuts the file back to its entries after a failed write. A
// preallocated file keeps its length: the slots past n are not entries.
func (x *indexFile) undo() error {
	if x.prealloc {
		return nil
	}
	return x.f.Truncate(int64(x.n * x.entrySize))
}

// truncateEntries keeps the first n entries. A preallocated file keeps its
// length (the slots past n are rewritten by later appends, and recovery
// rebuilds an active segment's index anyway); any other file is cut. Log.mu
// held for writing; ensure must have succeeded.
func (x *indexFile) truncateEntries(n int) error {
	x.n = n
	if !x.mapped {
		x.data = x.data[:n*x.entrySize]
	}
	if x.prealloc {
		return nil
	}
	if err := x.f.Truncate(int64(n * x.entrySize)); err != nil {
		return fmt.Errorf("storage: truncate index: %w", err)
	}
	return nil
}

// rebuild replaces the file's contents with entries b, as recovery does.
// The index is left unloaded: the caller activates it or lets the first
// lookup load it. The segment is not yet published.
func (x *indexFile) rebuild(b []byte) error {
	if err := x.release(); err != nil {
		return err
	}
	x.n, x.prealloc = 0, false
	if err := x.f.Truncate(0); err != nil {
		return fmt.Errorf("storage: rebuild index: %w", err)
	}
	if len(b) > 0 {
		if err := writeFull(x.f, b, 0); err != nil {
			return fmt.Errorf("storage: rebuild index: %w", err)
		}
	}
	x.n = len(b) / x.entrySize
	return nil
}

// isZero reports whether every byte of b is zero.
func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

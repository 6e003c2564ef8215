package storage

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/gregor-broker/gregor/vfs"
)

// The aborted-transaction index: Kafka's <base>.txnindex beside each
// segment (TransactionIndex and AbortedTxn), listing the transactions
// aborted by an abort marker written to that segment. A read_committed
// fetch asks it which aborted transactions overlap the range it returns,
// and the cleaner asks it which data batches it may drop.
//
// The file is a plain sequence of fixed-size entries, Kafka's layout, so
// kafka-dump-log reads ours and Kafka would load it:
//
//	version int16 (0) | producerId int64 | firstOffset int64 |
//	lastOffset int64 | lastStableOffset int64
//
// all big-endian, 34 bytes, in the order the abort markers were appended,
// so lastOffset strictly increases. The file exists only once a segment
// has an aborted transaction, as in Kafka. Its entries are few (one per
// aborted transaction), so each segment keeps them in memory and the file
// is read once, at open.

const (
	txnIndexSuffix = ".txnindex"
	// abortedTxnSize is Kafka's AbortedTxn.TOTAL_SIZE.
	abortedTxnSize = 2 + 8 + 8 + 8 + 8
	// abortedTxnVersion is Kafka's AbortedTxn.CURRENT_VERSION.
	abortedTxnVersion = 0
)

// errTxnIndexOrder refuses an aborted transaction whose last offset does
// not follow the last one indexed (Kafka's IllegalArgumentException).
var errTxnIndexOrder = errors.New("storage: aborted transactions must be indexed in increasing last offset")

// appendAbortedTxn appends a's entry in the file format to dst.
func appendAbortedTxn(dst []byte, a AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.LastStableOffset))
}

// decodeTxnIndex parses the bytes of the .txnindex of the segment based at
// base. It returns the entries and how many bytes they take; bytes after
// the last whole entry (a torn append) are left for the caller to cut, as
// Kafka's reader ignores them. An entry of an unknown version, ending
// below base (Kafka's sanityCheck), beginning after it ends, or not
// following the previous entry's last offset is corruption: a
// *CorruptError with the entry's position and an empty Path for the
// caller to fill. It allocates no more than len(b) allows.
func decodeTxnIndex(b []byte, base int64) ([]AbortedTxn, int64, error) {
	n := len(b) / abortedTxnSize
	out := make([]AbortedTxn, 0, n)
	for i := range n {
		e := b[i*abortedTxnSize:]
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		pos := int64(i * abortedTxnSize)
		switch v := int16(binary.BigEndian.Uint16(e)); {
		case v != abortedTxnVersion:
			return nil, 0, &CorruptError{Position: pos, Reason: fmt.Sprintf("aborted transaction of version %d", v)}
		case a.LastOffset < base:
			return nil, 0, &CorruptError{Position: pos, Reason: fmt.Sprintf("aborted transaction ends at %d, below the segment base %d", a.LastOffset, base)}
		case a.FirstOffset > a.LastOffset:
			return nil, 0, &CorruptError{Position: pos, Reason: fmt.Sprintf("aborted transaction begins at %d, after it ends at %d", a.FirstOffset, a.LastOffset)}
		case len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset:
			return nil, 0, &CorruptError{Position: pos, Reason: fmt.Sprintf("aborted transaction ends at %d, not after the previous one at %d", a.LastOffset, out[len(out)-1].LastOffset)}
		}
		out = append(out, a)
	}
	return out, int64(n * abortedTxnSize), nil
}

// txnIndex is one segment's aborted-transaction index. entries change under
// Log.mu held for writing (by the mutator, which holds appendMu); readers
// hold Log.mu for reading. fileMu guards f and dirty, because Sync fsyncs
// segments without appendMu; it is a leaf lock.
type txnIndex struct {
	path    string
	entries []AbortedTxn

	fileMu sync.Mutex
	f      vfs.File // nil until the file exists
	dirty  bool     // written since the last sync
}

// open loads the index file if there is one, cutting a torn last entry.
func (x *txnIndex) open(fsys vfs.FS, base int64) error {
	f, err := fsys.OpenFile(x.path, os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", x.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("storage: stat %s: %w", x.path, err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return fmt.Errorf("storage: read %s: %w", x.path, err)
	}
	entries, whole, err := decodeTxnIndex(b, base)
	if err != nil {
		f.Close()
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = x.path
		}
		return err
	}
	if whole != fi.Size() {
		if err := f.Truncate(whole); err != nil {
			f.Close()
			return fmt.Errorf("storage: truncate %s: %w", x.path, err)
		}
	}
	x.fileMu.Lock()
	x.f = f
	x.fileMu.Unlock()
	x.entries = entries
	return nil
}

// append indexes a, creating the file on the first entry. Kafka's rule:
// last offsets strictly increase.
func (x *txnIndex) append(fsys vfs.FS, a AbortedTxn) error {
	if n := len(x.entries); n > 0 && a.LastOffset <= x.entries[n-1].LastOffset {
		return fmt.Errorf("%w: %d after %d in %s", errTxnIndexOrder, a.LastOffset, x.entries[n-1].LastOffset, x.path)
	}
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if x.f == nil {
		f, err := fsys.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("storage: create %s: %w", x.path, err)
		}
		x.f = f
	}
	var buf [abortedTxnSize]byte
	at := int64(len(x.entries)) * abortedTxnSize
	if _, err := x.f.WriteAt(appendAbortedTxn(buf[:0], a), at); err != nil {
		x.f.Truncate(at)
		return fmt.Errorf("storage: write %s: %w", x.path, err)
	}
	x.entries = append(x.entries, a)
	x.dirty = true
	return nil
}

// truncateTo drops the entries of transactions ending at or above offset
// (Kafka's truncateTo), which a truncated log no longer holds.
func (x *txnIndex) truncateTo(offset int64) error {
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(x.entries) {
		return nil
	}
	x.entries = x.entries[:n:n]
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if err := x.f.Truncate(int64(n) * abortedTxnSize); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", x.path, err)
	}
	x.dirty = true
	return nil
}

// collect appends to dst the entries overlapping [from, upTo) and reports
// whether the search is complete (an entry's last stable offset reached
// upTo, so no later segment can hold an overlapping transaction): Kafka's
// collectAbortedTxns.
func (x *txnIndex) collect(dst []AbortedTxn, from, upTo int64) ([]AbortedTxn, bool) {
	for _, a := range x.entries {
		if a.LastOffset >= from && a.FirstOffset < upTo {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upTo {
			return dst, true
		}
	}
	return dst, false
}

func (x *txnIndex) sync() error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if x.f == nil || !x.dirty {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", x.path, err)
	}
	x.dirty = false
	return nil
}

func (x *txnIndex) close() error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// AppendAbortedTxn indexes an aborted transaction in the segment holding
// its abort marker, a.LastOffset (Kafka's LogSegment.updateTxnIndex): the
// active segment when the marker was just appended, an older one when the
// broker replays markers at open to restore entries a crash lost. An entry
// already indexed there is not added twice; otherwise a.LastOffset must be
// above every entry of that segment. The entry is
// written to the page cache; Sync makes it durable with the segment.
func (l *Log) AppendAbortedTxn(a AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if a.LastOffset < l.start.Load() || a.LastOffset >= l.end.Load() || a.FirstOffset > a.LastOffset {
		return fmt.Errorf("%w: aborted transaction [%d, %d] outside the log [%d, %d)",
			ErrOffsetOutOfRange, a.FirstOffset, a.LastOffset, l.start.Load(), l.end.Load())
	}
	seg := l.segments[l.segmentFor(a.LastOffset)]
	if i, found := slices.BinarySearchFunc(seg.txns.entries, a.LastOffset, func(e AbortedTxn, off int64) int {
		return cmp.Compare(e.LastOffset, off)
	}); found && seg.txns.entries[i] == a {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return seg.txns.append(l.fsys, a)
}

// AbortedTxns returns the aborted transactions overlapping the offsets
// [from, upTo), Kafka's collectAbortedTransactions: the indexes of the
// segment holding from and of each later one, until one says no later
// transaction can overlap. A read_committed fetch of [from, upTo) returns
// them so that clients drop the aborted records.
func (l *Log) AbortedTxns(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	if len(l.segments) == 0 {
		return nil
	}
	for _, seg := range l.segments[l.segmentFor(from):] {
		var done bool
		if out, done = seg.txns.collect(out, from, upTo); done {
			break
		}
	}
	return out
}

package storage

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gregor-broker/gregor/vfs"
)

// The leader-epoch checkpoint: Kafka's LeaderEpochFileCache and its
// leader-epoch-checkpoint file, kept per partition directory.

const (
	leaderEpochCheckpointName = "leader-epoch-checkpoint"
	leaderEpochTempName       = leaderEpochCheckpointName + vfs.TempSuffix
	leaderEpochFileVersion    = 0
	offPartitionLeaderEpoch   = 12 // in the batch header

	// UndefinedEpoch and UndefinedEpochOffset are Kafka's UNDEFINED_EPOCH
	// and UNDEFINED_EPOCH_OFFSET: the answer of EndOffsetForEpoch when the
	// log cannot say.
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1

	// maxEpochFileBytes bounds what the parser reads: a partition has one
	// line per leader election, each at most 32 bytes.
	maxEpochFileBytes = 1 << 20
)

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache holds a log's epoch entries, ascending in both epoch and start
// offset, and persists them to the leader-epoch-checkpoint file on every
// change. Mutations run under Log.appendMu; mu (a leaf lock, taken after
// any Log lock) lets readers run alongside them.
type epochCache struct {
	fsys vfs.FS
	dir  string

	mu      sync.RWMutex
	entries []EpochEntry

	// dirty: entries differ from the file. Open changes them in memory only
	// (what it derives from the log it can derive again), and the first
	// assign writes them before anything is appended, so that a crash can
	// never leave the file naming epochs at offsets rewritten since.
	// appendMu held.
	dirty bool
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign is Kafka's LeaderEpochFileCache.assign: record that epoch starts at
// startOffset unless that is already what the latest entry says, first
// removing any later entries it contradicts (epoch or start offset not
// below the new one's). It persists the result. appendMu held.
func (c *epochCache) assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("storage: invalid leader epoch entry (%d, %d)", epoch, startOffset)
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch && last.StartOffset <= startOffset {
		return c.flush()
	}
	next := slices.Clone(c.entries)
	for len(next) > 0 {
		last := next[len(next)-1]
		if last.Epoch < epoch && last.StartOffset < startOffset {
			break
		}
		next = next[:len(next)-1]
	}
	next = append(next, EpochEntry{epoch, startOffset})
	return c.replace(next)
}

// assignBatches assigns the leader epoch of every batch in batches (whole
// v2 batches with offsets assigned) that is newer than the latest entry, as
// Kafka does before appending. Batches without an epoch (-1) are skipped.
// appendMu held.
func (c *epochCache) assignBatches(batches []byte) error {
	if err := c.flush(); err != nil {
		return err
	}
	for p := 0; p+batchHeaderSize <= len(batches); {
		h, _ := parseHeader(batches[p:])
		if err := c.assignIfNewer(batchLeaderEpoch(batches[p:]), h.baseOffset); err != nil {
			return err
		}
		p += int(h.size)
	}
	return nil
}

// assignBatch is assignBatches for one batch whose partition leader epoch
// and base offset the caller has read. appendMu held.
func (c *epochCache) assignBatch(epoch int32, baseOffset int64) error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.assignIfNewer(epoch, baseOffset)
}

// assignIfNewer assigns epoch at baseOffset if it is newer than the latest
// entry; a batch without an epoch (-1) changes nothing. appendMu held.
func (c *epochCache) assignIfNewer(epoch int32, baseOffset int64) error {
	if last, ok := c.latest(); epoch >= 0 && (!ok || epoch > last.Epoch) {
		return c.assign(epoch, baseOffset)
	}
	return nil
}

// batchLeaderEpoch is the partition leader epoch of the batch at the start
// of b, which holds at least a header.
func batchLeaderEpoch(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:]))
}

// truncateFromEnd removes the entries starting at or after endOffset, as a
// log truncated to endOffset no longer holds them. appendMu held.
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	if next, changed := epochsBelow(c.entries, endOffset); changed {
		return c.replace(next)
	}
	return nil
}

// truncateFromStart drops the entries wholly below startOffset: the last
// entry starting at or below it is kept, moved to start there (Kafka's
// truncateFromStart, which keeps an entry at startOffset). appendMu held.
func (c *epochCache) truncateFromStart(startOffset int64) error {
	if next, changed := epochsFrom(c.entries, startOffset); changed {
		return c.replace(next)
	}
	return nil
}

// epochsBelow returns entries without those starting at or after end.
func epochsBelow(entries []EpochEntry, end int64) ([]EpochEntry, bool) {
	n := len(entries)
	for n > 0 && entries[n-1].StartOffset >= end {
		n--
	}
	return slices.Clone(entries[:n]), n < len(entries)
}

// epochsFrom returns entries as seen from start: the last entry starting
// at or below start moved up to it, the ones before it gone.
func epochsFrom(entries []EpochEntry, start int64) ([]EpochEntry, bool) {
	k := 0
	for k < len(entries) && entries[k].StartOffset <= start {
		k++
	}
	if k == 0 || (k == 1 && entries[0].StartOffset == start) {
		return entries, false
	}
	return append([]EpochEntry{{entries[k-1].Epoch, start}}, entries[k:]...), true
}

// remove deletes the checkpoint file, durably, and every entry, for a log
// about to lose all its batches (TruncateFullyAndStartAt). Until the next
// assign writes the file again a crash leaves none, and Open rebuilds the
// entries from whatever batches the crash left, so they always agree with
// the log. appendMu held.
func (c *epochCache) remove() error {
	if err := c.fsys.Remove(filepath.Join(c.dir, leaderEpochCheckpointName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("storage: remove leader-epoch checkpoint: %w", err)
	}
	if err := c.fsys.SyncDir(c.dir); err != nil {
		return fmt.Errorf("storage: sync %s: %w", c.dir, err)
	}
	c.set(nil)
	return nil
}

// replace persists entries and then publishes them. A failed write leaves
// memory as it was; the file is either the old or the new version.
func (c *epochCache) replace(entries []EpochEntry) error {
	if err := vfs.WriteFileAtomic(c.fsys, filepath.Join(c.dir, leaderEpochCheckpointName), formatEpochFile(entries), 0o644); err != nil {
		return fmt.Errorf("storage: write leader-epoch checkpoint: %w", err)
	}
	c.set(entries)
	c.dirty = false
	return nil
}

// set publishes entries without writing them; the file is now dirty.
func (c *epochCache) set(entries []EpochEntry) {
	c.mu.Lock()
	c.entries = entries
	c.mu.Unlock()
	c.dirty = true
}

// flush writes the entries if the file lags behind them.
func (c *epochCache) flush() error {
	if !c.dirty {
		return nil
	}
	return c.replace(c.entries)
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: the largest
// epoch <= epoch and the offset where it ended (the start of the next
// epoch), the log end for the latest epoch, the first known start offset
// for an epoch older than every entry, and (UndefinedEpoch,
// UndefinedEpochOffset) for UndefinedEpoch or an epoch above every entry.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if epoch == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch {
		return epoch, logEnd
	}
	// higher: the first entry with an epoch above the requested one.
	higher, _ := slices.BinarySearchFunc(c.entries, int64(epoch)+1, func(e EpochEntry, t int64) int { return cmp.Compare(int64(e.Epoch), t) })
	switch {
	case higher == len(c.entries):
		return UndefinedEpoch, UndefinedEpochOffset
	case higher == 0:
		return epoch, c.entries[0].StartOffset
	default:
		return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
	}
}

// epochForOffset is Kafka's epochForOffset: the epoch of the entry starting
// exactly at offset, else of the last entry starting before it.
func (c *epochCache) epochForOffset(offset int64) (int32, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	prev, found := UndefinedEpoch, false
	for _, e := range c.entries {
		if e.StartOffset == offset {
			return e.Epoch, true
		}
		if e.StartOffset > offset {
			break
		}
		prev, found = e.Epoch, true
	}
	return prev, found
}

// formatEpochFile renders Kafka's checkpoint text: the version, the entry
// count, and one "epoch startOffset" line per entry.
func formatEpochFile(entries []EpochEntry) []byte {
	b := fmt.Appendf(nil, "%d\n%d\n", leaderEpochFileVersion, len(entries))
	for _, e := range entries {
		b = fmt.Appendf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b
}

// parseEpochFile parses a leader-epoch-checkpoint as Kafka's
// CheckpointReadBuffer does: an empty file, or one that ends after the
// version line, holds no entries; otherwise the count must match the entry
// lines, each two whitespace-separated numbers. Entries must also be
// strictly ascending in epoch and non-decreasing in start offset, with
// neither negative, which is what the cache relies on.
func parseEpochFile(b []byte) ([]EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return nil, nil
	}
	if v, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err != nil || v != leaderEpochFileVersion {
		return nil, fmt.Errorf("unknown version line %q", sc.Text())
	}
	if !sc.Scan() {
		return nil, nil
	}
	count, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || count < 0 {
		return nil, fmt.Errorf("malformed count line %q", sc.Text())
	}
	var entries []EpochEntry
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		epoch, err1 := strconv.ParseInt(fields[0], 10, 32)
		start, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		if n := len(entries); n > 0 && (int32(epoch) <= entries[n-1].Epoch || start < entries[n-1].StartOffset) {
			return nil, fmt.Errorf("entry %q out of order", sc.Text())
		}
		if len(entries) == count {
			return nil, fmt.Errorf("more than the %d entries announced", count)
		}
		entries = append(entries, EpochEntry{int32(epoch), start})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(entries) != count {
		return nil, fmt.Errorf("%d entries, %d announced", len(entries), count)
	}
	return entries, nil
}

// loadEpochCache reads dir's leader-epoch checkpoint. found=false when the
// file does not exist. A file that does not parse is a *CorruptError: it is
// only ever replaced whole, by rename.
func loadEpochCache(fsys vfs.FS, dir string) (c *epochCache, found bool, err error) {
	c = &epochCache{fsys: fsys, dir: dir}
	path := filepath.Join(dir, leaderEpochCheckpointName)
	b, err := readSmallFile(fsys, path, maxEpochFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if c.entries, err = parseEpochFile(b); err != nil {
		return nil, false, &CorruptError{Path: path, Reason: "leader-epoch checkpoint: " + err.Error()}
	}
	return c, true, nil
}

// readSmallFile reads a whole file of at most limit bytes; a larger one is
// a *CorruptError. The error matches os.ErrNotExist when there is no file.
func readSmallFile(fsys vfs.FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("storage: stat %s: %w", path, err)
	}
	if fi.Size() > limit {
		return nil, &CorruptError{Path: path, Reason: fmt.Sprintf("%d bytes, more than %d", fi.Size(), limit)}
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("storage: read %s: %w", path, err)
	}
	return b, nil
}

// rebuildEpochs derives the epoch entries from the batch headers of every
// segment, for a log whose checkpoint file is missing (a log written before
// the file existed, or one whose directory lost it): the first batch of
// each newer epoch starts an entry, as Kafka's segment recovery assigns
// them. It reads headers only.
func (l *Log) rebuildEpochs() error {
	var buf [headerBufSize]byte
	var entries []EpochEntry
	for _, seg := range l.segments {
		err := seg.walkHeaders(0, &buf, func(_ int64, hdr []byte) error {
			epoch := int32(binary.BigEndian.Uint32(hdr[offPartitionLeaderEpoch:]))
			if n := len(entries); epoch >= 0 && (n == 0 || epoch > entries[n-1].Epoch) {
				entries = append(entries, EpochEntry{epoch, int64(binary.BigEndian.Uint64(hdr[offBaseOffset:]))})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	l.epochs.set(entries)
	return nil
}

// openEpochs loads the leader-epoch checkpoint and makes it agree with the
// recovered log, as Kafka's LogLoader does: entries at or past the log end
// are dropped, the first is moved up to the log start. A missing file is
// rebuilt from the batches. Called by Open once the segments are loaded.
// What Open changes is written by the first assign (see dirty), not here,
// so that opening a log writes nothing.
func (l *Log) openEpochs() error {
	if err := l.fsys.Remove(filepath.Join(l.dir, leaderEpochTempName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("storage: remove %s: %w", leaderEpochTempName, err)
	}
	c, found, err := loadEpochCache(l.fsys, l.dir)
	if err != nil {
		return err
	}
	l.epochs = c
	if !found && l.end.Load() > l.start.Load() {
		if err := l.rebuildEpochs(); err != nil {
			return err
		}
	}
	loaded := c.entries
	entries, _ := epochsBelow(c.entries, l.end.Load())
	entries, _ = epochsFrom(entries, l.start.Load())
	c.set(entries)
	c.dirty = !found || !slices.Equal(entries, loaded)
	return nil
}

// AssignEpoch records that leader epoch epoch starts at startOffset, as a
// partition leader does when it takes over (at its log end) and as Append
// does for every batch stamped with a newer epoch. Later entries that
// contradict it (an epoch or start offset not below it) are removed. The
// checkpoint is written durably before AssignEpoch returns.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	return l.epochs.assign(epoch, startOffset)
}

// LatestEpoch returns the newest leader epoch of the log; ok=false when it
// has none.
func (l *Log) LatestEpoch() (epoch int32, ok bool) {
	l.epochs.mu.RLock()
	defer l.epochs.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka's
// UnifiedLog.endOffsetForEpoch does: the largest epoch <= epoch the log
// knows and the offset where that epoch ended (the log end offset for the
// latest epoch). Without an answer it returns (UndefinedEpoch,
// UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	e, off := l.epochs.endOffsetFor(epoch, l.end.Load())
	if off == UndefinedEpochOffset {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	return e, off
}

// EpochForOffset returns the leader epoch under which offset was written;
// ok=false when no entry starts at or before it.
func (l *Log) EpochForOffset(offset int64) (epoch int32, ok bool) {
	return l.epochs.epochForOffset(offset)
}

// Epochs returns a copy of the leader-epoch entries, oldest first.
func (l *Log) Epochs() []EpochEntry {
	l.epochs.mu.RLock()
	defer l.epochs.mu.RUnlock()
	return slices.Clone(l.epochs.entries)
}

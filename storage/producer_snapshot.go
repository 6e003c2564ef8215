package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/vfs"
)

// Producer-state snapshots: Kafka's <offset>.snapshot files
// (ProducerStateManager.writeSnapshot and readSnapshot, the ProducerSnapshot
// v1 schema), which let a partition's producer state be loaded at open
// instead of rebuilt by reading the log.

const (
	snapshotSuffix = ".snapshot"
	// snapshotVersion is the only ProducerSnapshot version Kafka defines.
	snapshotVersion = 1
	// snapshotEntriesAt is Kafka's PRODUCER_ENTRIES_OFFSET: the CRC-32C
	// covers the file from here (after version and CRC) to the end.
	snapshotEntriesAt  = 2 + 4
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	snapshotsRetained  = 2
	maxSnapshotEntries = math.MaxInt32 / snapshotEntrySize
)

// ProducerBatchMeta is Kafka's BatchMetadata: one appended batch of an
// idempotent or transactional producer.
type ProducerBatchMeta struct {
	LastSequence int32
	LastOffset   int64
	OffsetDelta  int32 // lastOffset - firstOffset, and lastSeq - firstSeq
	Timestamp    int64 // the batch's max timestamp
}

// ProducerSnapshotEntry is one producer's state as a snapshot keeps it:
// Kafka's ProducerStateEntry with up to five retained batches.
type ProducerSnapshotEntry struct {
	ProducerID    int64
	Epoch         int16
	LastTimestamp int64
	// CoordinatorEpoch is the epoch of the transaction coordinator that last
	// wrote a marker for this producer; -1 before transactions.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's ongoing
	// transaction, -1 when there is none.
	CurrentTxnFirstOffset int64
	// Batches are the retained batches, oldest first (Kafka retains five).
	Batches []ProducerBatchMeta
}

// The file is Kafka's ProducerSnapshot v1, so kafka-dump-log reads it and
// Kafka would load it:
//
//	version int16 (1) | crc uint32 (CRC-32C of the rest) | count int32 |
//	count × { producerId int64 | epoch int16 | lastSequence int32 |
//	          lastOffset int64 | offsetDelta int32 | timestamp int64 |
//	          coordinatorEpoch int32 | currentTxnFirstOffset int64 }
//
// Kafka writes one entry per producer, for its last batch. Gregor writes
// one entry per retained batch, oldest first, all with the producer's id,
// epoch and transaction fields: Kafka, reading the file, keeps the last
// entry of each producer, which is the one it would have written; Gregor
// gathers all of them and so still recognises a retry of any of the last
// five batches after a restart. A producer without batches is one entry
// with lastOffset -1, as in Kafka.

// encodeProducerSnapshot renders entries in the file format.
func encodeProducerSnapshot(entries []ProducerSnapshotEntry) []byte {
	n := 0
	for _, e := range entries {
		n += max(len(e.Batches), 1)
	}
	b := make([]byte, snapshotEntriesAt, snapshotEntriesAt+4+n*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	put := func(e *ProducerSnapshotEntry, m ProducerBatchMeta) {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(m.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(m.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	for i := range entries {
		e := &entries[i]
		if len(e.Batches) == 0 {
			put(e, ProducerBatchMeta{LastSequence: -1, LastOffset: -1, Timestamp: e.LastTimestamp})
		}
		for _, m := range e.Batches {
			put(e, m)
		}
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[snapshotEntriesAt:], castagnoli))
	return b
}

// errCorruptSnapshot marks a snapshot that must be ignored (and deleted),
// Kafka's CorruptSnapshotException.
var errCorruptSnapshot = errors.New("corrupt producer snapshot")

// decodeProducerSnapshot parses a snapshot file. Entries of one producer id
// are gathered in file order; an entry with lastOffset -1 adds no batch. It
// never allocates more than the input's size allows.
func decodeProducerSnapshot(b []byte) ([]ProducerSnapshotEntry, error) {
	if len(b) < snapshotEntriesAt+4 {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, len(b))
	}
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", errCorruptSnapshot, v)
	}
	if got, want := crc32.Checksum(b[snapshotEntriesAt:], castagnoli), binary.BigEndian.Uint32(b[2:]); got != want {
		return nil, fmt.Errorf("%w: CRC %08x, stored %08x", errCorruptSnapshot, got, want)
	}
	count := int32(binary.BigEndian.Uint32(b[snapshotEntriesAt:]))
	rest := b[snapshotEntriesAt+4:]
	if count < 0 || int64(count)*snapshotEntrySize != int64(len(rest)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, count, len(rest))
	}
	var entries []ProducerSnapshotEntry
	index := map[int64]int{}
	for ; len(rest) > 0; rest = rest[snapshotEntrySize:] {
		be := binary.BigEndian
		pid := int64(be.Uint64(rest))
		epoch := int16(be.Uint16(rest[8:]))
		m := ProducerBatchMeta{
			LastSequence: int32(be.Uint32(rest[10:])),
			LastOffset:   int64(be.Uint64(rest[14:])),
			OffsetDelta:  int32(be.Uint32(rest[22:])),
			Timestamp:    int64(be.Uint64(rest[26:])),
		}
		coordEpoch := int32(be.Uint32(rest[34:]))
		txnFirst := int64(be.Uint64(rest[38:]))
		i, seen := index[pid]
		if !seen {
			i = len(entries)
			index[pid] = i
			entries = append(entries, ProducerSnapshotEntry{ProducerID: pid})
		}
		e := &entries[i]
		if seen && e.Epoch != epoch {
			e.Batches = e.Batches[:0] // a newer epoch's entries replace the older's
		}
		e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp = epoch, coordEpoch, txnFirst, m.Timestamp
		if m.LastOffset >= 0 {
			if m.OffsetDelta < 0 || m.LastOffset < int64(m.OffsetDelta) {
				return nil, fmt.Errorf("%w: producer %d batch ending at %d with offset delta %d", errCorruptSnapshot, pid, m.LastOffset, m.OffsetDelta)
			}
			e.Batches = append(e.Batches, m)
		}
	}
	return entries, nil
}

// snapshotPath names a snapshot as Kafka does: the offset up to which
// (exclusive) it reflects the log, in 20 digits.
func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

// listSnapshots returns the offsets of dir's snapshot files, ascending.
func (l *Log) listSnapshots() ([]int64, error) {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", l.dir, err)
	}
	var offsets []int64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), snapshotSuffix)
		if !ok || len(name) != 20 || e.IsDir() {
			continue
		}
		if off, err := strconv.ParseInt(name, 10, 64); err == nil && off >= 0 {
			offsets = append(offsets, off)
		}
	}
	slices.Sort(offsets)
	return offsets, nil
}

// removeSnapshots deletes the snapshots whose offsets satisfy drop.
func (l *Log) removeSnapshots(drop func(offset int64) bool) error {
	offsets, err := l.listSnapshots()
	if err != nil {
		return err
	}
	var errs []error
	for _, off := range offsets {
		if drop(off) {
			if err := l.fsys.Remove(snapshotPath(l.dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("storage: remove snapshot: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// WriteProducerSnapshot durably writes the producer state that reflects
// every batch below offset (the caller's state must be exactly that) as
// <offset>.snapshot, replacing any snapshot at the same offset, and then
// deletes all but the latest two snapshots. offset must lie in
// [StartOffset, EndOffset]. The broker calls it when the active segment
// rolls and before Close, as Kafka does.
func (l *Log) WriteProducerSnapshot(offset int64, entries []ProducerSnapshotEntry) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if start, end := l.start.Load(), l.end.Load(); offset < start || offset > end {
		return fmt.Errorf("%w: snapshot at %d outside [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	path := snapshotPath(l.dir, offset)
	if err := vfs.WriteFileAtomic(l.fsys, path, encodeProducerSnapshot(entries), 0o644); err != nil {
		return fmt.Errorf("storage: write %s: %w", filepath.Base(path), err)
	}
	offsets, err := l.listSnapshots()
	if err != nil {
		return err
	}
	if len(offsets) <= snapshotsRetained {
		return nil
	}
	oldestKept := offsets[len(offsets)-snapshotsRetained]
	return l.removeSnapshots(func(off int64) bool { return off < oldestKept })
}

// LatestProducerSnapshot returns the newest snapshot at or below the log
// end offset and the offset it was taken at; found=false when there is
// none. A snapshot that does not decode (bad CRC, truncated, unknown
// version) is deleted, as Kafka does, and the next older one is tried. The
// caller replays the batches from max(offset, StartOffset) to the end.
func (l *Log) LatestProducerSnapshot() (offset int64, entries []ProducerSnapshotEntry, found bool, err error) {
	return l.ProducerSnapshotAtOrBelow(math.MaxInt64)
}

// ProducerSnapshotAtOrBelow is LatestProducerSnapshot for the newest
// snapshot taken at or below limit (and the log end): where the producer
// state's replay must begin to rebuild transaction indexes from
// RecoveryStats.TxnIndexRebuildFrom.
func (l *Log) ProducerSnapshotAtOrBelow(limit int64) (offset int64, entries []ProducerSnapshotEntry, found bool, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	offsets, err := l.listSnapshots()
	if err != nil {
		return 0, nil, false, err
	}
	end := min(l.end.Load(), limit)
	for i := len(offsets) - 1; i >= 0; i-- {
		off := offsets[i]
		if off > end {
			continue // Open removes these; a concurrent TruncateTo may have made more
		}
		path := snapshotPath(l.dir, off)
		b, err := readSmallFile(l.fsys, path, math.MaxInt32)
		if err == nil {
			if entries, err = decodeProducerSnapshot(b); err == nil {
				return off, entries, true, nil
			}
		}
		if !errors.Is(err, errCorruptSnapshot) && !errors.Is(err, ErrCorrupt) {
			return 0, nil, false, fmt.Errorf("storage: read %s: %w", path, err)
		}
		l.logger.Warn("storage: deleting corrupt producer snapshot", "file", path, "err", err)
		if err := l.fsys.Remove(path); err != nil {
			return 0, nil, false, fmt.Errorf("storage: remove %s: %w", path, err)
		}
	}
	return 0, nil, false, nil
}

// removeSnapshotsAbove deletes the snapshots past end, which describe
// batches the log no longer holds (Kafka's truncateAndReload). Called by
// Open and the truncations.
func (l *Log) removeSnapshotsAbove(end int64) error {
	return l.removeSnapshots(func(off int64) bool { return off > end })
}

// ActiveSegmentBase returns the base offset of the active segment. Right
// after an Append, it equals the append's first offset exactly when the
// append rolled a new segment (or went into an empty log), which is when
// the broker snapshots its producer state. After an AppendReplicated it
// equals the EndOffset from before the call in that case: a segment
// starts at the log end, and the first batch may start after it when the
// leader's offsets skip.
func (l *Log) ActiveSegmentBase() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().base
}

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// Sentinel errors. Every error the package returns is prefixed "storage: "
// and wraps one of these or an FS error.
var (
	// ErrOffsetOutOfRange: the offset is below the log start or above the log end.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrCorrupt: stored data is damaged in a way recovery must not repair
	// by truncating (anything but a torn tail); Open refuses to start.
	// Errors that match it are *CorruptError.
	ErrCorrupt = errors.New("storage: log is corrupt")
	// ErrClosed: the Log was closed or deleted.
	ErrClosed = errors.New("storage: log is closed")
	// ErrInvalidBatch: Append was given bytes that are not whole v2 batches.
	ErrInvalidBatch = errors.New("storage: invalid record batch")
	// ErrFailed: an earlier I/O error left the files in a state the Log
	// could not undo, or an fsync failed; the Log refuses further writes
	// (reads still work) until it is reopened, which runs recovery.
	ErrFailed = errors.New("storage: log failed after an I/O error")
)

// CorruptError describes damaged stored data. errors.Is(err, ErrCorrupt)
// holds for it.
type CorruptError struct {
	Path     string // the damaged file
	Position int64  // byte position in it, when known
	Reason   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("storage: %s is corrupt at byte %d: %s", e.Path, e.Position, e.Reason)
}

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// failedError is the error a failed Log returns: it matches ErrFailed and
// unwraps to the I/O error that failed it.
type failedError struct{ cause error }

func (e *failedError) Error() string {
	return "storage: log failed after an I/O error: " + e.cause.Error()
}
func (e *failedError) Unwrap() error        { return e.cause }
func (e *failedError) Is(target error) bool { return target == ErrFailed }

// Config holds the Kafka log settings storage uses.
type Config struct {
	// SegmentBytes is log.segment.bytes (default 1 GiB, at most 2^31-1): a
	// new segment is rolled when an append would make the active one exceed
	// it. An append larger than it still goes, alone, into an empty segment.
	SegmentBytes int64
	// IndexIntervalBytes is log.index.interval.bytes (default 4096): a batch
	// gets an index entry when more than this many bytes were written since
	// the last entry.
	IndexIntervalBytes int
	// SegmentIndexBytes is segment.index.bytes (default 10 MiB): the size
	// of the active segment's index files, preallocated (rounded down to
	// whole entries, as Kafka does) on OSFS; a full index rolls the segment.
	SegmentIndexBytes int
	// SegmentMs is segment.ms (log.roll.ms; default 7 days): an append
	// rolls a non-empty active segment once its first batch's timestamp
	// (the wall clock time since the segment was created, if that batch has
	// none) lies more than SegmentMs minus the segment's jitter behind the
	// appended batches' largest timestamp, as Kafka's
	// LogSegment.shouldRoll. 0 turns time-based rolling off (Kafka requires
	// at least 1).
	SegmentMs int64
	// SegmentJitterMs is segment.jitter.ms (default 0): each segment draws a
	// jitter in [0, min(SegmentJitterMs, SegmentMs)) subtracted from
	// SegmentMs, so that many partitions do not roll at once.
	SegmentJitterMs int64
	// Now is the clock for time-based rolling; nil means time.Now.
	Now func() time.Time
	// FileDeleteDelay is file.delete.delay.ms (default one minute): how long
	// the files of a segment that retention or the cleaner took out of the
	// log stay on disk, renamed to .deleted, before they are removed. 0
	// removes them at once.
	FileDeleteDelay time.Duration
	// Logger receives recovery reports; nil means slog.Default().
	Logger *slog.Logger
	// SyncObserver, if set, is called with the duration of every fsync of a
	// segment's data file, after it returns (successful or not), from the
	// goroutine that synced. It must be cheap and safe for concurrent use.
	SyncObserver func(time.Duration)
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{SegmentBytes: 1 << 30, IndexIntervalBytes: 4096, SegmentIndexBytes: 10 << 20,
		SegmentMs: 7 * 24 * time.Hour.Milliseconds(), FileDeleteDelay: time.Minute}
}

// nowMs is the clock in Unix milliseconds.
func (c Config) nowMs() int64 {
	if c.Now != nil {
		return c.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// randomSegmentJitter is Kafka's LogConfig.randomSegmentJitter.
func (c Config) randomSegmentJitter() int64 {
	if c.SegmentJitterMs <= 0 || c.SegmentMs <= 0 {
		return 0
	}
	return rand.Int64N(min(c.SegmentJitterMs, c.SegmentMs))
}

func (c Config) validate() error {
	switch {
	case c.SegmentBytes < 1 || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("storage: SegmentBytes %d not in [1, 2^31-1]", c.SegmentBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("storage: IndexIntervalBytes %d is negative", c.IndexIntervalBytes)
	case c.SegmentIndexBytes < 4:
		return fmt.Errorf("storage: SegmentIndexBytes %d is below 4", c.SegmentIndexBytes)
	case c.SegmentMs < 0:
		return fmt.Errorf("storage: SegmentMs %d is negative", c.SegmentMs)
	case c.SegmentJitterMs < 0:
		return fmt.Errorf("storage: SegmentJitterMs %d is negative", c.SegmentJitterMs)
	}
	return nil
}

// Log is one partition's log in one directory.
//
// It is safe for concurrent use: mutating calls (Append, AppendReplicated,
// TruncateTo, TruncateFullyAndStartAt, SetStartOffset, Close, Delete) are
// serialized, and any number of reads run alongside them and each other.
// Sync runs alongside Append and AppendReplicated.
//
// Lock order (take left before right, never the reverse):
//
//	hwMu -> cleanMu -> syncMu -> appendMu -> mu -> deleteMu
//
// hwMu serializes WriteHighWatermark (which takes mu after it, briefly,
// and nothing else); Close and Delete take it first, so a checkpoint being
// written completes before the files close or the directory goes.
// cleanMu is held by the cleaner for a whole cleaning and by every call
// that removes segments or closes their files (retention, SetStartOffset,
// TruncateTo, TruncateFullyAndStartAt, Close, Delete), so the cleaner
// reads closed segments without blocking appends, and a truncation waits
// for a cleaning round rather than have it swap in cleaned copies of
// segments it removed.
// syncMu is held by Sync and by every call that removes or closes segment
// files or writes the checkpoint, so Sync can fsync files without holding
// appendMu. appendMu serializes mutators. mu guards the segment list and
// every segment's published state; mutators take it for writing only to
// publish, readers for reading for the whole read. The leader-epoch
// cache's own lock (epoch.go) is a leaf, taken after any of these.
type Log struct {
	fsys   vfs.FS
	dir    string
	cfg    Config
	logger *slog.Logger

	cleanMu  sync.Mutex
	syncMu   sync.Mutex
	appendMu sync.Mutex
	mu       sync.RWMutex
	deleteMu sync.Mutex // a leaf: guards pendingDeletes and deletesDone
	hwMu     sync.Mutex // serializes WriteHighWatermark; first in the lock order

	hw atomic.Int64 // the high-watermark checkpoint (highwatermark.go), -1 when none

	segments []*segment // ascending base offsets, contiguous; guarded by mu
	closed   bool       // guarded by mu; set holding appendMu too
	start    atomic.Int64
	end      atomic.Int64
	failure  atomic.Pointer[failedError]
	flush    flusher     // the flush policy and background fsyncs (flush.go)
	epochs   *epochCache // leader-epoch checkpoint (epoch.go); set by Open

	// Guarded by appendMu.
	dirDirty   bool   // segment files created since the last SyncDir
	idxScratch []byte // index entries being appended
	timScratch []byte

	// Guarded by syncMu.
	recoveryPoint  int64 // offsets below it are durable
	checkpointedRP int64 // the recovery point the checkpoint file holds

	recovery RecoveryStats // set by Open, then read-only

	// Retired segments waiting for FileDeleteDelay (retention.go); guarded
	// by deleteMu. deletesDone is set by Close and Delete.
	pendingDeletes map[*segment]*time.Timer
	deletesDone    bool

	// firstDirty is the cleaner's checkpoint (cleaner.go), -1 until read
	// from disk; guarded by cleanMu.
	firstDirty int64
	// cleanAbort is set by Close and Delete to stop a cleaning round
	// between batches: the round reads closed segments' files holding only
	// cleanMu, so they wait for it before closing any file.
	cleanAbort atomic.Bool
}

// RecoveryStats reports what Open did.
type RecoveryStats struct {
	CleanShutdown   bool  // the clean-shutdown marker was found, no CRC scan was needed
	SegmentsScanned int   // segments whose batches were CRC-checked and indexes rebuilt
	TruncatedBytes  int64 // invalid bytes cut from the segment where recovery stopped
	SegmentsDeleted int   // unflushed segments deleted after a cut one, as Kafka does
	// TxnIndexRebuildFrom is the base offset of the first unflushed segment
	// recovery scanned that holds transaction markers: Open emptied the
	// .txnindex of each such segment, because a crash may have lost
	// entries of it, as Kafka's segment recovery resets it; -1 when none. The producer state's
	// replay, from a snapshot at or below it, indexes their aborted
	// transactions again (Log.AppendAbortedTxn).
	TxnIndexRebuildFrom int64
}

// Recovery reports what Open did to recover the log.
func (l *Log) Recovery() RecoveryStats { return l.recovery }

// StartOffset returns the log start offset, the first offset a read may ask
// for.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset returns the log end offset, the offset the next appended record
// gets.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// active returns the last segment. mu or appendMu must be held.
func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// writable returns why mutations are refused, if they are; appendMu held.
func (l *Log) writable() error {
	if l.closed {
		return ErrClosed
	}
	if f := l.failure.Load(); f != nil {
		return f
	}
	return nil
}

// fail marks the log failed with cause and returns the error to report.
func (l *Log) fail(cause error) error {
	fe := &failedError{cause: cause}
	if !l.failure.CompareAndSwap(nil, fe) {
		return l.failure.Load()
	}
	l.logger.Error("storage: log failed; writes refused until reopened", "dir", l.dir, "err", cause)
	return fe
}

// Append writes one or more v2 record batches, concatenated, as one unit,
// and returns the first and last offsets it assigned.
//
// The caller must have validated the batches (CRC, records); Append checks
// only the header fields it walks by. It assigns offsets by rewriting each
// batch's baseOffset IN PLACE in the caller's buffer, starting at the log
// end offset and stepping by lastOffsetDelta+1, so the caller must not
// share batches with another goroutine during the call; Append keeps no
// reference to it afterwards. The unit is written to the active segment,
// which is rolled first if the unit would not fit.
//
// Either the whole unit is appended or, on error, none of it is: a failed
// write is cut off the file again (if that fails too, the Log fails with
// ErrFailed). Nothing is fsynced; see Sync. Append does not allocate per
// record or per batch. It parses each header three times (to check the
// unit, to index each batch, for the leader-epoch cache); a leader's one
// validated batch goes through AppendValidated, which parses none.
func (l *Log) Append(batches []byte) (first, last int64, err error) {
	return l.append(batches, false)
}

// AppendReplicated appends batches copied from the partition leader, as
// Kafka's UnifiedLog.appendAsFollower: their base offsets are kept, not
// assigned, and the bytes are stored exactly as given (batches is only
// read, never modified, and not retained). The first batch must start at
// or after EndOffset() and each next one after the previous batch's last
// offset; a batch must hold a matching CRC-32C, as Kafka checks every
// batch it appends. Anything else (an overlap, offsets going backwards, a
// malformed header or a CRC mismatch) is ErrInvalidBatch, and nothing is
// appended.
//
// Offsets may skip, as Kafka allows: a compacted leader's log has gaps
// between batches (and its fetch answer may begin after the offset asked
// for), and the follower's copy keeps them. EndOffset() afterwards is the
// last batch's last offset + 1.
//
// Empty input appends nothing and returns (EndOffset(), EndOffset()-1,
// nil), as Kafka's append of no valid bytes is a no-op; last+1 is the log
// end offset in both cases.
//
// Everything else is Append's: the unit goes to one segment (rolled first
// when the unit would not fit), the offset and time indexes and the
// segment's max timestamp are maintained as for Append, the leader-epoch
// checkpoint gets an entry for each batch with a newer partition leader
// epoch than LatestEpoch() (starting at that batch's base offset), nothing
// is fsynced (FlushAfterAppend applies the flush policy after it), and no
// allocation is made per batch. Aborted transactions are indexed by
// AppendAbortedTxn, as after Append.
func (l *Log) AppendReplicated(batches []byte) (first, last int64, err error) {
	return l.append(batches, true)
}

// unitShape is what the header walk learns about a unit before anything is
// written: its first and next offsets, its batch count and largest
// timestamp.
type unitShape struct {
	first, next int64
	count       int
	maxTs       int64
}

// walkUnit checks the headers of the unit about to be appended at the log
// end offset end and returns its shape. With keepOffsets the batches carry
// their own offsets, which must continue the log (see AppendReplicated),
// and their CRCs are checked; otherwise offsets are counted from end.
func walkUnit(batches []byte, end int64, keepOffsets bool) (unitShape, error) {
	u := unitShape{first: end, next: end, maxTs: noTimestamp}
	for p := 0; p < len(batches); u.count++ {
		h, reason := parseHeader(batches[p:])
		if reason != "" {
			return u, fmt.Errorf("%w: batch %d at byte %d: %s", ErrInvalidBatch, u.count, p, reason)
		}
		if h.size > int64(len(batches)-p) {
			return u, fmt.Errorf("%w: batch %d at byte %d: length %d runs past the input", ErrInvalidBatch, u.count, p, h.size)
		}
		if keepOffsets {
			if h.baseOffset < u.next {
				return u, fmt.Errorf("%w: batch %d at byte %d has base offset %d, below the expected %d",
					ErrInvalidBatch, u.count, p, h.baseOffset, u.next)
			}
			if !crcValid(batches[p : p+int(h.size)]) {
				return u, fmt.Errorf("%w: batch %d at byte %d (offset %d): CRC-32C mismatch", ErrInvalidBatch, u.count, p, h.baseOffset)
			}
			if u.count == 0 {
				u.first = h.baseOffset
			}
			u.next = h.nextOffset() // parseHeader rules out overflow
		} else {
			if u.next > math.MaxInt64-int64(h.lastOffsetDelta)-1 {
				return u, fmt.Errorf("%w: offsets overflow", ErrInvalidBatch)
			}
			u.next += int64(h.lastOffsetDelta) + 1
		}
		u.maxTs = max(u.maxTs, h.maxTimestamp)
		p += int(h.size)
	}
	if u.next-1-end > math.MaxInt32 {
		// Even an empty segment, based at end, could not index it with
		// 32-bit relative offsets.
		return u, fmt.Errorf("%w: the unit spans %d offsets from the log end %d", ErrInvalidBatch, u.next-end, end)
	}
	return u, nil
}

// append is Append (keepOffsets false) and AppendReplicated (true): one
// header walk, roll check, index maintenance and write for both.
func (l *Log) append(batches []byte, keepOffsets bool) (first, last int64, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return -1, -1, err
	}
	if len(batches) == 0 {
		if keepOffsets {
			end := l.end.Load()
			return end, end - 1, nil
		}
		return -1, -1, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	if len(batches) > math.MaxInt32 {
		return -1, -1, fmt.Errorf("%w: %d bytes is more than one segment can hold", ErrInvalidBatch, len(batches))
	}

	// Walk the headers once to check them and learn the unit's shape.
	u, err := walkUnit(batches, l.end.Load(), keepOffsets)
	if err != nil {
		return -1, -1, err
	}
	seg, err := l.segmentForUnit(int64(len(batches)), u)
	if err != nil {
		return -1, -1, err
	}

	// Assign offsets (unless kept) and work out the index entries.
	w := l.startUnitIndex(seg, u.first)
	for p := 0; p < len(batches); {
		b := batches[p:]
		if !keepOffsets {
			binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(w.next))
		}
		h, _ := parseHeader(b)
		w.add(h.size, h.lastOffset(), h.maxTimestamp)
		p += int(h.size)
	}
	if err := l.reserveIndex(seg, &w); err != nil {
		return -1, -1, err
	}
	// As Kafka, record a new leader epoch before the data that starts it.
	if err := l.epochs.assignBatches(batches); err != nil {
		return -1, -1, err
	}
	return l.writeUnit(seg, batches, u, &w)
}

// BatchShape is what AppendValidated takes from its caller instead of
// reading the batch's header: what the caller's validation of the batch
// learned.
type BatchShape struct {
	// LastOffsetDelta is the batch's lastOffsetDelta: it takes the offsets
	// from the log end to the log end + LastOffsetDelta.
	LastOffsetDelta int32
	// MaxTimestamp is the batch's maxTimestamp as stored, after any stamp
	// of the caller's: the time index, the segment's max timestamp and
	// time-based rolling follow it.
	MaxTimestamp int64
}

// AppendValidated is Append for one batch that its caller has validated as
// a partition leader does (a whole v2 batch of exactly len(batch) bytes, as
// batch.Validate accepts one) and whose shape it passes: no header is
// walked or parsed; the offsets, index entries, segment max timestamp and
// roll decision come from shape and len(batch), and only the partition
// leader epoch, which the leader stamped, is read from the bytes. It
// assigns the offsets from the log end, rewriting the base offset in
// place, and stores, indexes and publishes exactly what Append would for
// the same batch. It checks only that batch holds a header, that
// shape.LastOffsetDelta is not negative, and that the offsets do not
// overflow (ErrInvalidBatch); a shape that disagrees with the header
// indexes the batch wrongly, so bytes not validated upstream (a
// follower's) go through AppendReplicated, and several batches through
// Append.
func (l *Log) AppendValidated(batch []byte, shape BatchShape) (first, last int64, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return -1, -1, err
	}
	switch {
	case len(batch) < batchHeaderSize:
		return -1, -1, fmt.Errorf("%w: %d bytes, shorter than a batch header", ErrInvalidBatch, len(batch))
	case len(batch) > math.MaxInt32:
		return -1, -1, fmt.Errorf("%w: %d bytes is more than one segment can hold", ErrInvalidBatch, len(batch))
	case shape.LastOffsetDelta < 0:
		return -1, -1, fmt.Errorf("%w: negative lastOffsetDelta %d", ErrInvalidBatch, shape.LastOffsetDelta)
	}
	end := l.end.Load()
	if end > math.MaxInt64-int64(shape.LastOffsetDelta)-1 {
		return -1, -1, fmt.Errorf("%w: offsets overflow", ErrInvalidBatch)
	}
	u := unitShape{first: end, next: end + int64(shape.LastOffsetDelta) + 1, count: 1, maxTs: max(noTimestamp, shape.MaxTimestamp)}
	seg, err := l.segmentForUnit(int64(len(batch)), u)
	if err != nil {
		return -1, -1, err
	}
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(end))
	w := l.startUnitIndex(seg, end)
	w.add(int64(len(batch)), u.next-1, shape.MaxTimestamp)
	if err := l.reserveIndex(seg, &w); err != nil {
		return -1, -1, err
	}
	if err := l.epochs.assignBatch(batchLeaderEpoch(batch), end); err != nil {
		return -1, -1, err
	}
	return l.writeUnit(seg, batch, u, &w)
}

// segmentForUnit returns the segment a unit of n bytes and shape u goes
// to: the active one, rolled first if shouldRoll says so. appendMu held.
func (l *Log) segmentForUnit(n int64, u unitShape) (*segment, error) {
	seg := l.active()
	if l.shouldRoll(seg, n, u.count, u.next-1, u.maxTs) {
		if err := l.roll(); err != nil {
			return nil, err
		}
		seg = l.active()
	}
	return seg, nil
}

// unitIndex works out, batch by batch, the offset and time index entries
// of a unit appended to a segment, exactly as recovery would rebuild them
// (see scanSegment), and the segment's size, end offset and max timestamp
// after it.
type unitIndex struct {
	base, interval         int64 // the segment's base offset; index.interval.bytes
	idx, tim               []byte
	pos, next              int64 // the segment's size and the next offset
	maxTs, maxTsOffset     int64
	lastIdxPos, lastTimeTs int64
}

// startUnitIndex starts the index of a unit appended to seg at offset
// first, in the Log's scratch buffers. appendMu held.
func (l *Log) startUnitIndex(seg *segment, first int64) unitIndex {
	w := unitIndex{base: seg.base, interval: int64(l.cfg.IndexIntervalBytes),
		idx: l.idxScratch[:0], tim: l.timScratch[:0], pos: seg.size, next: first,
		maxTs: seg.maxTs, maxTsOffset: seg.maxTsOffset}
	_, w.lastIdxPos = seg.offsets.last()
	w.lastTimeTs, _ = seg.times.last()
	return w
}

// add indexes the next batch of the unit: size bytes, ending at lastOffset,
// with max timestamp maxTs.
func (w *unitIndex) add(size, lastOffset, maxTs int64) {
	if maxTs > w.maxTs {
		w.maxTs, w.maxTsOffset = maxTs, lastOffset
	}
	if w.pos-w.lastIdxPos > w.interval {
		w.idx = appendOffsetEntry(w.idx, w.base, lastOffset, w.pos)
		w.lastIdxPos = w.pos
		if w.maxTs > w.lastTimeTs {
			w.tim = appendTimeEntry(w.tim, w.base, w.maxTs, w.maxTsOffset)
			w.lastTimeTs = w.maxTs
		}
	}
	w.pos += size
	w.next = lastOffset + 1
}

// reserveIndex keeps w's buffers for the next append and makes room in
// seg's index files for its entries. appendMu held.
func (l *Log) reserveIndex(seg *segment, w *unitIndex) error {
	l.idxScratch, l.timScratch = w.idx, w.tim
	return l.makeRoom(seg, len(w.idx)/offsetEntrySize, len(w.tim)/timeEntrySize)
}

// writeUnit writes the unit batches, of shape u and indexed by w, to seg
// and publishes it; on a failed write the files are cut back. appendMu
// held.
func (l *Log) writeUnit(seg *segment, batches []byte, u unitShape, w *unitIndex) (first, last int64, err error) {
	err = writeFull(seg.log, batches, seg.size)
	if err == nil {
		err = seg.offsets.write(w.idx)
	}
	if err == nil {
		err = seg.times.write(w.tim)
	}
	if err != nil {
		err = fmt.Errorf("storage: append to %s: %w", seg.path, err)
		if rerr := l.undoWrite(seg, seg.size); rerr != nil {
			return -1, -1, l.fail(errors.Join(err, rerr))
		}
		return -1, -1, err
	}

	l.mu.Lock()
	if seg.size == 0 {
		seg.rollTs = u.maxTs // Kafka's rollingBasedTimestamp
	}
	seg.size = w.pos
	seg.end = w.next
	seg.offsets.publish(w.idx)
	seg.times.publish(w.tim)
	seg.maxTs, seg.maxTsOffset = w.maxTs, w.maxTsOffset
	l.end.Store(w.next)
	l.mu.Unlock()
	return u.first, w.next - 1, nil
}

// makeRoom grows the active segment's mapped index files when an append
// needs more entries than they were preallocated for. That happens only
// when a unit of many batches goes into an empty segment (which is never
// rolled) with a tiny segment.index.bytes; otherwise the roll check keeps
// the entries within capacity. appendMu held.
func (l *Log) makeRoom(seg *segment, idxEntries, timEntries int) error {
	if seg.offsets.room(idxEntries) && seg.times.room(timEntries) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if !seg.offsets.room(idxEntries) {
		err = seg.offsets.grow(idxEntries)
	}
	if err == nil && !seg.times.room(timEntries) {
		err = seg.times.grow(timEntries)
	}
	if err != nil {
		// The mapping may be gone; reads of this segment would fail.
		return l.fail(fmt.Errorf("storage: append to %s: %w", seg.path, err))
	}
	return nil
}

// writeFull writes all of b at off.
func writeFull(f vfs.File, b []byte, off int64) error {
	n, err := f.WriteAt(b, off)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// undoWrite cuts a segment's files back to what they held before a failed
// write.
func (l *Log) undoWrite(seg *segment, logLen int64) error {
	return errors.Join(seg.log.Truncate(logLen), seg.offsets.undo(), seg.times.undo())
}

// shouldRoll is Kafka's LogSegment.shouldRoll: roll when the unit would
// overflow the segment, either index, or the 32-bit relative offsets, or
// when the segment is older than SegmentMs less its jitter. A segment's age
// is measured as Kafka's timeWaitedForRoll does: from the timestamp of its
// first append to unitMaxTs, the largest timestamp being appended, or,
// when that first append had no timestamp, from its creation to now. An
// empty segment is never rolled.
func (l *Log) shouldRoll(seg *segment, n int64, batches int, lastOffset, unitMaxTs int64) bool {
	if seg.size == 0 {
		return false
	}
	return seg.size+n > l.cfg.SegmentBytes ||
		l.cfg.SegmentMs > 0 && seg.timeWaitedForRoll(l.cfg.nowMs(), unitMaxTs) > l.cfg.SegmentMs-seg.rollJitter ||
		seg.offsets.isFull(batches) || seg.times.isFull(batches) ||
		lastOffset-seg.base > math.MaxInt32
}

// timeWaitedForRoll is Kafka's LogSegment.timeWaitedForRoll.
func (s *segment) timeWaitedForRoll(now, unitMaxTs int64) int64 {
	if s.rollTs >= 0 {
		return unitMaxTs - s.rollTs
	}
	return now - s.created
}

// roll starts a new active segment at the log end offset. The old segment
// first gets its final time index entry, as Kafka's onBecomeInactiveSegment
// appends, has its index files trimmed to their entries, and is synced, all
// before the new one exists: a power loss can only ever cut the last
// segment, which recovery truncates (an unsynced segment followed by
// another would make Open refuse the log), and every segment but the last
// has trimmed indexes. appendMu held.
func (l *Log) roll() error {
	old := l.active()
	if err := l.deactivate(old); err != nil {
		return err
	}
	if err := old.sync(); err != nil {
		return l.fail(fmt.Errorf("storage: roll: %w", err))
	}
	ns := newSegment(l.dir, l.end.Load(), l.cfg)
	_, err := ns.openFiles(l.fsys, l.dir, true)
	if err == nil {
		err = ns.activate(l.cfg)
	}
	if err != nil {
		// The old segment stays active, preallocated again; its final
		// time entry stays too, a true entry.
		ns.remove(l.fsys, l.dir)
		l.mu.Lock()
		aerr := old.activate(l.cfg)
		l.mu.Unlock()
		if aerr != nil {
			return l.fail(errors.Join(err, aerr))
		}
		return err
	}
	l.dirDirty = true
	l.mu.Lock()
	l.segments = append(l.segments, ns)
	l.mu.Unlock()
	return nil
}

// deactivate writes the active segment's final time index entry and trims
// its index files. A failed write leaves the segment active and unchanged;
// a failed trim fails the log, since the files may no longer say which
// slots are entries. appendMu held.
func (l *Log) deactivate(seg *segment) error {
	entry := seg.finalTimeEntry()
	if err := l.makeRoom(seg, 0, len(entry)/timeEntrySize); err != nil {
		return err
	}
	if err := seg.times.write(entry); err != nil {
		err = fmt.Errorf("storage: final time index entry of %s: %w", seg.path, err)
		if uerr := seg.times.undo(); uerr != nil {
			return l.fail(errors.Join(err, uerr))
		}
		return err
	}
	l.mu.Lock()
	seg.times.publish(entry)
	l.mu.Unlock()
	if err := seg.deactivate(); err != nil {
		return l.fail(err)
	}
	return nil
}

// Read returns whole batches starting with the batch that holds offset (or
// the next batch if offset falls in a gap), in a new slice the caller owns.
// It is ReadInto(nil, ...).
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	return l.ReadInto(nil, offset, maxBytes, maxOffset)
}

// ReadInto appends to dst whole batches starting with the batch that holds
// offset, and returns the extended slice. It stops before any batch whose
// baseOffset is >= maxOffset (the broker passes the high watermark) and
// before any batch that would take the bytes appended past maxBytes -
// except that the first batch is always returned whole, however large, if
// it is below maxOffset (Kafka's minOneMessage). Reads may continue into
// the following segments.
//
// offset == EndOffset returns dst unchanged and nil; offset below
// StartOffset or above EndOffset is ErrOffsetOutOfRange. The bytes between
// len(dst) and cap(dst) may be overwritten even when nothing is appended.
// It finds the first batch through the sparse offset index and reads with
// positional reads; it never scans the log. Safe to call concurrently with
// everything.
func (l *Log) ReadInto(dst []byte, offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	if maxBytes < 0 {
		return dst, fmt.Errorf("storage: read: negative maxBytes %d", maxBytes)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, ErrClosed
	}
	start, end := l.start.Load(), l.end.Load()
	if offset < start || offset > end {
		return dst, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return dst, nil
	}
	budget := int64(maxBytes)
	i := l.segmentFor(offset)
	var (
		pos   int64
		first batchHeader
		found bool
	)
	for ; i < len(l.segments); i++ {
		dst = slices.Grow(dst, batchHeaderSize)
		var err error
		pos, first, found, err = l.segments[i].locate(offset, dst[len(dst):len(dst)+batchHeaderSize])
		if err != nil {
			return dst, err
		}
		if found {
			break
		}
	}
	if !found || first.baseOffset >= maxOffset {
		return dst, nil
	}
	budget = max(budget, first.size)
	for ; i < len(l.segments); i, pos = i+1, 0 {
		seg := l.segments[i]
		var (
			n   int64
			err error
		)
		dst, n, found, err = seg.readBatches(dst, pos, budget, maxOffset)
		if err != nil {
			return dst, err
		}
		budget -= n
		if found || budget <= 0 {
			break // a batch stopped us, or the budget is spent
		}
	}
	return dst, nil
}

// readBatches appends the whole batches at pos.. that fit in budget bytes
// and lie below maxOffset. stopped reports that a batch was left out (so
// the read must not go on into the next segment).
func (s *segment) readBatches(dst []byte, pos, budget, maxOffset int64) (_ []byte, n int64, stopped bool, err error) {
	window := min(s.size-pos, budget)
	if window <= 0 {
		return dst, 0, s.size-pos > 0, nil
	}
	base := len(dst)
	dst = slices.Grow(dst, int(window))[:base+int(window)]
	buf := dst[base:]
	if _, err := s.log.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return dst[:base], 0, true, fmt.Errorf("storage: read %s at %d: %w", s.path, pos, err)
	}
	var p int64
	for p < window {
		if window-p < batchHeaderSize {
			stopped = true
			break
		}
		h, reason := parseHeader(buf[p:])
		if reason != "" {
			return dst[:base], 0, true, s.corrupt(pos+p, reason)
		}
		if h.size > window-p || h.baseOffset >= maxOffset {
			stopped = true
			break
		}
		p += h.size
	}
	if p == window && pos+window < s.size {
		stopped = true // the budget ran out exactly at a batch boundary
	}
	return dst[:base+int(p)], p, stopped, nil
}

// segmentFor returns the index of the last segment whose base offset is <=
// offset (0 if none). mu or appendMu held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset })
	return max(i-1, 0)
}

// BatchAtTimestamp returns a copy of the first batch, in offset order, whose
// max timestamp is >= ts and whose last offset is at or above the log start
// offset; found=false if there is none. It follows Kafka's
// fetchOffsetByTimestamp: the first segment whose largest timestamp is >=
// ts, then its time index entry with the largest timestamp <= ts, the
// offset index to a position before that entry's offset, and a forward walk
// over batch headers. Time index entries (T, O) mark the earliest batch
// reaching T, and every batch before it has a smaller max timestamp, so the
// walk misses nothing although batch timestamps are not monotonic. The
// caller finds the record inside.
func (l *Log) BatchAtTimestamp(ts int64) (batch []byte, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, false, ErrClosed
	}
	start := l.start.Load()
	for _, seg := range l.segments {
		if seg.maxTs < ts || seg.maxTs == noTimestamp {
			continue
		}
		if err := seg.loadIndexes(); err != nil {
			return nil, false, err
		}
		_, tOffset := seg.times.lookup(ts)
		_, pos := seg.offsets.lookup(max(tOffset, start))
		var scratch [batchHeaderSize]byte
		for pos < seg.size {
			h, err := seg.readHeader(pos, scratch[:])
			if err != nil {
				return nil, false, err
			}
			if h.maxTimestamp >= ts && h.lastOffset() >= start {
				b, err := seg.readBatch(pos, h.size)
				return b, err == nil, err
			}
			pos += h.size
		}
		return nil, false, nil // as Kafka: only the first such segment is searched
	}
	return nil, false, nil
}

// MaxTimestampBatch returns a copy of the batch holding the largest
// timestamp in the log, the earliest such batch on ties; found=false when no
// batch has a timestamp. It uses the per-segment maximum kept as batches
// are appended (Kafka's maxTimestampSoFar) and one index lookup.
func (l *Log) MaxTimestampBatch() (batch []byte, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, false, ErrClosed
	}
	var best *segment
	for _, seg := range l.segments {
		if seg.maxTs > noTimestamp && (best == nil || seg.maxTs > best.maxTs) {
			best = seg
		}
	}
	if best == nil {
		return nil, false, nil
	}
	var scratch [batchHeaderSize]byte
	pos, h, ok, err := best.locate(best.maxTsOffset, scratch[:])
	if err != nil {
		return nil, false, err
	}
	if !ok || h.maxTimestamp != best.maxTs {
		return nil, false, best.corrupt(pos, fmt.Sprintf("no batch holds the segment's max timestamp %d at offset %d", best.maxTs, best.maxTsOffset))
	}
	b, err := best.readBatch(pos, h.size)
	return b, err == nil, err
}

// Sync makes everything appended before the call durable: it fsyncs the
// segments written since the last Sync (data and indexes) and, when new
// segment files were created, the directory. When the recovery point
// passes a segment boundary it also rewrites the checkpoint, so that a
// restart after a crash CRC-scans only the segments written since. A failed
// fsync fails the Log (ErrFailed), since the kernel may have dropped the
// dirty pages. Appends proceed while Sync waits on the disk.
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncLocked()
}

// syncLocked is Sync with syncMu held.
func (l *Log) syncLocked() error {
	l.appendMu.Lock()
	if err := l.writable(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	target := l.end.Load()
	activeBase := l.active().base
	var segs []*segment
	for _, seg := range l.segments {
		if seg.end >= l.recoveryPoint {
			segs = append(segs, seg)
		}
	}
	dirDirty := l.dirDirty
	l.dirDirty = false
	l.appendMu.Unlock()

	for _, seg := range segs {
		if err := seg.sync(); err != nil {
			return l.fail(err)
		}
	}
	if dirDirty {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return l.fail(fmt.Errorf("storage: sync %s: %w", l.dir, err))
		}
	}
	l.setRecoveryPoint(target)
	if l.checkpointedRP < activeBase {
		if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: l.start.Load(), recoveryPoint: target}); err != nil {
			return err
		}
		l.checkpointedRP = target
	}
	return nil
}

// Close syncs everything, writes the checkpoint and the clean-shutdown
// marker (so the next Open skips the CRC scan) and closes the files. A
// failed Log is closed without the marker, so that the next Open recovers.
// Close waits for reads in progress; later calls return ErrClosed. Closing
// twice returns nil. A cleaning round in progress is stopped first.
func (l *Log) Close() error {
	l.stopFlushes()
	l.cleanAbort.Store(true)
	l.hwMu.Lock() // a high-watermark checkpoint being written completes first
	defer l.hwMu.Unlock()
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if f := l.failure.Load(); f != nil {
		err = f
	} else {
		err = l.shutdownCleanly()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, seg := range l.segments {
		if cerr := seg.closeFiles(); err == nil {
			err = cerr
		}
	}
	l.finishRetiredDeletes()
	return err
}

func (l *Log) shutdownCleanly() error {
	// Kafka's LogSegment.close: the final time entry, and indexes trimmed
	// to their entries, so that the next Open trusts the file lengths.
	if err := l.deactivate(l.active()); err != nil {
		return err
	}
	for _, seg := range l.segments {
		if seg.end >= l.recoveryPoint {
			if err := seg.sync(); err != nil {
				return err
			}
		}
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("storage: sync %s: %w", l.dir, err)
	}
	end := l.end.Load()
	if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: l.start.Load(), recoveryPoint: end}); err != nil {
		return err
	}
	l.setRecoveryPoint(end)
	l.checkpointedRP = end
	return writeCleanShutdown(l.fsys, l.dir)
}

// Delete closes the log without syncing and removes its directory. A
// cleaning round in progress is stopped first.
func (l *Log) Delete() error {
	l.stopFlushes()
	l.cleanAbort.Store(true)
	l.hwMu.Lock() // no high-watermark checkpoint is written into the removed directory
	defer l.hwMu.Unlock()
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		for _, seg := range l.segments {
			seg.closeFiles()
		}
	}
	l.mu.Unlock()
	l.finishRetiredDeletes()
	if err := l.fsys.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("storage: delete %s: %w", l.dir, err)
	}
	return nil
}

// Size returns the bytes of record batches the log holds, summed over its
// segments (index files are not counted), as DescribeLogDirs reports a
// partition's size. It is safe to call concurrently with appends.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// SetConfig replaces the log's segment settings while it is open, as a
// topic config alteration does. SegmentBytes, IndexIntervalBytes and
// SegmentMs apply from the next append; SegmentIndexBytes and
// SegmentJitterMs to segments created after the call, existing segments
// keeping the index capacity and jitter they were created with.
// cfg.Logger, cfg.Now and cfg.SyncObserver are ignored: the log keeps those it
// was opened with.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	cfg.Logger, cfg.Now, cfg.SyncObserver = l.cfg.Logger, l.cfg.Now, l.cfg.SyncObserver
	l.cfg = cfg
	return nil
}

// SegmentCount returns the number of segments the log holds, the active one
// included. It is safe to call concurrently with appends.
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// Open opens the partition log in dir, creating dir if absent, and
// recovers it:
//
//   - Interrupted operations are finished first: .deleted files (retired
//     segments) and .cleaned files (an uncommitted cleaning) are removed,
//     and a committed cleaner swap (.log.swap) is completed.
//   - Leftovers are removed: index files without a .log, a temporary
//     checkpoint.
//   - Without the clean-shutdown marker, every segment holding offsets at
//     or above the checkpointed recovery point (all segments when there is
//     no checkpoint) is unflushed, and scanned as Kafka's
//     LogLoader.recoverLog does: each batch's length, magic, CRC-32C and
//     increasing offsets (not continuity: the cleaner leaves gaps inside a
//     segment) are checked and both indexes are rebuilt. At the
//     first invalid batch the segment is cut, and every later segment is
//     deleted, as in Kafka: what follows a torn or lost write cannot be
//     trusted to continue the log. The cut and the deletions are logged and
//     counted in Recovery.
//   - Segments not scanned get cheap checks: both index files present,
//     trimmed to whole entries (an index ending in an unwritten zero slot
//     was never trimmed) and consistent, the last offset index entry
//     pointing at the batch it names, the batches after it walking exactly
//     to the end of the file, none of them above the time index's max
//     timestamp or lacking the index entry IndexIntervalBytes calls for,
//     the first offset entry and the last time entry naming their batches.
//     Entries in between are trusted, as Kafka trusts them all. A
//     segment failing them is scanned as above and its indexes rebuilt
//     (Kafka rebuilds a segment whose offset index is missing or fails its
//     sanity check). If such a segment is flushed (below the recovery point,
//     or the shutdown was clean) and not the last, an invalid batch in it is
//     data that was fsynced and then damaged: Open refuses with ErrCorrupt
//     (a *CorruptError) rather than cut it. Kafka would cut that segment
//     and keep the ones after it, leaving a hole in the offsets.
//   - Segments must be contiguous: each ends where the next begins, or the
//     log is ErrCorrupt.
//   - The log start offset is the checkpointed one (at least the first
//     segment's base). Segments wholly below it are deleted.
//   - The last segment becomes the active one: its index files are
//     preallocated and mapped (see the package doc); the others' are
//     mapped on first use.
//   - The clean-shutdown marker is removed, durably, before Open returns,
//     so a crash from now on is seen as unclean.
//
// Recovery reports what was done.
func Open(fsys vfs.FS, dir string, cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Log{fsys: fsys, dir: dir, cfg: cfg, logger: cfg.Logger,
		pendingDeletes: map[*segment]*time.Timer{}, firstDirty: -1,
		recovery: RecoveryStats{TxnIndexRebuildFrom: -1}}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if err := l.open(); err != nil {
		for _, seg := range l.segments {
			seg.closeFiles()
		}
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	fsys, dir := l.fsys, l.dir
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storage: create %s: %w", dir, err)
	}
	if err := l.finishInterruptedOperations(); err != nil {
		return err
	}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", dir, err)
	}
	var bases []int64
	hasLog := map[int64]bool{}
	var indexFiles []string
	clean := false
	for _, e := range entries {
		name := e.Name()
		switch name {
		case cleanShutdownName:
			clean = true
			continue
		case checkpointTempName:
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("storage: remove %s: %w", name, err)
			}
			continue
		}
		base, suffix, ok := parseSegmentName(name)
		switch {
		case !ok || e.IsDir():
		case suffix == logSuffix:
			bases = append(bases, base)
			hasLog[base] = true
		default:
			indexFiles = append(indexFiles, name)
		}
	}
	slices.Sort(bases)
	for _, name := range indexFiles {
		if base, _, _ := parseSegmentName(name); !hasLog[base] {
			l.logger.Warn("storage: removing orphaned index file", "file", filepath.Join(dir, name))
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("storage: remove %s: %w", name, err)
			}
		}
	}
	cp, cpFound, err := readCheckpoint(fsys, dir)
	if err != nil {
		return err
	}
	l.recovery.CleanShutdown = clean
	rp := int64(-1) // unknown: scan everything after an unclean shutdown
	if cpFound {
		rp = cp.recoveryPoint
	}
	rpCut := false // an unflushed segment was cut and the later ones deleted

	for i, base := range bases {
		last := i == len(bases)-1
		seg := newSegment(dir, base, l.cfg)
		indexMissing, err := seg.openFiles(fsys, dir, false)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, seg)
		fi, err := seg.log.Stat()
		if err != nil {
			return fmt.Errorf("storage: stat %s: %w", seg.path, err)
		}
		fileSize := fi.Size()
		if fileSize > math.MaxInt32 {
			return &CorruptError{Path: seg.path, Position: math.MaxInt32, Reason: "segment larger than 2 GiB"}
		}
		scan := !clean && (rp < 0 || last || bases[i+1] > rp)
		if indexMissing {
			l.logger.Warn("storage: index file missing, rebuilding", "segment", seg.path)
			scan = true
		}
		if !scan {
			if err := seg.load(fileSize, l.cfg.IndexIntervalBytes); err != nil {
				if !errors.Is(err, errIndexMismatch) {
					return err
				}
				l.logger.Warn("storage: index does not match its segment, rebuilding", "segment", seg.path, "err", err)
				scan = true
			}
		}
		if scan {
			unflushed := !clean && (rp < 0 || last || bases[i+1] > rp)
			cut, err := l.recoverSegment(seg, fileSize, last, unflushed)
			if err != nil {
				return err
			}
			if cut && !last {
				if err := l.deleteSegmentFiles(bases[i+1:]); err != nil {
					return err
				}
				rpCut = true
				break
			}
		}
		if !last && seg.end != bases[i+1] {
			// The cleaner keeps each segment's last batch (empty if need
			// be), so segments stay contiguous even with gaps inside.
			return &CorruptError{Path: seg.path, Position: seg.size,
				Reason: fmt.Sprintf("segment ends at offset %d but the next segment starts at %d", seg.end, bases[i+1])}
		}
	}

	start := int64(0)
	if cpFound {
		start = cp.logStart
	}
	if len(l.segments) > 0 {
		start = max(start, l.segments[0].base)
		if end := l.active().end; start > end {
			// Files were deleted, or a TruncateFullyAndStartAt crashed part way.
			l.logger.Warn("storage: log start offset is past the log end, deleting all segments",
				"dir", dir, "start", start, "end", end)
			for _, seg := range l.segments {
				if err := seg.remove(fsys, dir); err != nil {
					return err
				}
			}
			l.segments = nil
		}
	}
	if len(l.segments) == 0 {
		seg := newSegment(dir, start, l.cfg)
		if _, err := seg.openFiles(fsys, dir, true); err != nil {
			return err
		}
		l.segments = append(l.segments, seg)
		l.dirDirty = true
	}
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].base <= start {
		if err := l.segments[n].remove(fsys, dir); err != nil {
			return err
		}
		n++
	}
	l.segments = l.segments[n:]
	if err := l.active().activate(l.cfg); err != nil {
		return err
	}
	if err := l.active().resetRoll(l.cfg, true); err != nil {
		return err
	}
	end := l.active().end
	l.start.Store(start)
	l.end.Store(end)
	if err := l.openSidecars(); err != nil {
		return err
	}
	if err := l.loadHighWatermark(); err != nil {
		return err
	}

	switch {
	case clean:
		l.setRecoveryPoint(end)
	case rp < 0:
		l.setRecoveryPoint(l.segments[0].base)
	default:
		l.setRecoveryPoint(min(rp, end))
	}
	l.checkpointedRP = rp
	if rpCut && rp > end {
		// The checkpoint names offsets that are gone; a crash before the
		// next checkpoint must not take segments written from now on for
		// flushed ones.
		if err := writeCheckpoint(fsys, dir, checkpoint{logStart: start, recoveryPoint: end}); err != nil {
			return err
		}
		l.checkpointedRP = end
	}
	if clean {
		if err := fsys.Remove(filepath.Join(dir, cleanShutdownName)); err != nil {
			return fmt.Errorf("storage: remove clean-shutdown marker: %w", err)
		}
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("storage: sync %s: %w", dir, err)
		}
	}
	return nil
}

// errIndexMismatch marks a failed cheap check of a segment's indexes: the
// segment is then rebuilt by scanning, not refused.
var errIndexMismatch = errors.New("index mismatch")

func mismatch(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errIndexMismatch}, args...)...)
}

// load checks a segment's index files against the log cheaply; any
// disagreement is errIndexMismatch. The indexes are read through a
// temporary mapping and left unloaded: a closed segment's are mapped again
// on its first lookup, the active segment's when Open activates it.
func (s *segment) load(fileSize int64, interval int) (err error) {
	for _, x := range []*indexFile{&s.offsets.indexFile, &s.times.indexFile} {
		if err := x.count(); err != nil {
			return err
		}
	}
	if err := s.loadIndexes(); err != nil {
		return err
	}
	defer func() {
		if rerr := errors.Join(s.offsets.release(), s.times.release()); err == nil {
			err = rerr
		}
	}()
	if err := s.offsets.check(fileSize); err != nil {
		return mismatch("%s: %v", indexSuffix, err)
	}
	s.size = fileSize

	// Walk the headers after the last offset index entry to the end.
	lastOff, pos := s.offsets.last()
	expect := int64(-1) // the next batch's base offset, once known
	if s.offsets.entries() == 0 {
		expect = s.base
	}
	maxTs, _ := s.times.last()
	end := s.base
	lastIdxPos := pos
	var scratch [batchHeaderSize]byte
	for first := true; pos < fileSize; first = false {
		if fileSize-pos < batchHeaderSize {
			return mismatch("partial batch header at %d", pos)
		}
		if _, err := s.log.ReadAt(scratch[:], pos); err != nil {
			return fmt.Errorf("storage: read %s: %w", s.path, err)
		}
		h, reason := parseHeader(scratch[:])
		switch {
		case reason != "":
			return mismatch("batch at %d: %s", pos, reason)
		case pos+h.size > fileSize:
			return mismatch("partial batch at %d", pos)
		case first && expect < 0 && h.lastOffset() != lastOff:
			return mismatch("last index entry names offset %d, its batch ends at %d", lastOff, h.lastOffset())
		case expect >= 0 && h.baseOffset < expect:
			// Compaction leaves gaps (see cleaner.go), never overlaps.
			return mismatch("batch at %d has offset %d, expected at least %d", pos, h.baseOffset, expect)
		case h.lastOffset()-s.base > math.MaxInt32:
			return mismatch("offset %d overflows the segment's relative offsets", h.lastOffset())
		case h.maxTimestamp > maxTs:
			return mismatch("batch at %d has timestamp %d above the time index's %d", pos, h.maxTimestamp, maxTs)
		case !first && pos-lastIdxPos > int64(interval):
			return mismatch("batch at %d should have an index entry", pos)
		}
		expect = h.nextOffset()
		end = expect
		pos += h.size
	}
	if fileSize > 0 && end == s.base {
		return mismatch("no batch after the last index entry")
	}
	s.end = end
	if err := s.times.check(end); err != nil {
		return mismatch("%s: %v", timeIndexSuffix, err)
	}
	// The first offset entry and the last time entry (the segment's max
	// timestamp, which BatchAtTimestamp trusts) must name the batches they
	// point at. Kafka checks neither; entries in between are trusted, as
	// Kafka trusts them all.
	if s.offsets.entries() > 1 {
		off, pos := s.offsets.entry(0)
		if h, err := s.readHeader(pos, scratch[:]); err != nil || h.lastOffset() != off {
			return mismatch("first index entry (%d, %d) does not name its batch", off, pos)
		}
	}
	if s.times.entries() > 0 {
		ts, off := s.times.last()
		pos, h, found, err := s.locate(off, scratch[:])
		if err != nil || !found || h.lastOffset() != off || h.maxTimestamp != ts {
			return mismatch("last time index entry (%d, %d) does not name its batch (at %d)", ts, off, pos)
		}
		s.maxTs, s.maxTsOffset = ts, off
	}
	return nil
}

// count sets the number of entries from the file's length, as Kafka does
// for an index it opens: every segment's index files are trimmed to their
// entries when it stops being active (roll, Close), so the length of any
// file recovery does not rebuild is trustworthy. A length that is not whole
// entries, or a file ending in a slot of zeros, is errIndexMismatch: the
// zeros are the unwritten tail of a preallocated file that was never
// trimmed (a crash, or damage), and no zero slot is ever taken for an
// entry. The one exception is a time index whose only slot is zeros, which
// is the real entry (timestamp 0, base offset) when the file was trimmed
// to it.
func (x *indexFile) count() error {
	fi, err := x.f.Stat()
	if err != nil {
		return fmt.Errorf("storage: stat index: %w", err)
	}
	size := fi.Size()
	switch {
	case size > math.MaxInt32:
		return mismatch("index file of %d bytes", size)
	case size%int64(x.entrySize) != 0:
		return mismatch("index file of %d bytes is not whole %d-byte entries", size, x.entrySize)
	}
	x.n = int(size) / x.entrySize
	if x.n == 0 {
		return nil
	}
	var last [timeEntrySize]byte
	slot := last[:x.entrySize]
	if got, err := x.f.ReadAt(slot, size-int64(x.entrySize)); got < len(slot) {
		return fmt.Errorf("storage: read index: %w", err)
	}
	if isZero(slot) && !(x.entrySize == timeEntrySize && x.n == 1) {
		return mismatch("index file of %d bytes ends in an unwritten slot (not trimmed)", size)
	}
	return nil
}

// recoverSegment CRC-scans a segment from the start, rebuilds its indexes
// and cuts it at the first invalid batch if it is the last segment or
// unflushed (see Open); cut reports that it did.
func (l *Log) recoverSegment(seg *segment, fileSize int64, last, unflushed bool) (cut bool, err error) {
	l.recovery.SegmentsScanned++
	res, err := scanSegment(seg.log, fileSize, seg.base, l.cfg.IndexIntervalBytes)
	if err != nil {
		return false, fmt.Errorf("storage: recover %s: %w", seg.path, err)
	}
	if res.valid < fileSize {
		if !last && !unflushed {
			return false, &CorruptError{Path: seg.path, Position: res.valid,
				Reason: res.reason + " in a flushed segment that is not the last"}
		}
		l.logger.Warn("storage: corruption found, truncating",
			"segment", seg.path, "position", res.valid, "bytes", fileSize-res.valid,
			"reason", res.reason, "end_offset", res.end)
		if err := seg.log.Truncate(res.valid); err != nil {
			return false, fmt.Errorf("storage: truncate %s: %w", seg.path, err)
		}
		l.recovery.TruncatedBytes += fileSize - res.valid
		cut = true
	}
	seg.size, seg.end = res.valid, res.end
	seg.maxTs, seg.maxTsOffset = res.maxTs, res.maxTsOffset
	if unflushed && res.control {
		// A crash may have lost entries of its transaction index: emptied
		// here, rebuilt by the producer state's replay (Kafka's
		// LogSegment.recover resets it too).
		if err := seg.txns.truncateTo(seg.base); err != nil {
			return false, err
		}
		if l.recovery.TxnIndexRebuildFrom < 0 {
			l.recovery.TxnIndexRebuildFrom = seg.base
		}
	}
	// Kafka ends a recovered segment's time index with its max timestamp.
	if last := res.lastTimeTs(); seg.maxTs > last {
		res.times = appendTimeEntry(res.times, seg.base, seg.maxTs, seg.maxTsOffset)
	}
	if err := seg.offsets.rebuild(res.offsets); err != nil {
		return false, fmt.Errorf("storage: %s: %w", seg.path, err)
	}
	if err := seg.times.rebuild(res.times); err != nil {
		return false, fmt.Errorf("storage: %s: %w", seg.path, err)
	}
	return cut, nil
}

// deleteSegmentFiles deletes the files of the segments with the given base
// offsets, which follow a segment recovery cut, as Kafka's recoverLog
// deletes the unflushed segments after a corrupt one.
func (l *Log) deleteSegmentFiles(bases []int64) error {
	for _, base := range bases {
		l.logger.Warn("storage: deleting segment after a corrupt one", "segment", segmentPath(l.dir, base, logSuffix))
		for _, suffix := range []string{txnIndexSuffix, timeIndexSuffix, indexSuffix, logSuffix} {
			if err := l.fsys.Remove(segmentPath(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: delete segment %d: %w", base, err)
			}
		}
		l.recovery.SegmentsDeleted++
	}
	if len(bases) > 0 {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return fmt.Errorf("storage: sync %s: %w", l.dir, err)
		}
	}
	return nil
}

// scanResult is what scanning a segment found.
type scanResult struct {
	valid       int64  // bytes of whole valid batches from the start
	end         int64  // offset after the last valid batch
	reason      string // why scanning stopped before the end of the file
	offsets     []byte // rebuilt offset index
	times       []byte // rebuilt time index, without the final entry
	maxTs       int64
	maxTsOffset int64
	control     bool // a control batch (a transaction marker) was seen
}

// lastTimeTs returns the timestamp of the last rebuilt time index entry,
// noTimestamp when there is none.
func (r *scanResult) lastTimeTs() int64 {
	if len(r.times) == 0 {
		return noTimestamp
	}
	return int64(binary.BigEndian.Uint64(r.times[len(r.times)-timeEntrySize:]))
}

// scanBufferSize is how much scanSegment reads at a time.
const scanBufferSize = 1 << 20

// scanSegment checks every batch of a segment file (length, magic, CRC-32C,
// offsets increasing from base and within 32 bits of it) and rebuilds the
// indexes with Kafka's rule, the same one Append follows. It stops at the
// first invalid batch. It never allocates more than the file holds.
func scanSegment(f vfs.File, size, base int64, interval int) (scanResult, error) {
	res := scanResult{end: base, maxTs: noTimestamp, maxTsOffset: -1}
	buf := make([]byte, min(size, scanBufferSize))
	var bufPos, bufLen int64 // buf holds the file's bytes [bufPos, bufPos+bufLen)
	// window returns the file's bytes [pos, pos+n), which must exist.
	window := func(pos, n int64) ([]byte, error) {
		if pos < bufPos || pos+n > bufPos+bufLen {
			if n > int64(len(buf)) {
				buf = make([]byte, n)
			}
			bufPos, bufLen = pos, min(int64(len(buf)), size-pos)
			if _, err := f.ReadAt(buf[:bufLen], pos); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
		}
		return buf[pos-bufPos : pos-bufPos+n], nil
	}
	var pos, lastIdxPos int64
	lastTimeTs := int64(noTimestamp)
	for pos < size {
		if size-pos < batchHeaderSize {
			res.reason = "partial batch header"
			break
		}
		hdr, err := window(pos, batchHeaderSize)
		if err != nil {
			return res, err
		}
		h, reason := parseHeader(hdr)
		if reason != "" {
			res.reason = reason
			break
		}
		if h.size > size-pos {
			res.reason = fmt.Sprintf("partial batch: %d bytes, %d in the file", h.size, size-pos)
			break
		}
		if h.baseOffset < res.end {
			// Offsets increase; compaction may leave gaps between batches.
			res.reason = fmt.Sprintf("batch has offset %d, expected at least %d", h.baseOffset, res.end)
			break
		}
		if h.lastOffset()-base > math.MaxInt32 {
			res.reason = fmt.Sprintf("offset %d overflows the segment's relative offsets", h.lastOffset())
			break
		}
		batch, err := window(pos, h.size)
		if err != nil {
			return res, err
		}
		if !crcValid(batch) {
			res.reason = "CRC-32C mismatch"
			break
		}
		if h.maxTimestamp > res.maxTs {
			res.maxTs, res.maxTsOffset = h.maxTimestamp, h.lastOffset()
		}
		res.control = res.control || binary.BigEndian.Uint16(batch[offAttributes:])&attrControl != 0
		if pos-lastIdxPos > int64(interval) {
			res.offsets = appendOffsetEntry(res.offsets, base, h.lastOffset(), pos)
			lastIdxPos = pos
			if res.maxTs > lastTimeTs {
				res.times = appendTimeEntry(res.times, base, res.maxTs, res.maxTsOffset)
				lastTimeTs = res.maxTs
			}
		}
		pos += h.size
		res.end = h.nextOffset()
	}
	res.valid = pos
	return res, nil
}

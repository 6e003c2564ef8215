package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
)

// Open opens the partition log in dir, creating dir if absent, and
// recovers it:
//
//   - Leftovers are removed: index files without a .log, a temporary
//     checkpoint.
//   - Without the clean-shutdown marker, every segment holding offsets at
//     or above the checkpointed recovery point (all segments when there is
//     no checkpoint) is scanned: each batch's length, magic, CRC-32C and
//     offset continuity are checked and both indexes are rebuilt. An invalid
//     batch in the LAST segment is a torn tail: the segment is cut there,
//     and the cut is logged. An invalid batch in any other segment is
//     ErrCorrupt (a *CorruptError), and Open refuses to start. Append does
//     not fsync a segment when it rolls (Kafka does, in the background), so
//     after a power loss (not a mere process crash) with no Sync since the
//     roll, a rolled segment may have lost data that a later one kept; that
//     too is refused rather than silently cut.
//   - Segments not scanned get cheap checks: both index files present and
//     consistent, the last offset index entry pointing at the batch it
//     names, the batches after it walking exactly to the end of the file,
//     none of them above the time index's max timestamp or lacking the index
//     entry IndexIntervalBytes calls for. A segment failing
//     them is scanned as above.
//   - Segments must be contiguous: each ends where the next begins, or the
//     log is ErrCorrupt.
//   - The log start offset is the checkpointed one (at least the first
//     segment's base). Segments wholly below it are deleted.
//   - The clean-shutdown marker is removed, durably, before Open returns,
//     so a crash from now on is seen as unclean.
//
// Recovery reports what was done.
func Open(fsys FS, dir string, cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Log{fsys: fsys, dir: dir, cfg: cfg, logger: cfg.Logger}
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
			if err := l.recoverSegment(seg, fileSize, last); err != nil {
				return err
			}
		}
		if !last && seg.end != bases[i+1] {
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
			// Files were deleted, or a TruncateFully crashed part way.
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
	end := l.active().end
	l.start.Store(start)
	l.end.Store(end)

	switch {
	case clean:
		l.setRecoveryPoint(end)
	case rp < 0:
		l.setRecoveryPoint(l.segments[0].base)
	default:
		l.setRecoveryPoint(min(rp, end))
	}
	l.checkpointedRP = rp
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

// load reads a segment's index files and checks them against the log
// cheaply; any disagreement is errIndexMismatch.
func (s *segment) load(fileSize int64, interval int) error {
	var err error
	if s.offsets.buf, err = readWhole(s.idxFile); err != nil {
		return err
	}
	if s.times.buf, err = readWhole(s.timeFile); err != nil {
		return err
	}
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
		case expect >= 0 && h.baseOffset != expect:
			return mismatch("batch at %d has offset %d, expected %d", pos, h.baseOffset, expect)
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
	if s.times.entries() > 0 {
		s.maxTs, s.maxTsOffset = s.times.last()
	}
	return nil
}

func readWhole(f File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("storage: stat index: %w", err)
	}
	if fi.Size() > math.MaxInt32 {
		return nil, mismatch("index file of %d bytes", fi.Size())
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("storage: read index: %w", err)
	}
	return b, nil
}

// recoverSegment CRC-scans a segment from the start, rebuilds its indexes
// and cuts a torn tail if it is the last segment.
func (l *Log) recoverSegment(seg *segment, fileSize int64, last bool) error {
	l.recovery.SegmentsScanned++
	res, err := scanSegment(seg.log, fileSize, seg.base, l.cfg.IndexIntervalBytes)
	if err != nil {
		return fmt.Errorf("storage: recover %s: %w", seg.path, err)
	}
	if res.valid < fileSize {
		if !last {
			return &CorruptError{Path: seg.path, Position: res.valid, Reason: res.reason + " in a segment that is not the last"}
		}
		l.logger.Warn("storage: truncating torn tail",
			"segment", seg.path, "position", res.valid, "bytes", fileSize-res.valid,
			"reason", res.reason, "end_offset", res.end)
		if err := seg.log.Truncate(res.valid); err != nil {
			return fmt.Errorf("storage: truncate %s: %w", seg.path, err)
		}
		l.recovery.TruncatedBytes += fileSize - res.valid
	}
	seg.size, seg.end = res.valid, res.end
	seg.offsets.buf = res.offsets
	seg.times.buf = res.times
	seg.maxTs, seg.maxTsOffset = res.maxTs, res.maxTsOffset
	// Kafka ends a recovered segment's time index with its max timestamp.
	seg.times.buf = append(seg.times.buf, seg.finalTimeEntry()...)
	for _, w := range []struct {
		f File
		b []byte
	}{{seg.idxFile, seg.offsets.buf}, {seg.timeFile, seg.times.buf}} {
		if err := w.f.Truncate(0); err != nil {
			return fmt.Errorf("storage: rebuild index of %s: %w", seg.path, err)
		}
		if len(w.b) > 0 {
			if err := writeFull(w.f, w.b, 0); err != nil {
				return fmt.Errorf("storage: rebuild index of %s: %w", seg.path, err)
			}
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
}

// scanBufferSize is how much scanSegment reads at a time.
const scanBufferSize = 1 << 20

// scanSegment checks every batch of a segment file (length, magic, CRC-32C,
// offsets contiguous from base and within 32 bits of it) and rebuilds the
// indexes with Kafka's rule, the same one Append follows. It stops at the
// first invalid batch. It never allocates more than the file holds.
func scanSegment(f File, size, base int64, interval int) (scanResult, error) {
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
		if h.baseOffset != res.end {
			res.reason = fmt.Sprintf("batch has offset %d, expected %d", h.baseOffset, res.end)
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

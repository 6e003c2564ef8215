package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentPath names a segment file as Kafka does: the base offset in 20
// digits, then the suffix.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset and suffix of a segment file
// name, ok=false for any other name.
func parseSegmentName(name string) (base int64, suffix string, ok bool) {
	dot := strings.IndexByte(name, '.')
	if dot != 20 {
		return 0, "", false
	}
	suffix = name[dot:]
	if suffix != logSuffix && suffix != indexSuffix && suffix != timeIndexSuffix && suffix != txnIndexSuffix {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:dot], 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, suffix, true
}

// segment is one .log file with its two indexes. Its mutable fields change
// only under Log.mu held for writing (by the one mutator holding
// Log.appendMu); readers hold Log.mu for reading. The mutator may also read
// them holding only appendMu, since no one else writes them.
type segment struct {
	base     int64
	path     string // the .log file
	log      vfs.File
	idxFile  vfs.File
	timeFile vfs.File

	size int64 // bytes of whole batches in the log file
	end  int64 // offset after the last batch; base when empty

	offsets offsetIndex
	times   timeIndex
	txns    txnIndex

	// maxTs and maxTsOffset are Kafka's maxTimestampAndOffsetSoFar: the
	// largest batch max timestamp and the last offset of the earliest batch
	// holding it; noTimestamp and -1 when no batch has a timestamp.
	maxTs       int64
	maxTsOffset int64

	// The time-based roll (see Log.shouldRoll), as Kafka's LogSegment keeps
	// it: created is when the segment was created or opened (or truncated
	// empty), in Unix milliseconds; rollTs is the max timestamp of the first
	// append to it (of the first batch, when the segment was opened with
	// data), noTimestamp when unknown or absent; rollJitter is the random
	// jitter drawn for it.
	created    int64
	rollTs     int64
	rollJitter int64

	// syncObserver is Config.SyncObserver, or nil.
	syncObserver func(time.Duration)
}

func newSegment(dir string, base int64, cfg Config) *segment {
	return &segment{
		base:         base,
		path:         segmentPath(dir, base, logSuffix),
		end:          base,
		offsets:      newOffsetIndex(base),
		times:        newTimeIndex(base),
		txns:         txnIndex{path: segmentPath(dir, base, txnIndexSuffix)},
		maxTs:        noTimestamp,
		maxTsOffset:  -1,
		created:      cfg.nowMs(),
		rollTs:       noTimestamp,
		rollJitter:   cfg.randomSegmentJitter(),
		syncObserver: cfg.SyncObserver,
	}
}

// openFiles opens the segment's three files, and its aborted-transaction
// index when it has one, for reading and writing. With
// create, files are created empty (truncating leftovers). Index files are
// always created when absent; indexMissing reports that.
func (s *segment) openFiles(fsys vfs.FS, dir string, create bool) (indexMissing bool, err error) {
	logFlag := os.O_RDWR
	if create {
		logFlag |= os.O_CREATE | os.O_TRUNC
	}
	open := func(suffix string, flag int) (vfs.File, error) {
		f, err := fsys.OpenFile(segmentPath(dir, s.base, suffix), flag, 0o644)
		if err != nil {
			return nil, fmt.Errorf("storage: open segment file: %w", err)
		}
		return f, nil
	}
	log, err := open(logSuffix, logFlag)
	if err != nil {
		return false, err
	}
	s.log = newSharedFile(log) // reads in flight may outlive the segment (slice.go)
	idxFlag := os.O_RDWR | os.O_CREATE
	if create {
		idxFlag |= os.O_TRUNC
	} else {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := fsys.Stat(segmentPath(dir, s.base, suffix)); errors.Is(err, os.ErrNotExist) {
				indexMissing = true
			} else if err != nil {
				s.closeFiles()
				return false, fmt.Errorf("storage: stat index: %w", err)
			}
		}
	}
	if s.idxFile, err = open(indexSuffix, idxFlag); err != nil {
		s.closeFiles()
		return false, err
	}
	if s.timeFile, err = open(timeIndexSuffix, idxFlag); err != nil {
		s.closeFiles()
		return false, err
	}
	s.offsets.f, s.times.f = s.idxFile, s.timeFile
	if create {
		err = fsys.Remove(s.txns.path) // a new segment has no aborted transactions yet
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	} else {
		err = s.txns.open(fsys, s.base)
	}
	if err != nil {
		s.closeFiles()
		return false, err
	}
	return indexMissing, nil
}

// activate makes the segment the active one: its index files preallocated
// to capacity and mapped (see indexFile.activate). Log.mu held for writing,
// or the segment not yet published.
func (s *segment) activate(cfg Config) error {
	if err := s.offsets.activate(cfg.SegmentIndexBytes / offsetEntrySize); err != nil {
		return fmt.Errorf("storage: activate %s: %w", s.path, err)
	}
	if err := s.times.activate(cfg.SegmentIndexBytes / timeEntrySize); err != nil {
		return fmt.Errorf("storage: activate %s: %w", s.path, err)
	}
	return nil
}

// deactivate trims the index files to their entries, as a segment leaving
// the active state has them (Kafka's onBecomeInactiveSegment).
func (s *segment) deactivate() error {
	if err := errors.Join(s.offsets.trim(), s.times.trim()); err != nil {
		return fmt.Errorf("storage: %s: %w", s.path, err)
	}
	return nil
}

// loadIndexes makes both indexes readable (see indexFile.ensure). Safe for
// concurrent readers.
func (s *segment) loadIndexes() error {
	if err := s.offsets.ensure(); err != nil {
		return fmt.Errorf("storage: %s: %w", s.path, err)
	}
	if err := s.times.ensure(); err != nil {
		return fmt.Errorf("storage: %s: %w", s.path, err)
	}
	return nil
}

// closeFiles unmaps the indexes and closes the files. No reader may be
// using the segment.
func (s *segment) closeFiles() error {
	errs := []error{s.offsets.release(), s.times.release(), s.txns.close()}
	s.offsets.f, s.times.f = nil, nil
	for _, f := range []*vfs.File{&s.log, &s.idxFile, &s.timeFile} {
		if *f != nil {
			errs = append(errs, (*f).Close())
			*f = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: close segment %d: %w", s.base, err)
	}
	return nil
}

// remove closes and deletes the segment's files, the .log first and the
// others only once it is gone: a crash or an error part way leaves either
// the whole segment or index files without a .log, which Open removes,
// never a .log without its .txnindex, whose aborted transactions Open
// could not rebuild.
func (s *segment) remove(fsys vfs.FS, dir string) error {
	errs := []error{s.closeFiles()}
	for _, suffix := range []string{logSuffix, txnIndexSuffix, timeIndexSuffix, indexSuffix} {
		if err := fsys.Remove(segmentPath(dir, s.base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			if suffix == logSuffix {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: remove segment %d: %w", s.base, err)
	}
	return nil
}

// sync fsyncs the segment's data file, then its two indexes. The data
// file's fsync is timed for Config.SyncObserver.
func (s *segment) sync() error {
	began := time.Now()
	err := s.log.Sync()
	if s.syncObserver != nil {
		s.syncObserver(time.Since(began))
	}
	if err == nil {
		err = s.idxFile.Sync()
	}
	if err == nil {
		err = s.timeFile.Sync()
	}
	if err == nil {
		err = s.txns.sync()
	}
	if err != nil {
		return fmt.Errorf("storage: sync segment %d: %w", s.base, err)
	}
	return nil
}

// readHeader reads the batch header at pos into scratch (at least
// batchHeaderSize bytes). A position past the segment or a header that does
// not parse is corruption: pos came from the index or a previous header.
func (s *segment) readHeader(pos int64, scratch []byte) (batchHeader, error) {
	if pos+batchHeaderSize > s.size {
		return batchHeader{}, s.corrupt(pos, "batch header past the end of the segment")
	}
	if _, err := s.log.ReadAt(scratch[:batchHeaderSize], pos); err != nil {
		return batchHeader{}, fmt.Errorf("storage: read %s at %d: %w", s.path, pos, err)
	}
	h, reason := parseHeader(scratch)
	if reason != "" {
		return batchHeader{}, s.corrupt(pos, reason)
	}
	if pos+h.size > s.size {
		return batchHeader{}, s.corrupt(pos, "batch past the end of the segment")
	}
	return h, nil
}

func (s *segment) corrupt(pos int64, reason string) error {
	return &CorruptError{Path: s.path, Position: pos, Reason: reason}
}

// locate finds the first batch whose last offset is >= offset: the batch
// holding offset, or the next one. It starts at the offset index entry
// below offset and walks headers, so it reads at most about
// IndexIntervalBytes worth of headers. found=false means the segment ends
// before offset.
func (s *segment) locate(offset int64, scratch []byte) (pos int64, h batchHeader, found bool, err error) {
	if err := s.offsets.ensure(); err != nil {
		return 0, h, false, fmt.Errorf("storage: %s: %w", s.path, err)
	}
	_, pos = s.offsets.lookup(offset)
	for pos < s.size {
		if h, err = s.readHeader(pos, scratch); err != nil {
			return 0, h, false, err
		}
		if h.lastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += h.size
	}
	return 0, batchHeader{}, false, nil
}

// readBatch returns a copy of the size bytes at pos.
func (s *segment) readBatch(pos, size int64) ([]byte, error) {
	b := make([]byte, size)
	if _, err := s.log.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF) && pos+size <= s.size) {
		return nil, fmt.Errorf("storage: read %s at %d: %w", s.path, pos, err)
	}
	return b, nil
}

// finalTimeEntry returns the time index entry Kafka appends when a segment
// stops being active (roll, close, end of recovery): the segment's max
// timestamp, if the index does not end with it already. nil when none.
func (s *segment) finalTimeEntry() []byte {
	if last, _ := s.times.last(); s.maxTs > last {
		return appendTimeEntry(nil, s.base, s.maxTs, s.maxTsOffset)
	}
	return nil
}

// bytesSinceIndexEntry is Kafka's bytesSinceLastIndexEntry, derived from the
// index so that it is the same after a restart or a truncation: bytes from
// the last indexed batch (or the segment start) to the end.
func (s *segment) bytesSinceIndexEntry() int64 {
	_, pos := s.offsets.last()
	return s.size - pos
}

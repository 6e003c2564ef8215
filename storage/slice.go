package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/vfs"
)

// Slice is the result of ReadSlice: whole batches as byte ranges of segment
// files, not as bytes in memory, so that the broker can send them to a
// socket with sendfile. A Slice holds a reference on each file it names;
// the files stay open (and, once removed by retention, truncation or
// Delete, readable through the open descriptor) until Release. A Slice must
// be released exactly once; the zero Slice is empty and needs no Release.
//
// The bytes a Slice names are the batches as they were when ReadSlice
// returned. Appends never change them. A truncation of the log below the
// slice (replication's TruncateTo, recovery) can shorten the file under it;
// reading such a range then comes up short, which the reader must treat as
// an error (Kafka closes the connection in that case too).
type Slice struct {
	ranges []FileRange
	size   int64
	next   int64
}

// FileRange is Len bytes at Pos of one segment file.
type FileRange struct {
	// File is the segment file as the FS opened it: an *os.File under OSFS,
	// which the broker sends with sendfile, anything else is copied with
	// ReadAt. It must not be closed or written.
	File     vfs.File
	Pos, Len int64
	shared   *sharedFile
}

// Len returns the bytes the slice holds.
func (s *Slice) Len() int64 { return s.size }

// NextOffset returns the offset after the slice's data: the base offset of
// the first batch left out, else the end of the last segment read (Kafka's
// fetchUpperBoundOffset, which bounds the aborted transactions a
// read_committed fetch lists). 0 for an empty slice.
func (s *Slice) NextOffset() int64 { return s.next }

// Ranges returns the file ranges in log order. The caller must not keep
// them past Release.
func (s *Slice) Ranges() []FileRange { return s.ranges }

// Release drops the slice's references on its files, closing those that
// were removed from the log meanwhile.
func (s *Slice) Release() {
	for _, r := range s.ranges {
		r.shared.release()
	}
	s.ranges, s.size = nil, 0
}

// AppendTo appends the slice's bytes to dst with positional reads. A range
// that reads short (the file was truncated under the slice) is an error.
func (s *Slice) AppendTo(dst []byte) ([]byte, error) {
	for _, r := range s.ranges {
		n := len(dst)
		dst = append(dst, make([]byte, r.Len)...)
		if err := r.ReadFull(dst[n:]); err != nil {
			return dst[:n], err
		}
	}
	return dst, nil
}

// ReadFull reads len(p) bytes of the range, starting at its beginning. It
// fails with io.ErrUnexpectedEOF when the file ends first.
func (r FileRange) ReadFull(p []byte) error {
	return readFullAt(r.File, p, r.Pos)
}

// ReadAt reads len(p) bytes of the range starting off bytes into it,
// failing with io.ErrUnexpectedEOF when the file ends first.
func (r FileRange) ReadAt(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > r.Len {
		return fmt.Errorf("storage: read [%d, %d) of a %d-byte range", off, off+int64(len(p)), r.Len)
	}
	return readFullAt(r.File, p, r.Pos+off)
}

func readFullAt(f vfs.File, p []byte, pos int64) error {
	n, err := f.ReadAt(p, pos)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("storage: read %d bytes at %d: %w", len(p), pos, err)
}

// sharedFile is a segment's .log file with a reference count: the segment
// holds one reference from open to close, and every Slice naming the file
// holds one more. The file is closed when the last reference goes, so a
// segment removed while a fetch is being sent keeps its data readable until
// the send is done.
type sharedFile struct {
	vfs.File
	refs atomic.Int64
}

func newSharedFile(f vfs.File) *sharedFile {
	s := &sharedFile{File: f}
	s.refs.Store(1)
	return s
}

// acquire adds a reference. The caller must hold one already (the
// segment's, under Log.mu), so the count cannot be zero.
func (f *sharedFile) acquire() { f.refs.Add(1) }

// release drops a reference and closes the file with the last one.
func (f *sharedFile) release() error {
	if f.refs.Add(-1) == 0 {
		return f.File.Close()
	}
	return nil
}

// Close drops the segment's reference; the file closes when no Slice holds
// it any more. It is what segment.closeFiles calls.
func (f *sharedFile) Close() error { return f.release() }

// headerBufSize is how many bytes ReadSlice reads at a time while walking
// batch headers, so that a run of small batches costs one read, not one per
// batch.
const headerBufSize = 4096

var headerBufs = sync.Pool{New: func() any { return new([headerBufSize]byte) }}

// ReadSlice is ReadInto without the copy: it returns the same whole batches
// (from the batch holding offset, stopping before a batch at or above
// maxOffset or one that would take the total past maxBytes, the first batch
// always whole) as ranges of the segment files, after reading only their
// headers. The caller must Release the Slice. Errors are those of ReadInto;
// on error there is nothing to release. Safe to call concurrently with
// everything; a slice stays valid after the log is closed or deleted.
func (l *Log) ReadSlice(offset int64, maxBytes int, maxOffset int64) (Slice, error) {
	if maxBytes < 0 {
		return Slice{}, fmt.Errorf("storage: read: negative maxBytes %d", maxBytes)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return Slice{}, ErrClosed
	}
	start, end := l.start.Load(), l.end.Load()
	if offset < start || offset > end {
		return Slice{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return Slice{}, nil
	}
	buf := headerBufs.Get().(*[headerBufSize]byte)
	defer headerBufs.Put(buf)

	i := l.segmentFor(offset)
	var (
		pos   int64
		first batchHeader
		found bool
	)
	for ; i < len(l.segments); i++ {
		var err error
		if pos, first, found, err = l.segments[i].locate(offset, buf[:]); err != nil {
			return Slice{}, err
		}
		if found {
			break
		}
	}
	if !found || first.baseOffset >= maxOffset {
		return Slice{}, nil
	}
	budget := max(int64(maxBytes), first.size)
	var s Slice
	for ; i < len(l.segments) && budget > 0; i, pos = i+1, 0 {
		seg := l.segments[i]
		n, next, stopped, err := seg.measureBatches(pos, budget, maxOffset, buf)
		if err != nil {
			s.Release()
			return Slice{}, err
		}
		if n > 0 {
			sf, ok := seg.log.(*sharedFile)
			if !ok { // every segment opens its .log through openFiles, which wraps it
				s.Release()
				return Slice{}, fmt.Errorf("storage: segment %s is not reference-counted", seg.path)
			}
			sf.acquire()
			s.ranges = append(s.ranges, FileRange{File: sf.File, Pos: pos, Len: n, shared: sf})
			s.size += n
			budget -= n
			s.next = next
		}
		if stopped {
			break
		}
	}
	return s, nil
}

// measureBatches returns how many bytes of whole batches starting at pos fit
// in budget and lie below maxOffset, reading headers through buf, and the
// offset after them. stopped reports that a batch was left out, so the read
// must not go on into the next segment.
func (s *segment) measureBatches(pos, budget, maxOffset int64, buf *[headerBufSize]byte) (n, next int64, stopped bool, err error) {
	var (
		bufPos int64 = -1 // file position of buf[0]
		bufLen int64
	)
	p := pos
	if err := s.offsets.ensure(); err != nil { // a closed segment's index loads on first use
		return 0, 0, true, fmt.Errorf("storage: %s: %w", s.path, err)
	}
	if ip := s.offsets.skipWithin(pos, pos+budget, maxOffset); ip > pos {
		n, p = ip-pos, ip
	}
	for p < s.size {
		if p+batchHeaderSize > s.size {
			return 0, 0, true, s.corrupt(p, "batch header past the end of the segment")
		}
		if bufPos < 0 || p < bufPos || p+batchHeaderSize > bufPos+bufLen {
			bufLen = min(headerBufSize, s.size-p)
			if err := readFullAt(s.log, buf[:bufLen], p); err != nil {
				return 0, 0, true, fmt.Errorf("storage: read %s: %w", s.path, err)
			}
			bufPos = p
		}
		h, reason := parseHeader(buf[p-bufPos : bufLen])
		if reason != "" {
			return 0, 0, true, s.corrupt(p, reason)
		}
		if p+h.size > s.size {
			return 0, 0, true, s.corrupt(p, "batch past the end of the segment")
		}
		if h.baseOffset >= maxOffset || n+h.size > budget {
			return n, h.baseOffset, true, nil
		}
		n += h.size
		p += h.size
	}
	return n, s.end, false, nil
}

// skipWithin returns the position of the last indexed batch that starts in
// (from, limit] and ends below maxOffset, or from when there is none. Every
// batch from from up to that position is whole, within limit and below
// maxOffset, so a reader may take them without reading their headers.
// Entries grow in both offset and position, so the qualifying ones are a
// prefix and a binary search finds the last. ensure must have succeeded.
func (x *offsetIndex) skipWithin(from, limit, maxOffset int64) int64 {
	lo, hi := 0, x.entries()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if o, p := x.entry(mid); p <= limit && o < maxOffset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return from
	}
	if _, p := x.entry(lo - 1); p > from {
		return p
	}
	return from
}

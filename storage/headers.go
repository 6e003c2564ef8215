package storage

import (
	"fmt"
	"math"
)

// walkHeaders calls fn with the position and the batchHeaderSize-byte
// header of every batch of seg from pos to its end, reading headers
// headerBufSize bytes at a time into buf, so that a run of small batches
// costs one read, and a large batch one read of its header. fn must not
// keep the header. mu or appendMu held.
func (s *segment) walkHeaders(pos int64, buf *[headerBufSize]byte, fn func(pos int64, header []byte) error) error {
	var bufPos, bufLen int64 = -1, 0
	for p := pos; p < s.size; {
		if p+batchHeaderSize > s.size {
			return s.corrupt(p, "batch header past the end of the segment")
		}
		if bufPos < 0 || p+batchHeaderSize > bufPos+bufLen {
			bufLen = min(headerBufSize, s.size-p)
			if err := readFullAt(s.log, buf[:bufLen], p); err != nil {
				return fmt.Errorf("storage: read %s: %w", s.path, err)
			}
			bufPos = p
		}
		hdr := buf[p-bufPos : p-bufPos+batchHeaderSize]
		h, reason := parseHeader(hdr)
		if reason != "" {
			return s.corrupt(p, reason)
		}
		if p+h.size > s.size {
			return s.corrupt(p, "batch past the end of the segment")
		}
		if err := fn(p, hdr); err != nil {
			return err
		}
		p += h.size
	}
	return nil
}

// ForEachBatchHeader calls fn with the 61-byte header of every batch from
// the one holding offset to the log end, in offset order, reading headers
// only (never the records). fn must not keep or modify the slice; an error
// from fn stops the walk and is returned. It holds the log's read lock
// throughout, so appends are not published while it runs: it is meant for
// rebuilding state when a partition opens, as the producer state does.
// offset below StartOffset or above EndOffset is ErrOffsetOutOfRange.
func (l *Log) ForEachBatchHeader(offset int64, fn func(header []byte) error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	start, end := l.start.Load(), l.end.Load()
	if offset < start || offset > end {
		return fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	buf := headerBufs.Get().(*[headerBufSize]byte)
	defer headerBufs.Put(buf)
	var scratch [batchHeaderSize]byte
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		seg := l.segments[i]
		pos, _, found, err := seg.locate(offset, scratch[:])
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		offset = math.MinInt64 // every later batch, from the start of each later segment
		if err := seg.walkHeaders(pos, buf, func(_ int64, hdr []byte) error { return fn(hdr) }); err != nil {
			return err
		}
	}
	return nil
}

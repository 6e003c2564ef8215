package broker

// Writing a Fetch response without copying its records through the heap.
//
// The handler reads each partition as a storage.Slice (file ranges) and
// leaves the partition's RecordBatches empty in the kmsg response. The
// connection encodes that response with kmsg as usual, so every byte but
// the records comes from kmsg, then walks the encoding to find each
// partition's (empty) records field, and writes the frame as
//
//	encoding up to the records field | the records' length | the records,
//	sent from the segment file | encoding up to the next records field | ...
//
// with the frame size adjusted. Records go with sendfile(2) when the
// connection is TCP and the log is on the OS file system, otherwise they are
// copied through the connection's write buffer, never a per-fetch one.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/storage"
)

// fetchReply is a Fetch response whose record sets are still in the
// segment files. records has one Slice per partition of the response, in
// encoding order (topic by topic); a partition without records has the
// zero Slice and an empty RecordBatches. The reply owns the slices: release
// must be called once it is written or dropped.
type fetchReply struct {
	*kmsg.FetchResponse
	records []storage.Slice
	// leaderThrottledBytes are the record bytes of the partitions a
	// leader's replication throttle lists (replication_throttle.go).
	leaderThrottledBytes int64
}

// release drops every slice's hold on its segment files.
func (r *fetchReply) release() {
	for i := range r.records {
		r.records[i].Release()
	}
	r.records = r.records[:0]
}

// recordsField is where one partition's records field sits in an encoded
// Fetch response: [start, end) holds its length prefix and bytes.
type recordsField struct{ start, end int }

// findRecordsFields walks body, a Fetch response body of the given version
// as kmsg encodes it (without the response header), and appends the
// position of every partition's records field, in order, to dst. It knows
// the v4-v18 layout; tagged fields are skipped by their sizes. An error
// means body is not such an encoding.
func findRecordsFields(dst []recordsField, body []byte, version int16) ([]recordsField, error) {
	if version < 4 || version > 18 {
		return dst, fmt.Errorf("fetch v%d has no zero-copy encoding", version)
	}
	flexible := version >= 12
	r := kbin.Reader{Src: body}
	pos := func() int { return len(body) - len(r.Src) }
	arrayLen := func() int {
		if flexible {
			return int(r.CompactArrayLen())
		}
		return int(r.ArrayLen())
	}
	skipTags := func() {
		if !flexible {
			return
		}
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			r.Uvarint() // tag
			r.Span(int(r.Uvarint()))
		}
	}

	r.Int32() // throttle
	if version >= 7 {
		r.Int16() // error code
		r.Int32() // session id
	}
	for topics := arrayLen(); topics > 0 && r.Ok(); topics-- {
		switch {
		case version >= 13:
			r.Span(16) // topic id
		case flexible:
			r.Span(int(r.Uvarint()) - 1)
		default:
			r.Span(int(r.Int16()))
		}
		for parts := arrayLen(); parts > 0 && r.Ok(); parts-- {
			r.Span(4 + 2 + 8 + 8) // partition, error, high watermark, last stable offset
			if version >= 5 {
				r.Int64() // log start offset
			}
			for aborted := arrayLen(); aborted > 0 && r.Ok(); aborted-- {
				r.Span(8 + 8) // producer id, first offset
				skipTags()
			}
			if version >= 11 {
				r.Int32() // preferred read replica
			}
			start := pos()
			if flexible {
				r.CompactNullableBytes()
			} else {
				r.NullableBytes()
			}
			if !r.Ok() {
				break
			}
			dst = append(dst, recordsField{start, pos()})
			skipTags()
		}
		skipTags()
	}
	skipTags()
	if err := r.Complete(); err != nil {
		return dst, fmt.Errorf("walking a fetch v%d encoding: %w", version, err)
	}
	return dst, nil
}

// appendRecordsLength appends the length prefix of an n-byte records field.
func appendRecordsLength(dst []byte, n int64, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// writeFetchReply writes reply as one response frame to w, records spliced
// from their files. It encodes into scratch (returned, for reuse) and
// writes through w; with tcp set, ranges of *os.File are sent by sendfile
// after flushing w. The frame is byte for byte what
// protocol.AppendResponse would produce with the records in memory.
func writeFetchReply(w *bufio.Writer, tcp *net.TCPConn, scratch []byte, correlationID int32, reply *fetchReply) ([]byte, error) {
	enc := protocol.AppendResponse(scratch[:0], correlationID, reply.FetchResponse)
	flexible := reply.IsFlexible()
	bodyAt := 4 + 4 // frame size, correlation id
	if flexible {
		bodyAt++ // the response header's empty tag section
	}
	var fieldsBuf [16]recordsField
	fields, err := findRecordsFields(fieldsBuf[:0], enc[bodyAt:], reply.GetVersion())
	if err != nil {
		return enc, err
	}
	if len(fields) != len(reply.records) {
		return enc, fmt.Errorf("fetch response has %d records fields for %d partitions", len(fields), len(reply.records))
	}

	size := int64(len(enc) - 4)
	var lenBuf [binary.MaxVarintLen64]byte
	for i, f := range fields {
		if n := reply.records[i].Len(); n > 0 {
			size += int64(len(appendRecordsLength(lenBuf[:0], n, flexible))) - int64(f.end-f.start) + n
		}
	}
	if size > 1<<31-1 {
		return enc, fmt.Errorf("fetch response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(enc, uint32(size))

	done := 0 // bytes of enc written
	for i, f := range fields {
		s := &reply.records[i]
		if s.Len() == 0 {
			continue
		}
		if _, err := w.Write(enc[done : bodyAt+f.start]); err != nil {
			return enc, err
		}
		if _, err := w.Write(appendRecordsLength(lenBuf[:0], s.Len(), flexible)); err != nil {
			return enc, err
		}
		for _, r := range s.Ranges() {
			if err := writeRange(w, tcp, r); err != nil {
				return enc, err
			}
		}
		done = bodyAt + f.end
	}
	_, err = w.Write(enc[done:])
	return enc, err
}

// errShortRange: a segment file ended before a range sent from it, because
// the log was truncated under a fetch in flight. The connection must close:
// part of a frame is on the wire.
var errShortRange = errors.New("segment file shorter than the fetched range")

// writeRange writes one file range: with sendfile when it can, else copied
// through w's own buffer.
func writeRange(w *bufio.Writer, tcp *net.TCPConn, r storage.FileRange) error {
	if f, ok := r.File.(*os.File); ok && tcp != nil {
		if err := w.Flush(); err != nil {
			return err
		}
		if err := sendFile(tcp, f, r.Pos, r.Len); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	for off := int64(0); off < r.Len; {
		if w.Available() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		buf := w.AvailableBuffer()
		buf = buf[:min(int64(cap(buf)), r.Len-off)]
		if err := r.ReadAt(buf, off); err != nil {
			return fmt.Errorf("%w: %w", errShortRange, err)
		}
		w.Write(buf) // fits: it is w's free space
		off += int64(len(buf))
	}
	return nil
}

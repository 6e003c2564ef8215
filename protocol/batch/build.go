package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// BuildOptions are the header fields of a batch AppendBatch builds. The
// timestamp type is always CreateTime; stamp LogAppendTime afterwards with
// SetLogAppendTime.
type BuildOptions struct {
	Compression          Compression
	BaseOffset           int64
	BaseTimestamp        int64
	ProducerID           int64 // -1 for none
	ProducerEpoch        int16 // -1 for none
	BaseSequence         int32 // -1 for none
	Transactional        bool
	Control              bool
	PartitionLeaderEpoch int32 // -1 for none
	// DeleteHorizon sets the delete-horizon attribute (KIP-534): the log
	// cleaner's batches carry in BaseTimestamp the time after which their
	// tombstones may be removed.
	DeleteHorizon bool
	// LastOffsetDelta, when larger than the last record's OffsetDelta, is
	// written instead: a compacted batch keeps its original last offset so
	// that the producer's last sequence survives (Kafka's
	// MemoryRecordsBuilder.overrideLastOffset).
	LastOffsetDelta int32
}

// AppendBatch appends to dst one v2 batch holding records, compressed as
// opts.Compression says, with a correct length and CRC, and returns the
// extended slice. Records are written as given: OffsetDelta and TimestampDelta
// included (set OffsetDelta to the record's index for a batch Validate
// accepts); LastOffsetDelta is the last record's OffsetDelta, RecordCount is
// len(records), and MaxTimestamp the largest BaseTimestamp+TimestampDelta.
// Snappy is written in the xerial framing, as the Java client does; every
// client library reads it.
//
// AppendBatch does not retain records or dst. It fails without appending if
// records is empty (Kafka builds no batch for no records), if the codec is
// unknown, or if the batch would exceed 2 GiB.
func AppendBatch(dst []byte, opts BuildOptions, records []Record) ([]byte, error) {
	if len(records) == 0 {
		return dst, errors.New("batch: no records to build a batch from")
	}
	if len(records) > math.MaxInt32 {
		return dst, fmt.Errorf("batch: %d records do not fit a batch", len(records))
	}
	c := opts.Compression
	if !c.known() {
		return dst, unsupportedCompression(c)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	var err error
	if c == None {
		dst, err = appendRecords(dst, records)
	} else {
		raw := rawBuffers.Get().(*[]byte)
		if *raw, err = appendRecords((*raw)[:0], records); err == nil {
			dst, err = compress(dst, c, *raw)
		}
		if cap(*raw) <= maxPooledBuffer {
			rawBuffers.Put(raw)
		}
	}
	if err != nil {
		return dst[:start], err
	}
	length := len(dst) - start - prefixSize
	if length > math.MaxInt32 {
		return dst[:start], fmt.Errorf("batch: batch of %d bytes is too large", length+prefixSize)
	}

	maxTimestamp := NoTimestamp
	for i := range records {
		maxTimestamp = max(maxTimestamp, opts.BaseTimestamp+records[i].TimestampDelta)
	}
	attrs := uint16(c)
	if opts.Transactional {
		attrs |= attrTransactional
	}
	if opts.Control {
		attrs |= attrControl
	}
	if opts.DeleteHorizon {
		attrs |= attrDeleteHorizon
	}
	b := dst[start:]
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offLength:], uint32(length))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(max(records[len(records)-1].OffsetDelta, opts.LastOffsetDelta)))
	be.PutUint64(b[offBaseTimestamp:], uint64(opts.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(records)))
	be.PutUint32(b[offCRC:], computeCRC(b))
	return dst, nil
}

// appendRecords appends the v2 encoding of records.
func appendRecords(dst []byte, records []Record) ([]byte, error) {
	for i := range records {
		r := &records[i]
		size := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
			bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
		for j := range r.Headers {
			h := &r.Headers[j]
			size += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
		}
		if size > math.MaxInt32 {
			return dst, fmt.Errorf("batch: record %d of %d bytes is too large", i, size)
		}
		dst = slices.Grow(dst, varintLen(int64(size))+size)
		dst = binary.AppendVarint(dst, int64(size))
		dst = append(dst, byte(r.Attributes))
		dst = binary.AppendVarint(dst, r.TimestampDelta)
		dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
		dst = appendNullableBytes(dst, r.Key)
		dst = appendNullableBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for j := range r.Headers {
			h := &r.Headers[j]
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendNullableBytes(dst, h.Value)
		}
	}
	return dst, nil
}

// varintLen is the size of v as a zig-zag varint (encoding/binary's Varint
// is the same zig-zag encoding Kafka uses).
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// maxPooledBuffer keeps one huge batch from pinning its buffers in the pools.
const maxPooledBuffer = 4 << 20

var rawBuffers = sync.Pool{New: func() any { return new([]byte) }}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// streamEncoder is a pooled gzip or lz4 writer that compresses into out.
type streamEncoder[W interface {
	io.WriteCloser
	Reset(io.Writer)
}] struct {
	out appendWriter
	w   W
}

type (
	gzipEncoder = streamEncoder[*gzip.Writer]
	lz4Encoder  = streamEncoder[*lz4.Writer]
)

// compress appends raw, compressed as one stream, to dst.
func (e *streamEncoder[W]) compress(dst, raw []byte) ([]byte, error) {
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(raw)
	if err == nil {
		err = e.w.Close()
	}
	dst, e.out.b = e.out.b, nil
	return dst, err
}

var (
	gzipEncoders = sync.Pool{New: func() any {
		e := new(gzipEncoder)
		e.w = gzip.NewWriter(&e.out)
		return e
	}}
	lz4Encoders = sync.Pool{New: func() any {
		e := new(lz4Encoder)
		e.w = lz4.NewWriter(&e.out)
		// As the Java client writes it (Lz4BlockOutputStream): 64 KiB
		// independent blocks, no checksums.
		if err := e.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			panic(err) // constant options; cannot fail
		}
		return e
	}}
	zstdEncoders = sync.Pool{New: func() any {
		// EncodeAll only: with concurrency 1 no goroutine is started, so a
		// dropped pool entry needs no Close.
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // constant options; cannot fail
		}
		return e
	}}
)

// compress appends raw compressed with c to dst.
func compress(dst []byte, c Compression, raw []byte) ([]byte, error) {
	switch c {
	case Gzip:
		e := gzipEncoders.Get().(*gzipEncoder)
		defer gzipEncoders.Put(e)
		return e.compress(dst, raw)
	case Snappy:
		return appendXerial(dst, raw), nil
	case LZ4:
		e := lz4Encoders.Get().(*lz4Encoder)
		defer lz4Encoders.Put(e)
		return e.compress(dst, raw)
	case Zstd:
		e := zstdEncoders.Get().(*zstd.Encoder)
		defer zstdEncoders.Put(e)
		return e.EncodeAll(raw, dst), nil
	}
	return dst, unsupportedCompression(c)
}

// appendXerial appends raw as snappy in the xerial framing (see xerialHeader).
func appendXerial(dst, raw []byte) []byte {
	dst = append(dst, xerialHeader...)
	for len(raw) > 0 {
		chunk := raw[:min(len(raw), xerialBlockSize)]
		raw = raw[len(chunk):]
		at := len(dst)
		dst = slices.Grow(dst, 4+snappy.MaxEncodedLen(len(chunk)))
		enc := snappy.Encode(dst[at+4:cap(dst)], chunk)
		binary.BigEndian.PutUint32(dst[at:at+4], uint32(len(enc)))
		dst = dst[:at+4+len(enc)]
	}
	return dst
}

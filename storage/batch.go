package storage

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// Offsets of the v2 record-batch header fields storage reads. All integers
// are big-endian. The CRC covers bytes [crcStart:] of the batch, so
// baseOffset, batchLength and partitionLeaderEpoch may be rewritten without
// recomputing it.
const (
	batchHeaderSize     = 61
	batchLengthOverhead = 12 // baseOffset + batchLength precede what batchLength counts

	offBaseOffset      = 0
	offBatchLength     = 8
	offMagic           = 16
	offCRC             = 17
	crcStart           = 21
	offLastOffsetDelta = 23
	offMaxTimestamp    = 35

	batchMagic = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is what storage needs from a batch header.
type batchHeader struct {
	baseOffset      int64
	size            int64 // whole batch, batchLength + 12
	lastOffsetDelta int32
	maxTimestamp    int64
}

func (h batchHeader) lastOffset() int64 { return h.baseOffset + int64(h.lastOffsetDelta) }
func (h batchHeader) nextOffset() int64 { return h.lastOffset() + 1 }

// parseHeader decodes the header at the start of b, which must hold at least
// batchHeaderSize bytes. It checks what walking batches depends on (length,
// magic, lastOffsetDelta) and returns a reason when a check fails.
func parseHeader(b []byte) (batchHeader, string) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, "short batch header"
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length < batchHeaderSize-batchLengthOverhead {
		return batchHeader{}, "batch length too small"
	}
	if b[offMagic] != batchMagic {
		return batchHeader{}, "magic is not 2"
	}
	h := batchHeader{
		baseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		size:            int64(length) + batchLengthOverhead,
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
	}
	if h.lastOffsetDelta < 0 {
		return batchHeader{}, "negative lastOffsetDelta"
	}
	if h.baseOffset < 0 || h.baseOffset > math.MaxInt64-int64(h.lastOffsetDelta)-1 {
		return batchHeader{}, "baseOffset out of range"
	}
	return h, ""
}

// crcValid reports whether batch (exactly one whole batch) has a matching
// CRC-32C.
func crcValid(batch []byte) bool {
	return crc32.Checksum(batch[crcStart:], castagnoli) == binary.BigEndian.Uint32(batch[offCRC:])
}

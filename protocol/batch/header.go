package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 batch header, records excluded: baseOffset(8)
// batchLength(4) partitionLeaderEpoch(4) magic(1) crc(4) attributes(2)
// lastOffsetDelta(4) baseTimestamp(8) maxTimestamp(8) producerId(8)
// producerEpoch(2) baseSequence(4) recordCount(4).
const HeaderSize = 61

// Byte offsets of the header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// Framing constants shared with v0/v1 message sets.
const (
	// prefixSize is the offset(8) + length(4) prefix of every entry
	// (Kafka's LOG_OVERHEAD); the length counts the bytes after it.
	prefixSize = 12
	// minEntryLength is the smallest length Kafka accepts for any entry, the
	// v0 message overhead (LegacyRecord.RECORD_OVERHEAD_V0).
	minEntryLength = 14
)

// Attribute bits (low byte of the attributes field).
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// NoTimestamp is Kafka's RecordBatch.NO_TIMESTAMP: a timestamp that is not set.
const NoTimestamp int64 = -1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Compression is a record-batch compression codec, the low three bits of the
// attributes.
type Compression int8

// The codecs Kafka defines.
const (
	None   Compression = 0
	Gzip   Compression = 1
	Snappy Compression = 2
	LZ4    Compression = 3
	Zstd   Compression = 4
)

// String returns Kafka's name for the codec (compression.type), or
// "unknown(N)".
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

func (c Compression) known() bool { return c >= None && c <= Zstd }

// Header is the decoded 61-byte header of a v2 batch. It is a copy: changing it
// does not change the batch (use the Set functions for that).
type Header struct {
	BaseOffset           int64
	BatchLength          int32 // bytes after this field: len(batch) - 12
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// ParseHeader decodes the header at the start of b. It needs len(b) >=
// HeaderSize (else the error wraps ErrTruncated) and checks nothing else: not
// the magic, the length or the CRC. Use Check or Validate for that.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, truncatedf("%d bytes, a batch header needs %d", len(b), HeaderSize)
	}
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}, nil
}

// Compression returns the codec bits of the attributes; the value may be
// unknown (5..7) for a batch that has not been validated.
func (h Header) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// LogAppendTime reports whether the timestamp-type bit says LogAppendTime: then
// every record's timestamp is MaxTimestamp.
func (h Header) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction
// markers), which only the broker may write.
func (h Header) Control() bool { return h.Attributes&attrControl != 0 }

// DeleteHorizon reports whether BaseTimestamp holds the delete horizon set by
// log compaction.
func (h Header) DeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// LastOffset is the offset of the last record: BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Magic returns the magic byte of the entry at the start of b: byte 16 is the
// magic in v0/v1 message sets and v2 batches alike. ok is false if b is too
// short to hold it.
func Magic(b []byte) (magic int8, ok bool) {
	if len(b) <= offMagic {
		return 0, false
	}
	return int8(b[offMagic]), true
}

// Codec returns the codec bits of the header at the start of b, read in
// place, for a check that must precede Validate's (a produce version too old
// for zstd): it is ParseHeader(b).Compression() without the rest of the
// header. ok is false if b is shorter than a header; like ParseHeader it
// checks nothing else, so the codec may be unknown.
func Codec(b []byte) (c Compression, ok bool) {
	if len(b) < HeaderSize {
		return 0, false
	}
	return Compression(int16(binary.BigEndian.Uint16(b[offAttributes:])) & attrCompressionMask), true
}

// IsTransactional reports whether the header at the start of b has the
// transactional bit, read in place: ParseHeader(b).Transactional(), and
// false if b is shorter than a header. Nothing else is checked.
func IsTransactional(b []byte) bool {
	return len(b) >= HeaderSize && int16(binary.BigEndian.Uint16(b[offAttributes:]))&attrTransactional != 0
}

// SetBaseOffset writes the base offset into the batch at the start of b, in
// place. The CRC does not cover it, so nothing else changes. b must hold at
// least a header (a batch that passed Check or Validate); it panics otherwise.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:offBaseOffset+8], uint64(off))
}

// SetPartitionLeaderEpoch writes the partition leader epoch into the batch at
// the start of b, in place. The CRC does not cover it. b must hold at least a
// header; it panics otherwise.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:offLeaderEpoch+4], uint32(epoch))
}

// SetLogAppendTime stamps the batch at the start of b with the broker's append
// time, in place, as Kafka's leader does for a topic with
// message.timestamp.type=LogAppendTime: the timestamp-type bit is set,
// MaxTimestamp becomes ts, and the CRC is recomputed. BaseTimestamp and the
// records are unchanged (readers take every record's timestamp from
// MaxTimestamp). b must be a whole batch (len(b) == 12+BatchLength) of at least
// HeaderSize bytes; it panics if shorter than a header.
func SetLogAppendTime(b []byte, ts int64) { SetMaxTimestamp(b, true, ts) }

// SetMaxTimestamp sets the timestamp type and MaxTimestamp of the batch at the
// start of b, in place, and recomputes the CRC, as Kafka's
// DefaultRecordBatch.setMaxTimestamp does: the leader calls it with the topic's
// timestamp type and, for CreateTime, the largest record timestamp
// (Info.MaxTimestamp). As in Kafka, the attributes are rebuilt from their
// known bits (codec, timestamp type, transactional, control, delete horizon),
// so unknown bits are cleared, and nothing is written if the type and the
// timestamp are already those asked for. b must be a whole batch of at least
// HeaderSize bytes; it panics if shorter than a header.
func SetMaxTimestamp(b []byte, logAppendTime bool, ts int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[offAttributes : offAttributes+2])
	if (attrs&attrLogAppendTime != 0) == logAppendTime && int64(be.Uint64(b[offMaxTimestamp:])) == ts {
		return
	}
	attrs &= attrCompressionMask | attrTransactional | attrControl | attrDeleteHorizon
	if logAppendTime {
		attrs |= attrLogAppendTime
	}
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint64(b[offMaxTimestamp:offMaxTimestamp+8], uint64(ts))
	be.PutUint32(b[offCRC:], computeCRC(b))
}

// computeCRC is the CRC-32C of everything from the attributes on.
func computeCRC(b []byte) uint32 {
	return crc32.Checksum(b[offAttributes:], castagnoli)
}

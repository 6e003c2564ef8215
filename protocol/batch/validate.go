package batch

import (
	"encoding/binary"
	"fmt"
)

// Info is what Validate learned about a batch.
type Info struct {
	// Header is the batch header as sent. Its MaxTimestamp is the client's
	// claim; the computed one is Info.MaxTimestamp, which shadows it.
	Header

	// NumRecords is the number of records decoded (== RecordCount).
	NumRecords int

	// MaxTimestamp is the largest record timestamp (Header.RecordTimestamp),
	// or NoTimestamp (-1) if none is larger: what Kafka's leader writes back
	// into a CreateTime batch (SetMaxTimestamp) and indexes.
	MaxTimestamp int64

	// MinTimestamp is the smallest record timestamp other than NoTimestamp,
	// or NoTimestamp if there is none. With MaxTimestamp it lets the broker
	// apply message.timestamp.before/after.max.ms, which Kafka checks on
	// every record whose timestamp is set (LogValidator.validateTimestamp).
	MinTimestamp int64

	// NullKeys counts records with a null key; a compacted topic refuses the
	// batch (INVALID_RECORD, LogValidator.validateKey) if it is not 0.
	NullKeys int

	// UncompressedBytes is the size of the records section after
	// decompression (len(batch) - HeaderSize if uncompressed).
	UncompressedBytes int
}

// Validate checks one v2 batch b that a client produced, as Kafka's partition
// leader does before appending it (ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords, LogValidator), and in Kafka's order:
//
//  1. framing and magic (Split's checks; b must be exactly one entry):
//     ErrCorrupt, ErrTruncated; magic 0 or 1: ErrUnsupportedMagic
//  2. baseOffset must be 0: ErrInvalidRecord
//  3. at least HeaderSize bytes, CRC-32C of bytes [21:]: ErrCorrupt
//  4. codec 0..4: ErrUnsupportedCompression
//  5. lastOffsetDelta+1 > 0, recordCount > 0 and equal to it; not a control
//     batch; a producer id >= 0 needs baseSequence >= 0: ErrInvalidRecord
//  6. the records: decompressed as they are walked, through a window and
//     a decoder set borrowed from s's pool (at most s.MaxUncompressed bytes:
//     ErrDecompress, ErrTooLarge); exactly recordCount well-formed records,
//     offset deltas 0, 1, …, recordCount-1, nothing left over: ErrInvalidRecord
//
// Limits and policies that depend on configuration are the broker's: batch
// size (max.message.bytes), timestamps (see Info.MinTimestamp), keys on
// compacted topics (Info.NullKeys), a LogAppendTime bit sent by a client,
// producer state, and zstd on produce versions below 7.
//
// Validate neither modifies nor retains b. With an uncompressed batch it does
// not allocate; a compressed one waits for a free decoder set of s.Pool
// (the package's default pool when nil), whose buffers it reuses. s may be
// nil.
func Validate(b []byte, s *Scratch) (Info, error) {
	if err := checkPrefix(b); err != nil {
		return Info{}, err
	}
	if off := int64(binary.BigEndian.Uint64(b[offBaseOffset:])); off != 0 {
		return Info{}, invalidf("base offset %d of a produced batch must be 0", off)
	}
	h, err := checkCRC(b)
	if err != nil {
		return Info{}, err
	}
	if !h.Compression().known() {
		return Info{}, unsupportedCompression(h.Compression())
	}
	if err := checkClientHeader(&h); err != nil {
		return Info{}, err
	}
	if h.Compression() != None {
		return validateCompressed(h, b[HeaderSize:], s)
	}
	buf := b[HeaderSize:]
	info := Info{
		Header:            h,
		MaxTimestamp:      NoTimestamp,
		MinTimestamp:      NoTimestamp,
		NumRecords:        int(h.RecordCount),
		UncompressedBytes: len(buf),
	}
	if !scanRecords(buf, &info) {
		// The fast walk only says that something is out of place; the
		// record decoder finds what, for the error.
		if s == nil {
			s = new(Scratch)
		}
		return s.validateRecords(buf, h)
	}
	return info, nil
}

// validateCompressed is Validate's record walk for a compressed batch: the
// records are checked as they decompress (stream.go), with a decoder set of
// s's pool (decoders.go), never held whole.
func validateCompressed(h Header, in []byte, s *Scratch) (Info, error) {
	info := Info{Header: h, MaxTimestamp: NoTimestamp, MinTimestamp: NoTimestamp, NumRecords: int(h.RecordCount)}
	pool, limit := defaultPool, DefaultMaxUncompressed
	if s != nil {
		pool, limit = s.pool(), s.limit()
	}
	st := recordStats{maxTs: NoTimestamp, minTs: NoTimestamp}
	n, err := walkCompressed(pool, &info.Header, in, limit, &st, nil)
	if err != nil {
		return Info{}, err
	}
	info.MaxTimestamp, info.MinTimestamp, info.NullKeys = st.maxTs, st.minTs, st.nullKeys
	info.UncompressedBytes = n
	return info, nil
}

// validateRecords is Validate's record walk with the full record decoder:
// exactly h.RecordCount well-formed records with offset deltas 0, 1, …,
// nothing left over. scanRecords accepts exactly what it accepts and is
// used first; this one names what is wrong.
func (s *Scratch) validateRecords(buf []byte, h Header) (Info, error) {
	info := Info{
		Header:            h,
		MaxTimestamp:      NoTimestamp,
		MinTimestamp:      NoTimestamp,
		UncompressedBytes: len(buf),
	}
	var r Record
	var err error
	for i := int32(0); i < h.RecordCount; i++ {
		if len(buf) == 0 {
			return Info{}, invalidf("premature end of records: read %d of %d", i, h.RecordCount)
		}
		if buf, err = s.readRecord(buf, &r, false); err != nil {
			return Info{}, err
		}
		if r.OffsetDelta != i {
			return Info{}, invalidf("record %d has offset delta %d", i, r.OffsetDelta)
		}
		ts := h.RecordTimestamp(&r)
		if ts > info.MaxTimestamp {
			info.MaxTimestamp = ts
		}
		if ts != NoTimestamp && (info.MinTimestamp == NoTimestamp || ts < info.MinTimestamp) {
			info.MinTimestamp = ts
		}
		if r.Key == nil {
			info.NullKeys++
		}
	}
	if len(buf) != 0 {
		return Info{}, invalidf("%d bytes remain after the last of %d records", len(buf), h.RecordCount)
	}
	info.NumRecords = int(h.RecordCount)
	return info, nil
}

// scanRecords is the fast path of Validate's record walk over the records
// section buf: it reports whether buf holds exactly info.RecordCount records
// that readRecord would accept, with offset deltas 0, 1, …, and nothing
// after them, and fills in info's MaxTimestamp, MinTimestamp and NullKeys as
// validateRecords would. It decodes nothing it does not need: lengths are
// skipped over, not sliced, and a varint of one byte (most lengths and
// deltas of small records) costs a compare. On false, info is unspecified.
func scanRecords(buf []byte, info *Info) bool {
	appendTime := info.LogAppendTime()
	base := info.BaseTimestamp
	maxTs, minTs, nullKeys := int64(NoTimestamp), int64(NoTimestamp), 0
	p := 0
	for i := int32(0); i < info.RecordCount; i++ {
		end, tsDelta, nullKey := scanRecord(buf, p, i)
		if end < 0 {
			return false
		}
		if nullKey {
			nullKeys++
		}
		ts := base + tsDelta
		if appendTime {
			ts = info.Header.MaxTimestamp
		}
		maxTs = max(maxTs, ts)
		if ts != NoTimestamp && (minTs == NoTimestamp || ts < minTs) {
			minTs = ts
		}
		p = end
	}
	if p != len(buf) {
		return false
	}
	info.MaxTimestamp, info.MinTimestamp, info.NullKeys = maxTs, minTs, nullKeys
	return true
}

// scanRecord checks the record at buf[p:], the i-th of its batch, as
// readRecord would accept it, and returns the position after it, its
// timestamp delta and whether its key is null; end is -1 if the record is
// malformed or does not end within buf.
func scanRecord(buf []byte, p int, i int32) (end int, tsDelta int64, nullKey bool) {
	size, q := scanVarint(buf, p)
	if q < 0 || size <= 0 || int(size) > len(buf)-q {
		return -1, 0, false
	}
	end = q + int(size)
	rec := buf[:end] // every read below stays inside the record
	q++              // attributes
	if q < end && rec[q] < 0x80 {
		u := uint64(rec[q])
		tsDelta, q = int64(u>>1)^-int64(u&1), q+1
	} else {
		v, n := varint64(rec[q:])
		if n <= 0 {
			return -1, 0, false
		}
		tsDelta, q = v, q+n
	}
	var delta, l int32
	if delta, q = scanVarint(rec, q); q < 0 || delta != i {
		return -1, 0, false
	}
	if l, q = scanVarint(rec, q); q < 0 || int(l) > end-q { // key, nullable
		return -1, 0, false
	}
	if l < 0 {
		nullKey = true
	} else {
		q += int(l)
	}
	if l, q = scanVarint(rec, q); q < 0 || int(l) > end-q { // value, nullable
		return -1, 0, false
	}
	if l > 0 {
		q += int(l)
	}
	var headers int32
	if headers, q = scanVarint(rec, q); q < 0 || headers < 0 || int(headers) > end-q {
		return -1, 0, false
	}
	for range headers {
		if l, q = scanVarint(rec, q); q < 0 || l < 0 || int(l) > end-q { // key
			return -1, 0, false
		}
		q += int(l)
		if l, q = scanVarint(rec, q); q < 0 || int(l) > end-q { // value, nullable
			return -1, 0, false
		}
		if l > 0 {
			q += int(l)
		}
	}
	if q != end {
		return -1, 0, false
	}
	return end, tsDelta, nullKey
}

// scanVarint decodes the zig-zag varint at b[p:] as varint32 does and returns
// it with the position after it, or -1 if it does not decode. It is small
// enough to be inlined into scanRecords.
func scanVarint(b []byte, p int) (int32, int) {
	var u uint32
	for shift := 0; shift < 35 && uint(p) < uint(len(b)); shift += 7 {
		c := b[p]
		p++
		u |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), p
		}
	}
	return 0, -1
}

// Check verifies the framing, magic, header size and CRC of the v2 batch b and
// returns its header, without decoding records or applying client rules:
// what Kafka checks on every append, a follower's included
// (UnifiedLog.analyzeAndValidateRecords), and what log recovery checks. Errors
// are as for Validate.
func Check(b []byte) (Header, error) {
	if err := checkPrefix(b); err != nil {
		return Header{}, err
	}
	return checkCRC(b)
}

// checkPrefix checks what ByteBufferLogInputStream checks before a batch is
// read at all, and then that b is one whole v2 batch.
func checkPrefix(b []byte) error {
	if len(b) < prefixSize {
		return truncatedf("%d bytes, shorter than the %d-byte prefix", len(b), prefixSize)
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if length < minEntryLength {
		return corruptf("batch length %d is below the minimum %d", length, minEntryLength)
	}
	if len(b) <= offMagic {
		return truncatedf("%d bytes, too short to hold the magic byte", len(b))
	}
	switch m := int8(b[offMagic]); {
	case m < 0 || m > 2:
		return corruptf("invalid magic %d", m)
	case m != 2:
		return fmt.Errorf("%w: magic %d (a v0/v1 message set)", ErrUnsupportedMagic, m)
	}
	switch want := int64(length) + prefixSize; {
	case want > int64(len(b)):
		return truncatedf("batch length %d, but %d bytes follow the prefix", length, len(b)-prefixSize)
	case want < int64(len(b)):
		return corruptf("batch length %d, but %d bytes follow the prefix", length, len(b)-prefixSize)
	}
	return nil
}

// checkCRC is DefaultRecordBatch.isValid: the size covers a header and the
// CRC matches.
func checkCRC(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, corruptf("batch of %d bytes is smaller than the %d-byte header", len(b), HeaderSize)
	}
	h, _ := ParseHeader(b)
	if got := computeCRC(b); got != h.CRC {
		return Header{}, corruptf("stored crc %#08x, computed %#08x", h.CRC, got)
	}
	return h, nil
}

// checkFraming is checkPrefix and the header size, for readers that skip the
// CRC.
func checkFraming(b []byte) (Header, error) {
	if err := checkPrefix(b); err != nil {
		return Header{}, err
	}
	if len(b) < HeaderSize {
		return Header{}, corruptf("batch of %d bytes is smaller than the %d-byte header", len(b), HeaderSize)
	}
	return ParseHeader(b)
}

// checkClientHeader is LogValidator.validateBatch for AppendOrigin.CLIENT.
func checkClientHeader(h *Header) error {
	countFromOffsets := int64(h.LastOffsetDelta) + 1
	if countFromOffsets <= 0 {
		return invalidf("invalid offset range: last offset delta %d", h.LastOffsetDelta)
	}
	if h.RecordCount <= 0 {
		return invalidf("invalid record count %d", h.RecordCount)
	}
	if countFromOffsets != int64(h.RecordCount) {
		return invalidf("last offset delta %d does not match record count %d", h.LastOffsetDelta, h.RecordCount)
	}
	if h.Control() {
		return invalidf("clients may not write control batches")
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return invalidf("producer id %d with base sequence %d", h.ProducerID, h.BaseSequence)
	}
	return nil
}

func unsupportedCompression(c Compression) error {
	return fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
}

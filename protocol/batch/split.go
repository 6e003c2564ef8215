package batch

import "encoding/binary"

// Split calls fn with each entry (a v2 batch, or a v0/v1 message) of records,
// the records blob of one partition in a produce request, in order. Each
// slice passed to fn aliases records and has its capacity cut at its end, so
// appending to it cannot overwrite the next entry. An error from fn stops the
// walk and is returned as is. Empty records calls fn never and returns nil.
//
// Framing follows Kafka's ByteBufferLogInputStream: the 12-byte prefix gives
// the entry's length; a length below 14 (the v0 message overhead) or a magic
// byte outside 0..2 is ErrCorrupt, checked in Kafka's order. Bytes that end
// inside an entry are ErrTruncated (which wraps ErrCorrupt) after fn has seen
// the complete entries before them; Kafka ignores such a tail instead (see
// ErrTruncated). Nothing is allocated, whatever the lengths claim.
func Split(records []byte, fn func(batch []byte) error) error {
	for pos := 0; pos < len(records); {
		rest := records[pos:]
		if len(rest) < prefixSize {
			return truncatedf("entry at byte %d: %d bytes, shorter than the %d-byte prefix", pos, len(rest), prefixSize)
		}
		length := int32(binary.BigEndian.Uint32(rest[offLength:]))
		if length < minEntryLength {
			return corruptf("entry at byte %d: length %d is below the minimum %d", pos, length, minEntryLength)
		}
		if len(rest) <= offMagic {
			return truncatedf("entry at byte %d: %d bytes, too short to hold the magic byte", pos, len(rest))
		}
		if m := int8(rest[offMagic]); m < 0 || m > 2 {
			return corruptf("entry at byte %d: invalid magic %d", pos, m)
		}
		if int64(length) > int64(len(rest)-prefixSize) {
			return truncatedf("entry at byte %d: length %d, but %d bytes remain", pos, length, len(rest)-prefixSize)
		}
		n := prefixSize + int(length)
		if err := fn(rest[:n:n]); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

package broker

import (
	"encoding/binary"
	"errors"

	"github.com/gregor-broker/gregor/broker/share"
)

// The fields of a v2 record batch header a share-partition leader reads.
const (
	shareBatchHeaderSize = 61
	shareOffAttributes   = 21
	shareOffLastDelta    = 23
	shareOffProducerID   = 43
	shareAttrTxn         = 0x10
	shareAttrControl     = 0x20
)

var errShareBatch = errors.New("broker: malformed record batch in a share fetch read")

// shareFetchedBatches lists the batches of a log read for
// share.Partition.Acquire: their offsets, producer, and whether each is a
// transaction's batch, a control batch, or an ABORT marker. buf is what
// the log returned (whole v2 batches); a batch whose length runs past buf
// or below a header is an error, never read past.
func shareFetchedBatches(buf []byte) ([]share.FetchedBatch, error) {
	var out []share.FetchedBatch
	for len(buf) > 0 {
		if len(buf) < shareBatchHeaderSize {
			return nil, errShareBatch
		}
		size := int64(binary.BigEndian.Uint32(buf[8:12])) + 12
		if size < shareBatchHeaderSize || size > int64(len(buf)) {
			return nil, errShareBatch
		}
		b := buf[:size]
		buf = buf[size:]
		base := int64(binary.BigEndian.Uint64(b[0:8]))
		delta := int32(binary.BigEndian.Uint32(b[shareOffLastDelta:]))
		if delta < 0 || base < 0 || base > base+int64(delta) {
			return nil, errShareBatch
		}
		attrs := binary.BigEndian.Uint16(b[shareOffAttributes:])
		fb := share.FetchedBatch{
			BaseOffset:    base,
			LastOffset:    base + int64(delta),
			ProducerID:    int64(binary.BigEndian.Uint64(b[shareOffProducerID:])),
			Transactional: attrs&shareAttrTxn != 0,
			Control:       attrs&shareAttrControl != 0,
		}
		if fb.Control {
			fb.AbortMarker = controlIsAbort(b[shareBatchHeaderSize:])
		}
		out = append(out, fb)
	}
	return out, nil
}

// controlIsAbort reports whether the first record of a control batch's
// records (never compressed) has an ABORT key: version int16, type int16
// with 0 for ABORT. A record it cannot read is not an abort marker.
func controlIsAbort(recs []byte) bool {
	// length, attributes (int8), timestamp delta, offset delta, key length
	_, n := binary.Varint(recs)
	if n <= 0 || len(recs) < n+1 {
		return false
	}
	recs = recs[n+1:]
	for range 2 {
		if _, n = binary.Varint(recs); n <= 0 {
			return false
		}
		recs = recs[n:]
	}
	klen, n := binary.Varint(recs)
	if n <= 0 || klen < 4 || int64(len(recs)-n) < klen {
		return false
	}
	key := recs[n:]
	return binary.BigEndian.Uint16(key[2:4]) == 0
}

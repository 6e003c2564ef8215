package storage

import (
	"encoding/binary"
	"fmt"
)

const (
	timeEntrySize = 12
	noTimestamp   = -1 // Kafka's RecordBatch.NO_TIMESTAMP
)

// timeIndex is a segment's sparse time index, read from its .timeindex file
// (see indexFile): entries of timestamp int64 and (offset - base) int32. An
// entry (T, O) says that T is the largest batch max timestamp up to and
// including the batch whose last offset is O, and that every earlier batch
// has a smaller max timestamp: O is the earliest batch reaching T.
// Timestamps strictly increase along the file, starting at 0 or above.
//
// Guarded like offsetIndex.
type timeIndex struct {
	indexFile
	base int64
}

func newTimeIndex(base int64) timeIndex {
	return timeIndex{base: base, indexFile: indexFile{entrySize: timeEntrySize}}
}

func (x *timeIndex) entry(i int) (ts, offset int64) {
	e := x.slot(i)
	return int64(binary.BigEndian.Uint64(e)), x.base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// isFull reports whether n more entries would leave no slot for the entry
// written when the segment is rolled; Kafka reserves that last slot too.
func (x *timeIndex) isFull(n int) bool { return x.entries()+n > x.maxEntries-1 }

// last returns the last entry, or (noTimestamp, base) when there is none.
func (x *timeIndex) last() (ts, offset int64) {
	if n := x.entries(); n > 0 {
		return x.entry(n - 1)
	}
	return noTimestamp, x.base
}

// lookup returns the entry with the largest timestamp <= target, or
// (noTimestamp, base) when there is none. A plain binary search, like
// offsetIndex.lookup.
func (x *timeIndex) lookup(target int64) (ts, offset int64) {
	lo, hi := 0, x.entries()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t, _ := x.entry(mid); t <= target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return noTimestamp, x.base
	}
	return x.entry(lo - 1)
}

func appendTimeEntry(dst []byte, base, ts, offset int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(offset-base)))
}

// truncatedEntries returns the number of entries left after removing every
// entry whose offset is >= offset.
func (x *timeIndex) truncatedEntries(offset int64) int {
	n := x.entries()
	for n > 0 {
		if _, o := x.entry(n - 1); o < offset {
			break
		}
		n--
	}
	return n
}

// check verifies strictly increasing timestamps from 0 up, non-decreasing
// offsets inside [base, end). An unwritten slot of a preallocated file
// (timestamp 0, offset base) passes only as the first entry, where it is a
// real entry's value too; load tells the two apart by the file length.
func (x *timeIndex) check(end int64) error {
	prevTs, prevOff := int64(noTimestamp), x.base
	for i := range x.entries() {
		t, o := x.entry(i)
		if t <= prevTs {
			return fmt.Errorf("entry %d: timestamp %d not above %d", i, t, prevTs)
		}
		if o < prevOff || o >= end {
			return fmt.Errorf("entry %d: offset %d out of order or past the segment end %d", i, o, end)
		}
		prevTs, prevOff = t, o
	}
	return nil
}

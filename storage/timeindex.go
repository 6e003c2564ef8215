package storage

import (
	"encoding/binary"
	"fmt"
)

const (
	timeEntrySize = 12
	noTimestamp   = -1 // Kafka's RecordBatch.NO_TIMESTAMP
)

// timeIndex is a segment's sparse time index, kept in memory in the exact
// bytes of its .timeindex file: entries of timestamp int64 and
// (offset - base) int32. An entry (T, O) says that T is the largest batch
// max timestamp up to and including the batch whose last offset is O, and
// that every earlier batch has a smaller max timestamp: O is the earliest
// batch reaching T. Timestamps strictly increase along the file.
//
// Guarded like offsetIndex.
type timeIndex struct {
	base       int64
	buf        []byte
	maxEntries int
}

func (x *timeIndex) entries() int { return len(x.buf) / timeEntrySize }

func (x *timeIndex) entry(i int) (ts, offset int64) {
	e := x.buf[i*timeEntrySize:]
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
// (noTimestamp, base) when there is none.
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

// truncatedLen returns the byte length after removing every entry whose
// offset is >= offset.
func (x *timeIndex) truncatedLen(offset int64) int {
	n := x.entries()
	for n > 0 {
		if _, o := x.entry(n - 1); o < offset {
			break
		}
		n--
	}
	return n * timeEntrySize
}

// check verifies whole entries, strictly increasing timestamps,
// non-decreasing offsets inside [base, end).
func (x *timeIndex) check(end int64) error {
	if len(x.buf)%timeEntrySize != 0 {
		return fmt.Errorf("length %d is not a multiple of %d", len(x.buf), timeEntrySize)
	}
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

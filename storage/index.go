package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

const offsetEntrySize = 8

// offsetIndex is a segment's sparse offset index, read from its .index file
// (see indexFile): entries of (offset - base) int32 and the file position
// int32 of the batch whose LAST offset that is. Kafka writes the same
// entries, and kafka-dump-log checks that the batch at each position ends
// at the entry's offset.
//
// Entries only grow at the end (by the appender) or shrink (TruncateTo); both
// happen under Log.mu held for writing, and lookups hold it for reading.
// Lookups need a loaded index (indexFile.ensure).
type offsetIndex struct {
	indexFile
	base int64
}

func newOffsetIndex(base int64) offsetIndex {
	return offsetIndex{base: base, indexFile: indexFile{entrySize: offsetEntrySize}}
}

func (x *offsetIndex) entry(i int) (offset, pos int64) {
	e := x.slot(i)
	return x.base + int64(int32(binary.BigEndian.Uint32(e))), int64(int32(binary.BigEndian.Uint32(e[4:])))
}

// isFull reports whether n more entries would exceed the capacity.
func (x *offsetIndex) isFull(n int) bool { return x.entries()+n > x.maxEntries }

// last returns the last entry, or (base, 0) when there is none, as Kafka's
// lastEntry does.
func (x *offsetIndex) last() (offset, pos int64) {
	if n := x.entries(); n > 0 {
		return x.entry(n - 1)
	}
	return x.base, 0
}

// lookup returns the entry with the largest offset <= target, or (base, 0)
// when there is none. The batch holding target starts at or after pos.
//
// It is a plain binary search over the mapped entries. Kafka's is
// warm-section aware (it searches the last 8 KiB of entries first so that
// lookups near the end, the usual case, touch the same few pages); with a
// read-only mapping the kernel keeps the touched pages hot either way, and
// a cold lookup costs at most log2(entries) page reads.
func (x *offsetIndex) lookup(target int64) (offset, pos int64) {
	// Binary search for the first entry with offset > target.
	lo, hi := 0, x.entries()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if o, _ := x.entry(mid); o <= target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return x.base, 0
	}
	return x.entry(lo - 1)
}

// appendOffsetEntry adds an entry to dst in file format.
func appendOffsetEntry(dst []byte, base, offset, pos int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(offset-base)))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(pos)))
}

// truncatedEntries returns the number of entries left after removing every
// entry whose offset is >= offset.
func (x *offsetIndex) truncatedEntries(offset int64) int {
	lo, hi := 0, x.entries()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if o, _ := x.entry(mid); o < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// check verifies what can be verified without reading the log: offsets
// and positions strictly increasing and inside the segment. A zero slot
// (an unwritten slot of a preallocated file) fails it: no entry has
// position 0, since the first batch of a segment never gets one. It is
// Kafka's sanity check and somewhat more.
func (x *offsetIndex) check(logSize int64) error {
	prevOff, prevPos := int64(math.MinInt64), int64(0)
	for i := range x.entries() {
		o, p := x.entry(i)
		if o < x.base || o <= prevOff {
			return fmt.Errorf("entry %d: offset %d out of order", i, o)
		}
		if p <= prevPos || p >= logSize {
			return fmt.Errorf("entry %d: position %d out of order or past the log (%d bytes)", i, p, logSize)
		}
		prevOff, prevPos = o, p
	}
	return nil
}

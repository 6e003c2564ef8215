package batch

// A compressed batch's records are walked as they are decompressed, in a
// window of recordWindow bytes, so that what a produce costs in memory is
// the codec's state and the window, not what the records decompress to:
// a 13 KB zstd batch decompressing to 250 MiB costs no 250 MiB here, as
// Kafka's streaming LogValidator costs none. The rules are scanRecords':
// exactly RecordCount records, offset deltas 0, 1, …, each record's fields
// inside its length, and nothing after the last.

import (
	"errors"
	"io"
)

// recordWindow is the most of a decompressed records section held at once
// when a record is larger, its key, value and headers are skipped through
// rather than held.
const recordWindow = 4 << 20

// recordStream reads the decompressed records section from r through a
// window, counting what it has read against a limit.
type recordStream struct {
	r      io.Reader
	buf    []byte // the window; the unread bytes are buf[p:n]
	p, n   int
	read   int // bytes read from r
	limit  int
	codec  Compression
	eof    bool
	failed error // r's error, or the limit passed
}

// fill tries to have k unread bytes in the window (k <= len(buf)) and
// returns how many there are; fewer means the stream ended or failed.
func (s *recordStream) fill(k int) int {
	if s.n-s.p >= k || s.eof || s.failed != nil {
		return s.n - s.p
	}
	if s.p+k > len(s.buf) {
		s.n = copy(s.buf, s.buf[s.p:s.n])
		s.p = 0
	}
	for s.n-s.p < k && !s.eof && s.failed == nil {
		room := s.buf[s.n:]
		// Read at most one byte past the limit: that byte says the
		// records are larger than it.
		if left := s.limit - s.read + 1; len(room) > left {
			room = room[:left]
		}
		m, err := s.r.Read(room)
		s.n += m
		s.read += m
		switch {
		case s.read > s.limit:
			s.failed = tooLarge(s.codec, s.limit)
		case err == io.EOF:
			s.eof = true
		case err != nil:
			s.failed = streamErr(s.codec, s.limit, err)
		case m == 0:
			s.failed = decompressErr(s.codec, io.ErrNoProgress)
		}
	}
	return s.n - s.p
}

// skip passes over k bytes, reading through what the window cannot hold;
// false if the stream ends first.
func (s *recordStream) skip(k int) bool {
	for k > 0 {
		if s.n == s.p && s.fill(min(k, len(s.buf))) == 0 {
			return false
		}
		step := min(k, s.n-s.p)
		s.p += step
		k -= step
	}
	return true
}

// varint decodes a zig-zag varint of at most 5 bytes, all within the
// record's left bytes; ok false if it does not.
func (s *recordStream) varint(left *int) (v int32, ok bool) {
	avail := min(s.fill(min(5, *left)), *left)
	v, q := scanVarint(s.buf[s.p:s.p+avail], 0)
	if q < 0 {
		return 0, false
	}
	s.p += q
	*left -= q
	return v, true
}

// varlong decodes a zig-zag varint of at most 10 bytes within left.
func (s *recordStream) varlong(left *int) (v int64, ok bool) {
	avail := min(s.fill(min(10, *left)), *left)
	v, q := varint64(s.buf[s.p : s.p+avail])
	if q <= 0 {
		return 0, false
	}
	s.p += q
	*left -= q
	return v, true
}

// streamErr maps a decompressor's error to the batch error it means.
func streamErr(c Compression, limit int, err error) error {
	if c == Zstd && (errors.Is(err, errZstdTooLarge) || isZstdSizeError(err)) {
		return tooLarge(c, limit)
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrDecompress) {
		return err
	}
	return decompressErr(c, err)
}

// RecordMeta is what the broker's record checks read of one record: its
// index in the batch, its timestamp (Header.RecordTimestamp) and whether
// its key is null.
type RecordMeta struct {
	Index     int32
	Timestamp int64
	NullKey   bool
}

// recordStats is what Validate gathers of a batch's records.
type recordStats struct {
	maxTs, minTs int64
	nullKeys     int
}

func (st *recordStats) add(ts int64, nullKey bool) {
	st.maxTs = max(st.maxTs, ts)
	if ts != NoTimestamp && (st.minTs == NoTimestamp || ts < st.minTs) {
		st.minTs = ts
	}
	if nullKey {
		st.nullKeys++
	}
}

// walkStream walks the h.RecordCount records read from s as scanRecords
// does, adding each to st and calling fn (if not nil), which may stop the
// walk. It returns the first rule broken, "" if none; s.failed says
// whether the stream itself failed. A record that fits the window is
// checked in place by scanRecord; a larger one field by field, its key,
// value and headers skipped through.
func walkStream(s *recordStream, h *Header, st *recordStats, fn func(RecordMeta) bool) string {
	appendTime := h.LogAppendTime()
	for i := int32(0); i < h.RecordCount; i++ {
		if s.fill(5) == 0 {
			return "premature end of records"
		}
		var tsDelta int64
		var nullKey bool
		if size, q := scanVarint(s.buf[s.p:s.n], 0); q > 0 && size > 0 && q+int(size) <= len(s.buf) {
			whole := q + int(size)
			if s.fill(whole) < whole {
				return "record cut short"
			}
			var end int
			if end, tsDelta, nullKey = scanRecord(s.buf[s.p:s.p+whole], 0, i); end < 0 {
				return "malformed record"
			}
			s.p += end
		} else if broken := s.walkLargeRecord(i, &tsDelta, &nullKey); broken != "" {
			return broken
		}
		ts := h.BaseTimestamp + tsDelta
		if appendTime {
			ts = h.MaxTimestamp
		}
		st.add(ts, nullKey)
		if fn != nil && !fn(RecordMeta{Index: i, Timestamp: ts, NullKey: nullKey}) {
			return ""
		}
	}
	if s.fill(1) > 0 {
		return "bytes remain after the last record"
	}
	return ""
}

// walkLargeRecord checks the i-th record, one larger than the window,
// field by field as scanRecord does.
func (s *recordStream) walkLargeRecord(i int32, tsDelta *int64, nullKey *bool) string {
	left := 5
	size, ok := s.varint(&left)
	if !ok || size <= 0 {
		return "bad record length"
	}
	left = int(size)
	if !s.skip(1) { // attributes
		return "record cut short"
	}
	left--
	if *tsDelta, ok = s.varlong(&left); !ok {
		return "bad timestamp delta varlong"
	}
	if delta, ok := s.varint(&left); !ok || delta != i {
		return "bad offset delta"
	}
	keyLen, ok := s.varint(&left)
	if !ok || int(keyLen) > left {
		return "bad key length"
	}
	*nullKey = keyLen < 0
	if keyLen > 0 && !s.skipIn(int(keyLen), &left) {
		return "record cut short"
	}
	valueLen, ok := s.varint(&left)
	if !ok || int(valueLen) > left {
		return "bad value length"
	}
	if valueLen > 0 && !s.skipIn(int(valueLen), &left) {
		return "record cut short"
	}
	headers, ok := s.varint(&left)
	if !ok || headers < 0 || int(headers) > left {
		return "bad header count"
	}
	for range headers {
		l, ok := s.varint(&left)
		if !ok || l < 0 || int(l) > left || !s.skipIn(int(l), &left) {
			return "bad header key"
		}
		if l, ok = s.varint(&left); !ok || int(l) > left || l > 0 && !s.skipIn(int(l), &left) {
			return "bad header value"
		}
	}
	if left != 0 {
		return "record length does not match its fields"
	}
	return ""
}

// skipIn skips k bytes of a record with left bytes to go.
func (s *recordStream) skipIn(k int, left *int) bool {
	*left -= k
	return s.skip(k)
}

// ForEachRecordMeta calls fn with the index, timestamp and key nullness of
// each record of the v2 batch b, in order, until fn returns false. Unlike
// ForEachRecord it holds no record: a compressed batch is read as it
// decompresses, with a decoder set of s's pool, as Validate reads it. The
// errors are ForEachRecord's, and it keeps Validate's rule that offset
// deltas count 0, 1, …: it is for batches Validate accepted.
func ForEachRecordMeta(b []byte, s *Scratch, fn func(RecordMeta) bool) error {
	h, err := checkFraming(b)
	if err != nil {
		return err
	}
	if h.RecordCount < 0 {
		return invalidf("record count %d is negative", h.RecordCount)
	}
	if h.RecordCount == 0 {
		return nil
	}
	if !h.Compression().known() {
		return unsupportedCompression(h.Compression())
	}
	st := recordStats{maxTs: NoTimestamp, minTs: NoTimestamp}
	if h.Compression() != None {
		pool, limit := defaultPool, DefaultMaxUncompressed
		if s != nil {
			pool, limit = s.pool(), s.limit()
		}
		_, err := walkCompressed(pool, &h, b[HeaderSize:], limit, &st, fn)
		return err
	}
	buf, p := b[HeaderSize:], 0
	for i := int32(0); i < h.RecordCount; i++ {
		end, tsDelta, nullKey := scanRecord(buf, p, i)
		if end < 0 {
			return invalidf("record %d is malformed", i)
		}
		ts := h.BaseTimestamp + tsDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		if !fn(RecordMeta{Index: i, Timestamp: ts, NullKey: nullKey}) {
			return nil
		}
		p = end
	}
	if p != len(buf) {
		return invalidf("%d bytes remain after the last of %d records", len(buf)-p, h.RecordCount)
	}
	return nil
}

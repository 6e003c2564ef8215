package batch

// RecordHeader is one record header. Key is a string of its own; Value (nil
// for a null value) aliases the batch or the Scratch like Record.Value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one decoded v2 record. Slices from ForEachRecord alias the batch
// (uncompressed) or the Scratch (compressed) and are valid only while the
// callback runs. Key and Value are nil for null and non-nil (possibly empty)
// otherwise.
type Record struct {
	Attributes     int8 // unused by Kafka, 0
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []RecordHeader
}

// RecordTimestamp returns r's timestamp: MaxTimestamp for a LogAppendTime batch,
// else BaseTimestamp + r.TimestampDelta (wrapping on overflow, as Java does).
func (h Header) RecordTimestamp(r *Record) int64 {
	if h.LogAppendTime() {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// ForEachRecord decodes the records of the v2 batch b, decompressing into s,
// and calls fn with each until fn returns false. h and r, and every slice in
// them, are valid only during that call, and live in s: fn must not use s.
// s may be nil, at the cost of allocating.
//
// ForEachRecord follows Kafka's record iterator: it checks the framing, magic
// and header size, reads exactly RecordCount records (none if it is 0), and
// fails with ErrInvalidRecord if a record does not decode, if records run out
// early, or if bytes remain after the last. It does not check the CRC or the
// client rules of Validate (offset deltas may have gaps, as in compacted
// batches): validate bytes from outside first. A decode error can come after
// fn has seen the records before it. Stopping early returns nil.
func ForEachRecord(b []byte, s *Scratch, fn func(h *Header, r *Record) bool) error {
	if s == nil {
		s = new(Scratch)
	}
	// h and r live in s: handed to fn, they would escape from the stack.
	h, r := &s.header, &s.record
	var err error
	if *h, err = checkFraming(b); err != nil {
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
	buf, err := s.decompress(h.Compression(), b[HeaderSize:])
	if err != nil {
		return err
	}
	for i := int32(0); i < h.RecordCount; i++ {
		if len(buf) == 0 {
			return invalidf("premature end of records: read %d of %d", i, h.RecordCount)
		}
		if buf, err = s.readRecord(buf, r, true); err != nil {
			return err
		}
		if !fn(h, r) {
			return nil
		}
	}
	if len(buf) != 0 {
		return invalidf("%d bytes remain after the last of %d records", len(buf), h.RecordCount)
	}
	return nil
}

// readRecord decodes the record at the start of buf into r and returns the
// bytes after it. With headers false the headers are checked but r.Headers is
// left nil, so nothing is allocated; with headers true they go into s.headers.
// Every check is one Kafka makes in DefaultRecord.readFrom, and every failure
// is an InvalidRecordException there.
func (s *Scratch) readRecord(buf []byte, r *Record, headers bool) ([]byte, error) {
	size, n := varint32(buf)
	if n <= 0 {
		return nil, invalidf("bad record length varint")
	}
	buf = buf[n:]
	if size < 0 || int(size) > len(buf) {
		return nil, invalidf("record length %d, but %d bytes remain", size, len(buf))
	}
	body, rest := buf[:size:size], buf[size:]
	if len(body) == 0 {
		return nil, invalidf("empty record")
	}
	r.Attributes = int8(body[0])
	p := 1
	if r.TimestampDelta, n = varint64(body[p:]); n <= 0 {
		return nil, invalidf("bad timestamp delta varlong")
	}
	p += n
	if r.OffsetDelta, n = varint32(body[p:]); n <= 0 {
		return nil, invalidf("bad offset delta varint")
	}
	p += n
	var err error
	if r.Key, p, err = readNullableBytes(body, p, "key"); err != nil {
		return nil, err
	}
	if r.Value, p, err = readNullableBytes(body, p, "value"); err != nil {
		return nil, err
	}
	count, n := varint32(body[p:])
	if n <= 0 {
		return nil, invalidf("bad header count varint")
	}
	p += n
	if count < 0 {
		return nil, invalidf("header count %d is negative", count)
	}
	if int(count) > len(body)-p {
		return nil, invalidf("header count %d exceeds the %d bytes left in the record", count, len(body)-p)
	}
	r.Headers = nil
	if headers {
		s.headers = s.headers[:0]
	}
	for i := 0; i < int(count); i++ {
		klen, n := varint32(body[p:])
		if n <= 0 {
			return nil, invalidf("bad header key length varint")
		}
		p += n
		if klen < 0 {
			return nil, invalidf("header key length %d is negative", klen)
		}
		if int(klen) > len(body)-p {
			return nil, invalidf("header key length %d, but %d bytes remain", klen, len(body)-p)
		}
		key := body[p : p+int(klen)]
		p += int(klen)
		var value []byte
		if value, p, err = readNullableBytes(body, p, "header value"); err != nil {
			return nil, err
		}
		if headers {
			s.headers = append(s.headers, RecordHeader{Key: s.internKey(i, key), Value: value})
		}
	}
	if p != len(body) {
		return nil, invalidf("record length %d, but its fields take %d bytes", len(body), p)
	}
	if headers && count > 0 {
		r.Headers = s.headers
	}
	return rest, nil
}

// internKey returns key as a string, reusing the string the previous record
// had at header position i when the bytes are equal: records in a batch tend
// to carry the same header keys, and this keeps ForEachRecord from allocating
// for them while every Key stays an ordinary immutable string.
func (s *Scratch) internKey(i int, key []byte) string {
	if i < len(s.keys) {
		if s.keys[i] == string(key) {
			return s.keys[i]
		}
		s.keys[i] = string(key)
		return s.keys[i]
	}
	k := string(key)
	if i == len(s.keys) {
		s.keys = append(s.keys, k)
	}
	return k
}

// readNullableBytes reads a varint length and that many bytes of body at p; a
// negative length is null (Kafka's Utils.readBytes). The result has its
// capacity cut so appending to it cannot overwrite the batch.
func readNullableBytes(body []byte, p int, what string) ([]byte, int, error) {
	l, n := varint32(body[p:])
	if n <= 0 {
		return nil, p, invalidf("bad %s length varint", what)
	}
	p += n
	if l < 0 {
		return nil, p, nil
	}
	if int(l) > len(body)-p {
		return nil, p, invalidf("%s length %d, but %d bytes remain in the record", what, l, len(body)-p)
	}
	end := p + int(l)
	return body[p:end:end], end, nil
}

// varint32 decodes a zig-zag varint of at most 5 bytes as Kafka's
// ByteUtils.readVarint does: the fifth byte must not have the continuation bit,
// and bits beyond 32 are dropped. n is the bytes read, or 0 if buf ends first
// or the varint is too long.
func varint32(buf []byte) (v int32, n int) {
	var u uint32
	for i, b := range buf {
		if i == 5 {
			break
		}
		u |= uint32(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, 0
}

// varint64 decodes a zig-zag varlong of at most 10 bytes as Kafka's
// ByteUtils.readVarlong does. n is as for varint32.
func varint64(buf []byte) (v int64, n int) {
	var u uint64
	for i, b := range buf {
		if i == 10 {
			break
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0
}

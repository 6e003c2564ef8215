package broker

import (
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's generated request parsers refuse a negative count in a
// non-nullable array, or a negative length in non-nullable bytes ("non-nullable
// field X was serialized as null"), and the broker closes the connection
// for it. kmsg reads both as empty, so dispatch checks a decoded body
// again: encoded back, a body read as Kafka reads it gives its own bytes;
// where it does not, the first byte that differs says whether kmsg
// forgave a negative count there, or only re-encoded something Kafka
// accepts as well (a tagged field at its default, a non-minimal varint, a
// nullable length below -1), which is not refused.
//
// Produce, whose records make up nearly all of its bytes, is walked
// instead of encoded back (produceNullArray): only its two arrays are
// non-nullable.

// encodeBuffers are the buffers bodies are encoded back into.
var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledEncodeBuffer is the largest buffer kept for reuse; a larger
// body's buffer is left to the garbage collector.
const maxPooledEncodeBuffer = 1 << 20

// nullInNonNullable reports whether body, which req was decoded from,
// holds a negative count where Kafka allows none.
func nullInNonNullable(req kmsg.Request, body []byte) bool {
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		return produceNullArray(body, p.Version, p.IsFlexible())
	}
	bp := encodeBuffers.Get().(*[]byte)
	out := req.AppendTo((*bp)[:0])
	refused := forgivenNegativeLength(body, out, req.IsFlexible())
	if cap(out) <= maxPooledEncodeBuffer {
		*bp = out[:0]
		encodeBuffers.Put(bp)
	}
	return refused
}

// forgivenNegativeLength compares a body with its re-encoding. At the
// first byte where they differ, the re-encoding holds an empty
// collection's length where the body held a negative one: in flexible
// versions a compact length (unsigned varint, count plus one) of 1 where
// the body's, read as Kafka reads it, is below 1; in the others an int16
// or int32 length, which starts with 0x00 when empty and with a byte of
// 0x80 or more when negative.
func forgivenNegativeLength(body, encoded []byte, flexible bool) bool {
	i := 0
	for i < len(body) && i < len(encoded) && body[i] == encoded[i] {
		i++
	}
	if i == len(encoded) {
		return false // the same bytes (what follows them Kafka ignores too)
	}
	if i == len(body) {
		return false // kmsg decoded it from these bytes; nothing is missing
	}
	if flexible {
		if encoded[i] != 1 {
			return false
		}
		n, ok := javaUnsignedVarint(body[i:])
		return !ok || n-1 < 0
	}
	return encoded[i] == 0 && body[i] >= 0x80
}

// javaUnsignedVarint reads an unsigned varint as Kafka's ByteUtils does:
// at most five bytes, the bits beyond 32 dropped, the result a signed
// int32. It reports false for a varint longer than five bytes or cut
// short, which Kafka refuses too.
func javaUnsignedVarint(b []byte) (int32, bool) {
	var v uint32
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return int32(v), true
		}
	}
	return 0, false
}

// produceNullArray walks a Produce body's fields up to and through its
// topics and partitions arrays, the only non-nullable ones, and reports
// whether either count is negative. A body too short for the walk is left
// to kmsg, which decoded it.
func produceNullArray(body []byte, version int16, flexible bool) bool {
	r := strictReader{b: body, flexible: flexible, ok: true}
	if version >= 3 {
		r.skipString() // transactional id, nullable
	}
	r.skip(2 + 4) // acks, timeout
	topics := r.count()
	if topics < 0 {
		return true
	}
	for t := int32(0); t < topics && r.ok; t++ {
		if version >= 13 {
			r.skip(16) // topic id
		} else {
			r.skipString()
		}
		partitions := r.count()
		if partitions < 0 {
			return true
		}
		for p := int32(0); p < partitions && r.ok; p++ {
			r.skip(4) // partition index
			r.skipBytes()
			r.skipTags()
		}
		r.skipTags()
	}
	return false
}

// strictReader reads the lengths of a request body as Kafka's parsers do,
// for produceNullArray. ok turns false, for good, once a read runs past
// the end.
type strictReader struct {
	b        []byte
	flexible bool
	ok       bool
}

func (r *strictReader) skip(n int) {
	if n < 0 || n > len(r.b) {
		r.ok, r.b = false, nil
		return
	}
	r.b = r.b[n:]
}

// length reads a count or length: compact (unsigned varint, value plus
// one) in flexible versions, else int16 for strings and int32 for the rest.
func (r *strictReader) length(int16Wide bool) int32 {
	if r.flexible {
		v, ok := javaUnsignedVarint(r.b)
		if !ok {
			r.ok, r.b = false, nil
			return 0
		}
		r.skip(varintPrefixLen(r.b))
		return v - 1
	}
	if int16Wide {
		if len(r.b) < 2 {
			r.ok, r.b = false, nil
			return 0
		}
		v := int32(int16(binary.BigEndian.Uint16(r.b)))
		r.b = r.b[2:]
		return v
	}
	if len(r.b) < 4 {
		r.ok, r.b = false, nil
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

func (r *strictReader) count() int32 { return r.length(false) }

func (r *strictReader) skipString() {
	if n := r.length(true); n > 0 {
		r.skip(int(n))
	}
}

func (r *strictReader) skipBytes() {
	if n := r.length(false); n > 0 {
		r.skip(int(n))
	}
}

// skipTags skips a flexible version's tagged fields.
func (r *strictReader) skipTags() {
	if !r.flexible || !r.ok {
		return
	}
	n, ok := javaUnsignedVarint(r.b)
	if !ok || n < 0 {
		r.ok, r.b = false, nil
		return
	}
	r.skip(varintPrefixLen(r.b))
	for i := int32(0); i < n && r.ok; i++ {
		if _, ok := javaUnsignedVarint(r.b); !ok {
			r.ok, r.b = false, nil
			return
		}
		r.skip(varintPrefixLen(r.b)) // tag
		size, ok := javaUnsignedVarint(r.b)
		if !ok || size < 0 {
			r.ok, r.b = false, nil
			return
		}
		r.skip(varintPrefixLen(r.b))
		r.skip(int(size))
	}
}

// varintPrefixLen is the length of the unsigned varint b starts with, which
// javaUnsignedVarint has read.
func varintPrefixLen(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] < 0x80 {
			return i + 1
		}
	}
	return len(b)
}

package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed marks bytes that do not decode as metadata records.
var ErrMalformed = errors.New("metadata: malformed record")

// encoder appends the primitive fields of a record. Integers are varints
// (zig-zag for signed ones); strings and byte arrays are a uvarint length
// and the bytes; a nullable array is a uvarint of length+1, 0 meaning null.
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) int32(v int32)    { e.varint(int64(v)) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) string(s string) { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) uuid(u UUID)     { e.b = append(e.b, u[:]...) }

func (e *encoder) nullableString(s *string) {
	if s == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(*s)) + 1)
	e.b = append(e.b, *s...)
}

func (e *encoder) int32s(v []int32) {
	e.uvarint(uint64(len(v)))
	for _, x := range v {
		e.int32(x)
	}
}

func (e *encoder) nullableInt32s(v []int32) {
	if v == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(v)) + 1)
	for _, x := range v {
		e.int32(x)
	}
}

// decoder reads what encoder wrote. The first failure sticks in err and
// every later read returns a zero value, so a decode function checks err
// once at its end. No length read from the input is trusted for an
// allocation before it is checked against the bytes that remain.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 out of range")
		return 0
	}
	return int32(v)
}

func (d *decoder) int16() int16 {
	v := d.varint()
	if v < math.MinInt16 || v > math.MaxInt16 {
		d.fail("int16 out of range")
		return 0
	}
	return int16(v)
}

func (d *decoder) bool() bool {
	if len(d.b) < 1 {
		d.fail("short bool")
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail("bad bool")
	}
	return v == 1
}

// length reads a length and checks that at least min*length bytes remain.
func (d *decoder) length(n uint64, min int) int {
	if n > uint64(len(d.b)/min) {
		d.fail("length past the end")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("short bytes")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.length(d.uvarint(), 1)
	return string(d.bytes(n))
}

func (d *decoder) nullableString() *string {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	s := string(d.bytes(d.length(n-1, 1)))
	return &s
}

func (d *decoder) uuid() UUID {
	var u UUID
	copy(u[:], d.bytes(16))
	return u
}

func (d *decoder) int32s() []int32 {
	n := d.length(d.uvarint(), 1)
	v := make([]int32, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		v = append(v, d.int32())
	}
	return v
}

func (d *decoder) nullableInt32s() []int32 {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	c := d.length(n-1, 1)
	v := make([]int32, 0, c)
	for i := 0; i < c && d.err == nil; i++ {
		v = append(v, d.int32())
	}
	return v
}

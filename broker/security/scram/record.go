package scram

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kafka's metadata record types (apiKeys) for SCRAM credentials.
const (
	RecordType       = 11 // UserScramCredentialRecord
	RemoveRecordType = 22 // RemoveUserScramCredentialRecord
)

// ErrRecord marks bytes that are not a SCRAM metadata record.
var ErrRecord = errors.New("scram: malformed metadata record")

// Record is Kafka's UserScramCredentialRecord (metadata, apiKey 11,
// version 0, flexible): a user's credential for one mechanism.
type Record struct {
	Name      string
	Mechanism int8
	Credential
}

// RemoveRecord is Kafka's RemoveUserScramCredentialRecord (apiKey 22,
// version 0, flexible).
type RemoveRecord struct {
	Name      string
	Mechanism int8
}

// The records are written as Kafka's MetadataRecordSerde writes them into
// the metadata log, byte for byte:
//
//	record = frameVersion:uvarint(1) apiKey:uvarint version:uvarint(0) body
//	UserScramCredentialRecord body = name:compact-string mechanism:int8
//	         salt:compact-bytes storedKey:compact-bytes serverKey:compact-bytes
//	         iterations:int32 tags:uvarint(0)
//	RemoveUserScramCredentialRecord body = name:compact-string mechanism:int8 tags:uvarint(0)
//
// A compact string or byte array is uvarint(length+1) and the bytes;
// int32 is big-endian. A name is at most 32767 bytes, Kafka's string
// limit.

const maxStringLen = math.MaxInt16

// Encode writes the record.
func (r Record) Encode() ([]byte, error) {
	if len(r.Name) > maxStringLen {
		return nil, fmt.Errorf("%w: name of %d bytes is too long", ErrRecord, len(r.Name))
	}
	b := recordHeader(RecordType)
	b = appendCompact(b, []byte(r.Name))
	b = append(b, byte(r.Mechanism))
	b = appendCompact(b, r.Salt)
	b = appendCompact(b, r.StoredKey)
	b = appendCompact(b, r.ServerKey)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Iterations))
	return append(b, 0), nil // no tagged fields
}

// Encode writes the record.
func (r RemoveRecord) Encode() ([]byte, error) {
	if len(r.Name) > maxStringLen {
		return nil, fmt.Errorf("%w: name of %d bytes is too long", ErrRecord, len(r.Name))
	}
	b := recordHeader(RemoveRecordType)
	b = appendCompact(b, []byte(r.Name))
	b = append(b, byte(r.Mechanism))
	return append(b, 0), nil
}

func recordHeader(apiKey uint64) []byte {
	b := binary.AppendUvarint(nil, 1) // frame version
	b = binary.AppendUvarint(b, apiKey)
	return binary.AppendUvarint(b, 0) // version
}

func appendCompact(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

// DecodeRecord reads a UserScramCredentialRecord as Kafka's
// MetadataRecordSerde does: frame version 1, version 0, no bytes left
// over. Unknown tagged fields are skipped. The byte slices are copies.
func DecodeRecord(b []byte) (Record, error) {
	d := recordDecoder{b: b}
	d.header(RecordType)
	var r Record
	r.Name = d.str("name")
	r.Mechanism = d.int8()
	r.Salt = d.bytes("salt")
	r.StoredKey = d.bytes("storedKey")
	r.ServerKey = d.bytes("serverKey")
	r.Iterations = d.int32()
	d.tags()
	if err := d.finish(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// DecodeRemoveRecord reads a RemoveUserScramCredentialRecord.
func DecodeRemoveRecord(b []byte) (RemoveRecord, error) {
	d := recordDecoder{b: b}
	d.header(RemoveRecordType)
	var r RemoveRecord
	r.Name = d.str("name")
	r.Mechanism = d.int8()
	d.tags()
	if err := d.finish(); err != nil {
		return RemoveRecord{}, err
	}
	return r, nil
}

// recordDecoder reads Kafka's encoding; the first failure sticks and
// later reads return zero values. No length is trusted before it is
// checked against the bytes that remain.
type recordDecoder struct {
	b   []byte
	err error
}

func (d *recordDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrRecord, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

// uvarint is Kafka's readUnsignedVarint: at most five bytes, the bits
// beyond 32 dropped, as Java's int shift drops them. Callers read the
// result as an int32, as Kafka does.
func (d *recordDecoder) uvarint(what string) uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		if len(d.b) == 0 {
			d.fail("%s: truncated varint", what)
			return 0
		}
		c := d.b[0]
		d.b = d.b[1:]
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	d.fail("%s: varint is too long", what)
	return 0
}

func (d *recordDecoder) header(apiKey uint32) {
	if fv := d.uvarint("frame version"); d.err == nil && fv != 1 {
		d.fail("unknown frame version %d (only frame version 1 is supported)", fv)
	}
	if k := d.uvarint("type"); d.err == nil && k != apiKey {
		d.fail("type %d, want %d", k, apiKey)
	}
	if v := d.uvarint("version"); d.err == nil && v != 0 {
		d.fail("version %d, want 0", v)
	}
}

func (d *recordDecoder) take(n uint32, what string) []byte {
	if uint64(n) > uint64(len(d.b)) {
		d.fail("%s: %d bytes, only %d remain", what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) compactLength(field string) (uint32, bool) {
	n := int32(d.uvarint(field)) - 1
	if d.err != nil {
		return 0, false
	}
	if n < 0 {
		d.fail("non-nullable field %s was serialized as null", field)
		return 0, false
	}
	return uint32(n), true
}

func (d *recordDecoder) str(field string) string {
	n, ok := d.compactLength(field)
	if !ok {
		return ""
	}
	if n > maxStringLen {
		d.fail("string field %s had invalid length %d", field, n)
		return ""
	}
	return string(d.take(n, field))
}

func (d *recordDecoder) bytes(field string) []byte {
	n, ok := d.compactLength(field)
	if !ok {
		return nil
	}
	v := d.take(n, field)
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

func (d *recordDecoder) int8() int8 {
	v := d.take(1, "mechanism")
	if v == nil {
		return 0
	}
	return int8(v[0])
}

func (d *recordDecoder) int32() int32 {
	v := d.take(4, "iterations")
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

// tags skips the tagged fields: none are defined for these records.
func (d *recordDecoder) tags() {
	n := int32(d.uvarint("tagged fields")) // a negative count is none, as in Kafka's loop
	for i := int32(0); i < n && d.err == nil; i++ {
		d.uvarint("tag")
		size := int32(d.uvarint("tag size"))
		if size < 0 {
			d.fail("tagged field of negative size %d", size)
			return
		}
		d.take(uint32(size), "tagged field")
	}
}

func (d *recordDecoder) finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d byte(s) of garbage after the record", len(d.b))
	}
	return d.err
}

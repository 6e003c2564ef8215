package share

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadRecord wraps every reason a record of __share_group_state is
// refused: not of Kafka's ShareSnapshot or ShareUpdate schemas, or cut
// short.
var ErrBadRecord = errors.New("share: bad __share_group_state record")

// Record types: the int16 every key of __share_group_state starts with,
// Kafka's CoordinatorRecordType for the share coordinator (the apiKey of
// ShareSnapshotKey.json and ShareUpdateKey.json).
const (
	SnapshotType int16 = 0
	UpdateType   int16 = 1
)

// valueVersion is the only version of ShareSnapshotValue and
// ShareUpdateValue (validVersions "0", flexible).
const valueVersion = 0

// recordBatchSize is the fewest bytes one encoded state batch takes:
// FirstOffset, LastOffset, DeliveryState, DeliveryCount and an empty
// tagged field count.
const recordBatchSize = 8 + 8 + 1 + 2 + 1

// Record is one record for __share_group_state: Key and Value as Kafka's
// CoordinatorRecordSerde writes them (the record type, then the key at
// version 0; the value version, then the value). Value nil is a tombstone.
// SharePartition is the share-partition the record is about, from which
// the driver picks the __share_group_state partition (PartitionFor).
type Record struct {
	SharePartition Key
	Key, Value     []byte
}

// encodeKey is ShareSnapshotKey or ShareUpdateKey prefixed with its record
// type: int16 type, string GroupId (int16 length; the key schema is not
// flexible), uuid TopicId, int32 Partition.
func encodeKey(typ int16, k Key) []byte {
	b := make([]byte, 0, 2+2+len(k.GroupID)+16+4)
	b = binary.BigEndian.AppendUint16(b, uint16(typ))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.GroupID)))
	b = append(b, k.GroupID...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendBatches(b []byte, batches []Batch) []byte {
	b = appendUvarint(b, uint64(len(batches))+1)
	for _, sb := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.LastOffset))
		b = append(b, byte(sb.DeliveryState))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	return b
}

// appendDeliveryCompleteCount writes the top-level tagged fields: tag 0,
// DeliveryCompleteCount (KIP-1226), only when it is not its default -1.
func appendDeliveryCompleteCount(b []byte, dcc int32) []byte {
	if dcc == -1 {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4)
	return binary.BigEndian.AppendUint32(b, uint32(dcc))
}

// encodeSnapshotValue is ShareSnapshotValue v0 prefixed with its version.
func encodeSnapshotValue(o *Offset) []byte {
	b := make([]byte, 0, 2+4+4+4+8+8+8+1+len(o.Batches)*recordBatchSize+8)
	b = binary.BigEndian.AppendUint16(b, valueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(o.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(o.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(o.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(o.CreateTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(o.WriteTimestamp))
	b = appendBatches(b, o.Batches)
	return appendDeliveryCompleteCount(b, o.DeliveryCompleteCount)
}

// encodeUpdateValue is ShareUpdateValue v0 prefixed with its version.
func encodeUpdateValue(o *Offset) []byte {
	b := make([]byte, 0, 2+4+4+8+1+len(o.Batches)*recordBatchSize+8)
	b = binary.BigEndian.AppendUint16(b, valueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(o.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(o.StartOffset))
	b = appendBatches(b, o.Batches)
	return appendDeliveryCompleteCount(b, o.DeliveryCompleteCount)
}

// SnapshotRecord is the ShareSnapshot record of k with state o, Kafka's
// ShareCoordinatorRecordHelpers.newShareSnapshotRecord.
func SnapshotRecord(k Key, o *Offset) Record {
	return Record{SharePartition: k, Key: encodeKey(SnapshotType, k), Value: encodeSnapshotValue(o)}
}

// UpdateRecord is the ShareUpdate record of k carrying o's snapshot
// epoch, leader epoch, start offset, delivery complete count and batches,
// Kafka's newShareUpdateRecord.
func UpdateRecord(k Key, o *Offset) Record {
	return Record{SharePartition: k, Key: encodeKey(UpdateType, k), Value: encodeUpdateValue(o)}
}

// TombstoneRecord deletes k's state: a ShareSnapshot key with no value,
// Kafka's newShareStateTombstoneRecord.
func TombstoneRecord(k Key) Record {
	return Record{SharePartition: k, Key: encodeKey(SnapshotType, k)}
}

// reader reads big-endian fields and never reads past its bytes; after
// the first short read every read returns zero and ok stays false.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) take(n int) []byte {
	if !r.ok || n < 0 || len(r.b) < n {
		r.ok = false
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) int8() int8 {
	if s := r.take(1); s != nil {
		return int8(s[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if s := r.take(2); s != nil {
		return int16(binary.BigEndian.Uint16(s))
	}
	return 0
}

func (r *reader) int32() int32 {
	if s := r.take(4); s != nil {
		return int32(binary.BigEndian.Uint32(s))
	}
	return 0
}

func (r *reader) int64() int64 {
	if s := r.take(8); s != nil {
		return int64(binary.BigEndian.Uint64(s))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if !r.ok {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<31 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

// skipTags skips a tagged field section, keeping the value of tag 0 (an
// int32, DeliveryCompleteCount) in dcc when one is there.
func (r *reader) tags(dcc *int32) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.ok; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		field := r.take(int(size))
		if !r.ok {
			return
		}
		if tag == 0 && dcc != nil {
			if size != 4 {
				r.ok = false
				return
			}
			*dcc = int32(binary.BigEndian.Uint32(field))
		}
	}
}

func (r *reader) batches() []Batch {
	n := r.uvarint()
	if !r.ok || n == 0 {
		// A null array (0) is not valid for StateBatches; Kafka refuses it.
		r.ok = false
		return nil
	}
	n--
	if n > uint64(len(r.b)/recordBatchSize) {
		r.ok = false
		return nil
	}
	out := make([]Batch, 0, n)
	for i := uint64(0); i < n && r.ok; i++ {
		sb := Batch{FirstOffset: r.int64(), LastOffset: r.int64(), DeliveryState: r.int8(), DeliveryCount: r.int16()}
		r.tags(nil)
		out = append(out, sb)
	}
	return out
}

// DecodeKey reads a key of __share_group_state: its record type (Kafka
// knows 0 and 1 only; others are refused, as Kafka's loader skips unknown
// types) and the share-partition it names.
func DecodeKey(key []byte) (int16, Key, error) {
	r := reader{b: key, ok: true}
	typ := r.int16()
	if !r.ok {
		return 0, Key{}, fmt.Errorf("%w: a key of %d bytes", ErrBadRecord, len(key))
	}
	if typ != SnapshotType && typ != UpdateType {
		return 0, Key{}, fmt.Errorf("%w: record type %d", ErrBadRecord, typ)
	}
	n := r.int16()
	if n < 0 {
		return 0, Key{}, fmt.Errorf("%w: a null group id", ErrBadRecord)
	}
	var k Key
	k.GroupID = string(r.take(int(n)))
	copy(k.TopicID[:], r.take(16))
	k.Partition = r.int32()
	if !r.ok {
		return 0, Key{}, fmt.Errorf("%w: key cut short", ErrBadRecord)
	}
	return typ, k, nil
}

// decodeValue reads the value of a record of type typ into an Offset:
// every field for a snapshot; for an update, those ShareUpdateValue has
// (StateEpoch and the timestamps stay 0, as Kafka's
// ShareGroupOffset.fromRecord leaves them).
func decodeValue(typ int16, value []byte) (*Offset, error) {
	r := reader{b: value, ok: true}
	if v := r.int16(); !r.ok || v != valueVersion {
		return nil, fmt.Errorf("%w: value version %d", ErrBadRecord, v)
	}
	o := &Offset{DeliveryCompleteCount: -1}
	o.SnapshotEpoch = r.int32()
	if typ == SnapshotType {
		o.StateEpoch = r.int32()
	}
	o.LeaderEpoch = r.int32()
	o.StartOffset = r.int64()
	if typ == SnapshotType {
		o.CreateTimestamp = r.int64()
		o.WriteTimestamp = r.int64()
	}
	o.Batches = r.batches()
	r.tags(&o.DeliveryCompleteCount)
	if !r.ok {
		return nil, fmt.Errorf("%w: value cut short or malformed", ErrBadRecord)
	}
	return o, nil
}

// DecodeRecord reads one record of __share_group_state: its type, the
// share-partition, and the state it carries (nil for a tombstone). It
// never panics, and allocates no more batches than the bytes can hold.
func DecodeRecord(key, value []byte) (int16, Key, *Offset, error) {
	typ, k, err := DecodeKey(key)
	if err != nil {
		return 0, Key{}, nil, err
	}
	if value == nil {
		return typ, k, nil, nil
	}
	o, err := decodeValue(typ, value)
	if err != nil {
		return 0, Key{}, nil, err
	}
	return typ, k, o, nil
}

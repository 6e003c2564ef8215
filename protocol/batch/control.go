package batch

import "encoding/binary"

// Control batches carry one control record whose key names its type
// (Kafka's ControlRecordType) and whose value depends on it. The two types
// the data path knows are the transaction markers, Kafka's
// EndTransactionMarker:
//
//	key   | version int16 (0) | type int16 (0 abort, 1 commit) |
//	value | version int16 (0) | coordinatorEpoch int32 |
//
// A marker batch is transactional and control, has no sequence (-1), and
// holds exactly that one record at offset delta 0.

// ControlType is a control record's type, the int16 after the version in
// its key.
type ControlType int16

// The control record types of Kafka's ControlRecordType that a partition
// log can hold.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

const (
	controlKeySize        = 4
	endTxnValueSize       = 6
	endTxnValueV0         = 0
	controlKeyV0          = 0
	noSequence      int32 = -1
)

// EndTxnMarker is a transaction marker as a control batch holds it.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// AppendEndTxnMarker appends to dst a marker batch for producerID and
// epoch, at base offset 0 with timestamp ts (Unix ms) and leader epoch
// leaderEpoch, as Kafka's MemoryRecords.withEndTransactionMarker builds it.
func AppendEndTxnMarker(dst []byte, producerID int64, epoch int16, leaderEpoch int32, ts int64, m EndTxnMarker) ([]byte, error) {
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(make([]byte, 0, controlKeySize), controlKeyV0), uint16(typ))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(make([]byte, 0, endTxnValueSize), endTxnValueV0), uint32(m.CoordinatorEpoch))
	return AppendBatch(dst, BuildOptions{BaseTimestamp: ts, ProducerID: producerID, ProducerEpoch: epoch,
		BaseSequence: noSequence, Transactional: true, Control: true, PartitionLeaderEpoch: leaderEpoch},
		[]Record{{Key: key, Value: value}})
}

// ParseEndTxnMarker returns the transaction marker the control batch b
// holds, ok=false when it holds no record (emptied by the cleaner). A
// control record of another type, or a marker value shorter than six bytes
// or of a negative version, is ErrInvalidRecord (Kafka's
// EndTransactionMarker.deserialize); a newer version is read as version 0.
func ParseEndTxnMarker(b []byte, s *Scratch) (m EndTxnMarker, ok bool, err error) {
	var key, value []byte
	err = ForEachRecord(b, s, func(h *Header, r *Record) bool {
		if h.Control() {
			key, value, ok = r.Key, r.Value, true
		}
		return false
	})
	if err != nil || !ok {
		return EndTxnMarker{}, false, err
	}
	if len(key) < controlKeySize || int16(binary.BigEndian.Uint16(key)) < 0 {
		return EndTxnMarker{}, false, invalidf("control record key of %d bytes", len(key))
	}
	switch ControlType(binary.BigEndian.Uint16(key[2:])) {
	case ControlAbort:
	case ControlCommit:
		m.Commit = true
	default:
		return EndTxnMarker{}, false, invalidf("control record of type %d is not a transaction marker", int16(binary.BigEndian.Uint16(key[2:])))
	}
	if len(value) < endTxnValueSize {
		return EndTxnMarker{}, false, invalidf("transaction marker value of %d bytes, at least %d needed", len(value), endTxnValueSize)
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 {
		return EndTxnMarker{}, false, invalidf("transaction marker version %d", v)
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	return m, true, nil
}

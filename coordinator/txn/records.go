package txn

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrBadRecord wraps every reason Load refuses a record: not a record of
// Kafka's transaction log schemas, or not one that can be loaded.
var ErrBadRecord = errors.New("txn: bad __transaction_state record")

// Record is one record for __transaction_state. Value nil is a tombstone
// (an expired transactional id).
type Record struct {
	TransactionalID string
	Key, Value      []byte
}

// keyVersion and valueVersion are the schema versions written: Kafka's
// TransactionLogKey v0 and TransactionLogValue v1 (flexible, with the
// previous and next producer ids and the client's transaction version as
// tagged fields), which Kafka writes once transaction.version 1 or later is
// finalized, as it is by default in Kafka 4.
const (
	keyVersion   = 0
	valueVersion = 1
)

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// record is t's state as Kafka's TransactionLog.valueToBytes writes it.
func record(t *Txn) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = t.ProducerID
	v.PreviousProducerID = t.PreviousProducerID
	v.NextProducerID = t.NextProducerID
	v.ProducerEpoch = t.ProducerEpoch
	v.TimeoutMillis = t.TimeoutMs
	v.State = kmsg.TransactionState(t.State)
	v.LastUpdateTimestamp = t.LastUpdateMs
	v.StartTimestamp = t.StartMs
	v.ClientTransactionVersion = t.ClientTxnVersion
	if t.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{} // not null: Kafka writes null only for Empty
		for _, p := range t.SortedPartitions() {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != p.Topic {
				tp := kmsg.NewTxnMetadataValueTopic()
				tp.Topic = p.Topic
				v.Topics = append(v.Topics, tp)
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, p.Partition)
		}
	}
	return Record{TransactionalID: t.ID, Key: encodeKey(t.ID), Value: v.AppendTo(nil)}
}

func tombstone(id string) Record {
	return Record{TransactionalID: id, Key: encodeKey(id)}
}

// decodeKey is Kafka's TransactionLog.readTxnRecordKey.
func decodeKey(key []byte) (string, error) {
	if len(key) < 2 {
		return "", fmt.Errorf("%w: a key of %d bytes", ErrBadRecord, len(key))
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if k.Version != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrBadRecord, k.Version)
	}
	return k.TransactionalID, nil
}

// decodeValue is Kafka's TransactionLog.readTxnRecordValue.
func decodeValue(id string, value []byte) (*Txn, error) {
	if len(value) < 2 {
		return nil, fmt.Errorf("%w: a value of %d bytes", ErrBadRecord, len(value))
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return nil, fmt.Errorf("%w: value: %v", ErrBadRecord, err)
	}
	if v.Version < 0 || v.Version > valueVersion {
		return nil, fmt.Errorf("%w: value version %d", ErrBadRecord, v.Version)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence || st == PrepareEpochFence || st == Dead {
		// Kafka never writes these two: PrepareEpochFence is never
		// persisted and Dead is written as a tombstone.
		return nil, fmt.Errorf("%w: state %d", ErrBadRecord, v.State)
	}
	if v.ProducerID < 0 {
		return nil, fmt.Errorf("%w: producer id %d", ErrBadRecord, v.ProducerID)
	}
	t := &Txn{
		ID: id, ProducerID: v.ProducerID, PreviousProducerID: v.PreviousProducerID, NextProducerID: v.NextProducerID,
		ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: noProducerEpoch, TimeoutMs: v.TimeoutMillis, State: st,
		Partitions: map[Partition]struct{}{}, StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
		ClientTxnVersion: v.ClientTransactionVersion,
	}
	if v.Version == 0 {
		t.PreviousProducerID, t.NextProducerID = noProducerID, noProducerID
	}
	if st != Empty {
		for _, tp := range v.Topics {
			for _, p := range tp.Partitions {
				t.Partitions[Partition{tp.Topic, p}] = struct{}{}
			}
		}
	}
	return t, nil
}

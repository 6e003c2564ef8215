package txn

import (
	"math"
	"sort"
)

// State is a transactional id's state, with Kafka's ids (TransactionState),
// which are what __transaction_state stores.
type State int8

// Kafka's transaction states.
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is the state's name as Kafka's DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// StateByName is the state of a Kafka state name, and false for an unknown
// name.
func StateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// Partition is one topic partition of a transaction.
type Partition struct {
	Topic     string
	Partition int32
}

// noProducerID and noProducerEpoch are Kafka's RecordBatch.NO_PRODUCER_ID
// and NO_PRODUCER_EPOCH.
const (
	noProducerID    = -1
	noProducerEpoch = -1
)

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the last
// two epochs are kept back so that a fence can still bump the epoch once.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// Txn is one transactional id's metadata, Kafka's TransactionMetadata.
// Callers get copies (Describe); the coordinator owns the originals.
type Txn struct {
	ID                 string
	ProducerID         int64
	PreviousProducerID int64
	NextProducerID     int64
	ProducerEpoch      int16
	// LastProducerEpoch is the epoch before the last bump, so that a
	// retried InitProducerId gets the same answer (KIP-360); -1 if none.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions are those the ongoing transaction added; in PrepareCommit
	// and PrepareAbort, those whose marker is not yet written.
	Partitions       map[Partition]struct{}
	StartMs          int64 // the transaction's first AddPartitions; -1 when none
	LastUpdateMs     int64
	ClientTxnVersion int16
}

// SortedPartitions lists t's partitions by topic, then partition.
func (t *Txn) SortedPartitions() []Partition {
	out := make([]Partition, 0, len(t.Partitions))
	for p := range t.Partitions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func (t *Txn) clone() Txn {
	c := *t
	c.Partitions = make(map[Partition]struct{}, len(t.Partitions))
	for p := range t.Partitions {
		c.Partitions[p] = struct{}{}
	}
	return c
}

// expirationAllowed is Kafka's TransactionState.isExpirationAllowed.
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

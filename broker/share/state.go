package share

import (
	"fmt"
	"time"
)

// RecordState is the delivery state of one in-flight offset, with Kafka's
// ids (RecordState.java), which are also the DeliveryState values that
// WriteShareGroupState carries.
type RecordState int8

// The record states. Archiving belongs to the dead-letter path, which this
// package does not take: it is accepted on load and treated as Archived.
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archiving    RecordState = 3
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archiving:
		return "ARCHIVING"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal reports whether no more deliveries of an offset in s can
// happen (SharePartition.isStateTerminal).
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement type of ShareFetch and ShareAcknowledge:
// "0:Gap,1:Accept,2:Release,3:Reject,4:Renew".
type AckType int8

// The acknowledgement types.
const (
	Gap     AckType = 0
	Accept  AckType = 1
	Release AckType = 2
	Reject  AckType = 3
	Renew   AckType = 4
)

// ackTarget is SharePartition's ACK_TYPE_TO_RECORD_STATE with the
// dead-letter queue disabled.
func (t AckType) target() RecordState {
	switch t {
	case Accept:
		return Acknowledged
	case Release:
		return Available
	}
	return Archived // Gap and Reject
}

// AcquireMode is ShareFetch's AcquireMode (KIP-1206).
type AcquireMode int8

// The acquire modes, with their ids on the wire.
const (
	// BatchOptimized acquires whole fetched batches, so a fetch may return
	// more records than MaxRecords.
	BatchOptimized AcquireMode = 0
	// RecordLimit never acquires more than MaxRecords offsets; the rest of
	// a batch is tracked per offset and left available.
	RecordLimit AcquireMode = 1
)

// inFlightState is one offset's or one whole batch's state (InFlightState).
type inFlightState struct {
	state    RecordState
	count    int    // delivery count
	member   string // "" unless acquired
	deadline time.Time
	// pending marks a state changed by the acknowledgement being applied,
	// Kafka's "ongoing state transition" between the change and its
	// write: a second change in the same request is refused.
	pending bool
}

// tryUpdate is InFlightState.tryUpdateState with the dead-letter queue
// disabled: a release of a record at its delivery limit archives it, and
// archiving leaves the delivery count as it was.
func (s *inFlightState) tryUpdate(to RecordState, increase bool, maxDelivery int, member string) bool {
	if to == Available && s.count >= maxDelivery {
		to = Archived
	}
	if !validTransition(s.state, to) {
		return false
	}
	s.state = to
	if to != Archived && increase {
		s.count++
	}
	s.member = member
	return true
}

// validTransition is RecordState.validateTransition.
func validTransition(from, to RecordState) bool {
	switch {
	case from == to:
		return false
	case from == Acknowledged || from == Archived:
		return false
	case from == Available && to != Acquired:
		return false
	}
	return true
}

// archive is InFlightState.archive.
func (s *inFlightState) archive() {
	s.state = Archived
	s.member = ""
	s.deadline = time.Time{}
}

// inFlightBatch is a range of offsets with one state, or, once split, a
// state per offset (InFlightBatch).
type inFlightBatch struct {
	first, last int64
	whole       *inFlightState  // nil once split
	offsets     []inFlightState // offsets[i] is first+i, when split
}

func (b *inFlightBatch) split() bool { return b.whole == nil }

// splitAll is InFlightBatch.maybeInitializeOffsetStateUpdate(): every
// offset takes the batch's state and lock deadline.
func (b *inFlightBatch) splitAll() {
	if b.whole == nil {
		return
	}
	n := b.last - b.first + 1
	b.offsets = make([]inFlightState, n)
	for i := range b.offsets {
		b.offsets[i] = *b.whole
	}
	b.whole = nil
}

// state returns the state of offset off, which the batch holds.
func (b *inFlightBatch) state(off int64) *inFlightState {
	if b.whole != nil {
		return b.whole
	}
	return &b.offsets[off-b.first]
}

// StateBatch is one range of persisted share-partition state, as
// WriteShareGroupState and ReadShareGroupState carry it.
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState RecordState
	DeliveryCount int16
}

// Write is what must be written to the share coordinator, as
// WriteShareGroupState carries it for one partition: the state batches
// changed by one operation and the partition's offsets and epochs. The
// start offset and delivery-complete count are those before the
// operation moved the start offset, as Kafka sends them.
type Write struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// Empty reports whether w changes nothing, so nothing needs writing.
func (w Write) Empty() bool { return len(w.Batches) == 0 }

// AcquiredRange is one range handed to a consumer (ShareFetch's
// AcquiredRecords).
type AcquiredRange struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryCount int16
}

// OffsetState is the state of one offset, for inspection.
type OffsetState struct {
	State         RecordState
	DeliveryCount int
	Member        string
	Deadline      time.Time
}

package share

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AckBatch is one acknowledgement batch of ShareFetch or ShareAcknowledge:
// one type for the whole range, or one type per offset.
type AckBatch struct {
	FirstOffset int64
	LastOffset  int64
	Types       []AckType
}

// change is one state changed by an operation, to write and, on refusal,
// to undo.
type change struct {
	s     *inFlightState
	prev  inFlightState
	first int64
	last  int64
}

// Acknowledge applies a member's acknowledgements, as
// SharePartition.acknowledge does. The batches are applied in order; the
// first refusal refuses the whole request for this partition: every state
// change already made for it is undone (Kafka's rollback). Lock renewals
// made before the refusal stand, as in Kafka. Offsets below the start
// offset are already finished and are skipped. On success the returned
// Write must be persisted; the start offset then moves over the finished
// head.
func (p *Partition) Acknowledge(member string, batches []AckBatch, now time.Time) (Write, error) {
	var changes []change
	var err *Error
	for _, ab := range batches {
		if err = validateAckBatch(ab); err != nil {
			break
		}
		if ab.LastOffset < p.start {
			continue
		}
		var sub []*inFlightBatch
		if sub, err = p.ackBatches(ab); err != nil {
			break
		}
		if err = p.ackBatchRecords(member, ab, sub, now, &changes); err != nil {
			break
		}
	}
	if err != nil {
		for i := len(changes) - 1; i >= 0; i-- {
			c := changes[i]
			c.s.state, c.s.member, c.s.pending = c.prev.state, c.prev.member, false
		}
		return Write{}, err
	}
	return p.commit(changes), nil
}

// commit finishes the changes: their locks are released and the start
// offset moves (completeStateTransition(true), then
// maybeUpdateCachedStateAndOffsets). The Write is taken before the move.
func (p *Partition) commit(changes []change) Write {
	if len(changes) == 0 {
		return p.write(nil)
	}
	batches := make([]StateBatch, 0, len(changes))
	for _, c := range changes {
		c.s.pending = false
		c.s.deadline = time.Time{}
		if c.s.state == Available {
			p.findNext = true
		}
		batches = append(batches, StateBatch{c.first, c.last, c.s.state, int16(c.s.count)})
	}
	w := p.write(batches)
	p.advanceStart()
	return w
}

// validateAckBatch refuses a batch whose offsets or types are malformed:
// an unknown type as SharePartition does, and what KafkaApis checks before
// a batch reaches the share partition (the offset order, and as many
// per-offset types as offsets).
func validateAckBatch(ab AckBatch) *Error {
	if ab.LastOffset < ab.FirstOffset || ab.FirstOffset < 0 {
		return invalidRequest(fmt.Sprintf("Invalid acknowledgement batch %d-%d", ab.FirstOffset, ab.LastOffset))
	}
	if len(ab.Types) == 0 || (len(ab.Types) > 1 && int64(len(ab.Types)) != ab.LastOffset-ab.FirstOffset+1) {
		return invalidRequest("Invalid acknowledge type: " + javaList(ab.Types))
	}
	for _, t := range ab.Types {
		if t < Gap || t > Renew {
			return invalidRequest("Invalid acknowledge type: " + javaList(ab.Types))
		}
	}
	return nil
}

// javaList formats types as Java prints a List: [1, 2].
func javaList(types []AckType) string {
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = strconv.Itoa(int(t))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// ackBatches is fetchSubMapForAcknowledgementBatch: the in-flight batches
// an acknowledgement batch covers, which must end within them.
func (p *Partition) ackBatches(ab AckBatch) ([]*inFlightBatch, *Error) {
	i := p.floor(ab.FirstOffset)
	if i < 0 {
		if !p.startWithin(ab.FirstOffset, ab.LastOffset) {
			return nil, invalidRecordState("Batch record not found. The request batch offsets are not found in the cache.")
		}
		if i = p.floor(p.start); i < 0 {
			return nil, invalidRecordState("Batch record not found. The request batch offsets are not found in the cache.")
		}
	}
	sub := p.between(p.cache[i].first, ab.LastOffset)
	last := sub[len(sub)-1].last
	if last < ab.FirstOffset {
		return nil, invalidRequest("Batch record not found. The first offset in request is past acquired records.")
	}
	if ab.LastOffset > last {
		return nil, invalidRequest("Batch record not found. The last offset in request is past acquired records.")
	}
	return sub, nil
}

// ackBatchRecords is SharePartition.acknowledgeBatchRecords.
func (p *Partition) ackBatchRecords(member string, ab AckBatch, sub []*inFlightBatch, now time.Time, changes *[]change) *Error {
	for _, b := range sub {
		if b.last < p.start {
			continue
		}
		if !b.split() {
			switch {
			case b.whole.member == "":
				return invalidRecordState("The batch cannot be acknowledged. The batch is not in the acquired state.")
			case b.whole.member != member:
				return invalidRecordState("Member is not the owner of batch record")
			case b.whole.pending:
				return invalidRecordState("The record state is invalid. The acknowledgement of delivery could not be completed.")
			}
		}
		fullMatch := b.first >= ab.FirstOffset && b.last <= ab.LastOffset
		if fullMatch && !b.split() && len(ab.Types) == 1 && !p.startWithin(b.first, b.last) {
			if err := p.ackWhole(b, ab.Types[0], now, changes); err != nil {
				return err
			}
			continue
		}
		if !b.split() {
			if b.whole.state != Acquired {
				return invalidRecordState("The batch cannot be acknowledged. The subset batch is not in the acquired state.")
			}
			b.splitAll()
		}
		if err := p.ackOffsets(member, ab, b, now, changes); err != nil {
			return err
		}
	}
	return nil
}

// ackWhole is SharePartition.acknowledgeCompleteBatch.
func (p *Partition) ackWhole(b *inFlightBatch, t AckType, now time.Time, changes *[]change) *Error {
	s := b.whole
	if s.state != Acquired {
		return invalidRecordState("The batch cannot be acknowledged. The batch is not in the acquired state.")
	}
	if t == Renew {
		if !p.cfg.RenewEnabled {
			return invalidRecordState("Renewing acquisition locks is not enabled for the group.")
		}
		s.deadline = now.Add(p.cfg.LockDuration)
		return nil
	}
	prev := *s
	if !s.tryUpdate(t.target(), false, p.cfg.MaxDeliveryCount, "") {
		return invalidRecordState("Unable to acknowledge records for the batch")
	}
	s.pending = true
	*changes = append(*changes, change{s: s, prev: prev, first: b.first, last: b.last})
	return nil
}

// ackOffsets is SharePartition.acknowledgePerOffsetBatchRecords.
func (p *Partition) ackOffsets(member string, ab AckBatch, b *inFlightBatch, now time.Time, changes *[]change) *Error {
	for i := range b.offsets {
		off := b.first + int64(i)
		if off < ab.FirstOffset || off < p.start {
			continue
		}
		if off > ab.LastOffset {
			break
		}
		s := &b.offsets[i]
		switch {
		case s.state != Acquired:
			return invalidRecordState("The offset cannot be acknowledged. The offset is not acquired.")
		case s.pending:
			return invalidRecordState("The record state is invalid. The acknowledgement of delivery could not be completed.")
		case s.member != member:
			return invalidRecordState("Member is not the owner of offset")
		}
		t := ab.Types[0]
		if len(ab.Types) > 1 {
			t = ab.Types[off-ab.FirstOffset]
		}
		if t == Renew {
			if !p.cfg.RenewEnabled {
				return invalidRecordState("Renewing acquisition locks is not enabled for the group.")
			}
			s.deadline = now.Add(p.cfg.LockDuration)
			continue
		}
		prev := *s
		if !s.tryUpdate(t.target(), false, p.cfg.MaxDeliveryCount, "") {
			return invalidRecordState("Unable to acknowledge records for the batch")
		}
		s.pending = true
		*changes = append(*changes, change{s: s, prev: prev, first: off, last: off})
	}
	return nil
}

// ReleaseMember releases every record the member holds, as
// SharePartition.releaseAcquiredRecords does when a member leaves the
// group or closes its share session: back to AVAILABLE, or ARCHIVED when
// below the start offset or at the delivery count limit. The Write must
// be persisted.
func (p *Partition) ReleaseMember(member string) Write {
	var changes []change
	for _, b := range p.cache {
		if !b.split() && b.whole.state == Acquired && b.whole.member == member && p.startWithin(b.first, b.last) {
			b.splitAll()
		}
		if b.split() {
			for i := range b.offsets {
				s := &b.offsets[i]
				if s.member != member && s.member != "" || s.state != Acquired {
					continue
				}
				off := b.first + int64(i)
				p.release(s, off, off, off < p.start, &changes)
			}
			continue
		}
		if b.whole.member != member && b.whole.member != "" || b.whole.state != Acquired {
			continue
		}
		p.release(b.whole, b.first, b.last, b.last < p.start, &changes)
	}
	return p.commit(changes)
}

func (p *Partition) release(s *inFlightState, first, last int64, below bool, changes *[]change) {
	to := Available
	if below {
		to = Archived
	}
	prev := *s
	if s.tryUpdate(to, false, p.cfg.MaxDeliveryCount, "") {
		*changes = append(*changes, change{s: s, prev: prev, first: first, last: last})
	}
}

// Tick fires the acquisition locks that have expired by now, as the
// timer of SharePartition.releaseAcquisitionLockOnTimeout does: each
// expired acquired record goes back to AVAILABLE, or to ARCHIVED when its
// delivery count has reached the limit or it lies below the start
// offset. The Write must be persisted.
func (p *Partition) Tick(now time.Time) Write {
	var changes []change
	expired := func(s *inFlightState) bool {
		return s.state == Acquired && !s.deadline.IsZero() && !now.Before(s.deadline)
	}
	for _, b := range p.cache {
		if !b.split() {
			if !expired(b.whole) {
				continue
			}
			if !p.startWithin(b.first, b.last) {
				p.release(b.whole, b.first, b.last, b.last < p.start, &changes)
				continue
			}
			b.splitAll()
		}
		for i := range b.offsets {
			if s := &b.offsets[i]; expired(s) {
				off := b.first + int64(i)
				p.release(s, off, off, off < p.start, &changes)
			}
		}
	}
	return p.commit(changes)
}

// NextDeadline returns the earliest lock deadline, for arming a timer, and
// false when no record is locked.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var next time.Time
	see := func(s *inFlightState) {
		if s.state == Acquired && !s.deadline.IsZero() && (next.IsZero() || s.deadline.Before(next)) {
			next = s.deadline
		}
	}
	for _, b := range p.cache {
		if !b.split() {
			see(b.whole)
			continue
		}
		for i := range b.offsets {
			see(&b.offsets[i])
		}
	}
	return next, !next.IsZero()
}

package share

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Partition is the in-flight state of one share group on one
// topic-partition (Kafka's SharePartition). It is not safe for concurrent
// use: one goroutine drives it.
type Partition struct {
	cfg         Config
	leaderEpoch int32
	stateEpoch  int32

	start int64 // share-partition start offset (SPSO)
	end   int64 // share-partition end offset (SPEO)
	cache []*inFlightBatch

	findNext bool       // an available offset may lie below end
	gap      *gapWindow // gaps left by the persisted state, still to fill
}

// gapWindow is SharePartition.GapWindow: the persisted state had gaps
// (offsets never delivered) below endOffset, the first from gapStart.
type gapWindow struct {
	endOffset int64
	gapStart  int64
}

// PersistedState is what ReadShareGroupState returned for the partition.
// A StartOffset of -1 means the group has none yet.
type PersistedState struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []StateBatch
}

// Load builds the share partition from the persisted state, as
// SharePartition.maybeInitialize does: the start offset is the persisted
// one, or, when none is persisted, the one reset gives over the log's
// offsets at now. Acquisitions are never persisted, so records acquired
// before a restart come back as their last written state (an ACQUIRED
// state batch, which Kafka never writes, loads as AVAILABLE); an
// ARCHIVING batch loads as ARCHIVED (no dead-letter queue here).
func Load(cfg Config, leaderEpoch int32, st PersistedState, reset AutoOffsetReset, log LogOffsets, now time.Time) (*Partition, error) {
	p := &Partition{cfg: cfg, leaderEpoch: leaderEpoch, stateEpoch: st.StateEpoch}
	p.start = st.StartOffset
	// Kafka takes any value; offsets past int64 by one would wrap here.
	if p.start < -1 || p.start == math.MaxInt64 {
		return nil, fmt.Errorf("share: start offset %d out of range", p.start)
	}
	if p.start == -1 {
		p.start = reset.initialStart(log, now)
	}
	gapStart := int64(-1)
	prevLast := p.start - 1
	for _, b := range st.Batches {
		if b.FirstOffset < p.start {
			return nil, fmt.Errorf("share: state batch first offset %d is below the start offset %d", b.FirstOffset, p.start)
		}
		if b.LastOffset == math.MaxInt64 {
			return nil, fmt.Errorf("share: state batch last offset %d out of range", b.LastOffset)
		}
		if b.LastOffset < b.FirstOffset {
			return nil, fmt.Errorf("share: state batch last offset %d is below its first offset %d", b.LastOffset, b.FirstOffset)
		}
		if b.FirstOffset <= prevLast {
			return nil, fmt.Errorf("share: state batch at %d overlaps the one before it", b.FirstOffset)
		}
		s := b.DeliveryState
		switch s {
		case Available, Acknowledged, Archived:
		case Acquired:
			s = Available
		case Archiving:
			s = Archived
		default:
			return nil, fmt.Errorf("share: unknown record state id %d", int8(s))
		}
		if gapStart == -1 && b.FirstOffset > prevLast+1 {
			gapStart = prevLast + 1
		}
		prevLast = b.LastOffset
		p.cache = append(p.cache, &inFlightBatch{first: b.FirstOffset, last: b.LastOffset,
			whole: &inFlightState{state: s, count: int(b.DeliveryCount)}})
	}
	if len(p.cache) == 0 {
		p.end = p.start
		return p, nil
	}
	p.findNext = true
	p.end = p.cache[len(p.cache)-1].last
	if gapStart != -1 {
		p.gap = &gapWindow{endOffset: p.end, gapStart: gapStart}
	}
	p.advanceStart()
	return p, nil
}

// StartOffset returns the share-partition start offset.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset returns the share-partition end offset.
func (p *Partition) EndOffset() int64 { return p.end }

// StateEpoch returns the state epoch read from the share coordinator.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// LeaderEpoch returns the partition leader epoch the state was loaded at.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// InFlightCount is the number of in-flight offsets that count against
// MaxInFlightRecords (SharePartition.numInFlightRecords).
func (p *Partition) InFlightCount() int64 {
	if len(p.cache) == 0 {
		return 0
	}
	return p.end - p.start + 1
}

// State returns the state of offset off, and false when it is not in
// flight.
func (p *Partition) State(off int64) (OffsetState, bool) {
	i := p.floor(off)
	if i < 0 || p.cache[i].last < off {
		return OffsetState{}, false
	}
	s := p.cache[i].state(off)
	return OffsetState{State: s.state, DeliveryCount: s.count, Member: s.member, Deadline: s.deadline}, true
}

// CanAcquire reports whether an acquire could hand out anything
// (SharePartition.canAcquireRecords).
func (p *Partition) CanAcquire() bool {
	if p.NextFetchOffset() != p.end+1 {
		return true
	}
	return p.InFlightCount() < int64(p.cfg.MaxInFlightRecords)
}

// floor returns the index of the last batch whose first offset is at most
// off, or -1.
func (p *Partition) floor(off int64) int {
	return sort.Search(len(p.cache), func(i int) bool { return p.cache[i].first > off }) - 1
}

// between returns the batches whose first offset is in [from, to].
func (p *Partition) between(from, to int64) []*inFlightBatch {
	lo := sort.Search(len(p.cache), func(i int) bool { return p.cache[i].first >= from })
	hi := sort.Search(len(p.cache), func(i int) bool { return p.cache[i].first > to })
	if lo >= hi {
		return nil
	}
	return append([]*inFlightBatch(nil), p.cache[lo:hi]...)
}

// insert adds b, keeping the cache ordered by first offset.
func (p *Partition) insert(b *inFlightBatch) {
	i := sort.Search(len(p.cache), func(i int) bool { return p.cache[i].first >= b.first })
	if i < len(p.cache) && p.cache[i].first == b.first {
		p.cache[i] = b
		return
	}
	p.cache = append(p.cache, nil)
	copy(p.cache[i+1:], p.cache[i:])
	p.cache[i] = b
}

func (p *Partition) gapActive() bool { return p.gap != nil && p.gap.endOffset == p.end }

// moveGapStart is maybeUpdatePersisterGapWindowStartOffset.
func (p *Partition) moveGapStart(off int64) {
	if p.gap == nil {
		return
	}
	if p.gap.endOffset == p.end && off <= p.gap.endOffset {
		p.gap.gapStart = off
	} else {
		p.gap = nil
	}
}

func (p *Partition) startWithin(first, last int64) bool { return first < p.start && last >= p.start }

// NextFetchOffset is the offset the next fetch for this share partition
// reads from (SharePartition.nextFetchOffset).
func (p *Partition) NextFetchOffset() int64 {
	if len(p.cache) == 0 || p.start > p.cache[len(p.cache)-1].last {
		p.findNext = false
		return p.end
	}
	if !p.findNext {
		return p.end + 1
	}
	next := int64(-1)
	gapStart := int64(-1)
	if p.gapActive() {
		gapStart = p.gap.gapStart
	}
outer:
	for _, b := range p.cache {
		if p.gapActive() {
			if b.first > gapStart {
				next = gapStart
				break
			}
			gapStart = max(b.last+1, gapStart)
		}
		if !b.split() {
			if b.whole.state == Available {
				next = b.first
				break
			}
			continue
		}
		for i := range b.offsets {
			if b.offsets[i].state == Available {
				next = b.first + int64(i)
				break outer
			}
		}
	}
	if next == -1 {
		p.findNext = false
		next = p.end + 1
	}
	return next
}

// deliveryCompleteCount is the number of offsets at or above the start
// offset whose delivery is complete (Kafka counts them as they change;
// this counts them).
func (p *Partition) deliveryCompleteCount() int32 {
	var n int64
	for _, b := range p.cache {
		if b.last < p.start {
			continue
		}
		if !b.split() {
			if b.whole.state.terminal() {
				n += b.last - max(b.first, p.start) + 1
			}
			continue
		}
		for i := range b.offsets {
			if b.first+int64(i) >= p.start && b.offsets[i].state.terminal() {
				n++
			}
		}
	}
	return int32(n)
}

func (p *Partition) write(batches []StateBatch) Write {
	return Write{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.start,
		DeliveryCompleteCount: p.deliveryCompleteCount(), Batches: batches}
}

// canMoveStart is SharePartition.canMoveStartOffset.
func (p *Partition) canMoveStart() bool {
	if len(p.cache) == 0 {
		return false
	}
	i := p.floor(p.start)
	if i < 0 {
		return false // an acquirable gap at the beginning
	}
	b := p.cache[i]
	var s *inFlightState
	switch {
	case !b.split():
		s = b.whole
	case p.start <= b.last:
		s = b.state(p.start)
	default:
		// The start offset lies past the batch; Kafka looks the offset up
		// in the batch and finds nothing. Use the batch's last offset.
		s = b.state(b.last)
	}
	return !s.pending && s.state.terminal()
}

// lastFinished is findLastOffsetAcknowledgedAndMetadata: the last offset
// of the run of finished offsets at the head of the cache, or -1.
func (p *Partition) lastFinished() int64 {
	last := int64(-1)
	for _, b := range p.cache {
		if p.gapActive() && b.last >= p.gap.gapStart {
			return last
		}
		if !b.split() {
			if !b.whole.state.terminal() {
				return last
			}
			last = b.last
			continue
		}
		for i := range b.offsets {
			if !b.offsets[i].state.terminal() {
				return last
			}
			last = b.first + int64(i)
		}
	}
	return last
}

// advanceStart moves the start offset over the finished head of the cache
// and drops the batches below it (maybeUpdateCachedStateAndOffsets).
func (p *Partition) advanceStart() bool {
	if !p.canMoveStart() {
		return false
	}
	lastAcked := p.lastFinished()
	if lastAcked == -1 {
		return false
	}
	lastCached := p.cache[len(p.cache)-1].last
	if lastAcked == lastCached {
		p.start = lastCached + 1
		p.end = lastCached + 1
		p.cache = nil
		return true
	}
	i := p.floor(lastAcked)
	removeThrough := -1 // index of the last batch to drop
	if lastAcked == p.cache[i].last {
		if higher := p.cache[i+1].first; higher > p.start {
			p.start = higher
		}
		if p.gapActive() {
			p.start = min(p.gap.gapStart, p.start)
		}
		removeThrough = i
	} else {
		if lastAcked+1 > p.start {
			p.start = lastAcked + 1
		}
		removeThrough = i - 1
	}
	if removeThrough >= 0 {
		p.cache = append(p.cache[:0:0], p.cache[removeThrough+1:]...)
	}
	return true
}

// Snapshot returns the whole share-partition state as the share
// coordinator holds it once every Write has been applied: each in-flight
// range with its last written state. An acquired offset is written as it
// was before its acquisition, available with one delivery fewer, since
// acquisitions are not persisted; adjacent offsets of equal state merge.
func (p *Partition) Snapshot() PersistedState {
	st := PersistedState{StateEpoch: p.stateEpoch, StartOffset: p.start}
	add := func(off int64, s *inFlightState) {
		state, count := s.state, s.count
		if state == Acquired {
			state, count = Available, count-1
		}
		if n := len(st.Batches); n > 0 {
			l := &st.Batches[n-1]
			if l.LastOffset+1 == off && l.DeliveryState == state && int(l.DeliveryCount) == count {
				l.LastOffset = off
				return
			}
		}
		st.Batches = append(st.Batches, StateBatch{off, off, state, int16(count)})
	}
	for _, b := range p.cache {
		if b.last < p.start {
			continue
		}
		if !b.split() {
			first := max(b.first, p.start)
			add(first, b.whole)
			st.Batches[len(st.Batches)-1].LastOffset = b.last
			continue
		}
		for i := range b.offsets {
			if off := b.first + int64(i); off >= p.start {
				add(off, &b.offsets[i])
			}
		}
	}
	return st
}

// AdvanceLogStart moves the start offset up to a new log start offset
// (after retention or DeleteRecords), archiving the available offsets
// below it (SharePartition.updateCacheAndOffsets). Acquired offsets below
// it stay acquired until acknowledged or timed out, and are then
// archived. Nothing is written.
func (p *Partition) AdvanceLogStart(logStart int64) {
	if logStart <= p.start {
		return
	}
	if len(p.cache) == 0 {
		p.start, p.end = logStart, logStart
		return
	}
	if p.archiveRecords(p.start, logStart, p.cache, Available) {
		p.findNext = true
	}
	p.start = logStart
	if p.end < p.start {
		p.end = p.start
	}
}

// archiveRecords archives the offsets in [from, to) of the given batches
// that are in state initial (SharePartition.archiveRecords).
func (p *Partition) archiveRecords(from, to int64, batches []*inFlightBatch, initial RecordState) bool {
	any := false
	for _, b := range batches {
		if b.first >= to {
			break
		}
		if b.first >= from && b.last <= to-1 && !b.split() {
			if b.whole.state == initial {
				b.whole.archive()
				any = true
			}
			continue
		}
		if !b.split() {
			if b.whole.state != initial {
				continue
			}
			b.splitAll()
		}
		for i := range b.offsets {
			off := b.first + int64(i)
			if off < from {
				continue
			}
			if off > to-1 {
				break
			}
			if b.offsets[i].state == initial {
				b.offsets[i].archive()
				any = true
			}
		}
	}
	return any
}

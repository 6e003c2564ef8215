package share

import (
	"errors"
	"slices"
)

// errCombine is what Kafka's PersisterStateBatchCombiner meets when a
// batch ends before it begins (LastOffset below FirstOffset) among two or
// more: its sweep decrements a priority it never counted, and the Java
// code fails with a NullPointerException, whose message (combineFailure,
// the JVM's) Kafka's answer carries.
var errCombine = errors.New("share: a state batch ends before it begins")

const combineFailure = `Cannot invoke "java.lang.Integer.intValue()" because the return value of "java.util.TreeMap.get(Object)" is null`

// priority is Kafka's BatchPriority: between overlapping batches, the one
// with the higher delivery count wins, then the higher delivery state.
type priority struct {
	count int16
	state int8
}

// before reports whether p wins over q (Kafka's PRIORITY_DESC order).
func (p priority) before(q priority) bool {
	if p.count != q.count {
		return p.count > q.count
	}
	return p.state > q.state
}

type sweepEvent struct {
	offset int64
	begin  bool
	prio   priority
}

// Combine is Kafka's PersisterStateBatchCombiner.combineStateBatches:
// the batches so far and the new ones, pruned below startOffset (-1: no
// pruning; a batch straddling it is cut to begin at it), then, when two or
// more are left, swept into non-overlapping batches in offset order, where
// each offset takes the state of the batch of highest priority covering
// it and adjacent batches with the same state and count are coalesced. It
// fails where Kafka's fails (errCombine).
func Combine(soFar, newer []Batch, startOffset int64) ([]Batch, error) {
	pruned := make([]Batch, 0, len(soFar)+len(newer))
	for _, list := range [][]Batch{soFar, newer} {
		for _, b := range list {
			switch {
			case startOffset != -1 && b.LastOffset < startOffset:
			case startOffset == -1 || b.FirstOffset >= startOffset:
				pruned = append(pruned, b)
			default:
				pruned = append(pruned, Batch{startOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
			}
		}
	}
	if len(pruned) <= 1 {
		return pruned, nil
	}
	return sweepMerge(pruned)
}

func sweepMerge(batches []Batch) ([]Batch, error) {
	events := make([]sweepEvent, 0, 2*len(batches))
	for _, b := range batches {
		p := priority{b.DeliveryCount, b.DeliveryState}
		// The end is LastOffset+1, with Java's wrap-around at the top.
		events = append(events, sweepEvent{b.FirstOffset, true, p}, sweepEvent{b.LastOffset + 1, false, p})
	}
	// Arrays.sort is stable; ends sort before begins at one offset.
	slices.SortStableFunc(events, func(a, b sweepEvent) int {
		switch {
		case a.offset < b.offset:
			return -1
		case a.offset > b.offset:
			return 1
		case a.begin == b.begin:
			return 0
		case !a.begin:
			return -1
		}
		return 1
	})
	active := map[priority]int{}
	var out []Batch
	prev := int64(-1)
	var cur *priority
	for i := 0; i < len(events); {
		off := events[i].offset
		if cur != nil && off > prev {
			out = appendCoalesced(out, prev, off-1, *cur)
		}
		for i < len(events) && events[i].offset == off {
			e := events[i]
			i++
			if e.begin {
				active[e.prio]++
				continue
			}
			n, ok := active[e.prio]
			if !ok {
				return nil, errCombine
			}
			if n == 1 {
				delete(active, e.prio)
			} else {
				active[e.prio] = n - 1
			}
		}
		cur = nil
		for p := range active {
			if cur == nil || p.before(*cur) {
				q := p
				cur = &q
			}
		}
		prev = off
	}
	return out, nil
}

// appendCoalesced is Kafka's appendCoalesced: first to last with p's
// state extends the last batch if it ends just before first with the same
// state and count, else it is a new batch.
func appendCoalesced(out []Batch, first, last int64, p priority) []Batch {
	if n := len(out); n > 0 {
		l := &out[n-1]
		if l.LastOffset+1 == first && l.DeliveryState == p.state && l.DeliveryCount == p.count {
			l.LastOffset = last
			return out
		}
	}
	return append(out, Batch{first, last, p.state, p.count})
}

package share

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// modelOffset is what the model knows of one offset from the outside:
// what was handed out, to whom, until when, and how it ended.
type modelOffset struct {
	count    int // last delivery count handed out
	owner    string
	deadline time.Time
	done     bool // accepted, rejected, archived at the limit, or aborted
	accepted bool
}

// model is a per-offset record of a share partition's observable
// behaviour, checked against Partition after every operation.
type model struct {
	t        *testing.T
	cfg      Config
	offsets  map[int64]*modelOffset
	logStart int64 // offsets below were removed from the log
	aborted  map[int64]bool
	maxBatch int64
}

func (m *model) at(off int64) *modelOffset {
	o := m.offsets[off]
	if o == nil {
		o = &modelOffset{}
		m.offsets[off] = o
	}
	return o
}

// release is a record coming back without acceptance.
func (m *model) release(o *modelOffset, archive bool) {
	o.owner = ""
	o.deadline = time.Time{}
	if archive || o.count >= m.cfg.MaxDeliveryCount {
		o.done = true
	}
}

// testLog is the partition's log: contiguous batches, some of them of an
// aborted transaction.
type testLog struct {
	batches []FetchedBatch
	aborted []AbortedTxn
}

func newTestLog(rng *rand.Rand, n int) (*testLog, map[int64]bool, int64) {
	l := &testLog{}
	aborted := map[int64]bool{}
	var off, maxBatch int64
	for len(l.batches) < n {
		size := int64(1 + rng.IntN(6))
		maxBatch = max(maxBatch, size)
		switch rng.IntN(8) {
		case 0: // an aborted transaction of producer 9 and its marker
			l.aborted = append(l.aborted, AbortedTxn{ProducerID: 9, FirstOffset: off})
			l.batches = append(l.batches, FetchedBatch{BaseOffset: off, LastOffset: off + size - 1, ProducerID: 9, Transactional: true})
			for o := off; o < off+size; o++ {
				aborted[o] = true
			}
			off += size
			l.batches = append(l.batches, FetchedBatch{BaseOffset: off, LastOffset: off, ProducerID: 9, Transactional: true, Control: true, AbortMarker: true})
			off++
		case 1: // a committed transaction of producer 4
			l.batches = append(l.batches, FetchedBatch{BaseOffset: off, LastOffset: off + size - 1, ProducerID: 4, Transactional: true})
			off += size
		default:
			l.batches = append(l.batches, FetchedBatch{BaseOffset: off, LastOffset: off + size - 1, ProducerID: -1})
			off += size
		}
	}
	return l, aborted, maxBatch
}

// read returns up to n batches from the one holding off, and the aborted
// transactions a log read reports for them.
func (l *testLog) read(off int64, n int) ([]FetchedBatch, []AbortedTxn) {
	i := 0
	for i < len(l.batches) && l.batches[i].LastOffset < off {
		i++
	}
	out := l.batches[i:min(len(l.batches), i+n)]
	if len(out) == 0 {
		return nil, nil
	}
	var ab []AbortedTxn
	for _, a := range l.aborted {
		if a.FirstOffset <= out[len(out)-1].LastOffset {
			ab = append(ab, a)
		}
	}
	return out, ab
}

// TestModelRandomOperations drives a share partition with thousands of
// random acquisitions, acknowledgements, timeouts, member departures,
// log start movements and restarts, and checks it against the per-offset
// model: no offset is held by two members, an accepted offset is never
// delivered again, delivery counts only grow and stay within the limit,
// aborted records are never delivered, the start offset never passes an
// unfinished offset, the in-flight count stays within the limit (plus one
// batch), acknowledgements succeed exactly when the model says they
// should, and a refused one changes nothing.
func TestModelRandomOperations(t *testing.T) {
	for seed := uint64(1); seed <= modelSeeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, 1500) })
	}
}

// modelSeeds is how many seeded runs the test makes; thousands have
// passed, a few dozen keep the edit-test loop fast.
var modelSeeds uint64 = 30

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	cfg := Config{
		MaxDeliveryCount:   2 + rng.IntN(5),
		MaxInFlightRecords: 10 + rng.IntN(40),
		LockDuration:       time.Duration(5+rng.IntN(20)) * time.Second,
		RenewEnabled:       true,
	}
	log, aborted, maxBatch := newTestLog(rng, 400)
	m := &model{t: t, cfg: cfg, offsets: map[int64]*modelOffset{}, aborted: aborted, maxBatch: maxBatch}
	p := fresh(t, cfg, 0)
	members := []string{"m1", "m2", "m3"}
	now := t0
	var delivered, accepted, refused, redelivered int
	defer func() {
		t.Logf("%d offsets delivered (%d again), %d acknowledgements accepted, %d refused", delivered, redelivered, accepted, refused)
		if delivered == 0 || accepted == 0 || refused == 0 || redelivered == 0 {
			t.Errorf("the run did not exercise every path")
		}
	}()
	for step := 0; step < steps; step++ {
		op := rng.IntN(100)
		switch {
		case op < 35:
			member := members[rng.IntN(len(members))]
			off := p.NextFetchOffset()
			if rng.IntN(10) == 0 && off > 3 {
				off -= int64(rng.IntN(3)) // a fetch from a little below
			}
			bs, ab := log.read(off, 1+rng.IntN(4))
			mode := AcquireMode(rng.IntN(2))
			req := AcquireRequest{Member: member, Mode: mode, BatchSize: 1 + rng.IntN(8),
				MaxRecords: 1 + rng.IntN(12), FetchOffset: off, Batches: bs, ReadCommitted: true, Aborted: ab, Now: now}
			got, n := p.Acquire(req)
			m.acquired(member, got, n, now)
			for _, r := range got {
				delivered += int(r.LastOffset - r.FirstOffset + 1)
				if r.DeliveryCount > 1 {
					redelivered += int(r.LastOffset - r.FirstOffset + 1)
				}
			}
			if len(bs) > 0 {
				// Records of aborted transactions in the fetched range
				// that were acquired are archived; the model learns it
				// from the partition's state.
				for o := bs[0].BaseOffset; o <= bs[len(bs)-1].LastOffset; o++ {
					if s, ok := p.State(o); ok && m.aborted[o] && s.State == Archived {
						mo := m.at(o)
						mo.done, mo.owner = true, ""
					}
				}
			}
		case op < 70:
			member := members[rng.IntN(len(members))]
			acks := m.randomAcks(rng, p, member)
			before := dump(p)
			expectOK := m.expectAck(p, member, acks)
			startBefore := p.StartOffset()
			_, err := p.Acknowledge(member, acks, now)

			if (err == nil) != expectOK {
				for _, a := range acks {
					for off := a.FirstOffset; off <= a.LastOffset; off++ {
						s, ok := p.State(off)
						t.Logf("offset %d: model %+v, partition %+v %v (start %d end %d)", off, m.offsets[off], s, ok, p.StartOffset(), p.EndOffset())
					}
				}
				t.Fatalf("step %d: acknowledge %s %v: error %v, model expected ok=%v", step, member, acks, err, expectOK)
			}
			if err != nil {
				if !errors.Is(err, kerr.InvalidRecordState) && !errors.Is(err, kerr.InvalidRequest) {
					t.Fatalf("step %d: error %v", step, err)
				}
				if after := dump(p); !reflect.DeepEqual(before, after) {
					t.Fatalf("step %d: refused acknowledgement changed the state", step)
				}
				m.renewedBeforeRefusal(step, p, member, acks, now)
				refused++
				break
			}
			m.acked(startBefore, member, acks, now)
			accepted++
		case op < 85:
			now = now.Add(time.Duration(rng.IntN(8000)) * time.Millisecond)
			start := p.StartOffset()
			p.Tick(now)
			for off, o := range m.offsets {
				if o.owner != "" && !now.Before(o.deadline) {
					m.release(o, off < start)
				}
			}
		case op < 90:
			member := members[rng.IntN(len(members))]
			start := p.StartOffset()
			p.ReleaseMember(member)
			for off, o := range m.offsets {
				if o.owner == member {
					m.release(o, off < start)
				}
			}
		case op < 94:
			ls := p.StartOffset() + int64(rng.IntN(4))
			if ls > p.EndOffset()+1 {
				ls = p.EndOffset() + 1
			}
			start := p.StartOffset()
			p.AdvanceLogStart(ls)
			if ls > start {
				m.logStart = max(m.logStart, ls)
				for off, o := range m.offsets {
					if off < ls && o.owner == "" {
						o.done = true
					}
				}
			}
		default:
			// Restart: the coordinator's state reloaded; every acquired
			// record comes back available.
			q, err := Load(cfg, 7, p.Snapshot(), AutoOffsetReset{}, LogOffsets{}, now)
			if err != nil {
				t.Fatalf("step %d: reload: %v", step, err)
			}
			for _, o := range m.offsets {
				if o.owner != "" {
					o.owner = ""
					o.deadline = time.Time{}
					o.count-- // the acquisition was never written
				}
			}
			p = q
		}
		m.check(step, p)
	}
}

func (m *model) acquired(member string, got []AcquiredRange, n int, now time.Time) {
	total := 0
	prevLast := int64(-1)
	for _, r := range got {
		if r.FirstOffset > r.LastOffset || r.FirstOffset <= prevLast {
			m.t.Fatalf("bad ranges %v", got)
		}
		prevLast = r.LastOffset
		total += int(r.LastOffset - r.FirstOffset + 1)
		for off := r.FirstOffset; off <= r.LastOffset; off++ {
			o := m.at(off)
			switch {
			case o.owner != "":
				m.t.Fatalf("offset %d handed to %s while %s holds it", off, member, o.owner)
			case o.accepted:
				m.t.Fatalf("accepted offset %d handed out again", off)
			case o.done:
				m.t.Fatalf("finished offset %d handed out again", off)
			case m.aborted[off]:
				m.t.Fatalf("aborted offset %d handed out", off)
			case int(r.DeliveryCount) <= o.count:
				m.t.Fatalf("offset %d delivered with count %d after %d", off, r.DeliveryCount, o.count)
			case int(r.DeliveryCount) > m.cfg.MaxDeliveryCount:
				m.t.Fatalf("offset %d delivered with count %d past the limit", off, r.DeliveryCount)
			}
			o.count = int(r.DeliveryCount)
			o.owner = member
			o.deadline = now.Add(m.cfg.LockDuration)
		}
	}
	if total != n {
		m.t.Fatalf("acquired %v counted %d", got, n)
	}
}

// randomAcks makes a request mostly of the member's own held ranges, with
// now and then a wrong range, a wrong member's range or a bad type.
func (m *model) randomAcks(rng *rand.Rand, p *Partition, member string) []AckBatch {
	var held []int64
	for off, o := range m.offsets {
		if o.owner == member && off >= p.StartOffset() {
			held = append(held, off)
		}
	}
	slices.Sort(held)
	var acks []AckBatch
	for range 1 + rng.IntN(2) {
		var first int64
		if len(held) > 0 && rng.IntN(5) != 0 {
			first = held[rng.IntN(len(held))]
		} else {
			first = p.StartOffset() + int64(rng.IntN(20)) - 3
			first = max(first, 0)
		}
		last := first + int64(rng.IntN(4))
		if rng.IntN(4) != 0 {
			// A run of the member's own offsets, as a client acknowledges.
			last = first
			for last-first < 8 {
				if o := m.offsets[last+1]; o == nil || o.owner != member {
					break
				}
				last++
			}
		}
		types := []AckType{AckType(1 + rng.IntN(4))}
		if rng.IntN(3) == 0 {
			types = types[:0]
			for range last - first + 1 {
				types = append(types, AckType(rng.IntN(5)))
			}
		}
		if rng.IntN(40) == 0 {
			types[0] = AckType(7)
		}
		acks = append(acks, AckBatch{FirstOffset: first, LastOffset: last, Types: types})
	}
	// Keep batches in order and apart, as clients send them.
	for i := 1; i < len(acks); i++ {
		if acks[i].FirstOffset <= acks[i-1].LastOffset {
			return acks[:i]
		}
	}
	return acks
}

// expectAck says whether every offset of the request at or above the
// start offset is held by the member, within the in-flight range, each
// named once, with valid types.
func (m *model) expectAck(p *Partition, member string, acks []AckBatch) bool {
	for _, a := range acks {
		if validateAckBatch(a) != nil {
			return false
		}
		if a.LastOffset < p.StartOffset() {
			continue
		}
		if a.LastOffset > p.EndOffset() || len(p.cache) == 0 {
			return false
		}
		for off := max(a.FirstOffset, p.StartOffset()); off <= a.LastOffset; off++ {
			if o := m.offsets[off]; o == nil || o.owner != member {
				return false
			}
		}
	}
	return true
}

func (m *model) acked(start int64, member string, acks []AckBatch, now time.Time) {
	for _, a := range acks {
		for off := a.FirstOffset; off <= a.LastOffset; off++ {
			o := m.offsets[off]
			if off < start || o == nil || o.owner != member {
				continue // below the start offset: skipped
			}
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[off-a.FirstOffset]
			}
			switch t {
			case Accept:
				o.owner, o.deadline, o.done, o.accepted = "", time.Time{}, true, true
			case Release:
				m.release(o, false)
			case Reject, Gap:
				m.release(o, true)
			case Renew:
				o.deadline = now.Add(m.cfg.LockDuration)
			}
		}
	}
}

// renewedBeforeRefusal takes in the lock renewals a refused request made
// before its refusal, which stand as in Kafka: only offsets the member
// holds and the request renews may have a new deadline, now plus the
// lock duration.
func (m *model) renewedBeforeRefusal(step int, p *Partition, member string, acks []AckBatch, now time.Time) {
	renews := map[int64]bool{}
	for _, a := range acks {
		for off := a.FirstOffset; off <= a.LastOffset && len(a.Types) > 0; off++ {
			t := a.Types[0]
			if len(a.Types) > 1 && off-a.FirstOffset < int64(len(a.Types)) {
				t = a.Types[off-a.FirstOffset]
			}
			if t == Renew {
				renews[off] = true
			}
		}
	}
	for off, o := range m.offsets {
		s, ok := p.State(off)
		if o.owner == "" || !ok || s.Deadline.Equal(o.deadline) {
			continue
		}
		if o.owner != member || !renews[off] || !s.Deadline.Equal(now.Add(m.cfg.LockDuration)) {
			m.t.Fatalf("step %d: refused request moved the lock of offset %d to %v", step, off, s.Deadline)
		}
		o.deadline = s.Deadline
	}
}

func (m *model) check(step int, p *Partition) {
	start := p.StartOffset()
	if p.InFlightCount() > int64(m.cfg.MaxInFlightRecords)+m.maxBatch {
		m.t.Fatalf("step %d: %d in flight, limit %d", step, p.InFlightCount(), m.cfg.MaxInFlightRecords)
	}
	for off, o := range m.offsets {
		s, ok := p.State(off)
		if o.owner != "" {
			if !ok || s.State != Acquired || s.Member != o.owner || !s.Deadline.Equal(o.deadline) {
				m.t.Fatalf("step %d: offset %d held by %s until %v in the model, partition has %+v (in flight %v)", step, off, o.owner, o.deadline, s, ok)
			}
		}
		if ok && s.DeliveryCount < o.count {
			m.t.Fatalf("step %d: offset %d delivery count went from %d to %d", step, off, o.count, s.DeliveryCount)
		}
		if o.accepted && ok && off >= start && s.State != Acknowledged {
			m.t.Fatalf("step %d: accepted offset %d is %v", step, off, s.State)
		}
		// The start offset never passes an offset still to be delivered
		// or acknowledged, unless the log start moved past it.
		if off < start && !o.done && off >= m.logStart {
			m.t.Fatalf("step %d: start offset %d passed unfinished offset %d (%+v)", step, start, off, *o)
		}
	}
	for off, s := range dump(p).Offsets {
		if o := m.offsets[off]; s.State == Acquired && (o == nil || o.owner == "") {
			m.t.Fatalf("step %d: offset %d acquired by %s behind the model's back", step, off, s.Member)
		}
	}
}

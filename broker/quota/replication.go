package quota

import (
	"math"
	"sync"
	"sync/atomic"
)

// Replication is one side's replication quota (Kafka's
// ReplicationQuotaManager): its bound, and the rate of the throttled
// replicas' bytes.
type Replication struct {
	// bound is the rate in bytes per second; math.MaxInt64 when unbounded.
	bound atomic.Int64
	now   func() int64 // ms; time.Now in a broker, a test's clock in tests

	mu   sync.Mutex // a leaf: guards rate
	rate replicationRate
}

// Init makes q unbounded, measured over samples windows of windowMs each
// on the clock now (ms).
func (q *Replication) Init(samples int, windowMs int64, now func() int64) {
	q.bound.Store(math.MaxInt64)
	q.now = now
	q.rate = newReplicationRate(samples, windowMs)
}

// Bound is the bound in bytes per second, math.MaxInt64 when unbounded.
func (q *Replication) Bound() int64 { return q.bound.Load() }

// SetBound sets the bound (math.MaxInt64: unbounded) and returns the one
// it replaces.
func (q *Replication) SetBound(n int64) int64 { return q.bound.Swap(n) }

// Exceeded reports whether the measured rate is above the bound
// (Sensor.checkQuotas): one atomic load when unbounded.
func (q *Replication) Exceeded() bool {
	bound := q.bound.Load()
	if bound == math.MaxInt64 {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rate.measure(q.now()) > float64(bound)
}

// Record adds n bytes to the rate, whatever the bound.
func (q *Replication) Record(n int64) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rate.record(float64(n), q.now())
}

// replicationRate is the byte rate a replication quota is measured by:
// Kafka's SimpleRate over a WindowedSum, the stat of
// ReplicationQuotaManager's sensor.
//
// Bytes are summed into samples of windowMs each
// (replication.quota.window.size.seconds); samples+1 of them are kept
// (replication.quota.window.num, and one for the sample overlapping the
// start of the monitored window), reused in turn. A sample without an event
// for samples*windowMs is reset. The rate is the sum of the samples over the
// time since the oldest one started, but never over less than one window:
// unlike a client quota's Rate, SimpleRate does not pretend that the
// samples-1 windows before the first record were empty, so a replica that
// starts copying is throttled from its first window on.
//
// Times are milliseconds given by the caller, so tests drive the clock.
// Not safe for concurrent use.
type replicationRate struct {
	samples  int
	windowMs int64
	slots    []rateSlot
	current  int
}

// rateSlot is one sample (SampledStat.Sample).
type rateSlot struct {
	start, lastEvent int64
	value            float64
}

func newReplicationRate(samples int, windowMs int64) replicationRate {
	return replicationRate{samples: max(samples, 1), windowMs: max(windowMs, 1)}
}

// record adds v at now.
func (r *replicationRate) record(v float64, now int64) {
	s := r.currentSlot(now)
	if now-s.start >= r.windowMs {
		r.current = (r.current + 1) % (r.samples + 1)
		if r.current == len(r.slots) {
			r.slots = append(r.slots, rateSlot{})
		}
		s = &r.slots[r.current]
		*s = rateSlot{start: now, lastEvent: now}
	}
	s.value += v
	s.lastEvent = now
}

func (r *replicationRate) currentSlot(now int64) *rateSlot {
	if len(r.slots) == 0 {
		r.slots = append(r.slots, rateSlot{start: now, lastEvent: now})
	}
	return &r.slots[r.current]
}

// measure is the rate per second at now.
func (r *replicationRate) measure(now int64) float64 {
	expire := int64(r.samples) * r.windowMs
	r.currentSlot(now)
	oldest := now
	var sum float64
	for i := range r.slots {
		s := &r.slots[i]
		if now-s.lastEvent >= expire {
			*s = rateSlot{start: now, lastEvent: now}
		}
		sum += s.value
		oldest = min(oldest, s.start)
	}
	return sum * 1000 / float64(max(now-oldest, r.windowMs))
}

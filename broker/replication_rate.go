package broker

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

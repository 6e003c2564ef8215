package quota

// RateConfig is a quota's window: Samples samples of WindowMs each
// (quota.window.num and quota.window.size.seconds).
type RateConfig struct {
	Samples  int
	WindowMs int64
}

// rateSample is one of a rate's samples (SampledStat.Sample).
type rateSample struct {
	start, lastEvent int64 // ms
	value            float64
}

// rate is Kafka's Rate over a WindowedSum, in units per second: the sum of
// its samples over the time they cover, that time being at least samples-1
// whole windows. It keeps samples+1 slots, one for the sample overlapping
// the start of the monitored window, as Kafka does. Not safe for
// concurrent use.
type rate struct {
	samples []rateSample
	current int
}

// record adds v at time now (ms).
func (r *rate) record(cfg RateConfig, v float64, now int64) {
	s := r.currentSample(now)
	if now-s.start >= cfg.WindowMs {
		r.current = (r.current + 1) % (cfg.Samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, rateSample{start: now, lastEvent: now})
		} else {
			r.samples[r.current] = rateSample{start: now, lastEvent: now}
		}
		s = &r.samples[r.current]
	}
	s.value += v
	s.lastEvent = now
}

func (r *rate) currentSample(now int64) *rateSample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now, lastEvent: now})
	}
	return &r.samples[r.current]
}

// purge resets the samples without an event in the monitored window.
func (r *rate) purge(cfg RateConfig, now int64) {
	expire := int64(cfg.Samples) * cfg.WindowMs
	for i := range r.samples {
		if now-r.samples[i].lastEvent >= expire {
			r.samples[i] = rateSample{start: now, lastEvent: now}
		}
	}
}

// windowSize is the time in ms the rate is measured over (Rate.windowSize).
func (r *rate) windowSize(cfg RateConfig, now int64) int64 {
	r.purge(cfg, now)
	oldest := r.currentSample(now).start
	for _, s := range r.samples {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, least := elapsed/cfg.WindowMs, int64(cfg.Samples-1); full < least {
		elapsed += (least - full) * cfg.WindowMs
	}
	return max(elapsed, 1)
}

// measure returns the rate per second at now.
func (r *rate) measure(cfg RateConfig, now int64) float64 {
	r.purge(cfg, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowSize(cfg, now)) / 1000)
}

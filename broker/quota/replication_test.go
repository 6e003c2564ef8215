package quota

import (
	"math"
	"testing"
)

func TestReplicationRateFollowsKafkasSimpleRate(t *testing.T) {
	type step struct {
		at     int64   // ms
		record float64 // bytes recorded at at; 0 records nothing
		want   float64 // the rate measured at at, after the record
	}
	tests := []struct {
		name     string
		samples  int
		windowMs int64
		steps    []step
	}{
		{"nothing recorded", 11, 1000, []step{{0, 0, 0}, {5000, 0, 0}}},
		{"a first record counts over one whole window", 11, 1000, []step{{0, 1000, 1000}, {500, 0, 1000}}},
		{"over the time since the oldest sample", 11, 1000, []step{{0, 1000, 1000}, {1000, 1000, 2000}, {2000, 0, 1000}, {4000, 0, 500}}},
		{"samples without events for samples*window are dropped", 11, 1000, []step{{0, 1000, 1000}, {10999, 0, 1000 * 1000 / 10999.0}, {11000, 0, 0}}},
		{"slots are reused in turn", 2, 1000, []step{{0, 100, 100}, {1000, 100, 200}, {2000, 100, 200}, {3000, 100, 200}}},
		{"a window of several seconds", 3, 5000, []step{{0, 5000, 1000}, {2500, 5000, 2000}, {7500, 0, 10000 * 1000 / 7500.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplicationRate(tt.samples, tt.windowMs)
			for _, s := range tt.steps {
				if s.record > 0 {
					r.record(s.record, s.at)
				}
				if got := r.measure(s.at); math.Abs(got-s.want) > 1e-9 {
					t.Fatalf("at %d ms: rate %v, want %v", s.at, got, s.want)
				}
			}
		})
	}
}

func TestReplicationRateSteadyTrafficMeasuresItsRate(t *testing.T) {
	r := newReplicationRate(11, 1000)
	for now := int64(0); now <= 60_000; now += 100 {
		r.record(10_000, now) // 100 kB/s
		if now >= 2000 {
			if got := r.measure(now); got < 90_000 || got > 110_000 {
				t.Fatalf("at %d ms: rate %v, want about 100000", now, got)
			}
		}
	}
	if got := len(r.slots); got != 12 {
		t.Fatalf("%d samples kept, want 12 (window.num + 1)", got)
	}
}

func TestReplicationQuotaExceededAboveItsBound(t *testing.T) {
	var now int64
	var q Replication
	q.Init(11, 1000, func() int64 { return now })
	q.Record(5000)
	if q.Exceeded() {
		t.Fatal("an unbounded quota is exceeded")
	}
	q.SetBound(1000)
	for _, c := range []struct {
		at   int64
		want bool
	}{{0, true}, {4000, true}, {5000, false}, {6000, false}} {
		now = c.at
		if got := q.Exceeded(); got != c.want {
			t.Fatalf("at %d ms with 5000 bytes recorded at 0: exceeded %v, want %v", c.at, got, c.want)
		}
	}
	q.SetBound(0)
	now = 7000
	if !q.Exceeded() {
		t.Fatal("a bound of 0 with bytes in the window is not exceeded")
	}
	now = 11_000
	if q.Exceeded() {
		t.Fatal("a bound of 0 is exceeded once the window holds no bytes")
	}
}

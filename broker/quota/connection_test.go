package quota

import (
	"context"
	"net/netip"
	"testing"
)

// TestConnectionRateQuotaAsKafka: an address's own quota wins over the
// default; a connection over the quota is taken back out of the rate and
// held for the throttle time, bounded by one window.
func TestConnectionRateQuotaAsKafka(t *testing.T) {
	q := NewConnectionRate(RateConfig{Samples: 11, WindowMs: 1000})
	a, other := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	q.Update(context.Background(), map[Entity]map[string]float64{
		{IP: Name{Present: true, Name: "10.0.0.1"}}: {ConnectionCreationRate: 1},
		{IP: Name{Present: true, Default: true}}:    {ConnectionCreationRate: 100},
		{User: Name{Present: true, Default: true}}:  {ProducerByteRate: 1},
	})
	now := int64(1_700_000_000_000)
	// 1 a second over at least 10 s: ten connections at once fit.
	for i := range 10 {
		if ms := q.Record(a, now); ms != 0 {
			t.Fatalf("connection %d throttled %d ms", i, ms)
		}
	}
	// The 11th makes 1.1/s: (1.1-1)/1 * 10 s = 1 s, bounded by one window.
	if ms := q.Record(a, now); ms != 1000 {
		t.Fatalf("11th connection throttled %d ms, want 1000", ms)
	}
	// It was taken back out: the rate is still 10 over 10 s.
	if got := q.sensors.byKey[a].rate.measure(q.cfg, now); got != 1 {
		t.Fatalf("rate after the refused connection = %v, want 1", got)
	}
	for i := range 50 {
		if ms := q.Record(other, now); ms != 0 {
			t.Fatalf("connection %d from an address under the default throttled %d ms", i, ms)
		}
	}
	q.Update(context.Background(), nil)
	if ms := q.Record(a, now); ms != 0 {
		t.Fatalf("throttled %d ms with no quota left", ms)
	}
}

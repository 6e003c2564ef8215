package quota

import (
	"math"
	"testing"
)

// TestResolveQuotaMostSpecificEntityWins checks DefaultQuotaCallback's
// order: user and client id, user and default client id, user, default user
// and client id, default users and client ids, default user, client id,
// default client id; and the sensor tags each choice implies.
func TestResolveQuotaMostSpecificEntityWins(t *testing.T) {
	u := func(s string) Name { return Name{Present: true, Name: s} }
	def := Name{Present: true, Default: true}
	none := Name{}
	all := map[Entity]float64{
		{User: u("alice"), ClientID: u("app")}: 1,
		{User: u("alice"), ClientID: def}:      2,
		{User: u("alice"), ClientID: none}:     3,
		{User: def, ClientID: u("app")}:        4,
		{User: def, ClientID: def}:             5,
		{User: def, ClientID: none}:            6,
		{User: none, ClientID: u("app")}:       7,
		{User: none, ClientID: def}:            8,
	}
	// without returns all but the entities with the given limits.
	without := func(drop ...float64) map[Entity]float64 {
		out := map[Entity]float64{}
	next:
		for e, v := range all {
			for _, d := range drop {
				if v == d {
					continue next
				}
			}
			out[e] = v
		}
		return out
	}
	tests := []struct {
		name     string
		limits   map[Entity]float64
		user     string
		clientID string
		tags     tags
		limit    float64
		ok       bool
	}{
		{"user and client id", all, "alice", "app", tags{"alice", "app"}, 1, true},
		{"user and default client id", without(1), "alice", "app", tags{"alice", "app"}, 2, true},
		{"user", without(1, 2), "alice", "app", tags{"alice", ""}, 3, true},
		{"default user and client id", without(1, 2, 3), "alice", "app", tags{"alice", "app"}, 4, true},
		{"default user and default client id", without(1, 2, 3, 4), "alice", "app", tags{"alice", "app"}, 5, true},
		{"default user", without(1, 2, 3, 4, 5), "alice", "app", tags{"alice", ""}, 6, true},
		{"client id", without(1, 2, 3, 4, 5, 6), "alice", "app", tags{"", "app"}, 7, true},
		{"default client id", without(1, 2, 3, 4, 5, 6, 7), "alice", "app", tags{"", "app"}, 8, true},
		{"none", without(1, 2, 3, 4, 5, 6, 7, 8), "alice", "app", tags{"", "app"}, 0, false},
		{"other user gets the default user's", all, "bob", "app", tags{"bob", "app"}, 4, true},
		{"other user and client get the defaults", all, "bob", "other", tags{"bob", "other"}, 5, true},
		{"user's own client quota only", map[Entity]float64{{User: u("alice"), ClientID: u("app")}: 1},
			"alice", "other", tags{"", "other"}, 0, false},
		// Tags (user, client) look the quota up from the most specific
		// user-and-client entity down, whichever kind chose the tags.
		{"default client of user beats default user's client",
			map[Entity]float64{{User: u("alice"), ClientID: def}: 2, {User: def, ClientID: u("app")}: 4},
			"alice", "app", tags{"alice", "app"}, 2, true},
		{"anonymous client id quota", map[Entity]float64{{ClientID: u("app")}: 7}, AnonymousUser, "app", tags{"", "app"}, 7, true},
		{"anonymous user quota", map[Entity]float64{{User: u(AnonymousUser)}: 9}, AnonymousUser, "app", tags{AnonymousUser, ""}, 9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags, limit, ok := resolve(tt.limits, tt.user, tt.clientID)
			if tags != tt.tags || limit != tt.limit || ok != tt.ok {
				t.Errorf("resolve = %+v, %v, %v; want %+v, %v, %v", tags, limit, ok, tt.tags, tt.limit, tt.ok)
			}
		})
	}
}

// TestByteRateQuotaThrottleTimeAsKafka replays Kafka's
// ClientQuotaManagerTest.testQuotaViolation: 400 bytes a second under a
// 500 B/s quota, then a 2,300-byte spike half a second into a window, which
// Kafka throttles for exactly 2,100 ms, until the spike rolls out.
func TestByteRateQuotaThrottleTimeAsKafka(t *testing.T) {
	q := NewByteRate(ProducerByteRate, RateConfig{Samples: 11, WindowMs: 1000})
	def := Name{Present: true, Default: true}
	q.Update(map[Entity]map[string]float64{
		{User: def, ClientID: def}: {ProducerByteRate: 500, ConsumerByteRate: 1},
	})
	now := int64(1_700_000_000_000)
	for i := range 10 {
		if ms := q.Record(AnonymousUser, "unknown", 400, now); ms != 0 {
			t.Fatalf("record %d under the quota: throttled %d ms", i, ms)
		}
		now += 1000
	}
	now += 500
	if ms := q.Record(AnonymousUser, "unknown", 2300, now); ms != 2100 {
		t.Fatalf("spike throttled %d ms, Kafka says 2100", ms)
	}
	now += 2100
	for range 10 {
		q.Record(AnonymousUser, "unknown", 400, now)
		now += 1000
	}
	if ms := q.Record(AnonymousUser, "unknown", 0, now); ms != 0 {
		t.Fatalf("throttled %d ms once the spike rolled out", ms)
	}

	// Taking a value back restores the rate (a throttled fetch).
	q.Record(AnonymousUser, "unknown", 1e6, now)
	q.Unrecord(AnonymousUser, "unknown", 1e6, now)
	if ms := q.Record(AnonymousUser, "unknown", 0, now); ms != 0 {
		t.Fatalf("throttled %d ms after the value was taken back", ms)
	}

	// Sensors idle for an hour are dropped.
	q.Record(AnonymousUser, "other", 1, now)
	q.Record(AnonymousUser, "unknown", 1, now+sensorExpiry.Milliseconds())
	if _, ok := q.sensors.byKey[tags{AnonymousUser, "other"}]; ok {
		t.Error("an idle sensor was kept past its expiry")
	}
}

// TestRateWindowAsKafka checks Rate's window: at least samples-1 whole
// windows, and samples without an event in the monitored window purged.
func TestRateWindowAsKafka(t *testing.T) {
	cfg := RateConfig{Samples: 11, WindowMs: 1000}
	var r rate
	r.record(cfg, 500, 0)
	if got := r.measure(cfg, 0); got != 50 { // 500 over the minimum 10 s
		t.Errorf("rate after one record = %v, want 50", got)
	}
	r.record(cfg, 500, 5500)
	if got, want := r.measure(cfg, 5500), 1000/10.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("rate = %v, want %v", got, want)
	}
	if got := r.measure(cfg, 20_000); got != 0 {
		t.Errorf("rate once every sample expired = %v, want 0", got)
	}
}

// TestByteRateQuotaDisabledRecordsNothing: without an entity holding the
// key, nothing is recorded and no sensor is created; an IP entity never
// counts.
func TestByteRateQuotaDisabledRecordsNothing(t *testing.T) {
	q := NewByteRate(ProducerByteRate, RateConfig{Samples: 11, WindowMs: 1000})
	q.Update(map[Entity]map[string]float64{
		{ClientID: Name{Present: true, Name: "app"}}: {ConsumerByteRate: 1},
		{IP: Name{Present: true, Default: true}}:     {"connection_creation_rate": 1},
	})
	if q.Enabled() {
		t.Fatal("enabled without a producer_byte_rate")
	}
	if ms := q.Record(AnonymousUser, "app", 1e9, 0); ms != 0 || len(q.sensors.byKey) != 0 {
		t.Fatalf("record = %d, %d sensors", ms, len(q.sensors.byKey))
	}
	if got := q.MaxValueInWindow(AnonymousUser, "app"); got != math.MaxInt32 {
		t.Fatalf("maxValueInWindow without a quota = %d", got)
	}
	q.Update(map[Entity]map[string]float64{{ClientID: Name{Present: true, Name: "app"}}: {ProducerByteRate: 1000}})
	if got := q.MaxValueInWindow(AnonymousUser, "app"); got != 10_000 {
		t.Fatalf("maxValueInWindow = %d, want 1000 B/s over 10 windows", got)
	}
}

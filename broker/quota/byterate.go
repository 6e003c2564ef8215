package quota

// Client byte-rate quotas, as Kafka's ClientQuotaManager enforces
// producer_byte_rate and consumer_byte_rate.
//
// Resolution: a request's (user, client id) resolves to the most specific
// quota entity holding the key, in DefaultQuotaCallback's order (resolve).
//
// Measurement: every resolved entity has one sensor, shared by all the
// connections that resolve to it, whose rate is Kafka's Rate over a
// WindowedSum: quota.window.num samples of quota.window.size.seconds (rate).
// A value is recorded, then the rate measured; above the quota, the throttle
// time is Kafka's (observed - quota) / quota * window, not bounded (Kafka
// bounds only the request-percentage quota).
//
// Cost: with no entity holding a quota type's key, recording it is one
// atomic load. Sensors idle for an hour are dropped, as Kafka expires them.

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AnonymousUser is the principal name Kafka gives a client on a listener
// without authentication (KafkaPrincipal.ANONYMOUS).
const AnonymousUser = "ANONYMOUS"

// Byte-rate quota keys (QuotaConfig).
const (
	ProducerByteRate = "producer_byte_rate"
	ConsumerByteRate = "consumer_byte_rate"
)

// sensorExpiry is how long a sensor may go unrecorded before it is dropped
// (ClientQuotaManager.InactiveSensorExpirationTimeSeconds).
const sensorExpiry = time.Hour

// tags name a sensor as Kafka's quota metric tags do: the user and the
// client id, either empty when the resolved entity does not name it.
type tags struct{ user, clientID string }

// sensor is one resolved entity's rate.
type sensor struct {
	rate       rate
	lastRecord int64 // ms
}

// sensorSet holds a sensor per key, made on first use; the ones idle for
// sensorExpiry are dropped now and then, as Kafka expires its quota
// sensors. Its owner's mutex guards it.
type sensorSet[K comparable] struct {
	byKey     map[K]*sensor
	lastSweep int64 // ms
}

// get returns k's sensor, marked as used at now.
func (s *sensorSet[K]) get(k K, now int64) *sensor {
	if now-s.lastSweep >= sensorExpiry.Milliseconds()/60 {
		s.lastSweep = now
		for key, x := range s.byKey {
			if now-x.lastRecord >= sensorExpiry.Milliseconds() {
				delete(s.byKey, key)
			}
		}
	}
	if s.byKey == nil {
		s.byKey = map[K]*sensor{}
	}
	x := s.byKey[k]
	if x == nil {
		x = &sensor{}
		s.byKey[k] = x
	}
	x.lastRecord = now
	return x
}

// ByteRate enforces one byte-rate quota key for every client.
type ByteRate struct {
	key string
	cfg RateConfig
	// limits holds the quota of every user/client-id entity that has the
	// key; nil when none has, which disables recording. Replaced, never
	// mutated.
	limits atomic.Pointer[map[Entity]float64]

	mu      sync.Mutex // a leaf lock
	sensors sensorSet[tags]
}

// NewByteRate returns the quota of key, measured over cfg's windows, with
// no entity holding it yet.
func NewByteRate(key string, cfg RateConfig) *ByteRate {
	return &ByteRate{key: key, cfg: cfg}
}

// Update takes the quota values of all entities, after a change.
func (q *ByteRate) Update(quotas map[Entity]map[string]float64) {
	limits := map[Entity]float64{}
	for e, values := range quotas {
		if v, ok := values[q.key]; ok && !e.IP.Present {
			limits[e] = v
		}
	}
	if len(limits) == 0 {
		q.limits.Store(nil)
		return
	}
	q.limits.Store(&limits)
}

// Enabled reports whether any entity has a quota of this kind.
func (q *ByteRate) Enabled() bool { return q.limits.Load() != nil }

// limitFor resolves a client's quota: the sensor's tags and the quota in
// bytes per second, ok false when no entity applies.
func (q *ByteRate) limitFor(user, clientID string) (tags, float64, bool) {
	p := q.limits.Load()
	if p == nil {
		return tags{}, 0, false
	}
	return resolve(*p, user, clientID)
}

// MaxValueInWindow is the most bytes a client may take at once without
// being throttled whatever it did before: the quota over all windows but
// one (ClientQuotaManager.getMaxValueInQuotaWindow); MaxInt32 without one.
func (q *ByteRate) MaxValueInWindow(user, clientID string) int32 {
	_, limit, ok := q.limitFor(user, clientID)
	if !ok {
		return math.MaxInt32
	}
	v := limit * float64(q.cfg.Samples-1) * float64(q.cfg.WindowMs) / 1000
	if v >= math.MaxInt32 || math.IsNaN(v) { // Scala's toInt saturates; NaN is 0
		if math.IsNaN(v) {
			return 0
		}
		return math.MaxInt32
	}
	return int32(v)
}

// Record adds v bytes for the client at now (ms) and returns the throttle
// time in ms: how long the client must wait for its rate to come back to
// its quota, 0 when within it. With no quota of this kind anywhere it
// records nothing.
func (q *ByteRate) Record(user, clientID string, v float64, now int64) int32 {
	p := q.limits.Load()
	if p == nil {
		return 0
	}
	tags, limit, ok := resolve(*p, user, clientID)
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.sensors.get(tags, now)
	s.rate.record(q.cfg, v, now)
	if !ok {
		return 0 // recorded, as Kafka does, so that a quota set later sees the past
	}
	observed := s.rate.measure(q.cfg, now)
	if observed <= limit {
		return 0
	}
	ms := math.Round((observed - limit) / limit * float64(s.rate.windowSize(q.cfg, now)))
	return int32(min(ms, math.MaxInt32))
}

// Unrecord takes back v bytes recorded at now, for a fetch whose answer is
// dropped because it is throttled.
func (q *ByteRate) Unrecord(user, clientID string, v float64, now int64) {
	p := q.limits.Load()
	if p == nil {
		return
	}
	tags, _, _ := resolve(*p, user, clientID)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sensors.get(tags, now).rate.record(q.cfg, -v, now)
}

// resolve finds a client's quota among limits as Kafka's
// DefaultQuotaCallback does: quotaMetricTags picks the most specific entity
// kind present, in the order
//
//  1. user and client id          5. default user and default client id
//  2. user and default client id  6. default user
//  3. user                        7. client id
//  4. default user and client id  8. default client id
//
// which decides the sensor's tags (all clients of a user share the user's
// sensor, for one), and quotaLimit then takes the quota the tags lead to.
func resolve(limits map[Entity]float64, user, clientID string) (tags, float64, bool) {
	named := func(s string) Name { return Name{Present: true, Name: s} }
	def := Name{Present: true, Default: true}
	has := func(u, c Name) bool {
		_, ok := limits[Entity{User: u, ClientID: c}]
		return ok
	}
	t := tags{"", clientID}
	switch {
	case has(named(user), named(clientID)), has(named(user), def):
		t = tags{user, clientID}
	case has(named(user), Name{}):
		t = tags{user, ""}
	case has(def, named(clientID)), has(def, def):
		t = tags{user, clientID}
	case has(def, Name{}):
		t = tags{user, ""}
	}

	var candidates [4]Entity
	var n int
	switch {
	case t.user != "" && t.clientID != "":
		candidates = [4]Entity{
			{User: named(t.user), ClientID: named(t.clientID)},
			{User: named(t.user), ClientID: def},
			{User: def, ClientID: named(t.clientID)},
			{User: def, ClientID: def},
		}
		n = 4
	case t.user != "":
		candidates[0], candidates[1], n = Entity{User: named(t.user)}, Entity{User: def}, 2
	case t.clientID != "":
		candidates[0], candidates[1], n = Entity{ClientID: named(t.clientID)}, Entity{ClientID: def}, 2
	}
	for _, e := range candidates[:n] {
		if v, ok := limits[e]; ok {
			return t, v, true
		}
	}
	return t, 0, false
}

// Clients are the enforced client quotas: the two byte rates and the
// connection rate, and the throttle time they give.
type Clients struct {
	// updateMu serializes updates (Refresh), so that the last one takes
	// the latest stored quotas.
	updateMu       sync.Mutex
	Produce, Fetch *ByteRate
	Connections    *ConnectionRate
	// throttleMs counts the throttle time given to clients, by API
	// (Produce, Fetch, and "connection" for the connection rate).
	throttleMs   *prometheus.CounterVec
	ProduceMs    prometheus.Counter
	FetchMs      prometheus.Counter
	ConnectionMs prometheus.Counter
}

// NewClients returns the client quotas measured over cfg's windows, none
// in force yet, and registers their throttle-time counter with reg.
func NewClients(cfg RateConfig, reg prometheus.Registerer) *Clients {
	q := &Clients{
		Produce:     NewByteRate(ProducerByteRate, cfg),
		Fetch:       NewByteRate(ConsumerByteRate, cfg),
		Connections: NewConnectionRate(cfg),
		throttleMs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_client_quota_throttle_milliseconds_total",
			Help: "Throttle time given to clients over a quota, by API (Produce, Fetch: producer_byte_rate, consumer_byte_rate; connection: connection_creation_rate).",
		}, []string{"api"}),
	}
	q.ProduceMs = q.throttleMs.WithLabelValues("Produce")
	q.FetchMs = q.throttleMs.WithLabelValues("Fetch")
	q.ConnectionMs = q.throttleMs.WithLabelValues("connection")
	reg.MustRegister(q.throttleMs)
	return q
}

// Refresh puts in force the quotas stored returns. Refreshes are
// serialized and stored is called within one, so that the last refresh
// takes the latest quotas. It resolves host names of IP entities, so the
// caller holds no lock that others wait on.
func (q *Clients) Refresh(ctx context.Context, stored func() map[Entity]map[string]float64) {
	q.updateMu.Lock()
	defer q.updateMu.Unlock()
	quotas := stored()
	q.Produce.Update(quotas)
	q.Fetch.Update(quotas)
	q.Connections.Update(ctx, quotas)
}

package broker

// Enforcing client byte-rate quotas, as Kafka's ClientQuotaManager does for
// producer_byte_rate and consumer_byte_rate.
//
// Resolution: a request's (user, client id) resolves to the most specific
// quota entity holding the key, in DefaultQuotaCallback's order (resolveQuota).
// Gregor has no SASL, so every client is Kafka's unauthenticated principal,
// user "ANONYMOUS".
//
// Measurement: every resolved entity has one sensor, shared by all the
// connections that resolve to it, whose rate is Kafka's Rate over a
// WindowedSum: quota.window.num samples of quota.window.size.seconds (rate).
// A value is recorded, then the rate measured; above the quota, the throttle
// time is Kafka's (observed - quota) / quota * window, not bounded (Kafka
// bounds only the request-percentage quota).
//
// Enforcement, KIP-219: the handler answers at once with throttle_time_ms
// and mutes its connection for that long (conn.mute): nothing more is read
// from it or handled until the time has passed.
//
// Cost: with no entity holding a quota type's key, recording it is one
// atomic load. Sensors idle for an hour are dropped, as Kafka expires them.

import (
	"context"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// anonymousUser is the principal name Kafka gives a client on a listener
// without authentication (KafkaPrincipal.ANONYMOUS), the only one Gregor has.
const anonymousUser = "ANONYMOUS"

// Byte-rate quota keys (QuotaConfig).
const (
	producerByteRate = "producer_byte_rate"
	consumerByteRate = "consumer_byte_rate"
)

// sensorExpiry is how long a sensor may go unrecorded before it is dropped
// (ClientQuotaManager.InactiveSensorExpirationTimeSeconds).
const sensorExpiry = time.Hour

// rateConfig is the quota window: samples of windowMs each.
type rateConfig struct {
	samples  int
	windowMs int64
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
func (r *rate) record(cfg rateConfig, v float64, now int64) {
	s := r.currentSample(now)
	if now-s.start >= cfg.windowMs {
		r.current = (r.current + 1) % (cfg.samples + 1)
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
func (r *rate) purge(cfg rateConfig, now int64) {
	expire := int64(cfg.samples) * cfg.windowMs
	for i := range r.samples {
		if now-r.samples[i].lastEvent >= expire {
			r.samples[i] = rateSample{start: now, lastEvent: now}
		}
	}
}

// windowSize is the time in ms the rate is measured over (Rate.windowSize).
func (r *rate) windowSize(cfg rateConfig, now int64) int64 {
	r.purge(cfg, now)
	oldest := r.currentSample(now).start
	for _, s := range r.samples {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, least := elapsed/cfg.windowMs, int64(cfg.samples-1); full < least {
		elapsed += (least - full) * cfg.windowMs
	}
	return max(elapsed, 1)
}

// measure returns the rate per second at now.
func (r *rate) measure(cfg rateConfig, now int64) float64 {
	r.purge(cfg, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowSize(cfg, now)) / 1000)
}

// quotaTags name a sensor as Kafka's quota metric tags do: the user and the
// client id, either empty when the resolved entity does not name it.
type quotaTags struct{ user, clientID string }

// quotaSensor is one resolved entity's rate.
type quotaSensor struct {
	rate       rate
	lastRecord int64 // ms
}

// byteRateQuota enforces one byte-rate quota key for every client.
type byteRateQuota struct {
	key string
	cfg rateConfig
	// limits holds the quota of every user/client-id entity that has the
	// key; nil when none has, which disables recording. Replaced, never
	// mutated.
	limits atomic.Pointer[map[quotaEntity]float64]

	mu        sync.Mutex // a leaf lock
	sensors   map[quotaTags]*quotaSensor
	lastSweep int64 // ms
}

func newByteRateQuota(key string, cfg rateConfig) *byteRateQuota {
	return &byteRateQuota{key: key, cfg: cfg, sensors: map[quotaTags]*quotaSensor{}}
}

// update takes the quota values of all entities, after a change.
func (q *byteRateQuota) update(quotas map[quotaEntity]map[string]float64) {
	limits := map[quotaEntity]float64{}
	for e, values := range quotas {
		if v, ok := values[q.key]; ok && !e.ip.present {
			limits[e] = v
		}
	}
	if len(limits) == 0 {
		q.limits.Store(nil)
		return
	}
	q.limits.Store(&limits)
}

// enabled reports whether any entity has a quota of this kind.
func (q *byteRateQuota) enabled() bool { return q.limits.Load() != nil }

// limitFor resolves a client's quota: the sensor's tags and the quota in
// bytes per second, ok false when no entity applies.
func (q *byteRateQuota) limitFor(user, clientID string) (quotaTags, float64, bool) {
	p := q.limits.Load()
	if p == nil {
		return quotaTags{}, 0, false
	}
	return resolveQuota(*p, user, clientID)
}

// maxValueInWindow is the most bytes a client may take at once without
// being throttled whatever it did before: the quota over all windows but
// one (ClientQuotaManager.getMaxValueInQuotaWindow); MaxInt32 without one.
func (q *byteRateQuota) maxValueInWindow(user, clientID string) int32 {
	_, limit, ok := q.limitFor(user, clientID)
	if !ok {
		return math.MaxInt32
	}
	v := limit * float64(q.cfg.samples-1) * float64(q.cfg.windowMs) / 1000
	if v >= math.MaxInt32 || math.IsNaN(v) { // Scala's toInt saturates; NaN is 0
		if math.IsNaN(v) {
			return 0
		}
		return math.MaxInt32
	}
	return int32(v)
}

// record adds v bytes for the client at now and returns the throttle time
// in ms: how long the client must wait for its rate to come back to its
// quota, 0 when within it. With no quota of this kind anywhere it records
// nothing.
func (q *byteRateQuota) record(user, clientID string, v float64, now int64) int32 {
	p := q.limits.Load()
	if p == nil {
		return 0
	}
	tags, limit, ok := resolveQuota(*p, user, clientID)
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.sensor(tags, now)
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

// unrecord takes back v bytes recorded at now, for a fetch whose answer is
// dropped because it is throttled.
func (q *byteRateQuota) unrecord(user, clientID string, v float64, now int64) {
	p := q.limits.Load()
	if p == nil {
		return
	}
	tags, _, _ := resolveQuota(*p, user, clientID)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sensor(tags, now).rate.record(q.cfg, -v, now)
}

// sensor returns the sensor for tags, created on first use, and drops the
// idle ones now and then. Called with mu held.
func (q *byteRateQuota) sensor(tags quotaTags, now int64) *quotaSensor {
	if now-q.lastSweep >= sensorExpiry.Milliseconds()/60 {
		q.lastSweep = now
		for t, s := range q.sensors {
			if now-s.lastRecord >= sensorExpiry.Milliseconds() {
				delete(q.sensors, t)
			}
		}
	}
	s := q.sensors[tags]
	if s == nil {
		s = &quotaSensor{}
		q.sensors[tags] = s
	}
	s.lastRecord = now
	return s
}

// resolveQuota finds a client's quota among limits as Kafka's
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
func resolveQuota(limits map[quotaEntity]float64, user, clientID string) (quotaTags, float64, bool) {
	named := func(s string) quotaName { return quotaName{present: true, name: s} }
	def := quotaName{present: true, isDefault: true}
	has := func(u, c quotaName) bool {
		_, ok := limits[quotaEntity{user: u, clientID: c}]
		return ok
	}
	tags := quotaTags{"", clientID}
	switch {
	case has(named(user), named(clientID)), has(named(user), def):
		tags = quotaTags{user, clientID}
	case has(named(user), quotaName{}):
		tags = quotaTags{user, ""}
	case has(def, named(clientID)), has(def, def):
		tags = quotaTags{user, clientID}
	case has(def, quotaName{}):
		tags = quotaTags{user, ""}
	}

	var candidates [4]quotaEntity
	var n int
	switch {
	case tags.user != "" && tags.clientID != "":
		candidates = [4]quotaEntity{
			{user: named(tags.user), clientID: named(tags.clientID)},
			{user: named(tags.user), clientID: def},
			{user: def, clientID: named(tags.clientID)},
			{user: def, clientID: def},
		}
		n = 4
	case tags.user != "":
		candidates[0], candidates[1], n = quotaEntity{user: named(tags.user)}, quotaEntity{user: def}, 2
	case tags.clientID != "":
		candidates[0], candidates[1], n = quotaEntity{clientID: named(tags.clientID)}, quotaEntity{clientID: def}, 2
	}
	for _, e := range candidates[:n] {
		if v, ok := limits[e]; ok {
			return tags, v, true
		}
	}
	return tags, 0, false
}

// clientQuotas are the enforced quotas.
type clientQuotas struct {
	// updateMu serializes updates (refreshQuotas), so that the last one
	// takes the latest stored quotas.
	updateMu       sync.Mutex
	produce, fetch *byteRateQuota
	connections    *connectionRateQuota
	// throttleMs counts the throttle time given to clients, by API
	// (Produce, Fetch, and "connection" for the connection rate).
	throttleMs   *prometheus.CounterVec
	produceMs    prometheus.Counter
	fetchMs      prometheus.Counter
	connectionMs prometheus.Counter
}

func newClientQuotas(cfg rateConfig, reg prometheus.Registerer) *clientQuotas {
	q := &clientQuotas{
		produce:     newByteRateQuota(producerByteRate, cfg),
		fetch:       newByteRateQuota(consumerByteRate, cfg),
		connections: newConnectionRateQuota(cfg),
		throttleMs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_client_quota_throttle_milliseconds_total",
			Help: "Throttle time given to clients over a quota, by API (Produce, Fetch: producer_byte_rate, consumer_byte_rate; connection: connection_creation_rate).",
		}, []string{"api"}),
	}
	q.produceMs = q.throttleMs.WithLabelValues("Produce")
	q.fetchMs = q.throttleMs.WithLabelValues("Fetch")
	q.connectionMs = q.throttleMs.WithLabelValues("connection")
	reg.MustRegister(q.throttleMs)
	return q
}

// refreshQuotas puts the stored quotas in force. It resolves host names
// of IP entities, so it is called holding no lock of the broker's.
func (b *Broker) refreshQuotas(ctx context.Context) {
	b.quotas.updateMu.Lock()
	defer b.quotas.updateMu.Unlock()
	b.quotas.update(ctx, b.storedQuotas())
}

// update takes the stored quotas after a change.
func (q *clientQuotas) update(ctx context.Context, quotas map[quotaEntity]map[string]float64) {
	q.produce.update(quotas)
	q.fetch.update(quotas)
	q.connections.update(ctx, quotas)
}

// clientIDOf is the request's client id, "" when null.
func clientIDOf(r *request) string {
	if r.hdr.ClientID == nil {
		return ""
	}
	return *r.hdr.ClientID
}

// throttleProduce records a produce request's size against the client's
// producer_byte_rate, as Kafka's handleProduceRequest does once the appends
// are done, whatever their outcome, and mutes the connection when the
// client is over its quota. It returns the throttle time in ms.
func (b *Broker) throttleProduce(r *request) int32 {
	q := b.quotas.produce
	if !q.enabled() {
		return 0
	}
	ms := q.record(anonymousUser, clientIDOf(r), float64(r.size), time.Now().UnixMilli())
	if ms > 0 {
		r.conn.mute(ms)
		b.quotas.produceMs.Add(float64(ms))
	}
	return ms
}

// capFetch lowers a fetch's max bytes to what the client's
// consumer_byte_rate lets it take in one go, and its min bytes with it, as
// Kafka's handleFetchRequest does before reading.
func (b *Broker) capFetch(r *request, req *kmsg.FetchRequest) {
	q := b.quotas.fetch
	if !q.enabled() {
		return
	}
	// Kafka's cap may be 0 (quota.window.num 1), which still returns the
	// first batch; a budget of 1 byte does here, where 0 means no limit.
	limit := max(q.maxValueInWindow(anonymousUser, clientIDOf(r)), 1)
	if req.MaxBytes <= 0 || req.MaxBytes > limit { // 0 is no limit to readFetch
		req.MaxBytes = limit
	}
	req.MinBytes = min(req.MinBytes, req.MaxBytes)
}

// throttleFetch records a fetch response's size against the client's
// consumer_byte_rate. Over the quota, the size is taken back, the
// connection muted, and the answer replaced by Kafka's throttled one: no
// error, no session, no partitions, the throttle time (FetchContext
// .getThrottledResponse). It returns the response to send.
func (b *Broker) throttleFetch(r *request, resp kmsg.Response) kmsg.Response {
	q := b.quotas.fetch
	if !q.enabled() {
		return resp
	}
	var fr *kmsg.FetchResponse
	var reply *fetchReply
	switch v := resp.(type) {
	case *fetchReply:
		reply, fr = v, v.FetchResponse
	case *kmsg.FetchResponse:
		fr = v
	default:
		return resp
	}
	size := float64(fetchResponseSize(r, fr, reply))
	user, client, now := anonymousUser, clientIDOf(r), time.Now().UnixMilli()
	ms := q.record(user, client, size, now)
	if ms <= 0 {
		return resp
	}
	q.unrecord(user, client, size, now)
	r.conn.mute(ms)
	b.quotas.fetchMs.Add(float64(ms))
	if reply != nil {
		reply.release()
	}
	fr.ThrottleMillis, fr.ErrorCode, fr.SessionID = ms, 0, 0
	fr.Topics = fr.Topics[:0]
	return resp
}

// fetchResponseSize is the size Kafka counts for a fetch response
// (FetchResponse.sizeOf): 4 bytes for the header and the body with its
// records, which reply holds apart from the encoding.
func fetchResponseSize(r *request, fr *kmsg.FetchResponse, reply *fetchReply) int {
	r.conn.out = fr.AppendTo(r.conn.out[:0])
	n := 4 + len(r.conn.out)
	if reply == nil {
		return n
	}
	flexible := fr.Version >= 12
	for i := range reply.records {
		if m := reply.records[i].Len(); m > 0 {
			// The encoding holds an empty records field in its place.
			n += int(m)
			if flexible {
				n += uvarintLen(uint64(m)+1) - 1
			}
		}
	}
	return n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

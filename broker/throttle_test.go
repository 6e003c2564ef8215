package broker

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestResolveQuotaMostSpecificEntityWins checks DefaultQuotaCallback's
// order: user and client id, user and default client id, user, default user
// and client id, default users and client ids, default user, client id,
// default client id; and the sensor tags each choice implies.
func TestResolveQuotaMostSpecificEntityWins(t *testing.T) {
	u := func(s string) quotaName { return quotaName{present: true, name: s} }
	def := quotaName{present: true, isDefault: true}
	none := quotaName{}
	all := map[quotaEntity]float64{
		{user: u("alice"), clientID: u("app")}: 1,
		{user: u("alice"), clientID: def}:      2,
		{user: u("alice"), clientID: none}:     3,
		{user: def, clientID: u("app")}:        4,
		{user: def, clientID: def}:             5,
		{user: def, clientID: none}:            6,
		{user: none, clientID: u("app")}:       7,
		{user: none, clientID: def}:            8,
	}
	// without returns all but the entities with the given limits.
	without := func(drop ...float64) map[quotaEntity]float64 {
		out := map[quotaEntity]float64{}
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
		limits   map[quotaEntity]float64
		user     string
		clientID string
		tags     quotaTags
		limit    float64
		ok       bool
	}{
		{"user and client id", all, "alice", "app", quotaTags{"alice", "app"}, 1, true},
		{"user and default client id", without(1), "alice", "app", quotaTags{"alice", "app"}, 2, true},
		{"user", without(1, 2), "alice", "app", quotaTags{"alice", ""}, 3, true},
		{"default user and client id", without(1, 2, 3), "alice", "app", quotaTags{"alice", "app"}, 4, true},
		{"default user and default client id", without(1, 2, 3, 4), "alice", "app", quotaTags{"alice", "app"}, 5, true},
		{"default user", without(1, 2, 3, 4, 5), "alice", "app", quotaTags{"alice", ""}, 6, true},
		{"client id", without(1, 2, 3, 4, 5, 6), "alice", "app", quotaTags{"", "app"}, 7, true},
		{"default client id", without(1, 2, 3, 4, 5, 6, 7), "alice", "app", quotaTags{"", "app"}, 8, true},
		{"none", without(1, 2, 3, 4, 5, 6, 7, 8), "alice", "app", quotaTags{"", "app"}, 0, false},
		{"other user gets the default user's", all, "bob", "app", quotaTags{"bob", "app"}, 4, true},
		{"other user and client get the defaults", all, "bob", "other", quotaTags{"bob", "other"}, 5, true},
		{"user's own client quota only", map[quotaEntity]float64{{user: u("alice"), clientID: u("app")}: 1},
			"alice", "other", quotaTags{"", "other"}, 0, false},
		// Tags (user, client) look the quota up from the most specific
		// user-and-client entity down, whichever kind chose the tags.
		{"default client of user beats default user's client",
			map[quotaEntity]float64{{user: u("alice"), clientID: def}: 2, {user: def, clientID: u("app")}: 4},
			"alice", "app", quotaTags{"alice", "app"}, 2, true},
		{"anonymous client id quota", map[quotaEntity]float64{{clientID: u("app")}: 7}, anonymousUser, "app", quotaTags{"", "app"}, 7, true},
		{"anonymous user quota", map[quotaEntity]float64{{user: u(anonymousUser)}: 9}, anonymousUser, "app", quotaTags{anonymousUser, ""}, 9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags, limit, ok := resolveQuota(tt.limits, tt.user, tt.clientID)
			if tags != tt.tags || limit != tt.limit || ok != tt.ok {
				t.Errorf("resolveQuota = %+v, %v, %v; want %+v, %v, %v", tags, limit, ok, tt.tags, tt.limit, tt.ok)
			}
		})
	}
}

// TestByteRateQuotaThrottleTimeAsKafka replays Kafka's
// ClientQuotaManagerTest.testQuotaViolation: 400 bytes a second under a
// 500 B/s quota, then a 2,300-byte spike half a second into a window, which
// Kafka throttles for exactly 2,100 ms, until the spike rolls out.
func TestByteRateQuotaThrottleTimeAsKafka(t *testing.T) {
	q := newByteRateQuota(producerByteRate, rateConfig{samples: 11, windowMs: 1000})
	def := quotaName{present: true, isDefault: true}
	q.update(map[quotaEntity]map[string]float64{
		{user: def, clientID: def}: {producerByteRate: 500, consumerByteRate: 1},
	})
	now := int64(1_700_000_000_000)
	for i := range 10 {
		if ms := q.record(anonymousUser, "unknown", 400, now); ms != 0 {
			t.Fatalf("record %d under the quota: throttled %d ms", i, ms)
		}
		now += 1000
	}
	now += 500
	if ms := q.record(anonymousUser, "unknown", 2300, now); ms != 2100 {
		t.Fatalf("spike throttled %d ms, Kafka says 2100", ms)
	}
	now += 2100
	for range 10 {
		q.record(anonymousUser, "unknown", 400, now)
		now += 1000
	}
	if ms := q.record(anonymousUser, "unknown", 0, now); ms != 0 {
		t.Fatalf("throttled %d ms once the spike rolled out", ms)
	}

	// Taking a value back restores the rate (a throttled fetch).
	q.record(anonymousUser, "unknown", 1e6, now)
	q.unrecord(anonymousUser, "unknown", 1e6, now)
	if ms := q.record(anonymousUser, "unknown", 0, now); ms != 0 {
		t.Fatalf("throttled %d ms after the value was taken back", ms)
	}

	// Sensors idle for an hour are dropped.
	q.record(anonymousUser, "other", 1, now)
	q.record(anonymousUser, "unknown", 1, now+sensorExpiry.Milliseconds())
	if _, ok := q.sensors[quotaTags{anonymousUser, "other"}]; ok {
		t.Error("an idle sensor was kept past its expiry")
	}
}

// TestRateWindowAsKafka checks Rate's window: at least samples-1 whole
// windows, and samples without an event in the monitored window purged.
func TestRateWindowAsKafka(t *testing.T) {
	cfg := rateConfig{samples: 11, windowMs: 1000}
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
	q := newByteRateQuota(producerByteRate, rateConfig{samples: 11, windowMs: 1000})
	q.update(map[quotaEntity]map[string]float64{
		{clientID: quotaName{present: true, name: "app"}}: {consumerByteRate: 1},
		{ip: quotaName{present: true, isDefault: true}}:   {"connection_creation_rate": 1},
	})
	if q.enabled() {
		t.Fatal("enabled without a producer_byte_rate")
	}
	if ms := q.record(anonymousUser, "app", 1e9, 0); ms != 0 || len(q.sensors) != 0 {
		t.Fatalf("record = %d, %d sensors", ms, len(q.sensors))
	}
	if got := q.maxValueInWindow(anonymousUser, "app"); got != math.MaxInt32 {
		t.Fatalf("maxValueInWindow without a quota = %d", got)
	}
	q.update(map[quotaEntity]map[string]float64{{clientID: quotaName{present: true, name: "app"}}: {producerByteRate: 1000}})
	if got := q.maxValueInWindow(anonymousUser, "app"); got != 10_000 {
		t.Fatalf("maxValueInWindow = %d, want 1000 B/s over 10 windows", got)
	}
}

// throttleCounter counts the throttles a franz-go client is told of.
type throttleCounter struct{ n, ms atomic.Int64 }

func (c *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	c.n.Add(1)
	c.ms.Add(d.Milliseconds())
}

// TestProducerByteRateThrottlesProducer sets producer_byte_rate for one
// client id and produces as fast as franz-go can for some seconds: the rate
// achieved stays near the quota, and the responses carry throttle times. A
// client with another id is not throttled, and removing the quota ends the
// throttling.
func TestProducerByteRateThrottlesProducer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// Three windows, so that the burst allowed before the first throttle
	// (the quota over samples-1 windows) is small against the run.
	b := startBroker(t, Config{QuotaWindowNum: 3})
	adm, _ := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	const quota = 100 << 10
	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(strp("client-id"), strp("slow")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	})

	producer := func(id string) (*kgo.Client, *throttleCounter) {
		var tc throttleCounter
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(id), kgo.DefaultProduceTopic("quota"),
			kgo.ProducerBatchMaxBytes(16<<10),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.WithHooks(&tc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, &tc
	}
	// Records are uncompressed: the quota counts bytes on the wire, and
	// identical values would compress to nothing.
	value := make([]byte, 1000)
	// produce keeps up to 64 records in flight until done, given the time
	// taken and the bytes sent, reports true, and returns the bytes
	// acknowledged.
	produce := func(cl *kgo.Client, done func(elapsed time.Duration, sent int64) bool) int64 {
		var acked atomic.Int64
		sem := make(chan struct{}, 64)
		start := time.Now()
		for sent := int64(0); !done(time.Since(start), sent); sent += int64(len(value)) {
			sem <- struct{}{}
			cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				} else {
					acked.Add(int64(len(r.Value)))
				}
				<-sem
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return acked.Load()
	}

	slow, slowThrottles := producer("slow")
	start := time.Now()
	// At least 5 s, and until a throttle is seen: a slow machine may need
	// longer to reach the quota.
	n := produce(slow, func(d time.Duration, _ int64) bool {
		return d >= 5*time.Second && (slowThrottles.n.Load() > 0 || d >= 60*time.Second)
	})
	rate := float64(n) / time.Since(start).Seconds()
	t.Logf("throttled producer: %d bytes at %.0f B/s (quota %d), %d throttles, %d ms", n, rate, quota, slowThrottles.n.Load(), slowThrottles.ms.Load())
	if rate > 2*quota {
		t.Errorf("throttled producer achieved %.0f B/s, over twice its quota of %d", rate, quota)
	}
	if slowThrottles.n.Load() == 0 {
		t.Error("no response carried a throttle time")
	}

	fast, fastThrottles := producer("fast")
	// Well past the slow client's burst, whatever the machine's speed.
	pastQuota := func(_ time.Duration, sent int64) bool { return sent > 4*quota }
	produce(fast, pastQuota)
	if fastThrottles.n.Load() != 0 {
		t.Errorf("a client without a quota was throttled %d times", fastThrottles.n.Load())
	}

	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(strp("client-id"), strp("slow")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}},
	})
	// The client is idle: every throttled response came before the removal.
	slowThrottles.n.Store(0)
	produce(slow, pastQuota)
	if got := slowThrottles.n.Load(); got != 0 {
		t.Errorf("%d throttles after the quota was removed", got)
	}
}

// TestConsumerByteRateThrottlesConsumer fills a topic, sets
// consumer_byte_rate for the consumer's client id, and consumes for some
// seconds: the bytes received stay near what the quota allows (its burst
// of samples-1 windows plus the quota times the time taken), and fetch
// responses carry throttle times.
func TestConsumerByteRateThrottlesConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const windows = 3
	b := startBroker(t, Config{QuotaWindowNum: windows})
	adm, _ := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("quota"), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	value := make([]byte, 1000)
	const records = 4000 // 4 MB, more than the run can take
	for range records {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	const quota = 200 << 10
	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(strp("client-id"), strp("reader")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quota}},
	})
	var tc throttleCounter
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("reader"), kgo.ConsumeTopics("quota"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&tc))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	start := time.Now()
	var got int64
	// At least 4 s, and until a throttle is seen (a slow machine may need
	// longer to reach the quota).
	for time.Since(start) < 4*time.Second || tc.n.Load() == 0 && time.Since(start) < 60*time.Second {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	elapsed := time.Since(start).Seconds()
	allowed := quota * ((windows - 1) + elapsed)
	t.Logf("consumed %d bytes in %.1f s; the quota allows about %.0f; %d throttles, %d ms", got, elapsed, allowed, tc.n.Load(), tc.ms.Load())
	if float64(got) > 2*allowed {
		t.Errorf("consumed %d bytes in %.1f s, over twice the %.0f the quota allows", got, elapsed, allowed)
	}
	if got == 0 {
		t.Error("consumed nothing")
	}
	if tc.n.Load() == 0 {
		t.Error("no fetch response carried a throttle time")
	}
}

// TestThrottledFetchIsEmpty checks Kafka's throttled fetch answer with a raw
// client: max bytes capped at the quota's window, then, once over the
// quota, no partitions, no error, the throttle time; the connection reads
// nothing more until that time has passed.
func TestThrottledFetchIsEmpty(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBroker(t, Config{QuotaWindowNum: 2})
	adm, cl := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1000)
	for range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quota", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The raw client's id is "test" (encodeRequest); 5000 B/s over one
	// window lets a fetch take 5000 bytes, whole batches of about 1 KB.
	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(strp("client-id"), strp("test")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 5000}},
	})
	rc := dialRaw(t, b.Addr())
	fetch := func(offset int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 12, 1<<20, 1, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "quota"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.do(req).(*kmsg.FetchResponse)
	}
	first := fetch(0)
	if first.ThrottleMillis != 0 || len(first.Topics) != 1 || len(first.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("first fetch: throttle %d, %d topics", first.ThrottleMillis, len(first.Topics))
	}
	if n := len(first.Topics[0].Partitions[0].RecordBatches); n > 5000 {
		t.Errorf("first fetch returned %d bytes, more than the quota's window allows", n)
	}
	var throttled *kmsg.FetchResponse
	var sent time.Time
	for i := int64(1); i < 20 && throttled == nil; i++ {
		sent = time.Now()
		if r := fetch(i); r.ThrottleMillis > 0 {
			throttled = r
		}
	}
	if throttled == nil {
		t.Fatal("no fetch was throttled")
	}
	if len(throttled.Topics) != 0 || throttled.ErrorCode != 0 || throttled.SessionID != 0 {
		t.Errorf("throttled fetch: %d topics, error %d, session %d; want an empty answer", len(throttled.Topics), throttled.ErrorCode, throttled.SessionID)
	}
	// The connection is muted: the next request is answered only once
	// the throttle time has passed.
	req := kmsg.NewPtrApiVersionsRequest()
	rc.do(req)
	if waited := time.Since(sent); waited < time.Duration(throttled.ThrottleMillis)*time.Millisecond {
		t.Errorf("answered after %v, within the %d ms throttle", waited, throttled.ThrottleMillis)
	}
}

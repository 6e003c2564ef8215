package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	// Not parallel: it measures rates, which tests beside it would skew.
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
	// Not parallel: it measures rates, which tests beside it would skew.
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
	// Not parallel: it times a throttle, which tests beside it would skew.
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

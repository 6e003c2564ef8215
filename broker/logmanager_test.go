package broker

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/storage"
)

// shrinkSegments makes a partition's log roll every few hundred bytes (the
// topic config's minimum is 1 MiB), so that tests get closed segments from
// a handful of records.
func shrinkSegments(t *testing.T, p *partition.Partition, segmentBytes int64) {
	t.Helper()
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes, cfg.FileDeleteDelay = segmentBytes, 0
	if err := p.Log().SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

func partitionOf(t *testing.T, b *Broker, topic string, index int32) *partition.Partition {
	t.Helper()
	tp := b.lookupTopic(topic)
	if tp == nil {
		t.Fatalf("no topic %s", topic)
	}
	return tp.partitions[index]
}

func createCompactTestTopic(t *testing.T, adm *kadm.Client, name string, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}
}

func str(s string) *string { return &s }

// TestCompactedTopicConsumedAfterCleaningReturnsLatestPerKey produces many
// values for a few keys to a compacted topic, lets the background cleaner
// run, and consumes from the start with franz-go.
func TestCompactedTopicConsumedAfterCleaningReturnsLatestPerKey(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{LogCleanerBackoffMs: 10})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("compacted"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	createCompactTestTopic(t, adm, "compacted", map[string]*string{
		"cleanup.policy": str("compact"), "min.cleanable.dirty.ratio": str("0.01"),
	})
	p := partitionOf(t, b, "compacted", 0)
	shrinkSegments(t, p, 600)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	latest := map[string]string{}
	for i := range 200 {
		key, value := fmt.Sprint("key-", i%7), fmt.Sprint("value-", i)
		var rec *kgo.Record
		if i%7 == 3 && i > 150 {
			rec = &kgo.Record{Key: []byte(key)} // a tombstone, kept for delete.retention.ms
			value = ""
		} else {
			rec = &kgo.Record{Key: []byte(key), Value: []byte(value)}
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		latest[key] = value
	}
	waitFor(t, "the cleaner to clean the log", func() bool {
		fd, err := p.Log().FirstDirtyOffset()
		return err == nil && fd > 0
	})
	firstDirty, _ := p.Log().FirstDirtyOffset()
	end := p.Log().EndOffset()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("compacted"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < end-1 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records, never reached offset %d", len(got), end-1)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		got = append(got, fs.Records()...)
	}
	if len(got) >= 200 {
		t.Fatalf("consumed %d records: nothing was compacted", len(got))
	}
	seenBelowDirty := map[string]bool{}
	final := map[string]string{}
	for i, r := range got {
		if i > 0 && r.Offset <= got[i-1].Offset {
			t.Fatalf("offset %d after %d", r.Offset, got[i-1].Offset)
		}
		if r.Offset < firstDirty {
			if seenBelowDirty[string(r.Key)] {
				t.Fatalf("key %s twice below the cleaned point %d", r.Key, firstDirty)
			}
			seenBelowDirty[string(r.Key)] = true
		}
		final[string(r.Key)] = string(r.Value)
	}
	for k, v := range latest {
		if final[k] != v {
			t.Fatalf("key %s: consumed latest %q, produced latest %q", k, final[k], v)
		}
	}
}

// TestRetentionTaskDeletesByBytesAndMovesEarliest lets the background
// retention task enforce retention.bytes: ListOffsets earliest follows the
// new log start, and a fetch below it is OFFSET_OUT_OF_RANGE.
func TestRetentionTaskDeletesByBytesAndMovesEarliest(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{LogRetentionCheckIntervalMs: 10})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("bounded"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	createCompactTestTopic(t, adm, "bounded", map[string]*string{"retention.bytes": str("2000")})
	p := partitionOf(t, b, "bounded", 0)
	shrinkSegments(t, p, 500)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 60 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record-%03d-%080d", i, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "retention to bring the log under retention.bytes plus a segment", func() bool {
		return p.Log().Size() <= 2000+500 && p.Log().StartOffset() > 0
	})
	start := p.Log().StartOffset()
	offs, err := adm.ListStartOffsets(ctx, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("bounded", 0); o.Offset < start || o.Err != nil {
		t.Fatalf("ListOffsets earliest = %+v, log start %d", o, start)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bounded", b.lookupTopic("bounded").id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if kerr.ErrorForCode(got.ErrorCode) != kerr.OffsetOutOfRange {
		t.Fatalf("fetch below the start %d: error %v, want OFFSET_OUT_OF_RANGE", start, kerr.ErrorForCode(got.ErrorCode))
	}
}

// TestRetentionByTimeWithInjectedClock runs the retention pass with the
// clock moved past retention.ms: the closed segments go, the active one
// (rolled because it alone breached, as Kafka does) too.
func TestRetentionByTimeWithInjectedClock(t *testing.T) {
	t.Parallel()
	no := false
	b := startBroker(t, Config{LogRetentionCheckIntervalMs: math.MaxInt32, LogCleanerEnable: &no})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("timed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createCompactTestTopic(t, kadm.NewClient(cl), "timed", map[string]*string{"retention.ms": str("60000")})
	p := partitionOf(t, b, "timed", 0)
	shrinkSegments(t, p, 400)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%0100d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := p.Log().EndOffset()
	b.logs.enforceRetention() // now: nothing is a minute old
	if p.Log().StartOffset() != 0 {
		t.Fatalf("retention deleted fresh data: start %d", p.Log().StartOffset())
	}
	b.logs.now = func() int64 { return nowMillis() + 120_000 }
	b.logs.enforceRetention()
	if p.Log().StartOffset() != end || p.Log().EndOffset() != end || p.Log().Size() != 0 {
		t.Fatalf("after retention: start %d end %d size %d; want everything gone at %d", p.Log().StartOffset(), p.Log().EndOffset(), p.Log().Size(), end)
	}
	// The log goes on from there.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if p.Log().EndOffset() != end+1 {
		t.Fatalf("end %d after one more record, want %d", p.Log().EndOffset(), end+1)
	}
}

// TestConsumerOffsetsCompactedAndReplayed commits offsets many times,
// cleans __consumer_offsets, restarts the broker and checks that the group's
// latest offsets were replayed from the compacted log.
func TestConsumerOffsetsCompactedAndReplayed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	no, zero := false, int64(0)
	cfg := Config{DataDir: dir, OffsetsTopicPartitions: 1, LogCleanerEnable: &no, GroupInitialRebalanceDelayMs: &zero}
	b := startBroker(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	createCompactTestTopic(t, adm, "data", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	commit := func(group string, off int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "data", Partition: 0, At: off, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err != nil || resp.Error() != nil {
			t.Fatalf("commit: %v %v", err, resp.Error())
		}
	}
	commit("g", 0)
	commit("gone", 5)
	p := partitionOf(t, b, offsetsTopic, 0)
	shrinkSegments(t, p, 400)
	for i := range 40 {
		commit("g", int64(i))
	}
	if resp, err := adm.DeleteGroups(ctx, "gone"); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, resp.Error())
	}
	for i := 40; i < 50; i++ {
		commit("g", int64(i))
	}
	sizeBefore := p.Log().Size()
	lm := b.logs
	ref := partitionRef{p: p, cfg: b.lookupTopic(offsetsTopic).effective.Load()}
	if !ref.cfg.compact {
		t.Fatal("__consumer_offsets is not compacted")
	}
	res, err := p.Log().Clean(ctx, lm.compactionPolicy(ref), lm.now())
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesOut >= res.BytesIn || p.Log().Size() >= sizeBefore {
		t.Fatalf("cleaning did not shrink __consumer_offsets: %+v", res)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, cfg)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b2.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	adm2 := kadm.NewClient(cl2)
	offs, err := adm2.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("data", 0); !ok || o.At != 49 {
		t.Fatalf("replayed offset %+v, want 49", o)
	}
	groups, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups["gone"]; ok {
		t.Fatal("the deleted group came back after compaction and replay")
	}
}

package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
)

// The admin APIs driven by franz-go's admin client, kadm, against a broker
// with a real data directory.

func newAdmin(t *testing.T, addr string) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl
}

func topicConfigValue(t *testing.T, ctx context.Context, adm *kadm.Client, topic, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describing %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("%s has no config %s", topic, name)
	return "", 0
}

func TestKadmAlteredTopicConfigsSurviveRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	first := startBroker(t, Config{DataDir: dir})
	adm, _ := newAdmin(t, first.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("5000")}, "t"); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("300")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")},
	}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := resps.On("t", nil); err != nil || r.Err != nil {
		t.Fatalf("altering: %v %v", err, r.Err)
	}
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: kmsg.StringPtr("1")}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := bad.On("t", nil); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Fatalf("unknown config: %v, want INVALID_CONFIG", r.Err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := startBroker(t, Config{DataDir: dir})
	adm, cl := newAdmin(t, second.Addr())
	want := []struct {
		name, value string
		source      int8
	}{
		{"max.message.bytes", "300", topicconfig.SourceDynamicTopic},
		{"retention.ms", "604800000", topicconfig.SourceDefault},
		{"cleanup.policy", "delete,compact", topicconfig.SourceDynamicTopic},
	}
	for _, w := range want {
		if v, source := topicConfigValue(t, ctx, adm, "t", w.name); v != w.value || source != kmsg.ConfigSource(w.source) {
			t.Errorf("after restart %s = %q (source %v), want %q (source %d)", w.name, v, source, w.value, w.source)
		}
	}
	big := &kgo.Record{Topic: "t", Value: make([]byte, 1000)}
	rand.Read(big.Value) // incompressible
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("producing 1000 bytes with max.message.bytes=300: %v, want MESSAGE_TOO_LARGE", err)
	}
}

func TestKadmDeleteRecordsThenConsumeFromTheNewStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBroker(t, Config{DataDir: t.TempDir()})
	adm, cl := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offsets kadm.Offsets
	offsets.AddOffset("t", 0, 6, -1)
	resps, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resps.Lookup("t", 0); !ok || r.Err != nil || r.LowWatermark != 6 {
		t.Fatalf("delete records: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("t", 0); o.Offset != 6 {
		t.Fatalf("start offset %d, want 6", o.Offset)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []int64
	for len(got) < 4 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if int64(r.Value[0]) != r.Offset {
				t.Errorf("offset %d holds value %d", r.Offset, r.Value[0])
			}
			got = append(got, r.Offset)
		})
	}
	if got[0] != 6 || len(got) != 4 {
		t.Fatalf("consumed offsets %v, want 6-9", got)
	}
}

func TestKadmDescribeClusterAndLogDirs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir, NodeID: 7})
	adm, cl := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != b.ClusterID() || resp.ControllerID != 7 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 7 {
		t.Fatalf("describe cluster: %+v", resp)
	}

	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs, ok := all[7]
	if !ok || dirs.Error() != nil {
		t.Fatalf("log dirs: %+v", all)
	}
	d := dirs[dir]
	if d.Dir != dir || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
		t.Fatalf("log dir %+v, want %s with its volume's sizes", d, dir)
	}
	p0, ok0 := dirs.LookupPartition("t", 0)
	p1, ok1 := dirs.LookupPartition("t", 1)
	// One record went to one of the two partitions.
	if !ok0 || !ok1 || p0.Size+p1.Size <= 0 || (p0.Size == 0) == (p1.Size == 0) {
		t.Fatalf("partition sizes %+v %+v", p0, p1)
	}

	brokerConfigs, err := adm.DescribeBrokerConfigs(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := brokerConfigs.On("7", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("broker configs: %v %v", err, rc.Err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "log.dirs" {
			found = c.MaybeValue() == dir
		}
	}
	if !found {
		t.Fatalf("log.dirs is not %s in %+v", dir, rc.Configs)
	}
}

func TestAlteredSegmentBytesRollsTheNextAppend(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	adm, cl := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("1048576")}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := resps.On("t", nil); err != nil || r.Err != nil {
		t.Fatalf("altering: %v %v", err, r.Err)
	}
	for i := 0; i < 4; i++ {
		rec := &kgo.Record{Topic: "t", Value: make([]byte, 400<<10)}
		rand.Read(rec.Value)
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "t-0"))
	if err != nil {
		t.Fatal(err)
	}
	segments := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			segments++
		}
	}
	if segments < 2 {
		t.Fatalf("%d segments after 1.6 MB with segment.bytes=1048576, want a roll", segments)
	}
}

// TestSegmentMsRollsOnRecordTimestamps creates a topic with segment.ms=60000
// and produces records whose CreateTime timestamps are a minute apart: the
// append of a record more than segment.ms after the active segment's first
// rolls it, as Kafka measures segment age (no waiting on the wall clock).
func TestSegmentMsRollsOnRecordTimestamps(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	adm, cl := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.ms": kmsg.StringPtr("60000")}, "t"); err != nil {
		t.Fatal(err)
	}
	segments := func() int {
		entries, err := os.ReadDir(filepath.Join(dir, "t-0"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".log") {
				n++
			}
		}
		return n
	}
	start := time.Now().Add(-time.Hour)
	for i, step := range []struct {
		after    time.Duration
		segments int
	}{
		{0, 1},
		{60 * time.Second, 1},                  // exactly segment.ms: no roll
		{60*time.Second + time.Millisecond, 2}, // more: roll
		{2 * time.Minute, 2},                   // a minute after the new segment's first record
		{3 * time.Minute, 3},
	} {
		rec := &kgo.Record{Topic: "t", Value: []byte("v"), Timestamp: start.Add(step.after)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if got := segments(); got != step.segments {
			t.Fatalf("record %d at +%v: %d segments, want %d", i, step.after, got, step.segments)
		}
	}
}

package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFranzGoProduce100B is the bench's "franz-go 100 B" workload against
// an in-process broker with its data on disk: franz-go producing 100-byte
// records as fast as it can into 6 partitions, uncompressed, acks=all,
// linger 5 ms. Client and broker share the process, so a CPU profile of it
// (go test -run '^$' -bench FranzGoProduce -cpuprofile cpu.prof ./broker)
// shows both; -focus 'broker\.\(\*conn\)\.(serve|readLoop)' in
// `go tool pprof` narrows it to the broker's connection goroutines.
func BenchmarkFranzGoProduce100B(b *testing.B) {
	br := startBroker(b, Config{DataDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	c := dialRaw(b, br.Addr())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bench", 6, 1
	req.Topics = append(req.Topics, rt)
	if resp := c.do(req).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		b.Fatalf("create: %d", resp.Topics[0].ErrorCode)
	}
	value := make([]byte, 100)
	var failed error
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed == nil {
			failed = fmt.Errorf("produce: %w", err)
		}
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		cl.Produce(ctx, &kgo.Record{Value: value}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if failed != nil {
		b.Fatal(failed)
	}
}

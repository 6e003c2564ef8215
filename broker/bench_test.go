package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// BenchmarkProducePath measures what the broker does for one produce request
// after decoding it: batch validation (CRC, decompression, records),
// stamping and the append to an in-memory log. It reports per-record cost
// and allocations; the goal is no allocation per record.
func BenchmarkProducePath(b *testing.B) {
	for _, codec := range []batch.Compression{batch.None, batch.LZ4, batch.Zstd} {
		b.Run(codec.String(), func(b *testing.B) {
			br := startBroker(b, Config{})
			c := dialRaw(b, br.Addr())
			createTopicB(b, c, "bench")
			const records = 100
			recs := make([]batch.Record, records)
			for i := range recs {
				recs[i] = batch.Record{OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("key-%d", i)), Value: make([]byte, 100)}
			}
			one, err := batch.AppendBatch(nil, batch.BuildOptions{Compression: codec, BaseTimestamp: time.Now().UnixMilli(),
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
			if err != nil {
				b.Fatal(err)
			}
			req := produceRequest(9, 1, "bench", 0, one)
			r := &request{ctx: context.Background(), conn: &conn{b: br}}
			b.SetBytes(int64(len(one)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				batch.SetBaseOffset(one, 0) // the previous append stamped it
				resp, err := handleProduce(br, r, req)
				if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
					b.Fatal("produce failed", err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
		})
	}
}

func createTopicB(b *testing.B, c *rawConn, name string) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	req.Topics = append(req.Topics, rt)
	if resp := c.do(req).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		b.Fatalf("create: %d", resp.Topics[0].ErrorCode)
	}
}

// BenchmarkProduceConn sends produce requests of one 64 KiB batch to a broker
// on disk through a real connection, one at a time, so that it measures what BenchmarkProducePath leaves out: the
// frame read, the request header and body decoding, the hand-off to the
// connection's handler and the response. Allocations are the whole process's
// (the client side reuses its buffers).
func BenchmarkProduceConn(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			br := startBroker(b, Config{DataDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			c := dialRaw(b, br.Addr())
			createTopicB(b, c, "bench")
			records := 64 << 10 / size
			recs := make([]batch.Record, records)
			for i := range recs {
				recs[i] = batch.Record{OffsetDelta: int32(i), Value: make([]byte, size)}
			}
			one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(),
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
			if err != nil {
				b.Fatal(err)
			}
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks = -1
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "bench"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = one
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			frame := encodeRequest(req, 1)
			var in []byte
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(9)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.nc.Write(frame); err != nil {
					b.Fatal(err)
				}
				if in, err = protocol.ReadFrame(c.nc, 1<<20, in); err != nil {
					b.Fatal(err)
				}
			}
			// The last response: correlation id, then the body (flexible: a tag byte).
			if err := resp.ReadFrom(in[5:]); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				b.Fatal("produce failed", err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
		})
	}
}

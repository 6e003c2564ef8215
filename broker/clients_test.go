package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The integration tests drive an in-process broker with real client
// libraries: franz-go, IBM/sarama and segmentio/kafka-go. Each produces
// records with keys, headers and timestamps in every codec and reads them
// all back exactly.

const recordsPerTest = 10000

// testRecord is what every client writes and must read back.
type testRecord struct {
	key, value []byte
	header     []byte
	ts         time.Time
}

// recordBase is the first test record's timestamp: recent enough for
// message.timestamp.after.max.ms and fixed for the whole test run, so a test
// can rebuild what an earlier step wrote.
var recordBase = time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)

func testRecords(n int) []testRecord {
	base := recordBase
	out := make([]testRecord, n)
	for i := range out {
		value := make([]byte, 100)
		for j := range value {
			value[j] = byte(i*7 + j)
		}
		out[i] = testRecord{
			key:    []byte(fmt.Sprintf("key-%d", i)),
			value:  value,
			header: []byte(fmt.Sprintf("h-%d", i)),
			ts:     base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

func checkRecord(t *testing.T, i int, want testRecord, key, value []byte, headerKey string, header []byte, ts time.Time, offset int64) {
	t.Helper()
	if offset != int64(i) || !bytes.Equal(key, want.key) || !bytes.Equal(value, want.value) ||
		headerKey != "h" || !bytes.Equal(header, want.header) || !ts.Equal(want.ts) {
		t.Fatalf("record %d: offset %d key %q header %s=%q ts %v; want key %q header h=%q ts %v",
			i, offset, key, headerKey, header, ts, want.key, want.header, want.ts)
	}
}

// franzRecords turns test records into franz-go records.
func franzRecords(want []testRecord) []*kgo.Record {
	recs := make([]*kgo.Record, len(want))
	for i, w := range want {
		recs[i] = &kgo.Record{Key: w.key, Value: w.value, Timestamp: w.ts, Headers: []kgo.RecordHeader{{Key: "h", Value: w.header}}}
	}
	return recs
}

var franzCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

func franzProduceConsume(t *testing.T, addr, topic string, codec kgo.CompressionCodec) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	want := testRecords(recordsPerTest)
	if err := cl.ProduceSync(ctx, franzRecords(want)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	franzConsume(t, ctx, addr, topic, want)
}

func franzConsume(t *testing.T, ctx context.Context, addr, topic string, want []testRecord) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	i := 0
	for i < len(want) {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatalf("after %d records: %v", i, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if i < len(want) {
				checkRecord(t, i, want[i], r.Key, r.Value, r.Headers[0].Key, r.Headers[0].Value, r.Timestamp, r.Offset)
			}
			i++
		})
	}
	if i != len(want) {
		t.Fatalf("read %d records, want %d", i, len(want))
	}
}

func TestFranzGoProduceConsumeEveryCodec(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{DataDir: t.TempDir()}) // on disk: records leave by sendfile
	for name, codec := range franzCodecs {
		t.Run(name, func(t *testing.T) { franzProduceConsume(t, b.Addr(), "franz-"+name, codec) })
	}
}

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func TestSaramaProduceConsumeEveryCodec(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{DataDir: t.TempDir()}) // on disk: records leave by sendfile
	// Sarama pins request versions from Config.Version: a modern pin and an
	// old one (Produce v3, Fetch v4) that Kafka 4 still serves.
	for _, version := range []sarama.KafkaVersion{sarama.V3_6_0_0, sarama.V2_1_0_0, sarama.V0_11_0_0} {
		for name, codec := range saramaCodecs {
			if codec == sarama.CompressionZSTD && !version.IsAtLeast(sarama.V2_1_0_0) {
				continue // zstd needs Produce v7 (Kafka 2.1)
			}
			t.Run(version.String()+"/"+name, func(t *testing.T) {
				t.Parallel() // each on a topic of its own
				saramaProduceConsume(t, b.Addr(), "sarama-"+version.String()+"-"+name, version, codec)
			})
		}
	}
}

func saramaProduceConsume(t *testing.T, addr, topic string, version sarama.KafkaVersion, codec sarama.CompressionCodec) {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codec
	cfg.Producer.Flush.Messages = 500
	cfg.Producer.Flush.Frequency = time.Millisecond // without it, a tail under 500 messages waits forever
	cfg.Consumer.Return.Errors = true

	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	want := testRecords(recordsPerTest)
	msgs := make([]*sarama.ProducerMessage, len(want))
	for i, w := range want {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(w.key), Value: sarama.ByteEncoder(w.value),
			Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: w.header}}, Timestamp: w.ts}
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	timeout := time.After(60 * time.Second)
	for i := range want {
		select {
		case m := <-pc.Messages():
			checkRecord(t, i, want[i], m.Key, m.Value, string(m.Headers[0].Key), m.Headers[0].Value, m.Timestamp, m.Offset)
		case err := <-pc.Errors():
			t.Fatalf("after %d records: %v", i, err)
		case <-timeout:
			t.Fatalf("timed out after %d records", i)
		}
	}
}

var kafkaGoCodecs = map[string]kafkago.Compression{
	"none": 0, "gzip": kafkago.Gzip, "snappy": kafkago.Snappy, "lz4": kafkago.Lz4, "zstd": kafkago.Zstd,
}

func TestKafkaGoProduceConsumeEveryCodec(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{DataDir: t.TempDir()}) // on disk: records leave by sendfile
	for name, codec := range kafkaGoCodecs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			topic := "kafka-go-" + name
			conn, err := kafkago.DialContext(ctx, "tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.CreateTopics(kafkago.TopicConfig{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
				t.Fatal(err)
			}
			// A transport of its own: the shared default one caches metadata
			// from before the topic existed for several seconds.
			transport := &kafkago.Transport{}
			defer transport.CloseIdleConnections()
			w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: topic, Compression: codec, Transport: transport,
				BatchSize: 1000, BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
			defer w.Close()
			want := testRecords(recordsPerTest)
			msgs := make([]kafkago.Message, len(want))
			for i, rec := range want {
				msgs[i] = kafkago.Message{Key: rec.key, Value: rec.value, Time: rec.ts,
					Headers: []kafkago.Header{{Key: "h", Value: rec.header}}}
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatal(err)
			}
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b.Addr()}, Topic: topic, Partition: 0, MaxBytes: 10 << 20,
				MaxWait: 200 * time.Millisecond}) // Close waits out the reader's last long poll
			defer r.Close()
			for i := range want {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("after %d records: %v", i, err)
				}
				checkRecord(t, i, want[i], m.Key, m.Value, m.Headers[0].Key, m.Headers[0].Value, m.Time, m.Offset)
			}
		})
	}
}

func TestRestartServesTheSameTopicsAndRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := startBroker(t, Config{DataDir: dir})
	franzProduceConsume(t, first.Addr(), "durable", kgo.Lz4Compression())
	clusterID := first.ClusterID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := startBroker(t, Config{DataDir: dir})
	if second.ClusterID() != clusterID {
		t.Fatalf("cluster id changed across the restart: %s -> %s", clusterID, second.ClusterID())
	}
	franzConsume(t, ctx, second.Addr(), "durable", testRecords(recordsPerTest))
}

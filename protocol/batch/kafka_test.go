package batch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/golang/snappy"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaCode is the Kafka error code the broker should answer for each outcome
// of Validate, as Apache Kafka answers (see errors.go).
func kafkaCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrTruncated):
		return 87 // no complete batch: INVALID_RECORD
	case errors.Is(err, ErrCorrupt):
		return 2 // CORRUPT_MESSAGE
	case errors.Is(err, ErrInvalidRecord), errors.Is(err, ErrUnsupportedMagic):
		return 87 // INVALID_RECORD
	case errors.Is(err, ErrUnsupportedCompression), errors.Is(err, ErrDecompress):
		return -1 // UNKNOWN_SERVER_ERROR
	}
	return -100
}

// kafkaTopic connects to the Apache Kafka broker named by
// GREGOR_KAFKA_BOOTSTRAP (skipping the test if unset), creates a one-partition
// topic and waits until it has a leader. Start a broker with
// compat-tests/kafka/kafka.sh start DIR.
func kafkaTopic(t *testing.T, ctx context.Context, topic string, configs ...string) (*kgo.Client, [16]byte) {
	bootstrap := os.Getenv("GREGOR_KAFKA_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("GREGOR_KAFKA_BOOTSTRAP is not set")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], kmsg.StringPtr(configs[i+1])
		ct.Configs = append(ct.Configs, cfg)
	}
	create.Topics = append(create.Topics, ct)
	if _, err := create.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	for { // until the topic has a leader
		meta := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
		resp, err := meta.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) == 1 &&
			resp.Topics[0].Partitions[0].Leader >= 0 {
			return cl, resp.Topics[0].TopicID
		}
		select {
		case <-ctx.Done():
			t.Fatal("topic has no leader")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kafkaProduce sends records to partition 0 of the topic with acks=1 and
// returns the partition's response.
func kafkaProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, topicID [16]byte, records []byte) kmsg.ProduceResponseTopicPartition {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID // by name before v13, by id since
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestErrorCodesMatchApacheKafka produces each kind of bad batch to a real
// Apache Kafka broker (4.2.2 when written) and checks that the code it
// answers is the one the sentinel Validate returns maps to. It runs only with
// GREGOR_KAFKA_BOOTSTRAP set (see kafkaTopic).
func TestErrorCodesMatchApacheKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "gregor-batch-error-codes"
	cl, topicID := kafkaTopic(t, ctx, topic)

	// Timestamps near now, so that message.timestamp.*.max.ms accept them.
	now := time.Now().UnixMilli()
	build := func(c Compression, recs []Record) []byte {
		opts := defaultOptions(c)
		opts.BaseTimestamp = now
		for i := range recs {
			recs[i].TimestampDelta = int64(i)
		}
		return mustBuild(t, opts, recs)
	}
	good := func(c Compression) []byte { return build(c, sampleRecords(5)) }
	edit := func(b []byte, f func(b []byte), crc bool) []byte {
		b = append([]byte(nil), b...)
		f(b)
		if crc {
			fixCRC(b)
		}
		return b
	}
	rec := func(d int64) []byte { return record([]byte{0}, vi(0), vi(d), vi(1), []byte("k"), vi(-1), vi(0)) }
	two := append(rec(0), rec(1)...)
	be := binary.BigEndian
	dependent := append([]byte(nil), good(LZ4)[HeaderSize:]...)
	dependent[4] &^= 0x20 // FLG: blocks not independent (and the header checksum now wrong)

	cases := map[string][]byte{
		"valid none":                   good(None),
		"valid gzip":                   good(Gzip),
		"valid snappy":                 good(Snappy),
		"valid lz4":                    good(LZ4),
		"valid zstd":                   good(Zstd),
		"crc mismatch":                 edit(good(None), func(b []byte) { b[len(b)-3] ^= 0x10 }, false),
		"length below 14":              edit(good(None), func(b []byte) { be.PutUint32(b[offLength:], 13) }, false),
		"magic 3":                      edit(good(None), func(b []byte) { b[offMagic] = 3 }, false),
		"magic 1":                      edit(good(None), func(b []byte) { b[offMagic] = 1 }, false),
		"truncated":                    good(None)[:70],
		"smaller than a header":        edit(good(None)[:40], func(b []byte) { be.PutUint32(b[offLength:], 28) }, false),
		"base offset 5":                edit(good(None), func(b []byte) { be.PutUint64(b, 5) }, false),
		"codec 5":                      edit(good(None), func(b []byte) { b[offAttributes+1] |= 5 }, true),
		"control batch":                edit(good(None), func(b []byte) { b[offAttributes+1] |= attrControl }, true),
		"producer id without sequence": edit(good(None), func(b []byte) { be.PutUint64(b[offProducerID:], 7) }, true),
		"count differs from offsets":   rawBatch(t, None, 2, 0, two),
		"fewer records than counted":   rawBatch(t, None, 3, 2, two),
		"more records than counted":    rawBatch(t, None, 1, 0, two),
		"negative record length":       rawBatch(t, None, 1, 0, vi(-3)),
		"negative header count":        rawBatch(t, None, 1, 0, record([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(-1))),
		"gzip garbage":                 withRawBody(good(None), Gzip, make([]byte, 40)),
		"zstd garbage":                 withRawBody(good(None), Zstd, make([]byte, 40)),
		"lz4 garbage":                  withRawBody(good(None), LZ4, make([]byte, 40)),
		"snappy garbage":               withRawBody(good(None), Snappy, []byte{0x20, 0xff, 0xff, 0xff, 0x0f, 1, 2}),
		"zstd bad record":              rawBatch(t, Zstd, 1, 0, vi(-3)),
		"gzip fewer records":           rawBatch(t, Gzip, 3, 2, two),
		"lz4 dependent blocks":         withRawBody(good(None), LZ4, dependent),
		"raw snappy":                   withRawBody(good(None), Snappy, snappy.Encode(nil, good(None)[HeaderSize:])),
		"attributes high byte":         edit(good(None), func(b []byte) { b[offAttributes] = 0x80 }, true),
		"six-byte varint":              rawBatch(t, None, 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}),
		"six-byte varint, gzip":        rawBatch(t, Gzip, 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}),
		"six-byte varint in a record":  rawBatch(t, None, 1, 0, record([]byte{0}, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, vi(0), vi(-1), vi(-1), vi(0))),
		"58 bytes":                     edit(good(None)[:58], func(b []byte) { be.PutUint32(b[offLength:], 46) }, false),
	}
	// Where Gregor deliberately differs from Kafka: the Kafka code, and why.
	differs := map[string]int16{
		// Kafka 4.2 reads the producer id of a batch shorter than its
		// header before checking the size, and fails with an
		// IndexOutOfBoundsException; Validate reports CORRUPT_MESSAGE,
		// what Kafka's own size check (DefaultRecordBatch.isValid) means.
		"smaller than a header": -1,
		// In an uncompressed batch Kafka reads the record-length varint
		// outside the try that turns IllegalArgumentException into
		// InvalidRecordException (DefaultRecord.readFrom(ByteBuffer, ...)),
		// so a varint longer than 5 bytes there escapes as
		// UNKNOWN_SERVER_ERROR. Validate says INVALID_RECORD, as Kafka does
		// for the same bytes compressed or anywhere inside a record.
		"six-byte varint": -1,
	}
	gapped := []Record{{OffsetDelta: 0, Value: []byte("a")}, {OffsetDelta: 2, Value: []byte("b")}}
	cases["offset deltas 0,2"] = build(None, gapped)
	cases["zstd offset deltas 0,2"] = build(Zstd, gapped)
	cases["offset deltas 1,2"] = build(LZ4, []Record{{OffsetDelta: 1}, {OffsetDelta: 2}})
	// Whole produce blobs, framed by Split first as the broker does.
	blobs := map[string][]byte{
		"blob: garbage tail":     append(good(None), 1, 2, 3),
		"blob: truncated second": append(good(None), good(Gzip)[:40]...),
		"blob: two batches":      append(good(None), good(None)...),
		"blob: empty":            {},
	}
	for name, b := range blobs {
		cases[name] = b
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, verr := Validate(b, nil)
			if _, ok := blobs[name]; ok {
				verr = validateBlob(b)
			}
			want := kafkaCode(verr)

			pr := kafkaProduce(t, ctx, cl, topic, topicID, b)
			got, msg := pr.ErrorCode, pr.ErrorMessage
			if code, ok := differs[name]; ok {
				if got != code {
					t.Errorf("Kafka answers %d, not the %d this test records as a known difference", got, code)
				}
				return
			}
			if got != want {
				m := ""
				if msg != nil {
					m = *msg
				}
				t.Errorf("Kafka answers %d (%s); Validate says %v, which maps to %d", got, m, verr, want)
			}
		})
	}
}

// validateBlob is what the broker does with a produce request's records for
// one partition (v3+): Split, ignoring a truncated tail as Kafka does, then
// exactly one batch, validated.
func validateBlob(blob []byte) error {
	var batches [][]byte
	err := Split(blob, func(b []byte) error { batches = append(batches, b); return nil })
	if err != nil && !errors.Is(err, ErrTruncated) {
		return err
	}
	if len(batches) != 1 {
		return fmt.Errorf("%w: %d batches", ErrInvalidRecord, len(batches))
	}
	_, err = Validate(batches[0], nil)
	return err
}

// TestStampingMatchesApacheKafka produces batches whose MaxTimestamp is not the
// largest record timestamp, fetches what Kafka stored, and checks that
// SetBaseOffset, SetPartitionLeaderEpoch and SetMaxTimestamp (with Validate's
// MaxTimestamp) or SetLogAppendTime turn the produced bytes into exactly those
// bytes, for every codec and both timestamp types. It runs only with
// GREGOR_KAFKA_BOOTSTRAP set (see kafkaTopic).
func TestStampingMatchesApacheKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, logAppendTime := range []bool{false, true} {
		topic, cfg := "gregor-batch-stamp-create-time", "CreateTime"
		if logAppendTime {
			topic, cfg = "gregor-batch-stamp-log-append-time", "LogAppendTime"
		}
		cl, topicID := kafkaTopic(t, ctx, topic, "message.timestamp.type", cfg)
		for _, c := range codecs {
			t.Run(cfg+"/"+c.String(), func(t *testing.T) {
				now := time.Now().UnixMilli()
				recs := valueRecords(10, 20)
				recs[3].TimestampDelta = 500
				opts := defaultOptions(c)
				opts.BaseTimestamp = now
				opts.PartitionLeaderEpoch = 77
				b := mustBuild(t, opts, recs)
				binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(now-5)) // a wrong claim
				fixCRC(b)
				info, err := Validate(b, nil)
				if err != nil {
					t.Fatal(err)
				}

				pr := kafkaProduce(t, ctx, cl, topic, topicID, b)
				if pr.ErrorCode != 0 {
					t.Fatalf("produce: error %d", pr.ErrorCode)
				}
				stored := kafkaFetchBatch(t, ctx, cl, topic, topicID, pr.BaseOffset)
				sh, err := Check(stored)
				if err != nil {
					t.Fatalf("stored batch: %v", err)
				}

				want := append([]byte(nil), b...)
				SetBaseOffset(want, pr.BaseOffset)
				SetPartitionLeaderEpoch(want, sh.PartitionLeaderEpoch)
				if logAppendTime {
					SetLogAppendTime(want, sh.MaxTimestamp)
				} else {
					SetMaxTimestamp(want, false, info.MaxTimestamp)
				}
				if !bytes.Equal(stored, want) {
					wh, _ := ParseHeader(want)
					t.Fatalf("Kafka stored\n%+v\nstamping gives\n%+v", sh, wh)
				}
			})
		}
	}
}

// kafkaFetchBatch fetches the batch at offset from partition 0.
func kafkaFetchBatch(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, topicID [16]byte, offset int64) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = offset, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch response %+v", resp)
	}
	var batch []byte
	err = Split(resp.Topics[0].Partitions[0].RecordBatches, func(b []byte) error {
		if h, err := ParseHeader(b); err == nil && h.BaseOffset == offset && batch == nil {
			batch = b
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrTruncated) || batch == nil {
		t.Fatalf("no batch at offset %d (%v)", offset, err)
	}
	return batch
}

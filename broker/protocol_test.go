package broker

import (
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

func createTopic(t *testing.T, c *rawConn, name string, partitions int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
}

func makeBatch(t testing.TB, codec batch.Compression, n int, ts int64) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte("k"), Value: []byte(strings.Repeat("v", 10))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{Compression: codec, BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceRaw(c *rawConn, version int16, acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	return c.do(produceRequest(version, acks, topic, partition, records)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// produceRequest is a Produce request of records for one partition, with a
// timeout of 5 s.
func produceRequest(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestProduceErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "small", 1, map[string]string{"max.message.bytes": "200"})
	createTopic(t, c, "strict", 1, map[string]string{"min.insync.replicas": "2"})
	createTopic(t, c, "tiny", 1, map[string]string{"max.message.bytes": "10"})
	now := time.Now().UnixMilli()
	good := func() []byte { return makeBatch(t, batch.None, 3, now) }
	badCRC := good()
	badCRC[len(badCRC)-1] ^= 0xff
	twoBatches := append(good(), good()...)
	zstdBadCRC := makeBatch(t, batch.Zstd, 1, now)
	zstdBadCRC[len(zstdBadCRC)-1] ^= 0xff
	future := makeBatch(t, batch.None, 3, now+2*3600*1000)
	twoZstd := append(makeBatch(t, batch.Zstd, 1, now), makeBatch(t, batch.Zstd, 1, now)...)
	zstdThenCorrupt := append(makeBatch(t, batch.Zstd, 1, now), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

	tests := []struct {
		name    string
		version int16
		acks    int16
		topic   string
		part    int32
		records []byte
		want    *kerr.Error
	}{
		{"unknown topic", 9, 1, "nope", 0, good(), kerr.UnknownTopicOrPartition},
		{"unknown partition", 9, 1, "small", 7, good(), kerr.UnknownTopicOrPartition},
		{"acks 2", 9, 2, "small", 0, good(), kerr.InvalidRequiredAcks},
		{"bad crc", 9, 1, "small", 0, badCRC, kerr.CorruptMessage},
		{"two batches", 9, 1, "small", 0, twoBatches, kerr.InvalidRecord},
		{"no batch", 9, 1, "small", 0, nil, kerr.InvalidRecord},
		{"too large", 9, 1, "small", 0, makeBatch(t, batch.None, 20, now), kerr.MessageTooLarge},
		{"zstd before v7", 6, 1, "small", 0, makeBatch(t, batch.Zstd, 1, now), kerr.UnsupportedCompressionType},
		// Kafka's ProduceRequest.validateRecords refuses zstd before the log checks the CRC.
		{"zstd before v7, bad crc", 6, 1, "small", 0, zstdBadCRC, kerr.UnsupportedCompressionType},
		{"zstd at v7, bad crc", 7, 1, "small", 0, zstdBadCRC, kerr.CorruptMessage},
		// validateRecords checks the first batch's magic and codec, then that
		// it is the only one, all before the log's size limits.
		{"zstd before v7, two batches", 6, 1, "small", 0, twoZstd, kerr.UnsupportedCompressionType},
		{"zstd before v7, a corrupt second batch", 6, 1, "small", 0, zstdThenCorrupt, kerr.UnsupportedCompressionType},
		{"zstd at v7, two batches", 7, 1, "small", 0, twoZstd, kerr.InvalidRecord},
		{"zstd before v7, too large", 6, 1, "tiny", 0, makeBatch(t, batch.Zstd, 1, now), kerr.UnsupportedCompressionType},
		{"two batches, too large", 9, 1, "tiny", 0, twoBatches, kerr.InvalidRecord},
		{"timestamp too far ahead", 9, 1, "small", 0, future, kerr.InvalidTimestamp},
		// Kafka 4 caps min.insync.replicas at the replication factor.
		{"min isr above replicas", 9, -1, "strict", 0, good(), nil},
		{"accepted", 9, 1, "small", 0, good(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := produceRaw(c, tt.version, tt.acks, tt.topic, tt.part, tt.records)
			if err := kerr.ErrorForCode(got.ErrorCode); err != tt.want && !(tt.want == nil && err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

// Kafka 4.2 closes the connection on Produce v0-v2 though ApiVersions
// advertises them (compat-tests/rawdiff "Produce v2 request").
func TestProduceBeforeV3ClosesConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	for _, v := range []int16{0, 1, 2} {
		c := dialRaw(t, b.Addr())
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks = 1
		req.TimeoutMillis = 1000
		c.send(req)
		c.expectClosed()
	}
}

// As Kafka's LogValidator: a compacted topic refuses records without a key,
// naming each, with the log start offset.
func TestProduceNullKeyToCompactedTopic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "c", 1, map[string]string{"cleanup.policy": "compact,delete"})
	recs := []batch.Record{{OffsetDelta: 0, Value: []byte("a")}, {OffsetDelta: 1, Key: []byte("k"), Value: []byte("b")}, {OffsetDelta: 2, Value: []byte("c")}}
	one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	got := produceRaw(c, 9, 1, "c", 0, one)
	if got.ErrorCode != kerr.InvalidRecord.Code || len(got.ErrorRecords) != 2 || got.ErrorRecords[0].RelativeOffset != 0 ||
		got.ErrorRecords[1].RelativeOffset != 2 || got.LogStartOffset != 0 || got.BaseOffset != -1 {
		t.Fatalf("got %v, record errors %+v, log start %d, base offset %d", kerr.ErrorForCode(got.ErrorCode), got.ErrorRecords, got.LogStartOffset, got.BaseOffset)
	}
	recs[1].OffsetDelta = 0
	keyed, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs[1:2])
	if err != nil {
		t.Fatal(err)
	}
	if got := produceRaw(c, 9, 1, "c", 0, keyed); got.ErrorCode != 0 {
		t.Fatalf("keyed record: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

func TestProduceMagicV1IsInvalidRecord(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	// A magic v1 message: offset, size, crc, magic 1, attributes, timestamp, key -1, value "x".
	msg := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'x'}
	if got := produceRaw(c, 9, 1, "t", 0, msg); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("error %v, want INVALID_RECORD", kerr.ErrorForCode(got.ErrorCode))
	}
}

func TestProduceTimestampErrorNamesTheRecord(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, map[string]string{"message.timestamp.after.max.ms": "1000"})
	now := time.Now().UnixMilli()
	recs := []batch.Record{{OffsetDelta: 0, Value: []byte("ok")}, {OffsetDelta: 1, TimestampDelta: 60000, Value: []byte("late")}}
	one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	got := produceRaw(c, 9, 1, "t", 0, one)
	if got.ErrorCode != kerr.InvalidTimestamp.Code || len(got.ErrorRecords) != 1 || got.ErrorRecords[0].RelativeOffset != 1 {
		t.Fatalf("got %v with record errors %+v", kerr.ErrorForCode(got.ErrorCode), got.ErrorRecords)
	}
	// Kafka's RecordValidationException answer carries the log start offset.
	if got.LogStartOffset != 0 {
		t.Fatalf("log start offset %d, want 0", got.LogStartOffset)
	}
}

// As Kafka's LogValidator: every record is checked and each error listed,
// a record's missing key before its timestamp; one timestamp error makes
// the partition's error INVALID_TIMESTAMP; a record without a timestamp
// (-1) is never out of range.
func TestProduceRecordErrorsListEveryRecord(t *testing.T) {
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "ct", 1, map[string]string{"cleanup.policy": "compact", "message.timestamp.after.max.ms": "1000"})
	createTopic(t, c, "old", 1, map[string]string{"message.timestamp.before.max.ms": "1000"})
	now := time.Now().UnixMilli()
	build := func(base int64, recs []batch.Record) []byte {
		t.Helper()
		one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return one
	}
	offsets := func(got kmsg.ProduceResponseTopicPartition) []int32 {
		var o []int32
		for _, e := range got.ErrorRecords {
			o = append(o, e.RelativeOffset)
		}
		return o
	}
	k := []byte("k")
	mixed := build(now, []batch.Record{
		{OffsetDelta: 0, TimestampDelta: 60000},         // no key, and late: the key's error
		{OffsetDelta: 1, Key: k, TimestampDelta: 60000}, // late
		{OffsetDelta: 2, Key: k},                        // fine
		{OffsetDelta: 3, Key: k, TimestampDelta: 90000}, // late
	})
	got := produceRaw(c, 9, 1, "ct", 0, mixed)
	if got.ErrorCode != kerr.InvalidTimestamp.Code || !slices.Equal(offsets(got), []int32{0, 1, 3}) {
		t.Fatalf("got %v with record errors %+v, want INVALID_TIMESTAMP naming 0, 1, 3", kerr.ErrorForCode(got.ErrorCode), got.ErrorRecords)
	}
	if got.ErrorMessage == nil || *got.ErrorMessage != "One or more records have been rejected due to invalid timestamp" {
		t.Fatalf("message %v", got.ErrorMessage)
	}
	if m := got.ErrorRecords[0].ErrorMessage; m == nil || !strings.HasPrefix(*m, "Compacted topic cannot accept message without key") {
		t.Fatalf("record 0's message %v", m)
	}
	keys := build(now, []batch.Record{{OffsetDelta: 0}, {OffsetDelta: 1}, {OffsetDelta: 2}, {OffsetDelta: 3, Key: k}, {OffsetDelta: 4}})
	got = produceRaw(c, 9, 1, "ct", 0, keys)
	want := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
		"RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition ct-0'), " +
		"RecordError(batchIndex=1, message='Compacted topic cannot accept message without key in topic partition ct-0'), " +
		"RecordError(batchIndex=2, message='Compacted topic cannot accept message without key in topic partition ct-0')]"
	if got.ErrorCode != kerr.InvalidRecord.Code || !slices.Equal(offsets(got), []int32{0, 1, 2, 4}) || got.ErrorMessage == nil || *got.ErrorMessage != want {
		t.Fatalf("got %v with record errors %+v, message %v", kerr.ErrorForCode(got.ErrorCode), got.ErrorRecords, got.ErrorMessage)
	}
	// Base timestamp -1: record 0 has no timestamp, record 1's is 0, long ago.
	untimed := build(batch.NoTimestamp, []batch.Record{{OffsetDelta: 0}, {OffsetDelta: 1, TimestampDelta: 1}})
	got = produceRaw(c, 9, 1, "old", 0, untimed)
	if got.ErrorCode != kerr.InvalidTimestamp.Code || !slices.Equal(offsets(got), []int32{1}) {
		t.Fatalf("got %v with record errors %+v, want INVALID_TIMESTAMP naming 1", kerr.ErrorForCode(got.ErrorCode), got.ErrorRecords)
	}
}

func TestProduceAcksZeroSendsNoResponse(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	c.send(produceRequest(9, 0, "t", 0, makeBatch(t, batch.None, 2, time.Now().UnixMilli()))) // acks=0: no response
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	corr := c.send(meta)
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	c.readResponse(corr, resp) // the next frame answers the metadata request
	waitFor(t, "the acks=0 records", func() bool { return b.lookupTopic("t").partitions[0].Log().EndOffset() == 2 })
}

// TestProduceAcksZeroFailureClosesTheConnection: an acks=0 producer expects
// no answer, so Kafka closes its connection when any partition fails
// (KafkaApis.handleProduceRequest); the partitions that succeeded are
// appended first.
func TestProduceAcksZeroFailureClosesTheConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	admin := dialRaw(t, b.Addr())
	createTopic(t, admin, "t", 1, nil)
	now := time.Now().UnixMilli()
	badCRC := makeBatch(t, batch.None, 1, now)
	badCRC[len(badCRC)-1] ^= 0xff
	transactional := makeBatch(t, batch.None, 1, now)
	transactional[22] |= 0x10 // attributes: the transactional bit
	cases := []struct {
		name string
		req  *kmsg.ProduceRequest
	}{
		{"unknown topic", produceRequest(9, 0, "missing", 0, makeBatch(t, batch.None, 1, now))},
		{"unknown partition", produceRequest(9, 0, "t", 3, makeBatch(t, batch.None, 1, now))},
		{"corrupt batch", produceRequest(9, 0, "t", 0, badCRC)},
		{"transactional batch without a transactional id", produceRequest(9, 0, "t", 0, transactional)},
	}
	for _, tc := range cases {
		c := dialRaw(t, b.Addr())
		c.sendRefused(tc.req)
		c.expectClosed()
	}
	// One partition fails, the other is appended, then the connection closes.
	mixed := produceRequest(9, 0, "t", 0, makeBatch(t, batch.None, 2, now))
	mixed.Topics[0].Partitions = append(mixed.Topics[0].Partitions, produceRequest(9, 0, "t", 7, nil).Topics[0].Partitions[0])
	c := dialRaw(t, b.Addr())
	c.sendRefused(mixed)
	c.expectClosed()
	if got := b.lookupTopic("t").partitions[0].Log().EndOffset(); got != 2 {
		t.Fatalf("end offset %d after the mixed acks=0 produce, want 2", got)
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "exists", 1, nil)
	createTopic(t, c, "dot.ted", 1, nil)
	tests := []struct {
		name       string
		topic      string
		partitions int32
		rf         int16
		configs    map[string]string
		want       *kerr.Error
	}{
		{"exists", "exists", 1, 1, nil, kerr.TopicAlreadyExists},
		{"slash", "bad/name", 1, 1, nil, kerr.InvalidTopicException},
		{"dot", ".", 1, 1, nil, kerr.InvalidTopicException},
		{"dotdot", "..", 1, 1, nil, kerr.InvalidTopicException},
		{"empty", "", 1, 1, nil, kerr.InvalidTopicException},
		{"too long", strings.Repeat("a", 250), 1, 1, nil, kerr.InvalidTopicException},
		{"longest", strings.Repeat("a", 249), 1, 1, nil, nil},
		{"collides", "dot_ted", 1, 1, nil, kerr.InvalidTopicException},
		{"zero partitions", "z", 0, 1, nil, kerr.InvalidPartitions},
		{"negative partitions", "z", -5, 1, nil, kerr.InvalidPartitions},
		{"replication 3 on one broker", "z", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"replication 0", "z", 1, 0, nil, kerr.InvalidReplicationFactor},
		{"unknown config", "z", 1, 1, map[string]string{"no.such.config": "1"}, kerr.InvalidConfig},
		{"bad config value", "z", 1, 1, map[string]string{"retention.ms": "soon"}, kerr.InvalidConfig},
		{"defaults", "d", -1, -1, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(7)
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tt.topic, tt.partitions, tt.rf
			for k, v := range tt.configs {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
				rt.Configs = append(rt.Configs, cfg)
			}
			req.Topics = append(req.Topics, rt)
			got := c.do(req).(*kmsg.CreateTopicsResponse).Topics[0]
			if err := kerr.ErrorForCode(got.ErrorCode); err != tt.want && !(tt.want == nil && err == nil) {
				t.Fatalf("error %v, want %v (message %v)", err, tt.want, got.ErrorMessage)
			}
			if tt.want == nil && (got.NumPartitions < 1 || got.ReplicationFactor != 1 || len(got.Configs) == 0 || got.TopicID == [16]byte{}) {
				t.Fatalf("success without the created topic's details: %+v", got)
			}
			// Kafka answers an error with an empty, non-null list of configs.
			if tt.want != nil && (got.Configs == nil || len(got.Configs) != 0) {
				t.Fatalf("error with configs %v, want an empty list", got.Configs)
			}
		})
	}
}

func TestCreateTopicsDuplicateInOneRequest(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(5)
	for range 2 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "twice", 1, 1
		req.Topics = append(req.Topics, rt)
	}
	// Kafka answers the duplicated name once.
	topics := c.do(req).(*kmsg.CreateTopicsResponse).Topics
	if len(topics) != 1 {
		t.Fatalf("%d answers for the duplicated name, want 1", len(topics))
	}
	for _, got := range topics {
		if got.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("error %v, want INVALID_REQUEST", kerr.ErrorForCode(got.ErrorCode))
		}
	}
	if b.lookupTopic("twice") != nil {
		t.Fatal("the duplicated topic was created")
	}
}

func TestDeleteAndCreatePartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "grow", 2, nil)

	grow := func(topic string, count int32) *kerr.Error {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		req.Topics = append(req.Topics, rt)
		e, _ := kerr.ErrorForCode(c.do(req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode).(*kerr.Error)
		return e
	}
	if e := grow("grow", 2); e != kerr.InvalidPartitions {
		t.Fatalf("same count: %v", e)
	}
	if e := grow("grow", 1); e != kerr.InvalidPartitions {
		t.Fatalf("fewer: %v", e)
	}
	if e := grow("missing", 3); e != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown topic: %v", e)
	}
	if e := grow("grow", 5); e != nil {
		t.Fatalf("growing: %v", e)
	}
	if n := len(b.lookupTopic("grow").partitions); n != 5 {
		t.Fatalf("%d partitions after growing to 5", n)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(4)
	del.TopicNames = []string{"grow", "missing"}
	resp := c.do(del).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete errors %d, %d", resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode)
	}
	if b.lookupTopic("grow") != nil {
		t.Fatal("the topic survived its deletion")
	}
	byID := kmsg.NewPtrDeleteTopicsRequest()
	byID.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = [16]byte{1, 2, 3}
	byID.Topics = append(byID.Topics, dt)
	if got := c.do(byID).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; got != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: %v", kerr.ErrorForCode(got))
	}
}

func TestMetadataAutoCreation(t *testing.T) {
	t.Parallel()
	no := false
	tests := []struct {
		name       string
		cfg        Config
		allow      bool
		topic      string
		want       *kerr.Error
		partitions int
	}{
		{"created with defaults", Config{NumPartitions: 3}, true, "auto", nil, 3},
		{"client forbids", Config{}, false, "auto", kerr.UnknownTopicOrPartition, 0},
		{"broker forbids", Config{AutoCreateTopics: &no}, true, "auto", kerr.UnknownTopicOrPartition, 0},
		{"invalid name", Config{}, true, "bad/name", kerr.InvalidTopicException, 0},
		{"internal topic", Config{}, true, "__consumer_offsets", kerr.UnknownTopicOrPartition, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBroker(t, tt.cfg)
			c := dialRaw(t, b.Addr())
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			req.AllowAutoTopicCreation = tt.allow
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(tt.topic)
			req.Topics = append(req.Topics, mt)
			resp := c.do(req).(*kmsg.MetadataResponse)
			got := resp.Topics[0]
			if err := kerr.ErrorForCode(got.ErrorCode); err != tt.want && !(tt.want == nil && err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if len(got.Partitions) != tt.partitions {
				t.Fatalf("%d partitions, want %d", len(got.Partitions), tt.partitions)
			}
			if len(resp.Brokers) != 1 || net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))) != b.Addr() {
				t.Fatalf("brokers %+v, want one at %s", resp.Brokers, b.Addr())
			}
		})
	}
}

func TestMetadataVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "a", 2, nil)
	createTopic(t, c, "b", 1, nil)
	for v := int16(0); v <= 13; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		if v > 0 {
			req.Topics = nil // all topics
		}
		resp := c.do(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
	}
	// v1+: an empty list means no topics.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(4)
	req.Topics = []kmsg.MetadataRequestTopic{}
	if got := c.do(req).(*kmsg.MetadataResponse).Topics; len(got) != 0 {
		t.Fatalf("empty list returned %d topics", len(got))
	}
	// v12: by topic id, known and unknown.
	id := b.lookupTopic("a").id
	req = kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}, {TopicID: [16]byte{9}}}
	got := c.do(req).(*kmsg.MetadataResponse).Topics
	if len(got) != 2 || *got[0].Topic != "a" || got[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("by id: %+v", got)
	}
}

func TestAPIVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	singleNode := 0 // keys a single node serves: all but the cluster-mode ones
	for _, h := range handlers {
		if h.scope == everywhere || h.scope == singleNodeOnly {
			singleNode++
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1.0"
		resp := c.do(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != singleNode {
			t.Fatalf("v%d: error %d, %d keys", v, resp.ErrorCode, len(resp.ApiKeys))
		}
		for _, k := range resp.ApiKeys {
			h := handlers[k.ApiKey]
			if h == nil || h.min != k.MinVersion || h.max != k.MaxVersion {
				t.Fatalf("v%d advertises key %d v%d-v%d, registry has %+v", v, k.ApiKey, k.MinVersion, k.MaxVersion, h)
			}
		}
	}
	// Produce is advertised from v0 (for librdkafka's compression check).
	if handlers[0].min != 0 {
		t.Fatal("Produce must be advertised from v0")
	}
	bad := kmsg.NewPtrApiVersionsRequest()
	bad.SetVersion(3)
	bad.ClientSoftwareName, bad.ClientSoftwareVersion = "-bad name", "1"
	if got := c.do(bad).(*kmsg.ApiVersionsResponse).ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("invalid software name: error %d", got)
	}
}

func TestAPIVersionsUnknownVersionAnswersV0(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(5) // kmsg knows it, Gregor serves up to 4
	corr := c.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	c.readResponse(corr, resp)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("got %+v", resp)
	}
	// The connection stays usable.
	ok := kmsg.NewPtrApiVersionsRequest()
	ok.SetVersion(3)
	ok.ClientSoftwareName, ok.ClientSoftwareVersion = "a", "1"
	if c.do(ok).(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Fatal("retry at v3 failed")
	}
}

func TestUnsupportedVersionClosesConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(3) // Kafka 4 serves Fetch from v4
	c.send(req)
	c.expectClosed()
}

func TestMalformedFramesNeverDisturbOtherConnections(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{MaxFrameBytes: 1 << 20})
	healthy := dialRaw(t, b.Addr())
	frames := map[string][]byte{
		"negative length": {0xff, 0xff, 0xff, 0xf0},
		"huge length":     {0x7f, 0xff, 0xff, 0xff},
		"over the limit":  binary.BigEndian.AppendUint32(nil, 1<<20+1),
		"garbage":         append(binary.BigEndian.AppendUint32(nil, 12), "garbagegarba"...),
		"unknown api key": {0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
		"bad body":        {0, 0, 0, 13, 0, 3, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0, 0x7f, 0x7f},
		"short header":    {0, 0, 0, 3, 0, 3, 0},
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, b.Addr())
			if _, err := c.nc.Write(frame); err != nil {
				t.Fatal(err)
			}
			c.expectClosed()
			meta := kmsg.NewPtrMetadataRequest()
			meta.SetVersion(12)
			healthy.do(meta)
		})
	}
	t.Run("truncated then hang up", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		c.nc.Write([]byte{0, 0, 1, 0, 0, 3})
		c.nc.Close()
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(1)
		healthy.do(meta)
	})
}

func TestPipelinedRequestsAnswerInOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	var stream []byte
	var reqs []kmsg.Request
	for i := range 50 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(int16(i % 13))
			req = m
		case 1:
			a := kmsg.NewPtrApiVersionsRequest()
			a.SetVersion(2)
			req = a
		default:
			req = produceRequest(9, 1, "t", 0, makeBatch(t, batch.None, 1, time.Now().UnixMilli()))
		}
		reqs = append(reqs, req)
		stream = append(stream, encodeRequest(req, int32(i+1))...)
	}
	if _, err := c.nc.Write(stream); err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	for i, req := range reqs {
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		c.readResponse(int32(i+1), resp)
		if p, ok := resp.(*kmsg.ProduceResponse); ok {
			if got := p.Topics[0].Partitions[0].BaseOffset; got != next {
				t.Fatalf("produce %d got offset %d, want %d", i, got, next)
			}
			next++
		}
	}
}

// TestProduceBehindLongPollWaitsItsTurn pipelines a Produce behind a Fetch
// that long-polls an empty partition on the same connection. Kafka handles a
// connection's requests one at a time, so the Produce is appended only after
// the Fetch has answered, empty, at its deadline; the reader, which answers a
// Produce itself when nothing is in flight, must queue this one.
func TestProduceBehindLongPollWaitsItsTurn(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	fetch := fetchRequest(12, "t", 0, 300, 1)
	produce := produceRequest(9, 1, "t", 0, makeBatch(t, batch.None, 1, time.Now().UnixMilli()))
	if _, err := c.nc.Write(append(encodeRequest(fetch, 1), encodeRequest(produce, 2)...)); err != nil {
		t.Fatal(err)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.SetVersion(12)
	c.readResponse(1, fr)
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("fetch: error %d, %d record bytes, high watermark %d; want an empty answer from before the produce",
			p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(9)
	c.readResponse(2, pr)
	if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: error %d, base offset %d", p.ErrorCode, p.BaseOffset)
	}
}

// Without an authorizer Kafka reports every operation it supports on the
// resource type; clients map each bit to an operation (kafka-python fails on
// a bit it does not know), so the sets must be exactly Kafka's.
func TestAuthorizedOperationsAreKafkas(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	resp := c.do(req).(*kmsg.MetadataResponse)
	const kafkaTopicOps = 3576   // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
	const kafkaClusterOps = 8096 // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
	if resp.AuthorizedOperations != kafkaClusterOps || resp.Topics[0].AuthorizedOperations != kafkaTopicOps {
		t.Fatalf("cluster ops %d, topic ops %d; Kafka reports %d and %d",
			resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations, kafkaClusterOps, kafkaTopicOps)
	}
}

func TestProduceToInternalTopicIsRefused(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{OffsetsTopicPartitions: 1})
	c := dialRaw(t, b.Addr())
	// A simple offset commit makes the coordinator create __consumer_offsets.
	createTopic(t, c, "t", 1, nil)
	if got := c.do(commitReq(8, "g", "", -1, "t", 0)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; got != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(got))
	}
	got := produceRaw(c, 9, 1, "__consumer_offsets", 0, makeBatch(t, batch.None, 1, time.Now().UnixMilli()))
	if got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to __consumer_offsets: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

func TestAuthorizedOperationsOfAMissingTopic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	req.IncludeTopicAuthorizedOperations = true
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("missing")}}
	got := c.do(req).(*kmsg.MetadataResponse).Topics[0]
	if got.ErrorCode != kerr.UnknownTopicOrPartition.Code || got.AuthorizedOperations != 3576 {
		t.Fatalf("error %v, operations %d; Kafka answers UNKNOWN_TOPIC_OR_PARTITION with 3576",
			kerr.ErrorForCode(got.ErrorCode), got.AuthorizedOperations)
	}
}

// As Kafka's LogValidator, the stored batch takes the topic's timestamp
// type: a client's LogAppendTime bit on a CreateTime topic is cleared (the
// CRC recomputed) and the header's MaxTimestamp, which every record read
// as, stays (compat-tests/rawdiff "Fetch a batch produced with the
// LogAppendTime bit to a CreateTime topic").
func TestProduceClearsAClientLogAppendTimeBit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "ct", 1, nil)
	one := makeBatch(t, batch.None, 3, time.Now().UnixMilli())
	h, err := batch.ParseHeader(one)
	if err != nil {
		t.Fatal(err)
	}
	batch.SetMaxTimestamp(one, true, h.MaxTimestamp)
	if got := produceRaw(c, 9, 1, "ct", 0, one); got.ErrorCode != 0 || got.LogAppendTime != -1 {
		t.Fatalf("produce: %v, log append time %d", kerr.ErrorForCode(got.ErrorCode), got.LogAppendTime)
	}
	resp := c.do(fetchRequest(12, "ct", 0, 0, 1)).(*kmsg.FetchResponse)
	stored := resp.Topics[0].Partitions[0].RecordBatches
	if _, err := batch.Validate(stored, nil); err != nil { // its CRC among the rest
		t.Fatalf("stored batch: %v", err)
	}
	got, err := batch.ParseHeader(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.LogAppendTime() || got.MaxTimestamp != h.MaxTimestamp {
		t.Fatalf("stored: LogAppendTime bit %v, max timestamp %d (want false, %d)", got.LogAppendTime(), got.MaxTimestamp, h.MaxTimestamp)
	}
}

// TestProduceOverTheUncompressedLimit: gregor.message.max.uncompressed.bytes
// bounds what a produced batch's records decompress to: a 13 KB zstd batch
// of 2 MiB of records is INVALID_RECORD under a 1 MiB bound and appended
// under the default one.
func TestProduceOverTheUncompressedLimit(t *testing.T) {
	t.Parallel()
	recs := []batch.Record{{Key: []byte("k"), Value: make([]byte, 2<<20)}}
	bomb, err := batch.AppendBatch(nil, batch.BuildOptions{Compression: batch.Zstd, BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	small := startBroker(t, Config{MaxUncompressedBytes: 1 << 20})
	c := dialRaw(t, small.Addr())
	createTopic(t, c, "t", 1, nil)
	if got := produceRaw(c, 9, 1, "t", 0, bomb); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("under a 1 MiB bound: %v, want INVALID_RECORD", kerr.ErrorForCode(got.ErrorCode))
	}
	b := startBroker(t, Config{})
	c = dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	if got := produceRaw(c, 9, 1, "t", 0, bomb); got.ErrorCode != 0 {
		t.Fatalf("under the default bound: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

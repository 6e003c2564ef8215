package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

func fetchRequest(version int16, topic string, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, 50<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestFetchLongPollWakesOnAppend(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	fetcher := dialRaw(t, b.Addr())
	start := time.Now()
	corr := fetcher.send(fetchRequest(12, "t", 0, 10000, 1))
	time.Sleep(50 * time.Millisecond) // let the fetch start waiting; the test passes either way
	if got := produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.None, 3, time.Now().UnixMilli())); got.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(got.ErrorCode))
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	fetcher.readResponse(corr, resp)
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the fetch waited %v although records arrived", waited)
	}
	if p := resp.Topics[0].Partitions[0]; len(p.RecordBatches) == 0 || p.HighWatermark != 3 {
		t.Fatalf("woken fetch returned %d bytes, high watermark %d", len(p.RecordBatches), p.HighWatermark)
	}
}

func TestFetchWaitsOutMaxWaitWithoutData(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	start := time.Now()
	resp := c.do(fetchRequest(11, "t", 0, 300, 1)).(*kmsg.FetchResponse)
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("answered after %v, before max.wait.ms", waited)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("empty fetch: %+v", p)
	}
}

func TestFetchReturnsTheBatchContainingTheOffset(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	for range 3 {
		produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.LZ4, 10, time.Now().UnixMilli()))
	}
	resp := c.do(fetchRequest(12, "t", 15, 0, 0)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	var bases []int64
	if err := batch.Split(p.RecordBatches, func(one []byte) error {
		h, err := batch.ParseHeader(one)
		bases = append(bases, h.BaseOffset)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 2 || bases[0] != 10 || bases[1] != 20 || p.HighWatermark != 30 || p.LogStartOffset != 0 {
		t.Fatalf("batches at %v, hw %d", bases, p.HighWatermark)
	}
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.None, 5, time.Now().UnixMilli()))
	tests := []struct {
		name   string
		mutate func(*kmsg.FetchRequest)
		want   *kerr.Error
	}{
		{"past the end", func(r *kmsg.FetchRequest) { r.Topics[0].Partitions[0].FetchOffset = 6 }, kerr.OffsetOutOfRange},
		{"negative offset", func(r *kmsg.FetchRequest) { r.Topics[0].Partitions[0].FetchOffset = -1 }, kerr.OffsetOutOfRange},
		{"at the end", func(r *kmsg.FetchRequest) { r.Topics[0].Partitions[0].FetchOffset = 5 }, nil},
		{"unknown topic", func(r *kmsg.FetchRequest) { r.Topics[0].Topic = "nope" }, kerr.UnknownTopicOrPartition},
		{"unknown partition", func(r *kmsg.FetchRequest) { r.Topics[0].Partitions[0].Partition = 3 }, kerr.UnknownTopicOrPartition},
		{"newer leader epoch", func(r *kmsg.FetchRequest) { r.Topics[0].Partitions[0].CurrentLeaderEpoch = 4 }, kerr.UnknownLeaderEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := fetchRequest(12, "t", 0, 0, 0)
			tt.mutate(req)
			p := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(p.ErrorCode); err != tt.want && !(err == nil && tt.want == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("unknown session", func(t *testing.T) {
		req := fetchRequest(12, "t", 0, 0, 0)
		req.SessionID, req.SessionEpoch = 77, 1
		if got := c.do(req).(*kmsg.FetchResponse).ErrorCode; got != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("error %v", kerr.ErrorForCode(got))
		}
	})
	// As Kafka 4.2 answers (compat-tests/rawdiff): epoch > 0 without a
	// session is an unknown session (id 0 included); a full fetch (epoch -1)
	// naming an unknown session is served.
	t.Run("epoch without session", func(t *testing.T) {
		req := fetchRequest(12, "t", 0, 0, 0)
		req.SessionID, req.SessionEpoch = 0, 5
		if got := c.do(req).(*kmsg.FetchResponse).ErrorCode; got != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("error %v", kerr.ErrorForCode(got))
		}
	})
	t.Run("full fetch naming an unknown session", func(t *testing.T) {
		req := fetchRequest(12, "t", 0, 0, 0)
		req.SessionID, req.SessionEpoch = 77, -1
		resp := c.do(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || resp.SessionID != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("error %v, session %d, partition error %v", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID,
				kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
		}
	})
	t.Run("unknown topic has an empty list of aborted transactions", func(t *testing.T) {
		req := fetchRequest(12, "nope", 0, 0, 0)
		if got := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].AbortedTransactions; got == nil || len(got) != 0 {
			t.Fatalf("aborted transactions %v, want an empty list", got)
		}
	})
	t.Run("unknown topic id", func(t *testing.T) {
		req := fetchRequest(13, "", 0, 0, 0)
		req.Topics[0].TopicID = [16]byte{5}
		if got := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownTopicID.Code {
			t.Fatalf("error %v", kerr.ErrorForCode(got))
		}
	})
}

func TestFetchMaxBytesKeepsWholeBatches(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	one := makeBatch(t, batch.None, 10, time.Now().UnixMilli())
	for range 4 {
		produceRaw(c, 9, 1, "t", 0, append([]byte(nil), one...))
	}
	// A response limit below one batch still returns the first batch whole.
	req := fetchRequest(12, "t", 0, 0, 0)
	req.MaxBytes = 10
	if got := len(c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); got != len(one) {
		t.Fatalf("got %d bytes, want the first batch (%d)", got, len(one))
	}
	// A partition limit of two and a half batches returns two.
	req = fetchRequest(12, "t", 0, 0, 0)
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(len(one)*5/2) + 1
	if got := len(c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); got > len(one)*5/2+1 || got%len(one) != 0 {
		t.Fatalf("got %d bytes for a limit of %d with batches of %d", got, len(one)*5/2+1, len(one))
	}
}

func TestListOffsets(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	createTopic(t, c, "empty", 1, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	// Two batches whose timestamps are not monotonic across batches:
	// offsets 0-4 at base+100..104, offsets 5-9 at base+0..4.
	produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.Zstd, 5, base+100))
	produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.None, 5, base))
	list := func(topic string, version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(version)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	tests := []struct {
		name      string
		topic     string
		version   int16
		ts        int64
		offset    int64
		timestamp int64
	}{
		{"earliest", "t", 9, -2, 0, -1},
		{"latest", "t", 9, -1, 10, -1},
		{"by timestamp inside the first batch", "t", 9, base + 102, 2, base + 102},
		{"by timestamp before everything", "t", 9, base - 1000, 0, base + 100},
		{"by timestamp past the end", "t", 9, base + 1000, -1, -1},
		{"max timestamp", "t", 9, -3, 4, base + 104},
		{"earliest local", "t", 9, -4, 0, -1},
		{"latest tiered without tiered storage", "t", 9, -5, -1, -1},
		{"empty latest", "empty", 9, -1, 0, -1},
		{"empty max timestamp", "empty", 9, -3, -1, -1},
		{"empty by timestamp", "empty", 9, base, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := list(tt.topic, tt.version, tt.ts)
			if got.ErrorCode != 0 || got.Offset != tt.offset || got.Timestamp != tt.timestamp {
				t.Fatalf("error %v offset %d timestamp %d; want offset %d timestamp %d",
					kerr.ErrorForCode(got.ErrorCode), got.Offset, got.Timestamp, tt.offset, tt.timestamp)
			}
		})
	}
	if got := list("nope", 9, -1); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	// As Kafka 4.2 answers (compat-tests/rawdiff): a negative timestamp that
	// is no special value at the request's version is UNSUPPORTED_VERSION.
	for _, vt := range []struct {
		version int16
		ts      int64
	}{{6, -3}, {7, -4}, {8, -5}, {10, -6}, {7, -7}, {11, -7}} {
		got := list("t", vt.version, vt.ts)
		if got.ErrorCode != kerr.UnsupportedVersion.Code || got.Offset != -1 || got.Timestamp != -1 || got.LeaderEpoch != -1 {
			t.Fatalf("v%d timestamp %d: error %v offset %d timestamp %d epoch %d, want UNSUPPORTED_VERSION",
				vt.version, vt.ts, kerr.ErrorForCode(got.ErrorCode), got.Offset, got.Timestamp, got.LeaderEpoch)
		}
	}
	// Earliest carries the leader epoch on an empty log too, as in Kafka.
	if got := list("empty", 9, -2); got.ErrorCode != 0 || got.Offset != 0 || got.LeaderEpoch != 0 {
		t.Fatalf("empty earliest: error %v offset %d epoch %d", kerr.ErrorForCode(got.ErrorCode), got.Offset, got.LeaderEpoch)
	}
}

// librdkafka refuses a null record set (size -1) as a malformed response;
// Kafka sends an empty one. Checked on the wire for a flexible and an older
// version, for a partition with nothing to return and one with an error.
func TestFetchNeverSendsANullRecordSet(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	for _, version := range []int16{4, 11, 12, 18} {
		for _, offset := range []int64{0, 99} { // at the end, out of range
			req := fetchRequest(version, "t", offset, 0, 0)
			if version >= 13 {
				req.Topics[0].TopicID = b.lookupTopic("t").id
			}
			p := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if p.RecordBatches == nil {
				t.Fatalf("v%d offset %d: null record set", version, offset)
			}
		}
	}
}

// TestFetchOfNothingAnswersAtOnce: a fetch with no partition to read is
// answered at once whatever its max wait, as Kafka's fetchMessages does.
func TestFetchOfNothingAnswersAtOnce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	req := fetchRequest(12, "t", 0, 16*24*3600*1000, 1)
	req.Topics = nil
	start := time.Now()
	resp := c.do(req).(*kmsg.FetchResponse)
	if waited := time.Since(start); waited > 5*time.Second || resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("after %v: %v with %d topics", waited, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
}

// TestInvalidIsolationLevel: an isolation level other than 0 or 1 is
// UNKNOWN_SERVER_ERROR, as Kafka's IllegalArgumentException from
// IsolationLevel.forId becomes; Fetch says so only once it names a
// partition that exists, ListOffsets for any topic.
func TestInvalidIsolationLevel(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.None, 3, time.Now().UnixMilli()))
	unknownServer := kerr.UnknownServerError.Code

	req := fetchRequest(12, "t", 0, 100, 1)
	req.IsolationLevel = 2
	resp := c.do(req).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if resp.ErrorCode != unknownServer || p.ErrorCode != unknownServer || p.HighWatermark != -1 || len(p.RecordBatches) != 0 {
		t.Fatalf("v12: top %v, partition %v, high watermark %d, %d record bytes", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
	}

	req = fetchRequest(13, "", 0, 100, 1)
	req.Topics[0].TopicID = b.lookupTopic("t").id
	req.IsolationLevel = -5
	if resp := c.do(req).(*kmsg.FetchResponse); resp.ErrorCode != unknownServer || len(resp.Topics) != 0 {
		t.Fatalf("v13: top %v with %d topics, want UNKNOWN_SERVER_ERROR and none", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}

	req = fetchRequest(12, "missing", 0, 100, 1)
	req.IsolationLevel = 2
	if resp := c.do(req).(*kmsg.FetchResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: top %v, partition %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}

	list := kmsg.NewPtrListOffsetsRequest()
	list.SetVersion(7)
	list.ReplicaID, list.IsolationLevel = -1, 7
	for _, name := range []string{"t", "missing"} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		list.Topics = append(list.Topics, rt)
	}
	lr := c.do(list).(*kmsg.ListOffsetsResponse)
	for _, rt := range lr.Topics {
		if p := rt.Partitions[0]; p.ErrorCode != unknownServer || p.Offset != -1 || p.Timestamp != -1 {
			t.Fatalf("ListOffsets %s: %v offset %d timestamp %d", rt.Topic, kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp)
		}
	}
}

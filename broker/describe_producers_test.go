package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeProducers lists an idempotent producer, a producer with an
// open transaction and one whose transaction a marker ended, through
// kadm, and checks the per-partition errors over a raw connection.
func TestDescribeProducers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 2, nil)
	p := partitionOf(t, b, "t", 0)
	ts := time.Now().UnixMilli()
	if got := produceRaw(c, 9, -1, "t", 0, idempotentBatch(t, 10, 1, 0, 3, ts)); got.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	appendDirect(t, p, txnBatch(t, 20, 4, 0, 2, "open"))  // offsets 3-4
	appendDirect(t, p, txnBatch(t, 30, 0, 0, 1, "ended")) // offset 5
	marker(t, p, 30, 1, 9, true)                          // epoch bumped by the marker

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := kadm.NewClient(cl).DescribeProducers(ctx, kadm.TopicsSet{"t": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	part0 := described["t"].Partitions[0]
	if part0.Err != nil {
		t.Fatal(part0.Err)
	}
	got := part0.ActiveProducers.Sorted()
	want := []struct {
		pid        int64
		epoch      int16
		lastSeq    int32
		coordEpoch int32
		txnStart   int64
	}{{10, 1, 2, -1, -1}, {20, 4, 1, -1, 3}, {30, 1, -1, 9, -1}}
	if len(got) != len(want) {
		t.Fatalf("producers %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.ProducerID != w.pid || g.ProducerEpoch != w.epoch || g.LastSequence != w.lastSeq || g.CoordinatorEpoch != w.coordEpoch || g.CurrentTxnStartOffset != w.txnStart {
			t.Errorf("producer %d: %+v, want %+v", i, g, w)
		}
	}
	if got[0].LastTimestamp != ts+2 && got[0].LastTimestamp != ts {
		t.Errorf("idempotent producer's last timestamp %d, want the batch's max timestamp near %d", got[0].LastTimestamp, ts)
	}
	if n := len(described["t"].Partitions[1].ActiveProducers); n != 0 || described["t"].Partitions[1].Err != nil {
		t.Fatalf("partition 1: %d producers, %v", n, described["t"].Partitions[1].Err)
	}

	req := kmsg.NewPtrDescribeProducersRequest()
	for _, name := range []string{"t", "nope", "bad name"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{5}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.do(req).(*kmsg.DescribeProducersResponse)
	for i, want := range []*kerr.Error{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition, kerr.InvalidTopicException} {
		sp := resp.Topics[i].Partitions[0]
		if sp.ErrorCode != want.Code || sp.Partition != 5 {
			t.Errorf("%s: error %v, want %v", resp.Topics[i].Topic, kerr.ErrorForCode(sp.ErrorCode), want)
		}
	}
	if msg := resp.Topics[2].Partitions[0].ErrorMessage; msg == nil || !strings.Contains(*msg, "contains one or more characters") {
		t.Errorf("invalid topic message %v", msg)
	}
}

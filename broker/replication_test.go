package broker

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// createReplicated creates topic with the given partitions and
// replication factor through node 1 and waits until every live node has
// applied it with a leader for each partition.
func (tc *testCluster) createReplicated(topic string, partitions int32, rf int16, configs map[string]*string) {
	tc.t.Helper()
	adm := kadm.NewClient(tc.client(tc.live()[0]))
	res, err := adm.CreateTopic(testCtx(tc.t), partitions, rf, configs, topic)
	if err != nil || res.Err != nil {
		tc.t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	for _, id := range tc.live() {
		waitLong(tc.t, fmt.Sprintf("node %d to lead or follow every partition of %s", id, topic), func() bool {
			t := tc.nodes[id].lookupTopic(topic)
			if t == nil || len(t.partitions) != int(partitions) {
				return false
			}
			for _, p := range t.partitions {
				if st := p.cluster.Load(); st == nil || st.leader < 0 {
					return false
				}
			}
			return true
		})
	}
}

// part returns node id's partition idx of topic.
func (tc *testCluster) part(id int32, topic string, idx int32) *partition {
	tc.t.Helper()
	t := tc.nodes[id].lookupTopic(topic)
	if t == nil {
		tc.t.Fatalf("node %d has no topic %s", id, topic)
	}
	return t.partitions[idx]
}

// leaderOf is the leader of topic's partition idx as node id's image says.
func (tc *testCluster) leaderOf(id int32, topic string, idx int32) int32 {
	st := tc.part(id, topic, idx).cluster.Load()
	if st == nil {
		return -1
	}
	return st.leader
}

// isrOf is the ISR of topic's partition idx as node id's image says.
func (tc *testCluster) isrOf(id int32, topic string, idx int32) []int32 {
	st := tc.part(id, topic, idx).cluster.Load()
	if st == nil {
		return nil
	}
	return slices.Sorted(slices.Values(st.isr))
}

// readAll returns the bytes of p's log in [from, to).
func readLog(t *testing.T, p *partition, from, to int64) []byte {
	t.Helper()
	if to <= from {
		return nil
	}
	b, err := p.log.Read(from, 1<<30, to)
	if err != nil {
		t.Fatalf("reading %s-%d [%d, %d): %v", p.topic, p.index, from, to, err)
	}
	return b
}

// waitReplicated waits until every live replica of topic's partition idx
// has a high watermark of at least end, and checks that their logs are
// byte-identical to the leader's below it.
func (tc *testCluster) waitReplicated(topic string, idx int32, end int64) {
	tc.t.Helper()
	live := tc.live()
	leader := tc.leaderOf(live[0], topic, idx)
	for _, id := range live {
		p := tc.part(id, topic, idx)
		waitLong(tc.t, fmt.Sprintf("node %d's high watermark of %s-%d to reach %d", id, topic, idx, end), func() bool {
			return p.highWatermark() >= end
		})
	}
	want := readLog(tc.t, tc.part(leader, topic, idx), 0, end)
	for _, id := range live {
		if got := readLog(tc.t, tc.part(id, topic, idx), 0, end); !bytes.Equal(got, want) {
			tc.t.Fatalf("node %d's log of %s-%d below %d differs from the leader %d's (%d bytes, leader %d)", id, topic, idx, end, leader, len(got), len(want))
		}
	}
}

func produceSync(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value-%d", i))}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatalf("producing record %d: %v", i, err)
		}
	}
}

func TestReplicationCopiesEveryRecordToEveryReplica(t *testing.T) {
	tc := startCluster(t, 3)
	tc.createReplicated("repl", 2, 3, nil)
	for _, id := range tc.live() {
		if isr := tc.isrOf(id, "repl", 0); len(isr) != 3 {
			t.Fatalf("node %d: ISR %v, want three replicas", id, isr)
		}
	}
	cl := tc.client(1, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var records []*kgo.Record
	for i := range 400 {
		records = append(records, &kgo.Record{Topic: "repl", Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte{byte(i)}, 100)})
	}
	if err := cl.ProduceSync(testCtx(t), records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for idx := range int32(2) {
		leader := tc.leaderOf(1, "repl", idx)
		end := tc.part(leader, "repl", idx).log.EndOffset()
		if end == 0 {
			t.Fatalf("partition %d is empty", idx)
		}
		// acks=all answered: the leader's high watermark covers every record.
		if hw := tc.part(leader, "repl", idx).highWatermark(); hw != end {
			t.Fatalf("partition %d: leader high watermark %d after acks=all, log end %d", idx, hw, end)
		}
		tc.waitReplicated("repl", idx, end)
	}

	// A consumer reads every record back.
	consumer := tc.client(2, kgo.ConsumeTopics("repl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := 0
	for seen < 400 {
		fs := consumer.PollFetches(testCtx(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		seen += fs.NumRecords()
	}
}

// rawProduce sends one batch of n records to topic's partition idx on node
// id with the given acks and returns the partition's answer.
func rawProduceAcks(t *testing.T, addr, topic string, idx int32, acks int16, timeoutMs int32, n int) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = idx
	rp.Records = testBatch(t, n)
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp := dialRaw(t, addr).do(req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

func TestReplicationMinInsyncReplicas(t *testing.T) {
	// Five nodes, so that the controller quorum outlives two of them.
	tc := startClusterWith(t, 5, func(c *Config) { c.ReplicaLagTimeMaxMs = 1500 })
	two := "2"
	tc.createReplicated("minisr", 1, 3, map[string]*string{"min.insync.replicas": &two})
	leader := tc.leaderOf(1, "minisr", 0)
	var followers []int32
	for _, id := range tc.part(1, "minisr", 0).cluster.Load().replicas {
		if id != leader {
			followers = append(followers, id)
		}
	}
	addr := tc.nodes[leader].Addr()
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=all with three in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	// One follower gone: the ISR shrinks to two, acks=all still works.
	tc.close(followers[0])
	waitLong(t, "the ISR to shrink to two", func() bool { return len(tc.part(leader, "minisr", 0).isrSnapshot()) == 2 })
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=all with two in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	// Both gone: NOT_ENOUGH_REPLICAS and nothing appended; acks=1 works.
	tc.close(followers[1])
	waitLong(t, "the ISR to shrink to the leader", func() bool { return len(tc.part(leader, "minisr", 0).isrSnapshot()) == 1 })
	end := tc.part(leader, "minisr", 0).log.EndOffset()
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the leader alone in sync: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := tc.part(leader, "minisr", 0).log.EndOffset(); got != end {
		t.Fatalf("a refused acks=all produce moved the log end from %d to %d", end, got)
	}
	if sp := rawProduceAcks(t, addr, "minisr", 0, 1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=1 with the leader alone in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	// A follower back: it catches up and rejoins the ISR.
	tc.restart(followers[0])
	waitLong(t, "the restarted follower to rejoin the ISR", func() bool {
		return slices.Contains(tc.part(leader, "minisr", 0).isrSnapshot(), followers[0])
	})
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=all after the follower rejoined: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
}

// testBatch is one uncompressed batch of n records without a producer id.
func testBatch(t *testing.T, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Key: []byte(strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

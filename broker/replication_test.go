//go:build cluster

package broker

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// createReplicated creates topic with the given partitions and
// replication factor through node 1 and waits until every live node has
// applied it with a leader for each partition.
func (tc *testCluster) createReplicated(topic string, partitions int32, rf int16, configs map[string]*string) {
	tc.t.Helper()
	tc.createReplicatedVia(tc.live()[0], topic, partitions, rf, configs)
}

// createReplicatedVia is createReplicated through node via.
func (tc *testCluster) createReplicatedVia(via int32, topic string, partitions int32, rf int16, configs map[string]*string) {
	tc.t.Helper()
	adm := kadm.NewClient(tc.client(via))
	res, err := adm.CreateTopic(testCtx(tc.t), partitions, rf, configs, topic)
	if err != nil || res.Err != nil {
		tc.t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	if res.ReplicationFactor != rf || res.NumPartitions != partitions {
		tc.t.Fatalf("creating %s: answered %d partitions, replication factor %d; want %d, %d", topic, res.NumPartitions, res.ReplicationFactor, partitions, rf)
	}
	for _, id := range tc.live() {
		waitLong(tc.t, fmt.Sprintf("node %d to lead or follow every partition of %s", id, topic), func() bool {
			t := tc.nodes[id].lookupTopic(topic)
			if t == nil || len(t.partitions) != int(partitions) {
				return false
			}
			for _, p := range t.partitions {
				st := p.State()
				if st == nil || st.Leader < 0 {
					return false
				}
				if _, leading := p.LeaderEpochIfLeading(); st.Leader == id && !leading {
					return false // the image's leader has not taken the role yet
				}
			}
			return true
		})
	}
}

// part returns node id's partition idx of topic.
func (tc *testCluster) part(id int32, topic string, idx int32) *partition.Partition {
	tc.t.Helper()
	t := tc.nodes[id].lookupTopic(topic)
	if t == nil {
		tc.t.Fatalf("node %d has no topic %s", id, topic)
	}
	return t.partitions[idx]
}

// leaderOf is the leader of topic's partition idx as node id's image says.
func (tc *testCluster) leaderOf(id int32, topic string, idx int32) int32 {
	st := tc.part(id, topic, idx).State()
	if st == nil {
		return -1
	}
	return st.Leader
}

// isrOf is the ISR of topic's partition idx as node id's image says.
func (tc *testCluster) isrOf(id int32, topic string, idx int32) []int32 {
	st := tc.part(id, topic, idx).State()
	if st == nil {
		return nil
	}
	return slices.Sorted(slices.Values(st.ISR))
}

// readAll returns the bytes of p's log in [from, to).
func readLog(t *testing.T, p *partition.Partition, from, to int64) []byte {
	t.Helper()
	if to <= from {
		return nil
	}
	b, err := p.Log().Read(from, 1<<30, to)
	if err != nil {
		t.Fatalf("reading %s-%d [%d, %d): %v", p.Topic(), p.Index(), from, to, err)
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
			return p.HighWatermark() >= end
		})
	}
	from := tc.part(leader, topic, idx).Log().StartOffset()
	want := readLog(tc.t, tc.part(leader, topic, idx), from, end)
	for _, id := range live {
		if got := readLog(tc.t, tc.part(id, topic, idx), from, end); !bytes.Equal(got, want) {
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
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
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
		end := tc.part(leader, "repl", idx).Log().EndOffset()
		if end == 0 {
			t.Fatalf("partition %d is empty", idx)
		}
		// acks=all answered: the leader's high watermark covers every record.
		if hw := tc.part(leader, "repl", idx).HighWatermark(); hw != end {
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
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	// Five nodes, so that the controller quorum outlives two of them.
	tc := startClusterWith(t, 5, func(c *Config) { c.ReplicaLagTimeMaxMs = 1500; c.HTTPListen = "127.0.0.1:0" })
	two := "2"
	tc.createReplicated("minisr", 1, 3, map[string]*string{"min.insync.replicas": &two})
	leader := tc.leaderOf(1, "minisr", 0)
	var followers []int32
	for _, id := range tc.part(1, "minisr", 0).State().Replicas {
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
	waitLong(t, "the ISR to shrink to two", func() bool { return len(tc.part(leader, "minisr", 0).ISR()) == 2 })
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=all with two in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	// Both gone: NOT_ENOUGH_REPLICAS and nothing appended; acks=1 works.
	tc.close(followers[1])
	waitLong(t, "the ISR to shrink to the leader", func() bool { return len(tc.part(leader, "minisr", 0).ISR()) == 1 })
	end := tc.part(leader, "minisr", 0).Log().EndOffset()
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the leader alone in sync: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := tc.part(leader, "minisr", 0).Log().EndOffset(); got != end {
		t.Fatalf("a refused acks=all produce moved the log end from %d to %d", end, got)
	}
	if sp := rawProduceAcks(t, addr, "minisr", 0, 1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=1 with the leader alone in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	m := scrapeMetrics(t, tc.nodes[leader].HTTPAddr())
	for name, want := range map[string]float64{"gregor_partition_replicas": 3, "gregor_partition_in_sync_replicas": 1, "gregor_partition_under_min_isr": 1} {
		if got := m.must(t, name, "topic", "minisr", "partition", "0"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// A follower back: it catches up and rejoins the ISR.
	tc.restart(followers[0])
	waitLong(t, "the restarted follower to rejoin the ISR", func() bool {
		return slices.Contains(tc.part(leader, "minisr", 0).ISR(), followers[0])
	})
	if sp := rawProduceAcks(t, addr, "minisr", 0, -1, 30000, 3); sp.ErrorCode != 0 {
		t.Fatalf("acks=all after the follower rejoined: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
}

// testBatch is one uncompressed batch of n records without a producer id.
func testBatch(t testing.TB, n int) []byte {
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

// rawFetch sends a Fetch v15 of topic's partition idx at offset with the
// given current leader epoch, from replica (-1: a consumer), and returns
// the partition's answer.
func rawFetch(t *testing.T, addr string, topicID [16]byte, idx int32, offset int64, epoch, replica int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	req.ReplicaState.ID = replica
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 0, 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = idx, offset, epoch, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp := dialRaw(t, addr).do(req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answer %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// values returns the values of the data records in a log read, in order.
func values(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	var s batch.Scratch
	err := batch.Split(raw, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Control() {
			return err
		}
		return batch.ForEachRecord(b, &s, func(_ *batch.Header, r *batch.Record) bool {
			out = append(out, string(r.Value))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReplicationFetchErrors(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	tc := startCluster(t, 3)
	tc.createReplicated("pair", 1, 2, nil)
	st := tc.part(1, "pair", 0).State()
	leader := st.Leader
	var follower, outsider int32 = -1, -1
	for _, id := range tc.live() {
		switch {
		case id == leader:
		case slices.Contains(st.Replicas, id):
			follower = id
		default:
			outsider = id
		}
	}
	topicID := tc.nodes[leader].lookupTopic("pair").id
	addr := tc.nodes[leader].Addr()
	epoch := st.LeaderEpoch
	cases := []struct {
		name    string
		epoch   int32
		replica int32
		want    int16
	}{
		{"consumer at the current epoch", epoch, -1, 0},
		{"consumer at a newer epoch", epoch + 1, -1, kerr.UnknownLeaderEpoch.Code},
		{"follower at the current epoch", epoch, follower, 0},
		{"follower at a newer epoch", epoch + 1, follower, kerr.UnknownLeaderEpoch.Code},
		{"broker that is not a replica", epoch, outsider, kerr.NotLeaderForPartition.Code},
	}
	if epoch > 0 {
		cases = append(cases, struct {
			name    string
			epoch   int32
			replica int32
			want    int16
		}{"follower at an older epoch", epoch - 1, follower, kerr.FencedLeaderEpoch.Code})
	}
	for _, c := range cases {
		if got := rawFetch(t, addr, topicID, 0, 0, c.epoch, c.replica); got.ErrorCode != c.want {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(c.want))
		}
	}
}

func TestReplicationAcksAllWaitsForASlowFollower(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	var slow atomic.Int32
	slow.Store(-1)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	tc := startClusterWith(t, 3, func(c *Config) {
		self := c.NodeID
		c.testHooks.replicaFetch = func(int32) {
			if slow.Load() == self {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-release
			}
		}
	})
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
		}
	}
	t.Cleanup(releaseOnce)
	tc.createReplicated("slow", 1, 3, nil)
	leader := tc.leaderOf(1, "slow", 0)
	addr := tc.nodes[leader].Addr()
	if sp := rawProduceAcks(t, addr, "slow", 0, -1, 30000, 5); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	var slowID, other int32
	for _, id := range tc.part(leader, "slow", 0).State().Replicas {
		if id != leader {
			if slowID == 0 {
				slowID = id
			} else {
				other = id
			}
		}
	}
	slow.Store(slowID)
	<-entered // the slow follower fetches no more

	lp := tc.part(leader, "slow", 0)
	answered := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { answered <- rawProduceAcks(t, addr, "slow", 0, -1, 60000, 5) }()
	end := int64(10)
	waitLong(t, "the append and the other follower to catch up", func() bool {
		leo, _, ok := lp.FollowerView(other)
		return lp.Log().EndOffset() == end && ok && leo == end
	})
	select {
	case sp := <-answered:
		t.Fatalf("acks=all answered (%v) before the slow follower fetched", kerr.ErrorForCode(sp.ErrorCode))
	default:
	}
	// A consumer reads nothing past the high watermark, which waits for
	// the slow follower.
	hw := lp.HighWatermark()
	if hw >= end {
		t.Fatalf("high watermark %d with a follower behind at %d", hw, end)
	}
	topicID := tc.nodes[leader].lookupTopic("slow").id
	fp := rawFetch(t, addr, topicID, 0, 0, -1, -1)
	if fp.ErrorCode != 0 || fp.HighWatermark != hw {
		t.Fatalf("consumer fetch: %v, high watermark %d, want %d", kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark, hw)
	}
	if got := len(values(t, fp.RecordBatches)); int64(got) != hw {
		t.Fatalf("consumer read %d records with the high watermark at %d", got, hw)
	}

	// An acks=all produce whose timeout passes first is REQUEST_TIMED_OUT
	// (its batch stays in the log, as Kafka's).
	if sp := rawProduceAcks(t, addr, "slow", 0, -1, 200, 1); sp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all past its timeout: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(sp.ErrorCode))
	}
	end++

	releaseOnce()
	select {
	case sp := <-answered:
		if sp.ErrorCode != 0 {
			t.Fatalf("acks=all once the follower caught up: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("acks=all not answered after the follower caught up")
	}
	if hw := lp.HighWatermark(); hw != end {
		t.Fatalf("high watermark %d after acks=all, want %d", hw, end)
	}
	tc.waitReplicated("slow", 0, end)
}

func TestReplicationFailover(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	tc := startCluster(t, 3)
	two := "2"
	tc.createReplicated("failover", 1, 3, map[string]*string{"min.insync.replicas": &two})
	oldLeader := tc.leaderOf(1, "failover", 0)
	var seeds []string
	for _, id := range tc.live() {
		seeds = append(seeds, tc.nodes[id].Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("failover"), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Produce in order; record what is acknowledged.
	var mu sync.Mutex
	var acked []string
	var failed []error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("%08d", i)
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				acked = append(acked, string(r.Value))
			})
			if i%50 == 49 {
				time.Sleep(time.Millisecond) // let batches form without an unbounded backlog
			}
		}
	}()
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitLong(t, "records acknowledged before the failover", func() bool { return ackedCount() >= 300 })

	tc.close(oldLeader)
	var newLeader int32
	survivor := tc.live()[0]
	waitLong(t, "a new leader", func() bool {
		newLeader = tc.leaderOf(survivor, "failover", 0)
		return newLeader >= 0 && newLeader != oldLeader
	})
	before := ackedCount()
	waitLong(t, "records acknowledged by the new leader", func() bool { return ackedCount() >= before+300 })
	close(stop)
	<-done
	if err := cl.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	mu.Unlock()

	// Every acknowledged record is on the new leader, once, in order.
	lp := tc.part(newLeader, "failover", 0)
	hw := lp.HighWatermark()
	got := values(t, readLog(t, lp, 0, hw))
	seen := map[string]bool{}
	for i, v := range got {
		if seen[v] {
			t.Fatalf("record %s is twice in the new leader's log", v)
		}
		seen[v] = true
		if i > 0 && v < got[i-1] {
			t.Fatalf("record %s after %s in the new leader's log", v, got[i-1])
		}
	}
	for _, v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s is missing from the new leader's log (%d records)", v, len(got))
		}
	}

	// The old epoch is fenced, a newer one unknown.
	epoch := lp.LeaderEpoch()
	topicID := tc.nodes[newLeader].lookupTopic("failover").id
	if fp := rawFetch(t, tc.nodes[newLeader].Addr(), topicID, 0, 0, epoch-1, -1); fp.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch at the old epoch: %v", kerr.ErrorForCode(fp.ErrorCode))
	}
	if fp := rawFetch(t, tc.nodes[newLeader].Addr(), topicID, 0, 0, epoch+1, -1); fp.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("fetch at a newer epoch: %v", kerr.ErrorForCode(fp.ErrorCode))
	}

	// The old leader comes back, truncates what it alone had, catches up
	// and rejoins the ISR.
	tc.restart(oldLeader)
	waitLong(t, "the old leader to rejoin the ISR", func() bool {
		return slices.Contains(lp.ISR(), oldLeader)
	})
	end := lp.Log().EndOffset()
	tc.waitReplicated("failover", 0, end)
}

func TestReplicationSurvivesAFullRestart(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	tc := startCluster(t, 3)
	tc.createReplicated("restart", 1, 3, nil)
	cl := tc.client(1, kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSync(t, cl, "restart", 0, 50)
	leader := tc.leaderOf(1, "restart", 0)
	end := tc.part(leader, "restart", 0).Log().EndOffset()
	tc.waitReplicated("restart", 0, end)
	cl.Close()

	// Every node checkpoints its high watermark when it closes.
	for _, id := range tc.live() {
		tc.close(id)
		dir := filepath.Join(tc.cfgs[id].DataDir, partitionDir("restart", 0))
		l, err := storage.Open(vfs.OSFS{}, dir, storage.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		hw, ok := l.HighWatermarkCheckpoint()
		l.Close()
		if !ok || hw != end {
			t.Fatalf("node %d checkpointed high watermark %d (%v), want %d", id, hw, ok, end)
		}
	}
	tc.restart(1, 2, 3)
	tc.waitForBrokers(tc.live(), 3)
	waitLong(t, "a leader with all three replicas in its ISR", func() bool {
		l := tc.leaderOf(1, "restart", 0)
		if l < 0 {
			return false
		}
		_, leading := tc.part(l, "restart", 0).LeaderEpochIfLeading()
		return leading && len(tc.part(l, "restart", 0).ISR()) == 3
	})
	cl = tc.client(2, kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSync(t, cl, "restart", 50, 50)
	leader = tc.leaderOf(1, "restart", 0)
	end = tc.part(leader, "restart", 0).Log().EndOffset()
	if end != 100 {
		t.Fatalf("log end %d after 100 records", end)
	}
	tc.waitReplicated("restart", 0, end)
}

func TestReplicationFollowsTheLeadersLogStart(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	tc := startClusterWith(t, 3, func(c *Config) { c.ReplicaLagTimeMaxMs = 1500 })
	tc.createReplicated("start", 1, 3, nil)
	cl := tc.client(1, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produceSync(t, cl, "start", 0, 20)
	leader := tc.leaderOf(1, "start", 0)
	tc.waitReplicated("start", 0, 20)
	adm := kadm.NewClient(tc.client(1))
	deleteTo := func(offset int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "start", Partition: 0, At: offset})
		res, err := adm.DeleteRecords(testCtx(t), os)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Error(); err != nil {
			t.Fatal(err)
		}
	}
	// DeleteRecords answers once every live replica's log start followed
	// (Kafka's low watermark).
	deleteTo(10)
	for _, id := range tc.live() {
		if start := tc.part(id, "start", 0).Log().StartOffset(); start != 10 {
			t.Fatalf("node %d's log starts at %d once DeleteRecords answered, want 10", id, start)
		}
	}

	// A follower that is down while the leader's log start passes its end
	// starts over at the leader's log start when it comes back.
	var follower int32
	for _, id := range tc.part(leader, "start", 0).State().Replicas {
		if id != leader {
			follower = id
		}
	}
	tc.close(follower)
	waitLong(t, "the ISR to shrink", func() bool { return len(tc.part(leader, "start", 0).ISR()) == 2 })
	produceSync(t, cl, "start", 20, 20)
	waitLong(t, "the high watermark to reach 40", func() bool { return tc.part(leader, "start", 0).HighWatermark() == 40 })
	deleteTo(35)
	tc.restart(follower)
	waitLong(t, "the follower to rejoin the ISR", func() bool {
		return slices.Contains(tc.part(leader, "start", 0).ISR(), follower)
	})
	if start := tc.part(follower, "start", 0).Log().StartOffset(); start != 35 {
		t.Fatalf("the restarted follower's log starts at %d, want 35", start)
	}
	tc.waitReplicated("start", 0, 40)
}

// pidBatch is one batch of n records of producer pid at epoch 0
// from sequence seq.
func pidBatch(t *testing.T, pid int64, seq int32, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("%d-%d", seq, i))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReplicationIdempotentProducerAcrossFailover(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	tc := startCluster(t, 3)
	tc.createReplicated("idem", 1, 3, nil)
	leader := tc.leaderOf(1, "idem", 0)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(4)
	ip.ProducerID, ip.ProducerEpoch = -1, -1
	ipr := dialRaw(t, tc.nodes[leader].Addr()).do(ip).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(ipr.ErrorCode))
	}
	pid := ipr.ProducerID
	produce := func(node int32, seq int32) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "idem"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = pidBatch(t, pid, seq, 2)
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		return dialRaw(t, tc.nodes[node].Addr()).do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	for seq := int32(0); seq < 10; seq += 2 {
		if sp := produce(leader, seq); sp.ErrorCode != 0 || sp.BaseOffset != int64(seq) {
			t.Fatalf("sequence %d: %v at %d", seq, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
	tc.close(leader)
	survivor := tc.live()[0]
	var newLeader int32
	waitLong(t, "a new leader that has taken the lead", func() bool {
		newLeader = tc.leaderOf(survivor, "idem", 0)
		if newLeader < 0 || newLeader == leader {
			return false
		}
		_, leading := tc.part(newLeader, "idem", 0).LeaderEpochIfLeading()
		return leading
	})
	// The retry of the last acknowledged batch is recognised, not stored
	// again; the next sequence follows; a gap is refused.
	if sp := produce(newLeader, 8); sp.ErrorCode != 0 || sp.BaseOffset != 8 {
		t.Fatalf("retry of sequence 8 on the new leader: %v at %d, want success at 8", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if sp := produce(newLeader, 10); sp.ErrorCode != 0 || sp.BaseOffset != 10 {
		t.Fatalf("sequence 10 on the new leader: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if sp := produce(newLeader, 20); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence 20 after 11: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(sp.ErrorCode))
	}
	if end := tc.part(newLeader, "idem", 0).Log().EndOffset(); end != 12 {
		t.Fatalf("log end %d, want 12 (no duplicate)", end)
	}
}

// fetchGate pauses the replica fetchers of chosen nodes (Config.testHooks).
type fetchGate struct {
	mu      sync.Mutex
	paused  map[int32]bool
	release chan struct{}
	entered chan int32
}

func newFetchGate() *fetchGate {
	return &fetchGate{paused: map[int32]bool{}, release: make(chan struct{}), entered: make(chan int32, 64)}
}

// hook is the replicaFetch test hook of node self.
func (g *fetchGate) hook(self int32) func(int32) {
	return func(int32) {
		for {
			g.mu.Lock()
			if !g.paused[self] {
				g.mu.Unlock()
				return
			}
			ch := g.release
			g.mu.Unlock()
			select {
			case g.entered <- self:
			default:
			}
			<-ch
		}
	}
}

// pause stops the fetchers of nodes before their next round and waits
// until each has reached it.
func (g *fetchGate) pause(t *testing.T, nodes ...int32) {
	t.Helper()
	g.mu.Lock()
	for _, id := range nodes {
		g.paused[id] = true
	}
	g.mu.Unlock()
	waiting := map[int32]bool{}
	for _, id := range nodes {
		waiting[id] = true
	}
	timeout := time.After(60 * time.Second)
	for len(waiting) > 0 {
		select {
		case id := <-g.entered:
			delete(waiting, id)
		case <-timeout:
			t.Fatalf("fetchers %v did not pause", waiting)
		}
	}
}

// resume lets every paused fetcher go on.
func (g *fetchGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = map[int32]bool{}
	close(g.release)
	g.release = make(chan struct{})
}

func TestReplicationOldLeaderTruncatesWhatOnlyItHad(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	gate := newFetchGate()
	tc := startClusterWith(t, 3, func(c *Config) { c.testHooks.replicaFetch = gate.hook(c.NodeID) })
	t.Cleanup(gate.resume)
	tc.createReplicated("diverge", 1, 3, nil)
	oldLeader := tc.leaderOf(1, "diverge", 0)
	addr := tc.nodes[oldLeader].Addr()
	if sp := rawProduceAcks(t, addr, "diverge", 0, -1, 30000, 10); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	tc.waitReplicated("diverge", 0, 10)
	var followers []int32
	for _, id := range tc.live() {
		if id != oldLeader {
			followers = append(followers, id)
		}
	}
	// Five records only the leader gets (acks=1), then it goes away.
	gate.pause(t, followers...)
	if sp := rawProduceAcks(t, addr, "diverge", 0, 1, 30000, 5); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	if end := tc.part(oldLeader, "diverge", 0).Log().EndOffset(); end != 15 {
		t.Fatalf("old leader's log end %d, want 15", end)
	}
	tc.close(oldLeader)
	var newLeader int32
	waitLong(t, "a new leader that has taken the lead", func() bool {
		newLeader = tc.leaderOf(followers[0], "diverge", 0)
		if newLeader < 0 || newLeader == oldLeader {
			return false
		}
		_, leading := tc.part(newLeader, "diverge", 0).LeaderEpochIfLeading()
		return leading
	})
	gate.resume()
	if sp := rawProduceAcks(t, tc.nodes[newLeader].Addr(), "diverge", 0, -1, 30000, 3); sp.ErrorCode != 0 || sp.BaseOffset != 10 {
		t.Fatalf("produce to the new leader: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}

	// The old leader comes back as a follower: it drops offsets 10-14,
	// which only it had, and copies the new leader's 10-12.
	tc.restart(oldLeader)
	waitLong(t, "the old leader to rejoin the ISR", func() bool {
		return slices.Contains(tc.part(newLeader, "diverge", 0).ISR(), oldLeader)
	})
	tc.waitReplicated("diverge", 0, 13)
	if end := tc.part(oldLeader, "diverge", 0).Log().EndOffset(); end != 13 {
		t.Fatalf("old leader's log end %d after truncation, want 13", end)
	}
	epochs := tc.part(oldLeader, "diverge", 0).Log().Epochs()
	want := tc.part(newLeader, "diverge", 0).Log().Epochs()
	if !slices.Equal(epochs, want) {
		t.Fatalf("old leader's leader epochs %v, the new leader's %v", epochs, want)
	}
}

func TestReplicationFollowerWithAFailedDiskLeavesTheISR(t *testing.T) {
	t.Parallel() // a cluster test waits mostly on timers; two at a time (-parallel, GOMAXPROCS)
	faults := map[int32]*vfs.FaultFS{}
	tc := startClusterWith(t, 3, func(c *Config) {
		c.ReplicaLagTimeMaxMs = 1500
		faults[c.NodeID] = vfs.NewFaultFS(vfs.OSFS{}, nil)
		c.FS = faults[c.NodeID]
	})
	tc.createReplicated("disk", 1, 3, nil)
	leader := tc.leaderOf(1, "disk", 0)
	var follower int32
	for _, id := range tc.part(leader, "disk", 0).State().Replicas {
		if id != leader {
			follower = id
		}
	}
	addr := tc.nodes[leader].Addr()
	if sp := rawProduceAcks(t, addr, "disk", 0, -1, 30000, 5); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	// The follower's disk fills up: its appends to the partition fail.
	dir := partitionDir("disk", 0)
	faults[follower].Arm(func(op vfs.Op, name string, n int) vfs.Fault {
		if op == vfs.OpWrite && strings.Contains(name, dir) {
			return vfs.Fault{Err: syscall.ENOSPC}
		}
		return vfs.Fault{}
	})
	end := tc.part(follower, "disk", 0).Log().EndOffset()
	answered := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { answered <- rawProduceAcks(t, addr, "disk", 0, -1, 60000, 5) }()
	waitLong(t, "the leader to drop the failed follower from the ISR", func() bool {
		return !slices.Contains(tc.part(leader, "disk", 0).ISR(), follower)
	})
	if sp := <-answered; sp.ErrorCode != 0 {
		t.Fatalf("acks=all once the failed follower left the ISR: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := tc.part(follower, "disk", 0).Log().EndOffset(); got != end {
		t.Fatalf("the failed follower's log end moved from %d to %d", end, got)
	}
	// Its log failed; closing it reports that.
	tc.nodes[follower].Close()
	tc.closed[follower] = true
}

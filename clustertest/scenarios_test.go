package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// The scenarios. make test runs the short version: three kills in
// TestKillLeaderUnderAcksAll, TestPausedLeaderIsFencedAndTruncates and, as
// root, TestIsolatedLeaderCannotAcknowledge; make cluster-test sets
// GREGOR_CLUSTER_KILLS=20 and also runs TestFollowerWithFullDisk (as root).
// Tests that need root skip, saying why, without it. Plain
// `go test ./clustertest` runs all four with three kills.

// envInt reads a positive count from the environment, def if unset.
func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q is not a positive number", key, s)
	}
	return n
}

// seeded returns a random source whose seed is GREGOR_CLUSTER_SEED or the
// clock, and logs it so that a failing run's choices can be replayed.
func seeded(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GREGOR_CLUSTER_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("GREGOR_CLUSTER_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (GREGOR_CLUSTER_SEED=%d replays the choices)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// verify ends a scenario: it stops the workload, reads the final logs,
// checks the history, stops the cluster cleanly and compares the replicas.
func verify(t *testing.T, c *cluster, w *workload, extra ...Send) Summary {
	t.Helper()
	c.waitFullISR(topic, partitions)
	h := w.finish(c)
	h.Sends = append(h.Sends, extra...)
	final, hw := c.finalLogs()
	h.Final = final
	sum := checkHistory(t, h)
	replicas := map[int32][]int32{}
	for p := range int32(partitions) {
		st, _ := c.partition(topic, p)
		replicas[p] = st.replicas
	}
	c.stopAll()
	c.compareReplicas(replicas, hw, final)
	t.Logf("replicas byte-identical below the high watermarks %v", hw)
	return sum
}

// TestKillLeaderUnderAcksAll kill -9s a partition's leader while idempotent
// acks=all producers write, waits for a new leader to take writes,
// restarts the killed node on its data dir and waits for it to be back in
// every ISR; GREGOR_CLUSTER_KILLS times (3 unless set). Then every
// acknowledged record must be stored once, in order, nothing a consumer saw
// may have vanished, and the replicas must be byte-identical below the high
// watermark.
func TestKillLeaderUnderAcksAll(t *testing.T) {
	kills := envInt(t, "GREGOR_CLUSTER_KILLS", 3)
	rng := seeded(t)
	c := startCluster(t, loopbackConfig(t, 3))
	c.createTopic()
	w := startWorkload(t, c, "kill")
	w.waitAcks(c, 300, "before the first kill")
	started := time.Now()
	for i := range kills {
		p := int32(rng.IntN(partitions))
		st := c.waitLeader(topic, p, 0)
		// Kill amid the produces, not right after a wait returned.
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		victim := c.node(st.leader)
		t.Logf("kill %d of %d: partition %d's leader is node %d (epoch %d), %d records acknowledged so far",
			i+1, kills, p, victim.id, st.epoch, w.ackedCount())
		killed := time.Now()
		c.kill9(victim)
		next := c.waitLeader(topic, p, victim.id)
		if next.epoch <= st.epoch {
			t.Fatalf("partition %d's new leader %d has epoch %d, not above the old %d", p, next.leader, next.epoch, st.epoch)
		}
		elected := time.Now()
		t.Logf("after the election: %s", c.describe())
		w.waitAcksOn(c, p, 100, fmt.Sprintf("node %d down, node %d leads", victim.id, next.leader))
		writing := time.Now()
		c.restart(victim)
		c.waitFullISR(topic, partitions)
		t.Logf("new leader %d (epoch %d, ISR %v) after %v, writes after %v more; node %d restarted and back in every ISR after %v more",
			next.leader, next.epoch, next.isr, elected.Sub(killed).Round(time.Millisecond), writing.Sub(elected).Round(time.Millisecond),
			victim.id, time.Since(writing).Round(time.Millisecond))
		w.waitAcks(c, 200, fmt.Sprintf("node %d back", victim.id))
	}
	t.Logf("%d kills in %v", kills, time.Since(started).Round(time.Millisecond))
	sum := verify(t, c, w)
	t.Logf("%d kill -9s of a partition leader: %v; no anomaly", kills, sum)
}

// TestPausedLeaderIsFencedAndTruncates SIGSTOPs a partition's leader for
// longer than broker.session.timeout.ms: the controller fences it and
// another replica leads, under a newer epoch, taking writes. A produce
// (acks=all) sent straight to the paused node waits in its socket; the node
// is resumed: it must not acknowledge that write (its followers fetch from
// the new leader, so its high watermark cannot pass the record), it rejoins
// as a follower (truncating what it alone had; the test logs how often) and
// its replica ends byte-identical to the others'.
func TestPausedLeaderIsFencedAndTruncates(t *testing.T) {
	c := startCluster(t, loopbackConfig(t, 3))
	c.createTopic()
	w := startWorkload(t, c, "pause")
	const p = 0
	w.waitAcksOn(c, p, 100, "before the pause")
	st := c.waitLeader(topic, p, 0)
	old := c.node(st.leader)
	direct := dialNode(t, old)
	c.pause(old)
	next := c.waitLeader(topic, p, old.id)
	if next.epoch <= st.epoch {
		t.Fatalf("partition %d's new leader %d has epoch %d, not above the old %d", p, next.leader, next.epoch, st.epoch)
	}
	t.Logf("node %d paused: partition %d moved from node %d (epoch %d) to node %d (epoch %d)",
		old.id, p, st.leader, st.epoch, next.leader, next.epoch)
	w.waitAcksOn(c, p, 100, "the new leader takes writes")
	fenced := produceDirect(t, direct, c.topicID(), p, Value("pause-direct", 0))
	c.resume(old)
	sent := <-fenced
	t.Logf("the produce sent to the paused old leader: %v", sent.outcome)
	if sent.Acked {
		t.Errorf("the deposed leader acknowledged an acks=all produce after its partition moved (%s)", sent.outcome)
	}
	c.waitFullISR(topic, partitions)
	c.waitFor(fmt.Sprintf("node %d to know it no longer leads partition %d", old.id, p), 60*time.Second, func() bool {
		m, err := c.metadata(old)
		if err != nil {
			return false
		}
		for _, mt := range m.Topics {
			for _, mp := range mt.Partitions {
				if mt.Topic != nil && *mt.Topic == topic && mp.Partition == p {
					return mp.LeaderEpoch >= next.epoch
				}
			}
		}
		return false
	})
	w.waitAcks(c, 200, "after the resume")
	sum := verify(t, c, w, sent.Send)
	t.Logf("node %d's log after the resume: %d truncations of a diverged replica (records only it had)",
		old.id, c.logCount(old, `msg="truncating a diverged replica" topic=`+topic))
	t.Logf("SIGSTOP past the session timeout: %v; no anomaly", sum)
}

// dialNode returns a client whose only broker is n, with its connection
// open, so that a request can reach n while it is paused.
func dialNode(t *testing.T, n *node) *kgo.Broker {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestTimeoutOverhead(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := cl.SeedBrokers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Produce and Metadata share the connection kgo opens for
	// non-fetch requests.
	if _, err := b.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("connecting to node %d: %v", n.id, err)
	}
	return b
}

// A directSend is a record produced with one raw request, and what came of
// it.
type directSend struct {
	Send
	outcome string
}

// produceDirect sends one acks=all produce of value to partition p of the
// topic (its name and id) through b, from a goroutine, and delivers what came of it: acknowledged
// (with its offset) or not.
func produceDirect(t *testing.T, b *kgo.Broker, topicID [16]byte, p int32, value string) <-chan directSend {
	t.Helper()
	rec, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1},
		[]batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, rec
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	producer, seq, _ := parseValue(value)
	out := make(chan directSend, 1)
	go func() {
		s := directSend{Send: Send{Producer: producer, Seq: seq, Partition: p, Value: value}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		resp, err := b.Request(ctx, req)
		switch {
		case err != nil:
			s.outcome = "no answer: " + err.Error()
		case len(resp.(*kmsg.ProduceResponse).Topics) != 1 || len(resp.(*kmsg.ProduceResponse).Topics[0].Partitions) != 1:
			s.outcome = "a malformed answer"
		default:
			rp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if rp.ErrorCode == 0 {
				s.Acked, s.Offset = true, rp.BaseOffset
				s.outcome = fmt.Sprintf("acknowledged at offset %d", rp.BaseOffset)
			} else {
				s.outcome = "refused: " + kerr.ErrorForCode(rp.ErrorCode).Error()
			}
		}
		out <- s
	}()
	return out
}

// TestIsolatedLeaderCannotAcknowledge runs each node in its own network
// namespace and cuts a partition's leader off from its peers while the
// test's clients still reach it. The majority side fences it and elects a
// new leader that takes writes; an acks=all produce sent to the isolated
// old leader must not be acknowledged (it cannot reach
// min.insync.replicas): no split brain. The network heals, the old leader
// rejoins as a follower, and nothing acknowledged is lost.
func TestIsolatedLeaderCannotAcknowledge(t *testing.T) {
	lab := newNetnsLab(t, 3)
	c := startCluster(t, lab.config())
	c.createTopic()
	w := startWorkload(t, c, "isolate")
	const p = 0
	w.waitAcksOn(c, p, 100, "before the isolation")
	st := c.waitLeader(topic, p, 0)
	old := c.node(st.leader)
	direct := dialNode(t, old)
	lab.isolate(int(old.id - 1))
	next := c.waitLeader(topic, p, old.id)
	if next.epoch <= st.epoch {
		t.Fatalf("partition %d's new leader %d has epoch %d, not above the old %d", p, next.leader, next.epoch, st.epoch)
	}
	t.Logf("node %d isolated: partition %d moved from node %d (epoch %d) to node %d (epoch %d)",
		old.id, p, st.leader, st.epoch, next.leader, next.epoch)
	w.waitAcksOn(c, p, 100, "the majority side takes writes")
	sent := <-produceDirect(t, direct, c.topicID(), p, Value("isolate-direct", 0))
	t.Logf("the produce sent to the isolated old leader: %v", sent.outcome)
	if sent.Acked {
		t.Errorf("split brain: the isolated old leader acknowledged an acks=all produce (%s)", sent.outcome)
	}
	lab.heal(int(old.id - 1))
	c.waitFullISR(topic, partitions)
	w.waitAcks(c, 200, "after the heal")
	sum := verify(t, c, w, sent.Send)
	t.Logf("node %d's log after the heal: %d truncations of a diverged replica (records only it had)",
		old.id, c.logCount(old, `msg="truncating a diverged replica" topic=`+topic))
	t.Logf("leader isolated past the session timeout: %v; no anomaly", sum)
}

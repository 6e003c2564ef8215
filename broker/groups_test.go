package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupTestConfig is a broker for group tests: no initial rebalance delay
// and short session timeouts allowed, so that nothing waits seconds.
func groupTestConfig(dir string) Config {
	zero := int64(0)
	return Config{DataDir: dir, GroupInitialRebalanceDelayMs: &zero, GroupMinSessionTimeoutMs: 100}
}

// seenSet records which (partition, offset) pairs any consumer processed.
type seenSet struct {
	mu   sync.Mutex
	seen map[[2]int64]bool
}

func newSeenSet() *seenSet { return &seenSet{seen: map[[2]int64]bool{}} }

func (s *seenSet) add(partition int32, offset int64) {
	s.mu.Lock()
	s.seen[[2]int64{int64(partition), offset}] = true
	s.mu.Unlock()
}

func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// waitForGroup polls cond with a long deadline: rebalances of real
// clients take a few heartbeat intervals.
func waitForGroup(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produceN produces n records spread over the topic's partitions.
func produceN(t *testing.T, cl *kgo.Client, topic string, n int, tag string) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("%s-%d", tag, i)), Value: []byte(tag)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committedEqualsEnd reports whether the group's committed offsets are the
// end offsets of every partition of topic.
func committedEqualsEnd(t *testing.T, adm *kadm.Client, group, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Logf("FetchOffsets: %v", err)
		return false
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Logf("ListEndOffsets: %v", err)
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		c, found := committed.Lookup(o.Topic, o.Partition)
		if !found || c.At != o.Offset {
			ok = false
		}
	})
	return ok
}

type franzMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startFranzMember(t *testing.T, addr, group, topic string, balancer kgo.GroupBalancer, seen *seenSet, extra ...kgo.Opt) *franzMember {
	t.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.SessionTimeout(3 * time.Second), kgo.AutoCommitInterval(200 * time.Millisecond)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &franzMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			if fetches.IsClientClosed() {
				return
			}
			fetches.EachRecord(func(r *kgo.Record) { seen.add(r.Partition, r.Offset) })
		}
	}()
	return m
}

// stop commits what the member processed and leaves the group.
func (m *franzMember) stop(t *testing.T) {
	m.cancel()
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("final commit: %v", err)
	}
	m.cl.Close()
}

// TestFranzGoGroupMembersShareRecordsAndResumeAfterRestart: franz-go group
// members (eager range and cooperative-sticky) join and leave while records
// flow; every record is processed; the committed offsets survive a broker
// restart and a new member resumes from them.
func TestFranzGoGroupMembersShareRecordsAndResumeAfterRestart(t *testing.T) {
	t.Parallel()
	for name, balancer := range map[string]func() kgo.GroupBalancer{
		"range":              kgo.RangeBalancer,
		"cooperative-sticky": kgo.CooperativeStickyBalancer,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			first, err := Start(ctx, groupTestConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			const topic, group = "events", "workers"
			prod, err := kgo.NewClient(kgo.SeedBrokers(first.Addr()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kadm.NewClient(prod).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			seen := newSeenSet()
			produceN(t, prod, topic, 500, "a")
			m1 := startFranzMember(t, first.Addr(), group, topic, balancer(), seen)
			waitForGroup(t, "the first member to read", func() bool { return seen.len() > 0 })
			m2 := startFranzMember(t, first.Addr(), group, topic, balancer(), seen)
			produceN(t, prod, topic, 500, "b")
			m3 := startFranzMember(t, first.Addr(), group, topic, balancer(), seen)
			produceN(t, prod, topic, 500, "c")
			waitForGroup(t, "1500 records", func() bool { return seen.len() == 1500 })
			m1.stop(t) // leaves while records flow
			produceN(t, prod, topic, 500, "d")
			m4 := startFranzMember(t, first.Addr(), group, topic, balancer(), seen)
			produceN(t, prod, topic, 500, "e")
			waitForGroup(t, "2500 records", func() bool { return seen.len() == 2500 })
			adm := kadm.NewClient(prod)
			describe, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			if g := describe[group]; g.State != "Stable" && g.State != "PreparingRebalance" && g.State != "CompletingRebalance" || len(g.Members) == 0 {
				t.Fatalf("group described as %s with %d members", g.State, len(g.Members))
			}
			for _, m := range []*franzMember{m2, m3, m4} {
				m.stop(t)
			}
			waitForGroup(t, "committed offsets at the end", func() bool { return committedEqualsEnd(t, adm, group, topic) })
			prod.Close()
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			second := startBroker(t, groupTestConfig(dir))
			prod2 := roundRobinProducer(t, second.Addr())
			adm2 := kadm.NewClient(prod2)
			if !committedEqualsEnd(t, adm2, group, topic) {
				t.Fatal("committed offsets lost across the restart")
			}
			produceN(t, prod2, topic, 300, "f")
			after := newSeenSet()
			m5 := startFranzMember(t, second.Addr(), group, topic, balancer(), after)
			waitForGroup(t, "the 300 new records", func() bool { return after.len() >= 300 })
			m5.stop(t)
			if n := after.len(); n != 300 {
				t.Fatalf("after the restart the group re-read %d records, want only the 300 new", n)
			}
			after.mu.Lock()
			for k := range after.seen {
				if seen.seen[k] {
					t.Fatalf("record %v read again after the restart", k)
				}
			}
			after.mu.Unlock()
		})
	}
}

// TestSessionTimeoutRevokesPartitions: a member that stops heartbeating
// loses its partitions after its session timeout, and the remaining
// member is assigned every partition.
func TestSessionTimeoutRevokesPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	const topic, group = "sessions", "sleepy"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, _ := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	assigned := map[int32]bool{}
	seen := newSeenSet()
	live := startFranzMember(t, b.Addr(), group, topic, kgo.RangeBalancer(), seen,
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			for _, p := range m[topic] {
				assigned[p] = true
			}
			mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			for _, p := range m[topic] {
				delete(assigned, p)
			}
			mu.Unlock()
		}))
	defer live.stop(t)
	nAssigned := func() int { mu.Lock(); defer mu.Unlock(); return len(assigned) }
	waitForGroup(t, "the live member to own all partitions", func() bool { return nAssigned() == 4 })

	// A second member joins with a 1s session, syncs, and then goes
	// silent: no heartbeat, no leave.
	c := dialRaw(t, b.Addr())
	sleepy := rawJoinAndSync(t, c, group, topic, 1000)
	waitForGroup(t, "the sleepy member to get partitions", func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil || d[group].State != "Stable" {
			return false
		}
		for _, m := range d[group].Members {
			if m.MemberID == sleepy {
				a, _ := m.Assigned.AsConsumer()
				return a != nil && len(a.Topics) == 1 && len(a.Topics[0].Partitions) > 0
			}
		}
		return false
	})
	start := time.Now()
	waitForGroup(t, "the sleepy member to be expelled", func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		return err == nil && d[group].State == "Stable" && len(d[group].Members) == 1 && nAssigned() == 4
	})
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Fatalf("expelled after %v, before its 1s session timeout", waited)
	}
}

// TestSaramaConsumerGroupProcessesEveryRecord: three sarama ConsumerGroup
// members, one leaving midway, process every record and commit.
func TestSaramaConsumerGroupProcessesEveryRecord(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	const topic, group = "sarama-events", "sarama-workers"
	prod := roundRobinProducer(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceN(t, prod, topic, 400, "a")
	seen := newSeenSet()
	type member struct {
		cg     sarama.ConsumerGroup
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func() *member {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_1_0_0
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
		cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 3 * time.Second
		cfg.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
		cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
		cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, group, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(ctx)
		m := &member{cg: cg, cancel: mcancel, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for mctx.Err() == nil {
				if err := cg.Consume(mctx, []string{topic}, saramaHandler{seen}); err != nil && mctx.Err() == nil {
					t.Logf("sarama Consume: %v", err)
				}
			}
		}()
		return m
	}
	m1, m2, m3 := start(), start(), start()
	waitForGroup(t, "400 records", func() bool { return seen.len() == 400 })
	m1.cancel()
	<-m1.done
	m1.cg.Close()
	produceN(t, prod, topic, 400, "b")
	deadline := time.Now().Add(30 * time.Second)
	for seen.len() != 800 {
		if time.Now().After(deadline) {
			seen.mu.Lock()
			per := map[int64]int{}
			for k := range seen.seen {
				per[k[0]]++
			}
			seen.mu.Unlock()
			d, _ := adm.DescribeGroups(ctx, group)
			committed, _ := adm.FetchOffsets(ctx, group)
			var assigned []string
			for _, m := range d[group].Members {
				a, _ := m.Assigned.AsConsumer()
				assigned = append(assigned, fmt.Sprintf("%s:%+v", m.MemberID, a))
			}
			t.Fatalf("timed out at %d records: per partition %v; group %s %v; committed %v", seen.len(), per,
				d[group].State, assigned, committed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitForGroup(t, "committed offsets at the end", func() bool { return committedEqualsEnd(t, adm, group, topic) })
	for _, m := range []*member{m2, m3} {
		m.cancel()
		<-m.done
		m.cg.Close()
	}
}

type saramaHandler struct{ seen *seenSet }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.seen.add(m.Partition, m.Offset)
		s.MarkMessage(m, "")
	}
	return nil
}

// TestKafkaGoReaderGroupProcessesEveryRecord: three kafka-go Readers with
// a GroupID (JoinGroup v2, OffsetCommit v2, OffsetFetch v1: the old floors)
// share a topic; one leaves while records flow; every record is processed
// and committed.
func TestKafkaGoReaderGroupProcessesEveryRecord(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	const topic, group = "kafka-go-events", "kafka-go-workers"
	prod := roundRobinProducer(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceN(t, prod, topic, 300, "a")
	seen := newSeenSet()
	var wg sync.WaitGroup
	var readers []*kafkago.Reader
	for i := 0; i < 3; i++ {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b.Addr()}, GroupID: group, Topic: topic,
			MaxWait: 100 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 3 * time.Second,
			RebalanceTimeout: 5 * time.Second, JoinGroupBackoff: 50 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
			StartOffset: kafkago.FirstOffset})
		readers = append(readers, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := r.ReadMessage(ctx) // commits synchronously
				if err != nil {
					return
				}
				seen.add(int32(m.Partition), m.Offset)
			}
		}()
	}
	waitForGroup(t, "300 records", func() bool { return seen.len() == 300 })
	readers[0].Close() // leaves the group while records flow
	produceN(t, prod, topic, 300, "b")
	waitForGroup(t, "600 records", func() bool { return seen.len() == 600 })
	for _, r := range readers[1:] {
		r.Close()
	}
	wg.Wait()
	// kafka-go can commit an offset it fetched in one generation with the
	// next one's id (its commit requests go to whichever generation's
	// commit loop runs), moving a partition's committed offset back below
	// what its new owner committed; Kafka accepts that commit as Gregor
	// does. What the group guarantees is at-least-once: a member joining
	// afterwards resumes from the committed offsets and commits the end.
	last := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b.Addr()}, GroupID: group, Topic: topic,
		MaxWait: 100 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 3 * time.Second,
		RebalanceTimeout: 5 * time.Second, JoinGroupBackoff: 50 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
		StartOffset: kafkago.FirstOffset})
	defer last.Close()
	go func() {
		for {
			if _, err := last.ReadMessage(ctx); err != nil {
				return
			}
		}
	}()
	waitForGroup(t, "committed offsets at the end", func() bool { return committedEqualsEnd(t, adm, group, topic) })
}

// TestFranzGoStaticMemberRestartKeepsAssignment: KIP-345 and KIP-814. A
// static member (group.instance.id) that restarts gets its partitions back
// without the group rebalancing: the other member keeps consuming and is
// never revoked.
func TestFranzGoStaticMemberRestartKeepsAssignment(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	const topic, group = "static-events", "static-workers"
	prod := roundRobinProducer(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	revokedFromSteady := 0
	assignedTo := map[string][]int32{}
	track := func(name string) []kgo.Opt {
		return []kgo.Opt{
			kgo.InstanceID(name),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assignedTo[name] = m[topic] // eager: the whole assignment
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				if name == "steady" {
					revokedFromSteady += len(m[topic])
				}
				mu.Unlock()
			}),
		}
	}
	seen := newSeenSet()
	steady := startFranzMember(t, b.Addr(), group, topic, kgo.RangeBalancer(), seen, track("steady")...)
	defer steady.stop(t)
	restarting := startFranzMember(t, b.Addr(), group, topic, kgo.RangeBalancer(), seen, track("restarting")...)
	twoStable := func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		return err == nil && d[group].State == "Stable" && len(d[group].Members) == 2
	}
	// Both members must hold partitions: the group can be Stable with both
	// in it before either's callback for that generation has run, one
	// member still showing the four partitions it held alone.
	waitForGroup(t, "two static members, stable", func() bool {
		mu.Lock()
		defer mu.Unlock()
		r, s := len(assignedTo["restarting"]), len(assignedTo["steady"])
		return twoStable() && r > 0 && s > 0 && r+s == 4
	})
	mu.Lock()
	before := append([]int32(nil), assignedTo["restarting"]...)
	revokedBefore := revokedFromSteady
	assignedTo["restarting"] = nil
	mu.Unlock()

	// A static member's Close does not leave the group (franz-go, like the
	// Java client, sends no LeaveGroup for it).
	restarting.cancel()
	<-restarting.done
	restarting.cl.Close()
	restarted := startFranzMember(t, b.Addr(), group, topic, kgo.RangeBalancer(), seen, track("restarting")...)
	defer restarted.stop(t)
	waitForGroup(t, "the restarted member to get its partitions back", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return assignedTo["restarting"] != nil
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(assignedTo["restarting"]) != fmt.Sprint(before) {
		t.Fatalf("restarted static member got %v, had %v", assignedTo["restarting"], before)
	}
	if revokedFromSteady != revokedBefore {
		t.Fatalf("the other member lost %d partitions during the static restart", revokedFromSteady-revokedBefore)
	}
	if !twoStable() {
		t.Fatal("group not stable with two members after the static restart")
	}
}

// roundRobinProducer returns a franz-go client that spreads records over
// partitions in turn, closed when the test ends.
func roundRobinProducer(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

//go:build cluster

package broker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addBrokerOnlyNode starts node id with process.roles=broker against the
// cluster's voters, on a raft listener of its own, and adds it to tc.
func (tc *testCluster) addBrokerOnlyNode(id int32, tune func(*Config)) {
	tc.t.Helper()
	cfg := tc.brokerOnlyConfig(id, tune)
	tc.cfgs[id] = cfg
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Start(ctx, cfg)
	if err != nil {
		tc.t.Fatalf("starting broker-only node %d: %v", id, err)
	}
	tc.addNode(id, b)
}

// brokerOnlyConfig is node id's config as a broker-only node of tc: a
// voter's, with process.roles=broker, a raft listener of its own and a
// data dir, passed through tune when not nil.
func (tc *testCluster) brokerOnlyConfig(id int32, tune func(*Config)) Config {
	tc.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tc.t.Fatal(err)
	}
	var voterCfg Config
	for _, c := range tc.cfgs {
		voterCfg = c
		break
	}
	cfg := voterCfg
	cfg.NodeID = id
	cfg.ProcessRoles = "broker"
	cfg.controllerListener = ln
	cfg.DataDir = tc.t.TempDir()
	if tune != nil {
		tune(&cfg)
	}
	return cfg
}

// addBrokerOnlyNodeErr is addBrokerOnlyNode for a node expected not to
// start within ctx: it hands Start's error to check, and closes the node
// if it did start after all.
func (tc *testCluster) addBrokerOnlyNodeErr(ctx context.Context, id int32, tune func(*Config), check func(error)) {
	tc.t.Helper()
	cfg := tc.brokerOnlyConfig(id, tune)
	b, err := Start(ctx, cfg)
	if err == nil {
		b.Close()
	}
	check(err)
}

// addNode adds the started node id to tc, closed with the test.
func (tc *testCluster) addNode(id int32, b *Broker) {
	tc.nodes[id] = b
	tc.t.Cleanup(func() {
		if !tc.closed[id] {
			tc.nodes[id].Close()
			tc.closed[id] = true
		}
	})
}

// describeQuorum asks node id for the quorum of __cluster_metadata.
func (tc *testCluster) describeQuorum(id int32) kmsg.DescribeQuorumResponseTopicPartition {
	tc.t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = clusterMetadataTopic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := dialRaw(tc.t, tc.nodes[id].Addr()).do(req).(*kmsg.DescribeQuorumResponse)
	return resp.Topics[0].Partitions[0]
}

// TestClusterAddsABrokerOnlyNode adds a process.roles=broker node to a
// cluster of three voters: it appears in Metadata and DescribeCluster,
// DescribeQuorum lists it as an observer, topics are placed on it, it
// serves produce and fetch for the partitions it leads, it forwards admin
// writes, restarted from its data dir (its own metadata WAL) it leads them
// again with their records, and stopped and unregistered it is gone.
func TestClusterAddsABrokerOnlyNode(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	const added = 4
	tc.addBrokerOnlyNode(added, nil)
	tc.waitForBrokers(tc.live(), 4)

	dc := dialRaw(t, tc.nodes[1].Addr()).do(kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
	if !slices.ContainsFunc(dc.Brokers, func(b kmsg.DescribeClusterResponseBroker) bool {
		return b.NodeID == added && fmt.Sprintf("%s:%d", b.Host, b.Port) == tc.nodes[added].Addr()
	}) {
		t.Fatalf("DescribeCluster does not list broker %d at its port: %+v", added, dc.Brokers)
	}
	waitLong(t, "DescribeQuorum to list the new node as an observer", func() bool {
		q := tc.describeQuorum(added) // forwarded to the active controller
		return len(q.CurrentVoters) == 3 && len(q.Observers) == 1 && q.Observers[0].ReplicaID == added &&
			q.Observers[0].LogEndOffset > 0
	})
	adm := kadm.NewClient(tc.client(added))
	rc, err := adm.DescribeBrokerConfigs(ctx, added)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := rc.On(fmt.Sprint(added), nil); err != nil || !hasConfig(cfg.Configs, "process.roles", "broker") {
		t.Fatalf("process.roles of the broker-only node: %v %+v", err, cfg)
	}

	// Created through the new node (forwarded to the active controller):
	// with 8 partitions over 4 brokers, two land on it.
	if _, err := adm.CreateTopic(ctx, 8, -1, nil, "spread"); err != nil {
		t.Fatalf("CreateTopic through the broker-only node: %v", err)
	}
	var onAdded []int32
	waitLong(t, "the topic on every node", func() bool {
		for _, id := range tc.live() {
			md := tc.metadata(id)
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 8 {
				return false
			}
		}
		onAdded = nil
		for _, p := range tc.metadata(1).Topics[0].Partitions {
			if p.Leader == added {
				onAdded = append(onAdded, p.Partition)
			}
		}
		return true
	})
	if len(onAdded) == 0 {
		t.Fatal("no partition was placed on the broker-only node")
	}
	producer := tc.client(1, kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range onAdded {
		if err := producer.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint("v", p))}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d on the broker-only node: %v", p, err)
		}
	}
	fetchAll := func() map[int32]string {
		consumer := tc.client(2, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"spread": func() map[int32]kgo.Offset {
			m := map[int32]kgo.Offset{}
			for _, p := range onAdded {
				m[p] = kgo.NewOffset().AtStart()
			}
			return m
		}()}))
		got := map[int32]string{}
		for len(got) < len(onAdded) {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("fetch from the broker-only node: got %v", got)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = string(r.Value) })
		}
		consumer.Close()
		return got
	}
	for _, p := range onAdded {
		if got := fetchAll()[p]; got != fmt.Sprint("v", p) {
			t.Fatalf("partition %d fetched %q", p, got)
		}
	}

	// Restarted, it recovers the metadata from its own WAL, registers
	// again and leads its partitions with their records.
	tc.close(added)
	tc.restart(added)
	tc.waitForBrokers(tc.live(), 4)
	waitLong(t, "the broker-only node to lead its partitions again", func() bool {
		for _, p := range tc.metadata(1).Topics[0].Partitions {
			if slices.Contains(onAdded, p.Partition) && p.Leader != added {
				return false
			}
		}
		return true
	})
	got := fetchAll()
	for _, p := range onAdded {
		if got[p] != fmt.Sprint("v", p) {
			t.Fatalf("after the restart partition %d fetched %q", p, got[p])
		}
	}

	// Stopped and unregistered (through every voter: forwarded to the
	// active controller where needed), it leaves the broker list, fenced
	// ones included, and the quorum's observers.
	tc.close(added)
	unregister := func(via int32) int16 {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = added
		return dialRaw(t, tc.nodes[via].Addr()).do(req).(*kmsg.UnregisterBrokerResponse).ErrorCode
	}
	if code := unregister(1); code != 0 {
		t.Fatalf("UnregisterBroker: error %d", code)
	}
	for _, via := range tc.live() {
		if code := unregister(via); code != kerr.BrokerIDNotRegistered.Code {
			t.Fatalf("UnregisterBroker again through node %d: error %d, want BROKER_ID_NOT_REGISTERED", via, code)
		}
	}
	waitLong(t, "the unregistered broker gone from DescribeCluster and DescribeQuorum", func() bool {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.IncludeFencedBrokers = true
		dc := dialRaw(t, tc.nodes[2].Addr()).do(req).(*kmsg.DescribeClusterResponse)
		return len(dc.Brokers) == 3 && len(tc.describeQuorum(2).Observers) == 0
	})
}

func TestClusterRefusesRolesThatDoNotMatchTheVoters(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	voters := "1@" + ln.Addr().String()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"a voter as a broker-only node", Config{NodeID: 1, ProcessRoles: "broker", controllerListener: ln}, "is one of controller.quorum.voters"},
		{"a combined node that is not a voter", Config{NodeID: 2, controllerListener: ln}, "is not among controller.quorum.voters"},
		{"a broker-only node without a controller listener", Config{NodeID: 2, ProcessRoles: "broker"}, "no controller listener"},
		{"a controller-only node", Config{NodeID: 1, ProcessRoles: "controller", controllerListener: ln}, "controller-only"},
	} {
		tc.cfg.ControllerQuorumVoters = voters
		tc.cfg.DataDir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := Start(ctx, tc.cfg)
		cancel()
		if err == nil {
			b.Close()
			t.Errorf("%s: started", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestClusterControlledShutdown closes a broker that leads partitions of an
// RF=1 topic, with a broker session far longer than the test: the active
// controller takes its leaderships away before Close returns (RF=1 has no
// other replica, so they go offline at once rather than after the
// session timeout, as Kafka's controlled shutdown does), and the broker is
// fenced without waiting for its session to expire.
func TestClusterControlledShutdown(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	const added = 4
	// The broker-only node, with a session longer than any wait below:
	// only a controlled shutdown can fence it in time.
	tc.addBrokerOnlyNode(added, func(c *Config) { c.BrokerSessionTimeoutMs = 600_000 })
	tc.waitForBrokers(tc.live(), 4)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 4, -1, nil, "cs"); err != nil {
		t.Fatal(err)
	}
	var victimLeads []int32
	waitLong(t, "a partition led by the broker-only node", func() bool {
		victimLeads = nil
		md := tc.metadata(1)
		if len(md.Topics) == 0 {
			return false
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader == added {
				victimLeads = append(victimLeads, p.Partition)
			}
		}
		if len(victimLeads) > 0 {
			return true
		}
		// Placement is random: grow the topic until it lands there.
		n := len(tc.metadata(1).Topics[0].Partitions)
		adm.CreatePartitions(ctx, 1, "cs")
		waitLong(t, "the new partition", func() bool { return len(tc.metadata(1).Topics[0].Partitions) > n })
		return false
	})
	start := time.Now()
	tc.close(added)
	took := time.Since(start)
	// Right after Close: the survivors' catalogues have applied the move
	// (the controller waited for their heartbeats to report it).
	for _, id := range tc.live() {
		for _, p := range tc.metadata(id).Topics[0].Partitions {
			if p.Leader == added {
				t.Fatalf("node %d: partition %d is still led by the closed broker right after Close (took %v)", id, p.Partition, took)
			}
		}
	}
	// Fenced at once, not after the 600s session.
	tc.waitForBrokers(tc.live(), 3)
	t.Logf("controlled shutdown of a broker leading %d partitions took %v", len(victimLeads), took)
}

// TestClusterControlledShutdownMovesLeadershipsWithinTheISR closes a broker
// that leads partitions of an RF=3 topic while a producer writes to every
// partition with acks=all: by the time Close returns, each partition it
// led is led by another ISR member and it is in no ISR, so the producer's
// retries (NOT_LEADER_OR_FOLLOWER at most for the move) succeed: no
// produce fails and no acknowledged record is lost.
func TestClusterControlledShutdownMovesLeadershipsWithinTheISR(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	ctrl := tc.controller(1)
	victim, survivor := tc.victimAndSurvivor(ctrl)
	adm := kadm.NewClient(tc.client(survivor))
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "rf3"); err != nil {
		t.Fatal(err)
	}
	var led []int32
	waitLong(t, "every replica in every ISR", func() bool {
		md := tc.metadata(survivor)
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 6 {
			return false
		}
		led = nil
		for _, p := range md.Topics[0].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
			if p.Leader == victim {
				led = append(led, p.Partition)
			}
		}
		return true
	})
	if len(led) == 0 {
		t.Fatalf("broker %d leads no partition of the RF=3 topic; placement should give it two", victim)
	}

	producer := tc.client(survivor, kgo.DefaultProduceTopic("rf3"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	stop := make(chan struct{})
	done := make(chan error, 1)
	acked := map[string]bool{}
	var ackedCount atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			v := fmt.Sprint("r", i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 6), Value: []byte(v)}).FirstErr(); err != nil {
				done <- fmt.Errorf("produce %s: %w", v, err)
				return
			}
			acked[v] = true // read only after done
			ackedCount.Add(1)
		}
	}()
	waitLong(t, "records acknowledged on every partition", func() bool {
		select {
		case err := <-done:
			t.Fatal(err)
		default:
		}
		return ackedCount.Load() >= 60
	})
	start := time.Now()
	tc.close(victim)
	took := time.Since(start)
	for _, id := range tc.live() {
		for _, p := range tc.metadata(id).Topics[0].Partitions {
			if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
				t.Fatalf("node %d right after Close: partition %d leader %d ISR %v (the closed broker %d must lead nothing and be in no ISR)",
					id, p.Partition, p.Leader, p.ISR, victim)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("a produce failed across the controlled shutdown: %v", err)
	}
	tc.waitForBrokers(tc.live(), 2)
	t.Logf("controlled shutdown of a broker leading %d of 6 RF=3 partitions took %v; %d records acknowledged", len(led), took, len(acked))

	// Every acknowledged record is there.
	consumer := tc.client(survivor, kgo.ConsumeTopics("rf3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", len(seen), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s lost", v)
		}
	}
}

//go:build cluster

package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// testCluster is an in-process cluster of combined broker and controller
// nodes on loopback, node ids 1..n.
type testCluster struct {
	t      *testing.T
	nodes  map[int32]*Broker
	cfgs   map[int32]Config
	closed map[int32]bool
}

// startCluster starts n nodes with a short broker session, every voter's
// controller port bound before any node starts.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith is startCluster with each node's config passed through
// adjust first, when not nil.
func startClusterWith(t *testing.T, n int, adjust func(*Config)) *testCluster {
	t.Helper()
	lns := map[int32]net.Listener{}
	var voters []string
	for id := int32(1); id <= int32(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		voters = append(voters, fmt.Sprintf("%d@%s", id, ln.Addr()))
	}
	tc := &testCluster{t: t, nodes: map[int32]*Broker{}, cfgs: map[int32]Config{}, closed: map[int32]bool{}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GREGOR_TEST_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	delay := int64(0)
	for id := int32(1); id <= int32(n); id++ {
		cfg := Config{
			NodeID:                           id,
			ControllerQuorumVoters:           strings.Join(voters, ","),
			controllerListener:               lns[id],
			BrokerSessionTimeoutMs:           3000,
			BrokerHeartbeatIntervalMs:        200,
			GroupInitialRebalanceDelayMs:     &delay,
			OffsetsTopicPartitions:           6,
			TransactionStateLogNumPartitions: 6,
			Logger:                           logger,
			DataDir:                          t.TempDir(),
		}
		if adjust != nil {
			adjust(&cfg)
		}
		tc.cfgs[id] = cfg
	}
	// A cluster node's Start returns once it is unfenced, which takes a
	// quorum: the nodes start together.
	ids := make([]int32, 0, n)
	for id := int32(1); id <= int32(n); id++ {
		ids = append(ids, id)
	}
	started, errs := tc.startNodes(ids, func(id int32) Config { return tc.cfgs[id] })
	maps.Copy(tc.nodes, started)
	t.Cleanup(func() {
		for id, b := range tc.nodes {
			if !tc.closed[id] {
				if err := b.Close(); err != nil {
					t.Errorf("closing node %d: %v", id, err)
				}
			}
		}
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	tc.waitForBrokers(tc.live(), len(tc.nodes))
	return tc
}

// startNodes starts the nodes ids concurrently, each with the config cfg
// returns (called before any starts), within a 60 s start-up deadline
// each, and returns those started and the errors of those that did not.
func (tc *testCluster) startNodes(ids []int32, cfg func(int32) Config) (map[int32]*Broker, []error) {
	cfgs := map[int32]Config{}
	for _, id := range ids {
		cfgs[id] = cfg(id)
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		started = map[int32]*Broker{}
		errs    []error
	)
	for _, id := range ids {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b, err := Start(ctx, cfgs[id])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting node %d: %w", id, err))
				return
			}
			started[id] = b
		})
	}
	wg.Wait()
	return started, errs
}

func (tc *testCluster) live() []int32 {
	var ids []int32
	for id := range tc.nodes {
		if !tc.closed[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// restart starts closed nodes again with their data dirs, on their old
// controller addresses. They start together: a node serves only once the
// quorum has unfenced it, so restarting the nodes of a whole cluster one
// by one would wait forever on the first.
func (tc *testCluster) restart(ids ...int32) {
	tc.t.Helper()
	for _, id := range ids {
		cfg := tc.cfgs[id]
		addr := cfg.controllerListener.Addr().String()
		cfg.controllerListener = nil
		var err error
		waitLong(tc.t, fmt.Sprintf("node %d's controller port to be free", id), func() bool {
			cfg.controllerListener, err = net.Listen("tcp", addr)
			return err == nil
		})
		tc.cfgs[id] = cfg
	}
	started, errs := tc.startNodes(ids, func(id int32) Config { return tc.cfgs[id] })
	for id, b := range started {
		tc.nodes[id] = b
		tc.closed[id] = false
	}
	for _, err := range errs {
		tc.t.Fatal(err)
	}
}

func (tc *testCluster) close(id int32) {
	tc.t.Helper()
	if err := tc.nodes[id].Close(); err != nil {
		tc.t.Errorf("closing node %d: %v", id, err)
	}
	tc.closed[id] = true
}

// metadata asks node id for the metadata of every topic.
func (tc *testCluster) metadata(id int32) *kmsg.MetadataResponse {
	tc.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	return dialRaw(tc.t, tc.nodes[id].Addr()).do(req).(*kmsg.MetadataResponse)
}

// waitForBrokers waits until each of the nodes lists n unfenced brokers.
func (tc *testCluster) waitForBrokers(nodes []int32, n int) {
	tc.t.Helper()
	for _, id := range nodes {
		waitLong(tc.t, fmt.Sprintf("node %d to list %d brokers", id, n), func() bool {
			return len(tc.metadata(id).Brokers) == n
		})
	}
}

// controller is the active controller as node id sees it.
func (tc *testCluster) controller(id int32) int32 { return tc.metadata(id).ControllerID }

func (tc *testCluster) client(id int32, opts ...kgo.Opt) *kgo.Client {
	tc.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tc.nodes[id].Addr())}, opts...)...)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(cl.Close)
	return cl
}

// waitLong is waitFor with room for elections and sessions on a loaded
// machine.
func waitLong(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClusterSpreadsPartitionsAndServesClients(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)

	// Every node lists the three brokers and the same controller.
	ctrl := tc.controller(1)
	for _, id := range tc.live() {
		md := tc.metadata(id)
		if md.ControllerID != ctrl || ctrl < 1 {
			t.Fatalf("node %d names controller %d, node 1 names %d", id, md.ControllerID, ctrl)
		}
		if *md.ClusterID != tc.nodes[1].ClusterID() {
			t.Fatalf("node %d has cluster id %s, node 1 %s", id, *md.ClusterID, tc.nodes[1].ClusterID())
		}
	}

	// DescribeQuorum is advertised; the broker-to-controller keys are not.
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1.0"
	advertised := map[int16]bool{}
	for _, k := range dialRaw(t, tc.nodes[1].Addr()).do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		advertised[k.ApiKey] = true
	}
	if !advertised[55] || advertised[56] || advertised[62] || advertised[63] {
		t.Fatalf("cluster node advertises DescribeQuorum %v, AlterPartition %v, BrokerRegistration %v, BrokerHeartbeat %v", advertised[55], advertised[56], advertised[62], advertised[63])
	}
	// The client quotas and SCRAM credentials are served in cluster mode
	// (cluster_quotas_test.go, cluster_scram_test.go).
	for _, key := range []int16{48, 49, 50, 51} {
		if !advertised[key] {
			t.Fatalf("cluster node does not advertise key %d", key)
		}
	}

	// A topic created through a node that is not the active controller
	// (the write is forwarded) is spread over the brokers.
	via := int32(1)
	if ctrl == 1 {
		via = 2
	}
	adm := kadm.NewClient(tc.client(via))
	if _, err := adm.CreateTopic(ctx, 6, -1, nil, "spread"); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	leaders := map[int32]int{}
	for _, id := range tc.live() {
		var md *kmsg.MetadataResponse
		waitLong(t, fmt.Sprintf("node %d to know the topic", id), func() bool {
			md = tc.metadata(id)
			return len(md.Topics) == 1 && len(md.Topics[0].Partitions) == 6
		})
		for _, p := range md.Topics[0].Partitions {
			if p.ErrorCode != 0 || len(p.Replicas) != 1 || p.Replicas[0] != p.Leader || len(p.ISR) != 1 {
				t.Fatalf("node %d: partition %+v", id, p)
			}
			if id == 1 {
				leaders[p.Leader]++
			}
		}
	}
	if len(leaders) != 3 || leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Fatalf("leaders per broker: %v, want 2 each", leaders)
	}

	// Replication factor 2 is served; 4, above the three brokers, is
	// INVALID_REPLICATION_FACTOR as in Kafka.
	if resp, err := adm.CreateTopic(ctx, 1, 2, nil, "replicated"); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic rf 2: %v %v", err, resp.Err)
	}
	if resp, _ := adm.CreateTopic(ctx, 1, 4, nil, "overreplicated"); !errors.Is(resp.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("CreateTopic rf 4 on three brokers: %v, want INVALID_REPLICATION_FACTOR", resp.Err)
	}

	// A node that does not lead a partition answers NOT_LEADER_OR_FOLLOWER
	// with the leader (KIP-951).
	md := tc.metadata(1)
	var foreign kmsg.MetadataResponseTopicPartition
	for _, mt := range md.Topics {
		for _, p := range mt.Partitions {
			if *mt.Topic == "spread" && p.Leader != 1 {
				foreign = p
			}
		}
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.SetVersion(10)
	preq.Acks = 1
	preq.TimeoutMillis = 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "spread"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = foreign.Partition
	pp.Records = makeBatch(t, batch.None, 1, time.Now().UnixMilli())
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	preq.Topics = []kmsg.ProduceRequestTopic{pt}
	presp := dialRaw(t, tc.nodes[1].Addr()).do(preq).(*kmsg.ProduceResponse)
	sp := presp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != foreign.Leader {
		t.Fatalf("produce to partition %d led by %d on node 1: code %d, current leader %d", foreign.Partition, foreign.Leader, sp.ErrorCode, sp.CurrentLeader.LeaderID)
	}
	if len(presp.Brokers) != 1 || presp.Brokers[0].NodeID != foreign.Leader || presp.Brokers[0].Port <= 0 {
		t.Fatalf("produce node endpoints %+v, want broker %d", presp.Brokers, foreign.Leader)
	}

	// franz-go follows the leaders: produce to every partition and read it
	// all back.
	producer := tc.client(via, kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPartition = 10
	for p := int32(0); p < 6; p++ {
		for i := 0; i < perPartition; i++ {
			r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
	}
	consumer := tc.client(ctrl, kgo.ConsumeTopics("spread"), kgo.ConsumerGroup("g"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := map[int32][]string{}
	for n := 0; n < 6*perPartition; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", n, 6*perPartition, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p := int32(0); p < 6; p++ {
		for i, v := range got[p] {
			if want := fmt.Sprintf("p%d-%d", p, i); v != want {
				t.Fatalf("partition %d record %d is %q, want %q", p, i, v, want)
			}
		}
	}

	// The group commits its offsets with the coordinator FindCoordinator
	// names, the leader of the group's __consumer_offsets partition.
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// A broker that does not coordinate the group says so.
	coord := tc.nodes[ctrl].groupCoordinatorOf(t, "g")
	for _, id := range tc.live() {
		if id == coord {
			continue
		}
		of := kmsg.NewPtrOffsetFetchRequest()
		of.SetVersion(7)
		of.Group = "g"
		resp := dialRaw(t, tc.nodes[id].Addr()).do(of).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("OffsetFetch for g on node %d (coordinator %d): code %d, want NOT_COORDINATOR", id, coord, resp.ErrorCode)
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.SetVersion(5)
		dg.Groups = []string{"g"}
		if g := dialRaw(t, tc.nodes[id].Addr()).do(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("DescribeGroups for g on node %d (coordinator %d): code %d, want NOT_COORDINATOR", id, coord, g.ErrorCode)
		}
	}
	for _, id := range tc.live() {
		offsets, err := kadm.NewClient(tc.client(id)).FetchOffsets(ctx, "g")
		if err != nil {
			t.Fatalf("fetch offsets through node %d: %v", id, err)
		}
		for p := int32(0); p < 6; p++ {
			if o, ok := offsets.Lookup("spread", p); !ok || o.At != perPartition {
				t.Fatalf("through node %d, group offset of partition %d: %+v", id, p, o)
			}
		}
	}

	// CreatePartitions and IncrementalAlterConfigs through a node that is
	// not the controller are forwarded, and every node applies them.
	if _, err := adm.CreatePartitions(ctx, 2, "spread"); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	retention := "3600000"
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}
	if res, err := adm.AlterTopicConfigs(ctx, alter, "spread"); err != nil || res[0].Err != nil {
		t.Fatalf("AlterTopicConfigs: %v %+v", err, res)
	}
	for _, id := range tc.live() {
		waitLong(t, fmt.Sprintf("node %d to apply the new partitions and config", id), func() bool {
			tp := tc.nodes[id].lookupTopic("spread")
			return tp != nil && len(tc.nodes[id].partitions(tp)) == 8 && tc.nodes[id].topicConfigs(tp)["retention.ms"] == retention
		})
	}
	rc, err := kadm.NewClient(tc.client(ctrl)).DescribeTopicConfigs(ctx, "spread")
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	if c, err := rc.On("spread", nil); err != nil || !hasConfig(c.Configs, "retention.ms", retention) {
		t.Fatalf("configs of spread on the controller's node: %+v %v", c, err)
	}

	// DeleteTopics through any node goes through the controller.
	if _, err := kadm.NewClient(tc.client(via)).DeleteTopic(ctx, "spread"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	for _, id := range tc.live() {
		waitLong(t, fmt.Sprintf("node %d to delete the topic", id), func() bool {
			return tc.nodes[id].lookupTopic("spread") == nil
		})
	}
}

func TestClusterFencesAClosedBrokerAndItsPartitionsGoOffline(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	ctrl := tc.controller(1)
	if _, err := kadm.NewClient(tc.client(1)).CreateTopic(ctx, 6, -1, nil, "t"); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	victim, survivor := tc.victimAndSurvivor(ctrl)
	waitLong(t, "the topic everywhere", func() bool {
		md := tc.metadata(survivor)
		return len(md.Topics) == 1 && len(md.Topics[0].Partitions) == 6
	})
	producer := tc.client(survivor, kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 6; p++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("before")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	tc.close(victim)

	// After the session timeout the controller fences it: it leaves the
	// broker list, and its partitions (RF=1, no other replica, unclean
	// election off) have no leader.
	tc.waitForBrokers([]int32{survivor}, 2)
	waitLong(t, "the victim's partitions to lose their leader", func() bool {
		md := tc.metadata(survivor)
		offline := 0
		for _, p := range md.Topics[0].Partitions {
			if p.Replicas[0] != victim {
				if p.Leader != p.Replicas[0] || p.ErrorCode != 0 {
					t.Fatalf("partition %d of a live broker: %+v", p.Partition, p)
				}
				continue
			}
			if p.Leader == -1 && p.ErrorCode == kerr.LeaderNotAvailable.Code &&
				len(p.OfflineReplicas) == 1 && p.OfflineReplicas[0] == victim {
				offline++
			}
		}
		return offline == 2
	})

	// DescribeCluster v2 lists the fenced broker only when asked.
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(2)
	req.IncludeFencedBrokers = true
	dc := dialRaw(t, tc.nodes[survivor].Addr()).do(req).(*kmsg.DescribeClusterResponse)
	fenced := 0
	for _, b := range dc.Brokers {
		if b.IsFenced {
			if b.NodeID != victim {
				t.Fatalf("broker %d fenced, want %d", b.NodeID, victim)
			}
			fenced++
		}
	}
	if len(dc.Brokers) != 3 || fenced != 1 || dc.ControllerID != ctrl {
		t.Fatalf("DescribeCluster: %+v", dc)
	}

	// Restarted with its data, it registers again, is unfenced and leads
	// its partitions again, with the records it had.
	tc.restart(victim)
	tc.waitForBrokers(tc.live(), 3)
	waitLong(t, "the victim to lead its partitions again", func() bool {
		for _, p := range tc.metadata(survivor).Topics[0].Partitions {
			if p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	adm := kadm.NewClient(tc.client(survivor))
	waitLong(t, "every partition's record to be readable again", func() bool {
		ends, err := adm.ListEndOffsets(ctx, "t")
		if err != nil {
			return false
		}
		n := 0
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && o.Offset == 1 {
				n++
			}
		})
		return n == 6
	})
}

func TestClusterElectsANewControllerWhenTheActiveOneCloses(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	old := tc.controller(1)
	tc.close(old)
	live := tc.live()
	var now int32
	waitLong(t, "a new active controller", func() bool {
		now = tc.controller(live[0])
		return now >= 0 && now != old && tc.controller(live[1]) == now
	})

	// DescribeQuorum, through either node, names it with both voters'
	// progress as the leader knows it.
	for _, id := range live {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
		req.SetVersion(1)
		dq := dialRaw(t, tc.nodes[id].Addr()).do(req).(*kmsg.DescribeQuorumResponse)
		p := dq.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != now || len(p.CurrentVoters) != 3 || p.HighWatermark <= 0 {
			t.Fatalf("DescribeQuorum through node %d: %+v", id, p)
		}
	}

	// The new controller takes writes from any node.
	for _, id := range live {
		name := fmt.Sprintf("after-%d", id)
		if _, err := kadm.NewClient(tc.client(id)).CreateTopic(ctx, 2, -1, nil, name); err != nil {
			t.Fatalf("CreateTopic through node %d: %v", id, err)
		}
	}
}

func hasConfig(configs []kadm.Config, name, value string) bool {
	for _, c := range configs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

func TestClusterModeRefusesASingleNodesDataDir(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	if _, err := kadm.NewClient(newTestClient(t, b.Addr())).CreateTopic(testCtx(t), 1, 1, nil, "mine"); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Start(testCtx(t), Config{DataDir: dir, NodeID: 1, ControllerQuorumVoters: "1@" + ln.Addr().String(), controllerListener: ln,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("Start on a single node's data dir in cluster mode: %v", err)
	}
}

func newTestClient(t *testing.T, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// groupCoordinatorOf is the broker FindCoordinator names for a group.
func (b *Broker) groupCoordinatorOf(t *testing.T, groupID string) int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = []string{groupID}
	resp := dialRaw(t, b.Addr()).do(req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator %s: %+v", groupID, resp)
	}
	return resp.Coordinators[0].NodeID
}

// TestClusterNodeServesOnlyOnceUnfenced restarts one node of a stopped
// cluster alone: with no majority nothing can unfence it, so, as Kafka's
// broker, it binds its listener but answers nothing, and Start does not
// return (or fails at its deadline, cleaning up). Once the other voters are
// back it is unfenced, and a request sent early into the accept backlog is
// answered with the complete view: every topic, and the broker itself.
func TestClusterNodeServesOnlyOnceUnfenced(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	if _, err := kadm.NewClient(tc.client(1)).CreateTopic(ctx, 4, 3, nil, "early"); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	for _, id := range tc.live() {
		waitLong(t, fmt.Sprintf("node %d to know the topic", id), func() bool {
			md := tc.metadata(id)
			return len(md.Topics) == 1 && len(md.Topics[0].Partitions) == 4
		})
	}
	for _, id := range tc.live() {
		tc.close(id)
	}

	// rebind binds node 1's old controller port again for a new start.
	rebind := func() Config {
		cfg := tc.cfgs[1]
		addr := cfg.controllerListener.Addr().String()
		var err error
		waitLong(t, "node 1's controller port to be free", func() bool {
			cfg.controllerListener, err = net.Listen("tcp", addr)
			return err == nil
		})
		return cfg
	}

	// Alone, it fails at its start-up deadline, saying why, and leaves
	// nothing behind: its listener is closed.
	cfg := rebind()
	var addr string
	cfg.testHooks.listening = func(b *Broker) { addr = b.Addr() }
	shortCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	b, err := Start(shortCtx, cfg)
	cancel()
	if err == nil {
		b.Close()
		t.Fatal("a node of a quorum without a majority started")
	}
	if !strings.Contains(err.Error(), "not unfenced") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start without a quorum: %v", err)
	}
	if nc, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		nc.Close()
		t.Fatalf("the listener %s of a node that failed to start still accepts dials", addr)
	}

	// Started again with a long deadline, it waits: a dial lands in the
	// listener's backlog, and the request sent on it is not answered.
	cfg = rebind()
	listening := make(chan string, 1)
	cfg.testHooks.listening = func(b *Broker) { listening <- b.Addr() }
	type result struct {
		b   *Broker
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		b, err := Start(ctx, cfg)
		done <- result{b, err}
	}()
	early := dialRaw(t, <-listening)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	corr := early.send(req)
	early.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := early.nc.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatal("a node that is not unfenced answered a request")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a node that is not unfenced: %v, want no answer yet", err)
	}
	select {
	case r := <-done:
		t.Fatalf("Start returned (%v) while the quorum had no majority", r.err)
	default:
	}

	// The quorum back, it is unfenced and serves; the early request is
	// answered with the topic and the brokers unfenced by then, itself
	// among them.
	tc.restart(2, 3)
	r := <-done
	if r.err != nil {
		t.Fatalf("starting node 1 once the quorum is back: %v", r.err)
	}
	tc.nodes[1], tc.closed[1] = r.b, false
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(req.GetVersion())
	early.readResponse(corr, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "early" || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("the early Metadata request was answered with topics %+v", resp.Topics)
	}
	if !slices.ContainsFunc(resp.Brokers, func(br kmsg.MetadataResponseBroker) bool { return br.NodeID == 1 }) {
		t.Fatalf("the early Metadata request was answered without node 1: %+v", resp.Brokers)
	}
	tc.waitForBrokers(tc.live(), 3)
	md := tc.metadata(1)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 4 {
		t.Fatalf("node 1's Metadata after the restart: %+v", md.Topics)
	}
}

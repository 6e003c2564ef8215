//go:build cluster

package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// txnCoordinators returns the node FindCoordinator names for each
// transactional id.
func txnCoordinators(t *testing.T, ctx context.Context, adm *kadm.Client, ids ...string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, id := range ids {
		waitLong(t, "a transaction coordinator for "+id, func() bool {
			r := adm.FindTxnCoordinators(ctx, id)
			c, ok := r[id]
			if !ok || c.Err != nil {
				return false
			}
			out[id] = c.NodeID
			return true
		})
	}
	return out
}

// leadersOf returns the leader of each partition of topic, as node id's
// metadata says.
func (tc *testCluster) leadersOf(id int32, topic string) map[int32]int32 {
	tc.t.Helper()
	out := map[int32]int32{}
	for _, mt := range tc.metadata(id).Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			for _, p := range mt.Partitions {
				out[p.Partition] = p.Leader
			}
		}
	}
	return out
}

// TestClusterTransactionsAcrossBrokers runs franz-go transactional
// producers, in transactions V2 and V1, against a three-node cluster whose
// topic has partitions led by every node, with transactional ids whose
// coordinators are spread over the nodes too: the coordinators write their
// markers into partitions of other brokers with WriteTxnMarkers, and the
// leaders verify each producer's first batch with the coordinator's node
// (AddPartitionsToTxn v5). read_committed reads exactly what was
// committed, read_uncommitted everything.
func TestClusterTransactionsAcrossBrokers(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 6, -1, nil, "tx"); err != nil {
		t.Fatal(err)
	}
	nodes := map[int32]bool{}
	waitLong(t, "every node to lead a partition of tx", func() bool {
		clear(nodes)
		for _, l := range tc.leadersOf(1, "tx") {
			nodes[l] = true
		}
		return len(nodes) == 3
	})

	ids := []string{"tx-a", "tx-b", "tx-c", "tx-d", "tx-e", "tx-f"}
	coords := txnCoordinators(t, ctx, adm, ids...)
	clear(nodes)
	for _, n := range coords {
		nodes[n] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("the ids' coordinators are all on one node: %v", coords)
	}

	var committed, all []string
	for i, id := range ids {
		var opts []kgo.Opt
		if i%2 == 1 {
			opts = append(opts, kgo.MaxVersions(kversion.V3_9_0())) // transactions V1
		}
		// Seeded with a node that is not the coordinator, so that the
		// client finds it through FindCoordinator.
		seed := tc.nodes[coords[id]%3+1].Addr()
		// A V1 transaction's first produce that reaches its leader
		// before the markers of the previous one is NOT_ENOUGH_REPLICAS
		// (the coordinator answers CONCURRENT_TRANSACTIONS), as on
		// Kafka; franz-go retries it after a metadata refresh, at most
		// every MetadataMinAge (5 s by default). A V2 one is asked again
		// by the leader for add.partitions.to.txn.retry.backoff.max.ms.
		opts = append(opts, kgo.MetadataMinAge(50*time.Millisecond))
		cl := newTxnProducer(t, seed, id, "tx", opts...)
		for round := range 3 {
			c := seq(fmt.Sprintf("%s-commit-%d", id, round), 12)
			a := seq(fmt.Sprintf("%s-abort-%d", id, round), 12)
			runTxn(t, ctx, cl, true, c...)
			runTxn(t, ctx, cl, false, a...)
			committed = append(committed, c...)
			all = append(all, c...)
			all = append(all, a...)
		}
		// The abort was answered once PrepareAbort was logged; the markers
		// follow.
		waitLong(t, id+" to complete its abort", func() bool {
			d := describeTxn(t, ctx, seed, id)
			if d.Coordinator != coords[id] {
				t.Fatalf("%s described by node %d, FindCoordinator said %d", id, d.Coordinator, coords[id])
			}
			return d.State == "CompleteAbort"
		})
	}
	slices.Sort(committed)
	slices.Sort(all)
	if got := consumeUntilSentinel(t, ctx, tc.nodes[2].Addr(), "tx", 6, kgo.ReadCommitted()); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %d records, want the %d committed:\n%q\nwant\n%q", len(got), len(committed), got, committed)
	}
	if got := consumeUntilSentinel(t, ctx, tc.nodes[3].Addr(), "tx", 6, kgo.ReadUncommitted()); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %d records, want %d", len(got), len(all))
	}
}

// TestClusterGroupTransactSessionAcrossBrokers runs franz-go's
// GroupTransactSession on a three-node cluster with the group's
// coordinator, the transaction's coordinator and the partitions on
// different nodes: TxnOffsetCommit is verified with another node's
// transaction coordinator, and the commit marker in __consumer_offsets is
// written by another node's group coordinator. The first transaction is
// aborted; in the end every input is transformed exactly once and the
// committed offsets are the ends of the input.
func TestClusterGroupTransactSessionAcrossBrokers(t *testing.T) {
	const n = 60
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	// A transactional id and a group coordinated by different nodes.
	txnID, groupID := "ctp", ""
	txnNode := txnCoordinators(t, ctx, adm, txnID)[txnID]
	for i := 0; groupID == ""; i++ {
		g := fmt.Sprintf("ctp-group-%d", i)
		waitLong(t, "a group coordinator", func() bool {
			r := adm.FindGroupCoordinators(ctx, g)
			c, ok := r[g]
			if !ok || c.Err != nil {
				return false
			}
			if c.NodeID != txnNode {
				groupID = g
			}
			return true
		})
	}

	p := tc.client(1, kgo.DefaultProduceTopic("in"))
	var want []string
	for i := range n {
		v := fmt.Sprintf("v-%03d", i)
		want = append(want, "t-"+v)
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tc.nodes[1].Addr()), kgo.TransactionalID(txnID),
		kgo.ConsumerGroup(groupID), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic("out"), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	transactAbortingTheFirst(t, ctx, s, n)
	if got := consumeUntilSentinel(t, ctx, tc.nodes[2].Addr(), "out", 3, kgo.ReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed output %q, want each input once %q", got, want)
	}
	wantCommittedAtEnd(t, ctx, adm, groupID, "in")
}

// TestClusterTransactionRequestsToTheWrongNode checks the answers of the
// nodes that do not coordinate a transactional id or lead a partition:
// InitProducerId, AddPartitionsToTxn and EndTxn are NOT_COORDINATOR, and
// WriteTxnMarkers NOT_LEADER_OR_FOLLOWER, so that a client or a
// coordinator looks the right node up again. ApiVersions advertises the
// transactional keys and transaction.version.
func TestClusterTransactionRequestsToTheWrongNode(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, "w"); err != nil {
		t.Fatal(err)
	}
	const id = "wrong-node"
	coord := txnCoordinators(t, ctx, adm, id)[id]
	other := coord%3 + 1
	raw := dialRaw(t, tc.nodes[other].Addr())

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1.0"
	avr := raw.do(av).(*kmsg.ApiVersionsResponse)
	advertised := map[int16]bool{}
	for _, k := range avr.ApiKeys {
		advertised[k.ApiKey] = true
	}
	for _, key := range []int16{22, 24, 25, 26, 27, 28, 65, 66} {
		if !advertised[key] {
			t.Errorf("cluster node does not advertise key %d", key)
		}
	}
	if i := slices.IndexFunc(avr.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "transaction.version"
	}); i < 0 || avr.FinalizedFeatures[i].MaxVersionLevel != 2 {
		t.Errorf("finalized features %+v, want transaction.version 2", avr.FinalizedFeatures)
	}

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(5)
	tid := id
	ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = &tid, 10000, -1, -1
	if code := raw.do(ip).(*kmsg.InitProducerIDResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("InitProducerId on node %d (coordinator %d): %v, want NOT_COORDINATOR", other, coord, kerr.ErrorForCode(code))
	}
	ip.TransactionTimeoutMillis = 0
	if code := raw.do(ip).(*kmsg.InitProducerIDResponse).ErrorCode; code != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("InitProducerId with timeout 0: %v, want INVALID_TRANSACTION_TIMEOUT before the coordinator check", kerr.ErrorForCode(code))
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.SetVersion(3)
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = id, 1, 0
	apt := kmsg.NewAddPartitionsToTxnRequestTopic()
	apt.Topic, apt.Partitions = "w", []int32{0}
	ap.Topics = append(ap.Topics, apt)
	if code := raw.do(ap).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("AddPartitionsToTxn: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.SetVersion(4)
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = id, 1, 0, true
	if code := raw.do(et).(*kmsg.EndTxnResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("EndTxn: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}

	// WriteTxnMarkers to a node for a partition another node leads.
	leaders := tc.leadersOf(1, "w")
	var part int32 = -1
	for p, l := range leaders {
		if l != other {
			part = p
		}
	}
	if part < 0 {
		t.Fatalf("node %d leads every partition: %v", other, leaders)
	}
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, true
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "w", []int32{part}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	if code := raw.do(wm).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("WriteTxnMarkers for w-%d (leader %d) on node %d: %v, want NOT_LEADER_OR_FOLLOWER", part, leaders[part], other, kerr.ErrorForCode(code))
	}
}

// TestClusterTransactionOverADeletedTopicCompletes deletes a topic whose
// partitions, led by other nodes, are in an open transaction: the
// coordinator's markers for them are answered UNKNOWN_TOPIC_OR_PARTITION or
// find no partition, and are dropped, as Kafka drops the partitions of
// deleted topics, so the abort completes and the producer goes on.
func TestClusterTransactionOverADeletedTopicCompletes(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	for _, topic := range []string{"doomed", "kept"} {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const id = "deleted-under"
	coord := txnCoordinators(t, ctx, adm, id)[id]
	cl := newTxnProducer(t, tc.nodes[coord].Addr(), id, "doomed", kgo.MetadataMinAge(50*time.Millisecond))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("a"), kgo.StringRecord("b"), kgo.StringRecord("c")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("aborting: %v", err)
	}
	waitLong(t, id+" to complete its abort", func() bool {
		return describeTxn(t, ctx, tc.nodes[coord].Addr(), id).State == "CompleteAbort"
	})
	next := newTxnProducer(t, tc.nodes[coord].Addr(), id, "kept", kgo.MetadataMinAge(50*time.Millisecond))
	runTxn(t, ctx, next, true, seq("kept", 6)...)
	if got := consumeUntilSentinel(t, ctx, tc.nodes[1].Addr(), "kept", 3, kgo.ReadCommitted()); !slices.Equal(got, seq("kept", 6)) {
		t.Fatalf("read_committed read %q, want %q", got, seq("kept", 6))
	}
}

// TestClusterConcurrentTransactionsAcrossBrokers runs transactional
// producers at once, so that the leaders' verifications share
// AddPartitionsToTxn requests to each coordinator node and the
// coordinators' markers share WriteTxnMarkers requests to each leader:
// read_committed reads exactly the committed records.
func TestClusterConcurrentTransactionsAcrossBrokers(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 6, -1, nil, "busy"); err != nil {
		t.Fatal(err)
	}
	const producers, rounds = 8, 4
	var mu sync.Mutex
	var committed []string
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for i := range producers {
		id := fmt.Sprintf("busy-%d", i)
		var opts []kgo.Opt
		if i%2 == 1 {
			opts = append(opts, kgo.MaxVersions(kversion.V3_9_0()))
		}
		opts = append(opts, kgo.MetadataMinAge(50*time.Millisecond))
		cl := newTxnProducer(t, tc.nodes[int32(i%3+1)].Addr(), id, "busy", opts...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range rounds {
				commit := round%2 == 0
				if err := cl.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				var recs []*kgo.Record
				values := seq(fmt.Sprintf("%s-%d", id, round), 8)
				for _, v := range values {
					recs = append(recs, kgo.StringRecord(v))
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					errs <- fmt.Errorf("%s producing: %w", id, err)
					return
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					errs <- fmt.Errorf("%s ending (commit %v): %w", id, commit, err)
					return
				}
				if commit {
					mu.Lock()
					committed = append(committed, values...)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(committed)
	if got := consumeUntilSentinel(t, ctx, tc.nodes[1].Addr(), "busy", 6, kgo.ReadCommitted()); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %d records, want the %d committed", len(got), len(committed))
	}
}

//go:build cluster

package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCoordinatorNode returns the node FindCoordinator names for group,
// asked through adm.
func groupCoordinatorNode(t *testing.T, ctx context.Context, adm *kadm.Client, group string) int32 {
	t.Helper()
	var node int32
	waitLong(t, "a coordinator for group "+group, func() bool {
		c, ok := adm.FindGroupCoordinators(ctx, group)[group]
		node = c.NodeID
		return ok && c.Err == nil
	})
	return node
}

// otherNode is a live node of tc that is not id.
func (tc *testCluster) otherNode(id int32) int32 {
	for _, n := range tc.live() {
		if n != id {
			return n
		}
	}
	tc.t.Fatalf("no live node but %d", id)
	return -1
}

// TestClusterGroupMovesWithItsOffsetsPartition commits a group's offsets
// in a three-node cluster whose __consumer_offsets has three replicas,
// closes the coordinator's node, and checks that the group goes on at the
// broker that leads the partition next, from the committed offsets: the
// new coordinator loaded them from its replica of the partition.
func TestClusterGroupMovesWithItsOffsetsPartition(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "in"); err != nil {
		t.Fatal(err)
	}
	const group, n = "moving", 30
	coord := groupCoordinatorNode(t, ctx, adm, group)
	seed := tc.otherNode(coord)

	p := tc.client(seed, kgo.DefaultProduceTopic("in"), kgo.RequiredAcks(kgo.AllISRAcks()))
	var all []string
	for i := range n {
		v := fmt.Sprintf("r-%02d", i)
		all = append(all, v)
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The first member reads everything and commits the first half of
	// each partition's records.
	first := tc.client(seed, kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < n {
		fs := first.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d: %v", len(got), n, err)
		}
		got = append(got, fs.Records()...)
	}
	read := make([]string, 0, len(got))
	for _, r := range got {
		read = append(read, string(r.Value))
	}
	slices.Sort(read) // all is in order: r-00, r-01, ...
	if !slices.Equal(read, all) {
		t.Fatalf("the first member read %q, want every record produced once %q", read, all)
	}
	byPartition := map[int32][]*kgo.Record{}
	for _, r := range got {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	var commit []*kgo.Record
	var rest []string
	for _, rs := range byPartition {
		half := len(rs) / 2
		commit = append(commit, rs[:half]...)
		for _, r := range rs[half:] {
			rest = append(rest, string(r.Value))
		}
	}
	if err := first.CommitRecords(ctx, commit...); err != nil {
		t.Fatalf("committing: %v", err)
	}
	first.Close()

	tc.close(coord)
	next := int32(-1)
	waitLong(t, "the group's coordinator to move", func() bool {
		c, ok := kadm.NewClient(tc.client(seed)).FindGroupCoordinators(ctx, group)[group]
		next = c.NodeID
		return ok && c.Err == nil && c.NodeID != coord
	})

	// A new member of the group starts where the first committed.
	// (Its partitions' leaders moved too: a short metadata age lets
	// franz-go follow them at once rather than after 5 s.)
	second := tc.client(seed, kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond))
	var after []string
	for len(after) < len(rest) {
		fs := second.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("after the move, read %q, want %q: %v", after, rest, err)
		}
		fs.EachRecord(func(r *kgo.Record) { after = append(after, string(r.Value)) })
	}
	slices.Sort(after)
	slices.Sort(rest)
	if !slices.Equal(after, rest) {
		t.Fatalf("after the move to node %d the group read %q, want the uncommitted %q", next, after, rest)
	}
	offs, err := kadm.NewClient(second).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for part, rs := range byPartition {
		half := len(rs) / 2
		if half == 0 {
			continue
		}
		if o, ok := offs.Lookup("in", part); !ok || o.At != rs[half-1].Offset+1 {
			t.Errorf("in-%d: the new coordinator has %+v, want the committed %d", part, o, rs[half-1].Offset+1)
		}
	}
}

// TestClusterTransactionSurvivesItsCoordinator begins a transaction over
// partitions led by every node, with __transaction_state on three
// replicas, closes the transaction coordinator's node, and commits: the
// producer finds the new coordinator, which loaded the ongoing transaction
// from its replica of the partition and writes the markers. A next
// transaction left open is then fenced by a second producer of the id, and
// aborted by the new coordinator. read_committed reads exactly the
// committed records.
func TestClusterTransactionSurvivesItsCoordinator(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "out"); err != nil {
		t.Fatal(err)
	}
	const id = "survivor"
	coord := txnCoordinators(t, ctx, adm, id)[id]
	seed := tc.otherNode(coord)
	opts := []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.RequiredAcks(kgo.AllISRAcks())}

	cl := newTxnProducer(t, tc.nodes[seed].Addr(), id, "out", opts...)
	runTxn(t, ctx, cl, true, seq("before", 12)...)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	inflight := seq("inflight", 12)
	var recs []*kgo.Record
	for _, v := range inflight {
		recs = append(recs, kgo.StringRecord(v))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	tc.close(coord)
	waitLong(t, "the transactional id's coordinator to move", func() bool {
		c, ok := kadm.NewClient(tc.client(seed)).FindTxnCoordinators(ctx, id)[id]
		return ok && c.Err == nil && c.NodeID != coord
	})
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the transaction begun before its coordinator's node closed: %v", err)
	}

	// A transaction left open, fenced by the next producer of the id.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("zombie-0"), kgo.StringRecord("zombie-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	next := newTxnProducer(t, tc.nodes[seed].Addr(), id, "out", opts...)
	runTxn(t, ctx, next, true, seq("after", 12)...)

	want := slices.Concat(seq("before", 12), inflight, seq("after", 12))
	slices.Sort(want)
	if got := consumeUntilSentinel(t, ctx, tc.nodes[seed].Addr(), "out", 6, kgo.ReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}
}

// TestClusterCoordinatorsWaitForTheirReplicationFactor asks for
// coordinators in a three-node cluster whose internal topics want four
// replicas: neither topic can be created, and FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE, as Kafka does until the cluster has enough
// brokers.
func TestClusterCoordinatorsWaitForTheirReplicationFactor(t *testing.T) {
	tc := startClusterWith(t, 3, func(c *Config) {
		c.OffsetsTopicReplicationFactor, c.TransactionStateLogReplicationFactor = 4, 4
	})
	raw := dialRaw(t, tc.nodes[1].Addr())
	for _, keyType := range []int8{0, 1} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		req.CoordinatorType, req.CoordinatorKeys = keyType, []string{"k"}
		resp := raw.do(req).(*kmsg.FindCoordinatorResponse)
		if c := resp.Coordinators[0]; c.ErrorCode != kerr.CoordinatorNotAvailable.Code || c.NodeID != -1 {
			t.Errorf("FindCoordinator type %d with 3 of the 4 brokers needed: %+v, want COORDINATOR_NOT_AVAILABLE", keyType, c)
		}
	}
	for _, name := range []string{offsetsTopic, txnStateTopic} {
		if tc.nodes[1].lookupTopic(name) != nil {
			t.Errorf("%s was created with fewer brokers than its replication factor", name)
		}
	}
}

// TestClusterGroupRequestsToTheWrongNode sends a group's membership and
// offset commit requests to a node that does not lead its __consumer_offsets partition:
// each is NOT_COORDINATOR, so the member looks the coordinator up again.
func TestClusterGroupRequestsToTheWrongNode(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	const g = "elsewhere"
	other := tc.otherNode(groupCoordinatorNode(t, ctx, adm, g))
	raw := dialRaw(t, tc.nodes[other].Addr())
	waitLong(t, "node to know topic t", func() bool { return tc.nodes[other].lookupTopic("t") != nil })

	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(9)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = g, 10000, 10000, "consumer"
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	join.Protocols = append(join.Protocols, jp)
	if r := raw.do(join).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.NotCoordinator.Code || r.Generation != -1 {
		t.Errorf("JoinGroup: %v generation %d, want NOT_COORDINATOR and -1", kerr.ErrorForCode(r.ErrorCode), r.Generation)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.Generation, hb.MemberID = g, 1, "m"
	if code := raw.do(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("Heartbeat: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(5)
	sg.Group, sg.Generation, sg.MemberID = g, 1, "m"
	if code := raw.do(sg).(*kmsg.SyncGroupResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("SyncGroup: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.SetVersion(5)
	lg.Group = g
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "m"
	lg.Members = append(lg.Members, lm)
	if code := raw.do(lg).(*kmsg.LeaveGroupResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("LeaveGroup: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if code := raw.do(commitReq(8, g, "", -1, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("OffsetCommit: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.SetVersion(0)
	cgh.Group, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = g, 0, 10000
	cgh.SubscribedTopicNames = []string{"t"}
	if code := raw.do(cgh).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("ConsumerGroupHeartbeat: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
}

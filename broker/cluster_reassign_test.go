//go:build cluster

package broker

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// otherThan returns a live node that is not id.
func (tc *testCluster) otherThan(id int32) int32 {
	for _, n := range tc.live() {
		if n != id {
			return n
		}
	}
	tc.t.Fatal("no other node")
	return -1
}

func alterReassignments(v int16, allowRF bool, topic string, parts map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(v)
	req.AllowReplicationFactorChange = allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(mapKeys(parts)) {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{rt}
	return req
}

func mapKeys(m map[int32][]int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestClusterPartitionReassignmentsThroughAnyNode drives
// AlterPartitionReassignments and ListPartitionReassignments against a
// node that is not the active controller (the requests are forwarded) and
// through kadm (which sends them to the controller): Kafka's error codes
// and messages per partition, a reassignment (to a broker that is down, so
// that it stays in progress) recorded with its adding and removing
// replicas and seen in every node's metadata, and its cancellation.
func TestClusterPartitionReassignmentsThroughAnyNode(t *testing.T) {
	tc := startCluster(t, 4)
	ctx := testCtx(t)
	ctrl := tc.controller(1)
	via := tc.otherThan(ctrl)
	adm := kadm.NewClient(tc.client(via))
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "moving"); err != nil {
		t.Fatal(err)
	}
	var leader int32 = -1
	waitLong(t, "the topic on the node", func() bool {
		for _, tp := range tc.metadata(via).Topics {
			for _, p := range tp.Partitions {
				if p.Partition == 0 {
					leader = p.Leader
				}
			}
		}
		return leader >= 0
	})
	// The target is a broker that is down, so that the reassignment stays
	// in progress (it is registered, so it is a valid target, as in Kafka).
	var target int32 = -1
	for _, id := range tc.live() {
		if id != leader && id != via && id != ctrl {
			target = id
		}
	}
	tc.close(target)

	raw := dialRaw(t, tc.nodes[via].Addr())
	resp := raw.do(alterReassignments(1, false, "moving", map[int32][]int32{
		0: {target},    // starts
		1: {1, 1},      // repeats a broker (checked before the replication factor)
		7: {1},         // no such partition
		2: {leader, 9}, // no such partition either: checked first
	})).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("AlterPartitionReassignments: %+v", resp)
	}
	want := map[int32]struct {
		code int16
		msg  string
	}{
		0: {0, ""},
		1: {kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker 1 more than once."},
		2: {kerr.UnknownTopicOrPartition.Code, "Unable to find partition moving:2."},
		7: {kerr.UnknownTopicOrPartition.Code, "Unable to find partition moving:7."},
	}
	for _, p := range resp.Topics[0].Partitions {
		w := want[p.Partition]
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		if p.ErrorCode != w.code || msg != w.msg {
			t.Errorf("partition %d: code %d %q, want %d %q", p.Partition, p.ErrorCode, msg, w.code, w.msg)
		}
	}
	if resp.AllowReplicationFactorChange {
		t.Error("the response does not echo allow_replication_factor_change false")
	}
	// KIP-860: without a replication factor change allowed, 1 to 2 replicas
	// is refused.
	resp = raw.do(alterReassignments(1, false, "moving", map[int32][]int32{1: {1, 2}})).(*kmsg.AlterPartitionAssignmentsResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidReplicationFactor.Code ||
		*p.ErrorMessage != "The replication factor is changed from 1 to 2" {
		t.Errorf("replication factor change: %d %v", p.ErrorCode, p.ErrorMessage)
	}
	resp = raw.do(alterReassignments(0, false, "moving", map[int32][]int32{1: {1, 9}})).(*kmsg.AlterPartitionAssignmentsResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("v0 (any replication factor) to an unregistered broker: %d %v", p.ErrorCode, p.ErrorMessage)
	}
	resp = raw.do(alterReassignments(0, false, "nope", map[int32][]int32{0: {1}})).(*kmsg.AlterPartitionAssignmentsResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || *p.ErrorMessage != "Unable to find a topic named nope." {
		t.Errorf("unknown topic: %d %v", p.ErrorCode, p.ErrorMessage)
	}

	// The reassignment of partition 0 is listed, by kadm and by a raw
	// request to another node, until it is cancelled.
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	got := listed["moving"][0]
	if !slices.Equal(got.Replicas, []int32{target, leader}) || !slices.Equal(got.AddingReplicas, []int32{target}) ||
		!slices.Equal(got.RemovingReplicas, []int32{leader}) || len(listed["moving"]) != 1 {
		t.Fatalf("listed: %+v", listed)
	}
	lr := kmsg.NewPtrListPartitionReassignmentsRequest()
	lt := kmsg.NewListPartitionReassignmentsRequestTopic()
	lt.Topic, lt.Partitions = "moving", []int32{0, 1}
	lr.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{lt}
	lresp := raw.do(lr).(*kmsg.ListPartitionReassignmentsResponse)
	if lresp.ErrorCode != 0 || len(lresp.Topics) != 1 || len(lresp.Topics[0].Partitions) != 1 || lresp.Topics[0].Partitions[0].Partition != 0 {
		t.Fatalf("raw list: %+v", lresp)
	}
	lr.Topics = nil
	if lresp := raw.do(lr).(*kmsg.ListPartitionReassignmentsResponse); len(lresp.Topics) != 1 || len(lresp.Topics[0].Partitions) != 1 {
		t.Fatalf("raw list of everything: %+v", lresp)
	}
	// Every node's metadata shows the replicas as target then removing.
	for _, id := range tc.live() {
		waitLong(t, "every node to show the reassigning replicas", func() bool {
			for _, tp := range tc.metadata(id).Topics {
				for _, p := range tp.Partitions {
					if *tp.Topic == "moving" && p.Partition == 0 {
						return slices.Equal(p.Replicas, []int32{target, leader}) && p.Leader == leader
					}
				}
			}
			return false
		})
	}

	// DescribeTopicPartitions (what Kafka's tools use) shows them too.
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "moving"
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{rt}
	dtp.ResponsePartitionLimit = 100
	for _, id := range tc.live() {
		dr := dialRaw(t, tc.nodes[id].Addr()).do(dtp).(*kmsg.DescribeTopicPartitionsResponse)
		if len(dr.Topics) != 1 || len(dr.Topics[0].Partitions) != 2 {
			t.Fatalf("node %d DescribeTopicPartitions: %+v", id, dr)
		}
		p := dr.Topics[0].Partitions[0]
		if !slices.Equal(p.Replicas, []int32{target, leader}) || p.LeaderID != leader || !slices.Equal(p.ISR, []int32{leader}) {
			t.Fatalf("node %d DescribeTopicPartitions partition 0: %+v", id, p)
		}
	}

	// A preferred election cannot move leadership to the target, which is
	// not in the ISR; an unclean one is not needed.
	el, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"moving": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := el["moving"][0]; !errors.Is(r.Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election during the reassignment: %+v", r)
	}

	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("moving", 0)
	cancel.CancelAssign("moving", 1)
	cres, err := adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil {
		t.Fatal(err)
	}
	if r := cres["moving"][0]; r.Err != nil {
		t.Fatalf("cancel: %+v", r)
	}
	if r := cres["moving"][1]; !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel without a reassignment: %+v", r)
	}
	// A null topic list lists every reassignment: none now.
	lr.Topics = nil
	if lresp := raw.do(lr).(*kmsg.ListPartitionReassignmentsResponse); lresp.ErrorCode != 0 || len(lresp.Topics) != 0 {
		t.Fatalf("after cancelling: %+v", lresp)
	}
}

// TestClusterElectLeadersIsServedAndForwarded: in cluster mode ElectLeaders
// is advertised and answered by the active controller, through any node.
func TestClusterElectLeadersIsServedAndForwarded(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	ctrl := tc.controller(1)
	via := tc.otherThan(ctrl)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1.0"
	advertised := map[int16]int16{}
	for _, k := range dialRaw(t, tc.nodes[via].Addr()).do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		advertised[k.ApiKey] = k.MaxVersion
	}
	if advertised[43] != 2 || advertised[45] != 1 || advertised[46] != 0 {
		t.Fatalf("cluster node advertises ElectLeaders v%d, AlterPartitionReassignments v%d, ListPartitionReassignments v%d (missing is 0)",
			advertised[43], advertised[45], advertised[46])
	}
	if _, err := kadm.NewClient(tc.client(via)).CreateTopic(ctx, 2, -1, nil, "el"); err != nil {
		t.Fatal(err)
	}
	raw := dialRaw(t, tc.nodes[via].Addr())
	resp := raw.do(electReq(2, 0, map[string][]int32{"el": {0, 5}, "none": {0}})).(*kmsg.ElectLeadersResponse)
	codes := map[string]map[int32]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = map[int32]int16{}
		for _, p := range rt.Partitions {
			codes[rt.Topic][p.Partition] = p.ErrorCode
		}
	}
	if resp.ErrorCode != 0 || codes["el"][0] != kerr.ElectionNotNeeded.Code || codes["el"][5] != kerr.UnknownTopicOrPartition.Code ||
		codes["none"][0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ElectLeaders: %+v", resp)
	}
	resp = raw.do(electReq(1, 1, nil)).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
		t.Fatalf("unclean election of everything: %+v", resp)
	}
	for _, rt := range resp.Topics {
		if len(rt.Partitions) != 0 {
			t.Fatalf("every partition has a leader; none should be listed: %+v", rt)
		}
	}
	resp = raw.do(electReq(2, 3, map[string][]int32{"el": {0}})).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: %+v", resp)
	}
}

// TestClusterPreferredElectionMovesLeadershipBack: a partition's preferred
// leader goes down, leadership moves to the other replica; once it is back
// in the ISR, a preferred election (kadm, as kafka-leader-election.sh
// sends it) gives it the lead again, and a second one is
// ELECTION_NOT_NEEDED.
func TestClusterPreferredElectionMovesLeadershipBack(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	if _, err := kadm.NewClient(tc.client(1)).CreateTopic(ctx, 1, 2, nil, "pref"); err != nil {
		t.Fatal(err)
	}
	state := func(id int32) (leader int32, replicas, isr []int32) {
		tp := tc.nodes[id].cluster.currentImage().TopicByName("pref")
		if tp == nil {
			return -1, nil, nil
		}
		p := tp.Partitions[0]
		return p.Leader, p.Replicas, p.ISR
	}
	var preferred, other int32
	waitLong(t, "the topic", func() bool {
		l, r, isr := state(1)
		if len(r) != 2 || l != r[0] || len(isr) != 2 {
			return false
		}
		preferred, other = r[0], r[1]
		return true
	})
	observer := tc.otherThan(preferred)
	tc.close(preferred)
	waitLong(t, "leadership to move off the closed broker", func() bool {
		l, _, _ := state(observer)
		return l == other
	})
	tc.restart(preferred)
	waitLong(t, "the preferred replica back in the ISR", func() bool {
		_, _, isr := state(observer)
		return len(isr) == 2
	})
	adm := kadm.NewClient(tc.client(observer))
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}})
	if err != nil || res["pref"][0].Err != nil {
		t.Fatalf("preferred election: %v %+v", err, res)
	}
	waitLong(t, "the preferred replica to lead again", func() bool {
		l, _, _ := state(observer)
		return l == preferred
	})
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}})
	if err != nil || !errors.Is(res["pref"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v %+v", err, res)
	}
}

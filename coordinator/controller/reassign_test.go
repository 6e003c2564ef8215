package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// reassignFixture is one controller with brokers 1-5 (5 fenced) and topic
// "r" whose partition 0 is on [1 2] (leader 1) and partition 1 on [2 3].
type reassignFixture struct {
	t      *testing.T
	c      *Controller
	epochs map[int32]int64
	tid    metadata.UUID
}

func newReassignFixture(t *testing.T) *reassignFixture {
	f := &reassignFixture{t: t, c: newQuorum(t, 1, nil).active(), epochs: map[int32]int64{}}
	for id := int32(1); id <= 5; id++ {
		f.epochs[id] = register(t, f.c, id, "")
	}
	f.heartbeat(5, true)
	res, err := f.c.CreateTopics(ctx(t), []CreateTopic{{Name: "r", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2}, 1: {2, 3}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	f.tid = res[0].TopicID
	return f
}

func (f *reassignFixture) heartbeat(id int32, fence bool) {
	f.t.Helper()
	if _, err := f.c.Heartbeat(ctx(f.t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: f.epochs[id],
		CurrentMetadataOffset: f.epochs[id], WantFence: fence}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *reassignFixture) part(pid int32) *metadata.Partition {
	return f.c.Image().Topics[f.tid].Partitions[pid]
}

func (f *reassignFixture) reassign(pid int32, replicas []int32, allowRF bool) error {
	f.t.Helper()
	res, err := f.c.AlterPartitionReassignments(ctx(f.t), []Reassignment{{Topic: "r", Partition: pid, Replicas: replicas}}, allowRF)
	if err != nil {
		f.t.Fatal(err)
	}
	return res[0]
}

// isr sends the leader's AlterPartition for partition pid.
func (f *reassignFixture) isr(pid int32, isr ...int32) AlterPartitionResult {
	f.t.Helper()
	p := f.part(pid)
	res, err := f.c.AlterPartition(ctx(f.t), AlterPartitionRequest{BrokerID: p.Leader, BrokerEpoch: f.epochs[p.Leader],
		Partitions: []AlterPartitionItem{{TopicID: f.tid, Partition: pid, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return res[0]
}

func (f *reassignFixture) want(pid int32, replicas, isr, adding, removing []int32, leader int32) {
	f.t.Helper()
	p := f.part(pid)
	if !slices.Equal(p.Replicas, replicas) || !slices.Equal(p.ISR, isr) || !slices.Equal(p.Adding, adding) ||
		!slices.Equal(p.Removing, removing) || p.Leader != leader {
		f.t.Fatalf("partition %d: replicas %v isr %v adding %v removing %v leader %d; want %v %v %v %v %d",
			pid, p.Replicas, p.ISR, p.Adding, p.Removing, p.Leader, replicas, isr, adding, removing, leader)
	}
}

func TestAlterPartitionReassignmentsValidation(t *testing.T) {
	f := newReassignFixture(t)
	cases := []struct {
		name     string
		r        Reassignment
		allowRF  bool
		err      *kerr.Error
		kafkaMsg string
	}{
		{"unknown topic", Reassignment{Topic: "nope", Replicas: []int32{1}}, true, kerr.UnknownTopicOrPartition, "Unable to find a topic named nope."},
		{"unknown partition", Reassignment{Topic: "r", Partition: 7, Replicas: []int32{1}}, true, kerr.UnknownTopicOrPartition, "Unable to find partition r:7."},
		{"empty target", Reassignment{Topic: "r", Replicas: []int32{}}, true, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes an empty replica list."},
		{"unregistered broker", Reassignment{Topic: "r", Replicas: []int32{1, 9}}, true, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 9, but no such broker is registered."},
		{"repeated broker", Reassignment{Topic: "r", Replicas: []int32{3, 1, 3}}, true, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 3 more than once."},
		{"replication factor change refused", Reassignment{Topic: "r", Replicas: []int32{1, 2, 3}}, false, kerr.InvalidReplicationFactor,
			"The replication factor is changed from 2 to 3"},
		{"cancel without a reassignment", Reassignment{Topic: "r"}, true, kerr.NoReassignmentInProgress,
			"No partition reassignment is in progress."},
	}
	for _, tc := range cases {
		res, err := f.c.AlterPartitionReassignments(ctx(t), []Reassignment{tc.r}, tc.allowRF)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantCode(t, tc.name, res[0], tc.err)
		if res[0] != nil && res[0].Error() != tc.kafkaMsg {
			t.Errorf("%s: message %q, want Kafka's %q", tc.name, res[0].Error(), tc.kafkaMsg)
		}
	}
	f.want(0, []int32{1, 2}, []int32{1, 2}, nil, nil, 1)
	// A fenced broker is a valid target, as in Kafka: it catches up once
	// it is back.
	if err := f.reassign(0, []int32{1, 5}, false); err != nil {
		t.Fatalf("reassignment to a fenced broker: %v", err)
	}
	f.want(0, []int32{1, 5, 2}, []int32{1, 2}, []int32{5}, []int32{2}, 1)
}

// TestReassignmentAddsThenCompletesWhenTheISRHoldsTheTarget walks a
// reassignment of [1 2] to [3 4] through its stages: the replicas grow to
// target ∪ current with adding and removing recorded; an ISR with part of
// the target changes nothing more; the ISR that holds all of it completes
// the reassignment, removes 1 and 2 from the replicas and the ISR and
// moves leadership off the removed leader (NEW_LEADER_ELECTED to it).
func TestReassignmentAddsThenCompletesWhenTheISRHoldsTheTarget(t *testing.T) {
	f := newReassignFixture(t)
	before := f.part(0)
	if err := f.reassign(0, []int32{3, 4}, true); err != nil {
		t.Fatal(err)
	}
	f.want(0, []int32{3, 4, 1, 2}, []int32{1, 2}, []int32{3, 4}, []int32{1, 2}, 1)
	if p := f.part(0); p.LeaderEpoch != before.LeaderEpoch || p.PartitionEpoch != before.PartitionEpoch+1 {
		t.Fatalf("starting a reassignment: leader epoch %d partition epoch %d (before %d %d)", p.LeaderEpoch, p.PartitionEpoch, before.LeaderEpoch, before.PartitionEpoch)
	}
	list, err := f.c.ListPartitionReassignments(ctx(t), nil)
	if err != nil || len(list) != 1 || list[0].Topic != "r" || len(list[0].Partitions) != 1 ||
		!slices.Equal(list[0].Partitions[0].Replicas, []int32{3, 4, 1, 2}) || !slices.Equal(list[0].Partitions[0].Adding, []int32{3, 4}) ||
		!slices.Equal(list[0].Partitions[0].Removing, []int32{1, 2}) {
		t.Fatalf("list all: %+v %v", list, err)
	}
	list, _ = f.c.ListPartitionReassignments(ctx(t), []ElectionTopic{{"r", []int32{1, 0, 9}}, {"nope", []int32{0}}})
	if len(list) != 1 || len(list[0].Partitions) != 1 || list[0].Partitions[0].Partition != 0 {
		t.Fatalf("list named partitions: %+v", list)
	}
	list, _ = f.c.ListPartitionReassignments(ctx(t), []ElectionTopic{{"r", []int32{1}}})
	if len(list) != 0 {
		t.Fatalf("a topic without a listed reassignment is left out: %+v", list)
	}

	if r := f.isr(0, 1, 2, 3); r.Err != nil {
		t.Fatal(r.Err)
	}
	f.want(0, []int32{3, 4, 1, 2}, []int32{1, 2, 3}, []int32{3, 4}, []int32{1, 2}, 1)
	leaderEpoch := f.part(0).LeaderEpoch
	r := f.isr(0, 1, 2, 3, 4)
	wantCode(t, "the ISR completing the reassignment and removing the leader", r.Err, kerr.NewLeaderElected)
	f.want(0, []int32{3, 4}, []int32{3, 4}, nil, nil, 3)
	if p := f.part(0); p.LeaderEpoch != leaderEpoch+1 {
		t.Fatalf("leader epoch %d after completion, want %d", p.LeaderEpoch, leaderEpoch+1)
	}
	if list, _ := f.c.ListPartitionReassignments(ctx(t), nil); len(list) != 0 {
		t.Fatalf("a completed reassignment is still listed: %+v", list)
	}
}

// TestReassignmentThatKeepsTheLeaderCompletesWithoutAnError: [2 3] to
// [2 4] completes once 4 joins the ISR; the leader 2 stays, and its
// AlterPartition succeeds with the new state, at a new leader epoch
// (replica 3 left).
func TestReassignmentThatKeepsTheLeaderCompletesWithoutAnError(t *testing.T) {
	f := newReassignFixture(t)
	if err := f.reassign(1, []int32{2, 4}, false); err != nil {
		t.Fatal(err)
	}
	f.want(1, []int32{2, 4, 3}, []int32{2, 3}, []int32{4}, []int32{3}, 2)
	le := f.part(1).LeaderEpoch
	r := f.isr(1, 2, 3, 4)
	if r.Err != nil || r.Leader != 2 || !slices.Equal(r.ISR, []int32{2, 4}) || r.LeaderEpoch != le+1 {
		t.Fatalf("completing AlterPartition: %+v", r)
	}
	f.want(1, []int32{2, 4}, []int32{2, 4}, nil, nil, 2)
}

// TestReassignmentWithinTheISRCompletesAtOnce: reordering replicas, or
// dropping one, needs no copying: the reassignment completes in the
// request's own write, and a no-op target writes nothing.
func TestReassignmentWithinTheISRCompletesAtOnce(t *testing.T) {
	f := newReassignFixture(t)
	if err := f.reassign(0, []int32{2, 1}, false); err != nil {
		t.Fatal(err)
	}
	f.want(0, []int32{2, 1}, []int32{1, 2}, nil, nil, 1)
	pe := f.part(0).PartitionEpoch
	if err := f.reassign(0, []int32{2, 1}, false); err != nil {
		t.Fatal(err)
	}
	if f.part(0).PartitionEpoch != pe {
		t.Fatal("a reassignment to the current replicas wrote a change")
	}
	// Dropping the leader: 2 is in the ISR and leads.
	if err := f.reassign(0, []int32{2}, true); err != nil {
		t.Fatal(err)
	}
	f.want(0, []int32{2}, []int32{2}, nil, nil, 2)
	// The preferred election now finds the preferred replica leading.
	el, _ := f.c.ElectLeaders(ctx(t), ElectPreferred, []ElectionTopic{{"r", []int32{0}}})
	wantCode(t, "preferred after reassignment", el[0].Partitions[0].Err, kerr.ElectionNotNeeded)
}

// TestCancelReassignmentReverts: cancelling takes the adding replicas out
// of the replicas and the ISR and clears the reassignment; a second
// cancel is NO_REASSIGNMENT_IN_PROGRESS.
func TestCancelReassignmentReverts(t *testing.T) {
	f := newReassignFixture(t)
	if err := f.reassign(0, []int32{3, 1}, false); err != nil {
		t.Fatal(err)
	}
	f.isr(0, 1, 2)
	f.want(0, []int32{3, 1, 2}, []int32{1, 2}, []int32{3}, []int32{2}, 1)
	if err := f.reassign(0, nil, false); err != nil {
		t.Fatal(err)
	}
	f.want(0, []int32{1, 2}, []int32{1, 2}, nil, nil, 1)
	wantCode(t, "cancel again", f.reassign(0, nil, false), kerr.NoReassignmentInProgress)
}

// TestCancelReassignmentThatNeedsAnUncleanElection: when every ISR member
// is an adding replica, reverting would elect an original replica outside
// the ISR: INVALID_REPLICA_ASSIGNMENT unless the topic allows unclean
// leader election.
func TestCancelReassignmentThatNeedsAnUncleanElection(t *testing.T) {
	f := newReassignFixture(t)
	if err := f.reassign(0, []int32{3, 4}, true); err != nil {
		t.Fatal(err)
	}
	f.isr(0, 1, 2, 3)
	f.heartbeat(1, true) // leader 1 fenced: 3 leads (first valid in [3 4 1 2])
	f.want(0, []int32{3, 4, 1, 2}, []int32{2, 3}, []int32{3, 4}, []int32{1, 2}, 3)
	f.heartbeat(2, true)
	f.want(0, []int32{3, 4, 1, 2}, []int32{3}, []int32{3, 4}, []int32{1, 2}, 3)
	err := f.reassign(0, nil, true)
	wantCode(t, "cancel needing an unclean election", err, kerr.InvalidReplicaAssignment)
	if err == nil || err.Error() != "Unable to revert partition assignment for r:0 because it would require an unclean leader election." {
		t.Fatalf("message: %v", err)
	}
	yes := "true"
	if err := f.c.AlterConfigs(ctx(t), []ConfigChange{{ResourceType: metadata.ResourceTopic, ResourceName: "r",
		Name: "unclean.leader.election.enable", Value: &yes}}); err != nil {
		t.Fatal(err)
	}
	f.heartbeat(1, false)
	if err := f.reassign(0, nil, true); err != nil {
		t.Fatal(err)
	}
	f.want(0, []int32{1, 2}, []int32{1}, nil, nil, 1)
}

// TestReassignmentRecordsSurviveRestart: an ongoing reassignment is in the
// log and in snapshots, so a restarted controller still knows it.
func TestReassignmentRecordsSurviveRestart(t *testing.T) {
	q := newQuorum(t, 1, func(c *Config) { c.SnapshotEntries = 3 })
	c := q.active()
	for id := int32(1); id <= 3; id++ {
		register(t, c, id, "")
	}
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "s", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	rr, err := c.AlterPartitionReassignments(ctx(t), []Reassignment{{Topic: "s", Replicas: []int32{2, 3}}}, true)
	if err != nil || rr[0] != nil {
		t.Fatal(err, rr)
	}
	for i := 0; i < 4; i++ { // enough entries for a snapshot after the change
		if err := c.AlterConfigs(ctx(t), []ConfigChange{{ResourceType: metadata.ResourceBroker, Name: "x", Value: &[]string{"v"}[0]}}); err != nil {
			t.Fatal(err)
		}
	}
	q.stop(1)
	q.start(1, nil)
	c = q.active()
	p := c.Image().TopicByName("s").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.Adding, []int32{2, 3}) || !slices.Equal(p.Removing, []int32{1}) {
		t.Fatalf("after restart: %+v", p)
	}
	list, err := c.ListPartitionReassignments(ctx(t), nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("list after restart: %+v %v", list, err)
	}
}

// TestListPartitionReassignmentsOnlyOnTheActiveController: a follower
// answers NOT_CONTROLLER, as every other operation.
func TestListPartitionReassignmentsOnlyOnTheActiveController(t *testing.T) {
	q := newQuorum(t, 3, nil)
	active := q.active()
	for id, c := range q.ctls {
		if c == active {
			continue
		}
		_, err := c.ListPartitionReassignments(ctx(t), nil)
		var nc *NotControllerError
		if !errors.As(err, &nc) {
			t.Fatalf("follower %d: %v", id, err)
		}
		return
	}
}

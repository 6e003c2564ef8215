package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSingleVoterControllerNeedsNoPeers(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	if c.Image().ClusterID != testClusterID {
		t.Fatalf("cluster id %q", c.Image().ClusterID)
	}
	register(t, c, 1, "")
	createTopic(t, c, "solo", 3, 1)
	if tp := c.Image().TopicByName("solo"); tp == nil || len(tp.Partitions) != 3 {
		t.Fatalf("topic: %+v", tp)
	}
}

func TestRegisterBrokerRefusesAnotherCluster(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	_, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: 1, ClusterID: "other", IncarnationID: metadata.UUID{1}})
	wantCode(t, "register with another cluster id", err, kerr.InconsistentClusterID)
	if len(c.Image().Brokers) != 0 {
		t.Fatal("a refused broker was registered")
	}
}

func TestBrokerRegistrationAndHeartbeats(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	epoch, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: 1, ClusterID: testClusterID, IncarnationID: metadata.UUID{1}, Rack: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Image().Brokers[1]; b == nil || !b.Fenced || b.Epoch != epoch || b.Rack != "r1" {
		t.Fatalf("registered broker %+v, epoch %d", b, epoch)
	}
	steps := []struct {
		name string
		hb   BrokerHeartbeat
		err  *kerr.Error
		want HeartbeatResult
	}{
		{"unknown broker", BrokerHeartbeat{BrokerID: 9, BrokerEpoch: epoch}, kerr.BrokerIDNotRegistered, HeartbeatResult{}},
		{"stale epoch", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch - 1}, kerr.StaleBrokerEpoch, HeartbeatResult{}},
		{"not caught up stays fenced", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch - 1}, nil,
			HeartbeatResult{IsFenced: true}},
		{"caught up but wants fence", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch, WantFence: true}, nil,
			HeartbeatResult{IsCaughtUp: true, IsFenced: true}},
		{"caught up is unfenced", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch}, nil,
			HeartbeatResult{IsCaughtUp: true}},
		{"wants fence", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch, WantFence: true}, nil,
			HeartbeatResult{IsCaughtUp: true, IsFenced: true}},
		{"back", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch}, nil,
			HeartbeatResult{IsCaughtUp: true}},
		{"shut down", BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: epoch, WantShutDown: true}, nil,
			HeartbeatResult{IsCaughtUp: true, IsFenced: true, ShouldShutDown: true}},
	}
	for _, s := range steps {
		got, err := c.Heartbeat(ctx(t), s.hb)
		wantCode(t, s.name, err, s.err)
		if got != s.want {
			t.Errorf("%s: %+v, want %+v", s.name, got, s.want)
		}
	}
	// Another incarnation may take the id once the old one is fenced.
	if _, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: 1, ClusterID: testClusterID, IncarnationID: metadata.UUID{2}}); err != nil {
		t.Fatalf("re-register after fencing: %v", err)
	}
}

func TestDuplicateBrokerRegistrationWhileSessionAlive(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	register(t, c, 1, "")
	_, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: 1, ClusterID: testClusterID, IncarnationID: metadata.UUID{9}})
	wantCode(t, "second incarnation", err, kerr.DuplicateBrokerRegistration)
	// The same incarnation registering again (a retry) is accepted.
	if _, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: 1, ClusterID: testClusterID, IncarnationID: metadata.UUID{1, 1}}); err != nil {
		t.Fatalf("same incarnation: %v", err)
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	for id := int32(1); id <= 3; id++ {
		register(t, c, id, "")
	}
	createTopic(t, c, "exists", 1, 1)
	cases := []struct {
		name string
		req  CreateTopic
		err  *kerr.Error
	}{
		{"defaults", CreateTopic{Name: "d", NumPartitions: -1, ReplicationFactor: -1}, nil},
		{"exists", CreateTopic{Name: "exists", NumPartitions: 1, ReplicationFactor: 1}, kerr.TopicAlreadyExists},
		{"empty name", CreateTopic{Name: "", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException},
		{"bad char", CreateTopic{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException},
		{"dot", CreateTopic{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException},
		{"zero partitions", CreateTopic{Name: "z", NumPartitions: 0, ReplicationFactor: 1}, kerr.InvalidPartitions},
		{"zero rf", CreateTopic{Name: "z", NumPartitions: 1, ReplicationFactor: 0}, kerr.InvalidReplicationFactor},
		{"rf above brokers", CreateTopic{Name: "z", NumPartitions: 1, ReplicationFactor: 4}, kerr.InvalidReplicationFactor},
		{"assignment and count", CreateTopic{Name: "z", NumPartitions: 1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}}}, kerr.InvalidRequest},
		{"assignment gap", CreateTopic{Name: "z", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 2: {2}}}, kerr.InvalidReplicaAssignment},
		{"assignment unknown broker", CreateTopic{Name: "z", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {7}}}, kerr.InvalidReplicaAssignment},
		{"assignment repeat", CreateTopic{Name: "z", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 1}}}, kerr.InvalidReplicaAssignment},
		{"assignment uneven", CreateTopic{Name: "z", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 2}, 1: {3}}}, kerr.InvalidReplicaAssignment},
		{"assignment", CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {3, 1}, 1: {2, 3}}}, nil},
	}
	for _, tc := range cases {
		res, err := c.CreateTopics(ctx(t), []CreateTopic{tc.req}, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantCode(t, tc.name, res[0].Err, tc.err)
	}
	if p := c.Image().TopicByName("m").Partitions[0]; !slices.Equal(p.Replicas, []int32{3, 1}) || p.Leader != 3 || !slices.Equal(p.ISR, []int32{3, 1}) {
		t.Fatalf("manual assignment: %+v", p)
	}
	// A name twice in one request; validateOnly writes nothing.
	res, _ := c.CreateTopics(ctx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}, {Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false)
	wantCode(t, "duplicate in request", res[0].Err, kerr.InvalidRequest)
	res, _ = c.CreateTopics(ctx(t), []CreateTopic{{Name: "v", NumPartitions: 2, ReplicationFactor: 3}}, true)
	if res[0].Err != nil || res[0].NumPartitions != 2 || c.Image().TopicByName("v") != nil {
		t.Fatalf("validateOnly: %+v", res[0])
	}
}

func TestDeleteTopicsAndCreatePartitions(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	register(t, c, 1, "")
	register(t, c, 2, "")
	id := createTopic(t, c, "t", 2, 2)
	res, err := c.CreatePartitions(ctx(t), []CreatePartitions{{Name: "t", Count: 2}, {Name: "t", Count: 1}, {Name: "nope", Count: 3}}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "same count", res[0].Err, kerr.InvalidPartitions)
	wantCode(t, "fewer", res[1].Err, kerr.InvalidPartitions)
	wantCode(t, "unknown", res[2].Err, kerr.UnknownTopicOrPartition)
	res, _ = c.CreatePartitions(ctx(t), []CreatePartitions{{Name: "t", Count: 4, Assignments: [][]int32{{1, 2}}}}, false)
	wantCode(t, "too few assignments", res[0].Err, kerr.InvalidReplicaAssignment)
	res, _ = c.CreatePartitions(ctx(t), []CreatePartitions{{Name: "t", Count: 4}}, false)
	wantCode(t, "grow", res[0].Err, nil)
	tp := c.Image().TopicByName("t")
	if len(tp.Partitions) != 4 || len(tp.Partitions[3].Replicas) != 2 {
		t.Fatalf("after growing: %+v", tp.Partitions)
	}
	del, err := c.DeleteTopics(ctx(t), []TopicRef{{Name: "nope"}, {ID: metadata.UUID{9}}, {ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "unknown name", del[0].Err, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown id", del[1].Err, kerr.UnknownTopicID)
	wantCode(t, "by id", del[2].Err, nil)
	if c.Image().TopicByName("t") != nil {
		t.Fatal("deleted topic still there")
	}
}

func TestAlterPartitionValidation(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	e1 := register(t, c, 1, "")
	register(t, c, 2, "")
	e3 := register(t, c, 3, "")
	id, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "p", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2, 3}}}}, false)
	if err != nil || id[0].Err != nil {
		t.Fatal(err, id)
	}
	tid := id[0].TopicID
	item := func(le, pe int32, isr ...int32) AlterPartitionItem {
		return AlterPartitionItem{TopicID: tid, Partition: 0, LeaderEpoch: le, PartitionEpoch: pe, NewISR: isr}
	}
	if _, err := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: 1, BrokerEpoch: e1 - 1, Partitions: []AlterPartitionItem{item(0, 0, 1)}}); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale broker epoch: %v", err)
	}
	cases := []struct {
		name   string
		broker int32
		epoch  int64
		item   AlterPartitionItem
		err    *kerr.Error
	}{
		{"unknown topic", 1, e1, AlterPartitionItem{TopicID: metadata.UUID{7}, NewISR: []int32{1}}, kerr.UnknownTopicID},
		{"unknown partition", 1, e1, AlterPartitionItem{TopicID: tid, Partition: 5, NewISR: []int32{1}}, kerr.UnknownTopicOrPartition},
		{"leader epoch ahead", 1, e1, item(1, 0, 1), kerr.NotController},
		{"partition epoch ahead", 1, e1, item(0, 3, 1), kerr.NotController},
		{"not the leader", 3, e3, item(0, 0, 1, 3), kerr.InvalidRequest},
		{"not a replica", 1, e1, item(0, 0, 1, 4), kerr.InvalidRequest},
		{"repeat", 1, e1, item(0, 0, 1, 1), kerr.InvalidRequest},
		{"without leader", 1, e1, item(0, 0, 2, 3), kerr.InvalidRequest},
		{"shrink", 1, e1, item(0, 0, 1, 2), nil},
		{"old partition epoch", 1, e1, item(0, 0, 1), kerr.InvalidUpdateVersion},
	}
	for _, tc := range cases {
		res, err := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: tc.broker, BrokerEpoch: tc.epoch, Partitions: []AlterPartitionItem{tc.item}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantCode(t, tc.name, res[0].Err, tc.err)
		if tc.name == "shrink" && (res[0].PartitionEpoch != 1 || res[0].LeaderEpoch != 0 || !slices.Equal(res[0].ISR, []int32{1, 2})) {
			t.Fatalf("after shrink: %+v", res[0])
		}
	}
	// Broker 3 asks to be fenced; it may not join an ISR then.
	if _, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 3, BrokerEpoch: e3, CurrentMetadataOffset: e3, WantFence: true}); err != nil {
		t.Fatal(err)
	}
	res, _ := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: 1, BrokerEpoch: e1, Partitions: []AlterPartitionItem{item(0, 1, 1, 2, 3)}})
	wantCode(t, "fenced broker in ISR", res[0].Err, kerr.IneligibleReplica)
	// A deposed leader's old leader epoch is fenced after an election.
	if _, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: e1, WantFence: true}); err != nil {
		t.Fatal(err)
	}
	p := c.Image().Topics[tid].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || slices.Contains(p.ISR, 1) {
		t.Fatalf("after fencing the leader: %+v", p)
	}
	res, _ = c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: 1, BrokerEpoch: e1, Partitions: []AlterPartitionItem{item(0, 1, 1, 2)}})
	wantCode(t, "deposed leader", res[0].Err, kerr.FencedLeaderEpoch)
}

func TestElectLeaders(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	e1 := register(t, c, 1, "")
	register(t, c, 2, "")
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "e", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2}, 1: {2, 1}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	el, _ := c.ElectLeaders(ctx(t), ElectPreferred, []ElectionTopic{{"e", []int32{0, 9}}, {"nope", []int32{0}}})
	wantCode(t, "preferred already leads", el[0].Partitions[0].Err, kerr.ElectionNotNeeded)
	wantCode(t, "unknown partition", el[0].Partitions[1].Err, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", el[1].Partitions[0].Err, kerr.UnknownTopicOrPartition)
	if msg := el[1].Partitions[0].Err.Error(); msg != "No such topic as nope" {
		t.Errorf("unknown topic message %q, want Kafka's", msg)
	}
	// Fence broker 1: broker 2 leads partition 0; broker 1 comes back in
	// the ISR (the leader adds it) and the preferred election moves it back.
	c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: e1, WantFence: true})
	el, _ = c.ElectLeaders(ctx(t), ElectPreferred, []ElectionTopic{{"e", []int32{0}}})
	wantCode(t, "preferred fenced", el[0].Partitions[0].Err, kerr.PreferredLeaderNotAvailable)
	// Over every partition, an answer other than ELECTION_NOT_NEEDED is
	// listed (partition 1's preferred replica 2 leads).
	el, _ = c.ElectLeaders(ctx(t), ElectPreferred, nil)
	if len(el) != 1 || el[0].Topic != "e" || len(el[0].Partitions) != 1 || el[0].Partitions[0].Partition != 0 ||
		!errors.Is(el[0].Partitions[0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election over all partitions with the preferred replica fenced: %+v", el)
	}
	c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: e1})
	p := c.Image().TopicByName("e").Partitions[0]
	ap, err := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: 2, BrokerEpoch: c.Image().Brokers[2].Epoch,
		Partitions: []AlterPartitionItem{{TopicID: res[0].TopicID, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{2, 1}}}})
	if err != nil || ap[0].Err != nil {
		t.Fatal(err, ap)
	}
	el, _ = c.ElectLeaders(ctx(t), ElectPreferred, nil)
	if len(el) != 1 || len(el[0].Partitions) != 1 || el[0].Partitions[0].Err != nil || el[0].Partitions[0].Partition != 0 {
		t.Fatalf("preferred election over all partitions: %+v", el)
	}
	if l := c.Image().TopicByName("e").Partitions[0].Leader; l != 1 {
		t.Fatalf("leader %d after preferred election, want 1", l)
	}
	el, _ = c.ElectLeaders(ctx(t), ElectPreferred, nil)
	if len(el) != 1 || el[0].Topic != "e" || len(el[0].Partitions) != 0 {
		t.Fatalf("nothing to elect still lists the topic, with no partitions: %+v", el)
	}
	el, _ = c.ElectLeaders(ctx(t), ElectUnclean, []ElectionTopic{{"e", []int32{1}}})
	wantCode(t, "unclean with a leader", el[0].Partitions[0].Err, kerr.ElectionNotNeeded)
	if _, err := c.ElectLeaders(ctx(t), ElectionType(5), nil); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("election type 5: %v", err)
	}
}

// fenceTheOnlyISRMember creates topic u, one partition on brokers 1 and 2
// (both registered; e1 is broker 1's epoch), lets broker 1, its leader,
// shrink the ISR to itself and then fences it, and returns the topic's id.
func fenceTheOnlyISRMember(t *testing.T, c *Controller, e1 int64) metadata.UUID {
	t.Helper()
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "u", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	tid := res[0].TopicID
	ap, err := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: 1, BrokerEpoch: e1,
		Partitions: []AlterPartitionItem{{TopicID: tid, Partition: 0, NewISR: []int32{1}}}})
	if err != nil || ap[0].Err != nil {
		t.Fatal(err, ap)
	}
	c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: e1, WantFence: true})
	return tid
}

// TestUncleanElectLeaders: an unclean election of a leaderless partition
// takes an unfenced ISR member first, else any unfenced replica as the ISR
// alone, else ELIGIBLE_LEADERS_NOT_AVAILABLE.
func TestUncleanElectLeaders(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	e1 := register(t, c, 1, "")
	e2 := register(t, c, 2, "")
	// Unclean election is off: no clean leader once 1 is fenced.
	tid := fenceTheOnlyISRMember(t, c, e1)
	if p := c.Image().Topics[tid].Partitions[0]; p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("after fencing the only ISR member: %+v", p)
	}
	c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: e2, CurrentMetadataOffset: e2, WantFence: true})
	el, _ := c.ElectLeaders(ctx(t), ElectUnclean, []ElectionTopic{{"u", []int32{0}}})
	wantCode(t, "no unfenced replica", el[0].Partitions[0].Err, kerr.EligibleLeadersNotAvailable)
	c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: e2, CurrentMetadataOffset: e2})
	el, _ = c.ElectLeaders(ctx(t), ElectPreferred, []ElectionTopic{{"u", []int32{0}}})
	wantCode(t, "preferred of a leaderless partition outside the ISR", el[0].Partitions[0].Err, kerr.PreferredLeaderNotAvailable)
	el, _ = c.ElectLeaders(ctx(t), ElectUnclean, []ElectionTopic{{"u", []int32{0}}})
	wantCode(t, "unclean", el[0].Partitions[0].Err, nil)
	if p := c.Image().Topics[tid].Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("after the unclean election: %+v", p)
	}
}

func TestFollowerAnswersNotControllerWithTheLeader(t *testing.T) {
	q := newQuorum(t, 3, nil)
	waitFor(t, "both followers to name the leader", func() bool {
		lead := q.active()
		for id, c := range q.ctls {
			if c == lead {
				continue
			}
			_, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false)
			var nc *NotControllerError
			if !errors.As(err, &nc) || !errors.Is(err, kerr.NotController) || ErrorCode(err) != kerr.NotController.Code {
				t.Fatalf("follower %d: %v, want NOT_CONTROLLER", id, err)
			}
			if nc.LeaderID != lead.cfg.NodeID {
				return false // the leader changed meanwhile
			}
		}
		return true
	})
	if q.active().Image().TopicByName("x") != nil {
		t.Fatal("a follower wrote")
	}
}

func TestQuorumReplicatesAndSurvivesLeaderLoss(t *testing.T) {
	q := newQuorum(t, 3, nil)
	for id := int32(1); id <= 3; id++ {
		q.register(id, "")
	}
	q.createTopic("before", 3, 3)
	c := q.active()
	want := c.Image().TopicByName("before")
	waitFor(t, "the topic on every controller", func() bool {
		for _, o := range q.ctls {
			if o.Image().TopicByName("before") == nil {
				return false
			}
		}
		return true
	})
	old := c.cfg.NodeID
	q.stop(old)
	q.retry(func(c *Controller) error {
		_, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "after", NumPartitions: 1, ReplicationFactor: 2}}, false)
		return err
	})
	n := q.active()
	if n.cfg.NodeID == old {
		t.Fatal("stopped controller is active")
	}
	got := n.Image().TopicByName("before")
	if got == nil || got.ID != want.ID || len(got.Partitions) != 3 {
		t.Fatalf("committed topic lost or changed: %+v", got)
	}
	q.start(old, nil)
	waitFor(t, "the restarted controller to catch up", func() bool {
		return q.ctls[old].Image().TopicByName("after") != nil && q.ctls[old].Image().TopicByName("before") != nil
	})
}

func TestMinorityControllerRefusesWrites(t *testing.T) {
	q := newQuorum(t, 3, nil)
	q.register(1, "")
	c := q.active()
	lead := c.cfg.NodeID
	var others []int32
	for id := range q.ctls {
		if id != lead {
			others = append(others, id)
		}
	}
	c.Node().Block(others...)
	for _, id := range others {
		q.ctls[id].Node().Block(lead)
	}
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.CreateTopics(short, []CreateTopic{{Name: "lost", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if !errors.Is(err, kerr.NotController) && !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("write on an isolated controller: %v, want NOT_CONTROLLER or REQUEST_TIMED_OUT", err)
	}
	waitFor(t, "the isolated controller to step down", func() bool { return c.Leader() != lead })
	_, err = c.CreateTopics(ctx(t), []CreateTopic{{Name: "lost", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if !errors.Is(err, kerr.NotController) {
		t.Fatalf("write after stepping down: %v", err)
	}
	// The majority goes on.
	var maj *Controller
	waitFor(t, "an active controller on the majority side", func() bool {
		l := q.ctls[others[0]].Leader()
		if l != others[0] && l != others[1] {
			return false
		}
		maj = q.ctls[l]
		_, err := maj.CreateTopics(ctx(t), []CreateTopic{{Name: "kept", NumPartitions: 1, ReplicationFactor: 1}}, false)
		return err == nil
	})
	c.Node().Block()
	for _, id := range others {
		q.ctls[id].Node().Block()
	}
	waitFor(t, "the healed controller to catch up", func() bool { return c.Image().TopicByName("kept") != nil })
	if c.Image().TopicByName("lost") != nil {
		t.Fatal("a write on the isolated minority was committed")
	}
}

func TestSessionTimeoutFencesBrokerAndMovesLeadershipWithinTheISR(t *testing.T) {
	q := newQuorum(t, 3, nil)
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, "")
	}
	tid := q.createTopic("f", 6, 3)
	c := q.active()
	before := c.Image().Topics[tid]
	// Brokers 1 and 2 heartbeat every 3s; broker 3 goes silent past the 9s
	// session. (The clock keeps moving until it is fenced, since a new
	// active controller would give it a fresh session.)
	waitFor(t, "broker 3 fenced on every controller", func() bool {
		fenced := true
		for _, o := range q.ctls {
			if b := o.Image().Brokers[3]; b == nil || !b.Fenced {
				fenced = false
			}
		}
		if fenced {
			return true
		}
		q.clock.Advance(3 * time.Second)
		for _, id := range []int32{1, 2} {
			q.retry(func(c *Controller) error {
				_, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id], CurrentMetadataOffset: epochs[id]})
				return err
			})
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	after := q.active().Image().Topics[tid]
	for pid, p := range after.Partitions {
		old := before.Partitions[pid]
		if slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d: fenced broker 3 still in ISR %v", pid, p.ISR)
		}
		if old.Leader == 3 {
			if p.Leader == 3 || !slices.Contains(old.ISR, p.Leader) || p.LeaderEpoch != old.LeaderEpoch+1 {
				t.Errorf("partition %d: leader %d epoch %d after fencing the leader (was %+v)", pid, p.Leader, p.LeaderEpoch, old)
			}
		} else if p.Leader != old.Leader || p.LeaderEpoch != old.LeaderEpoch {
			t.Errorf("partition %d: leadership changed though its leader was alive: %+v -> %+v", pid, old, p)
		}
		if b1, b2 := c.Image().Brokers[1], c.Image().Brokers[2]; b1.Fenced || b2.Fenced {
			t.Fatal("a heartbeating broker was fenced")
		}
	}
	// Broker 3 heartbeats again: unfenced, leaderships unchanged (its ISR
	// return is the partition leaders' AlterPartition).
	q.retry(func(c *Controller) error {
		res, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 3, BrokerEpoch: epochs[3], CurrentMetadataOffset: epochs[3]})
		if err == nil && res.IsFenced {
			t.Fatalf("broker 3 still fenced after a caught-up heartbeat")
		}
		return err
	})
}

func TestUncleanElectionOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		c := newQuorum(t, 1, func(cfg *Config) { cfg.UncleanLeaderElection = enabled }).active()
		e1 := register(t, c, 1, "")
		register(t, c, 2, "")
		tid := fenceTheOnlyISRMember(t, c, e1)
		p := c.Image().Topics[tid].Partitions[0]
		if enabled && (p.Leader != 2 || !slices.Equal(p.ISR, []int32{2})) {
			t.Errorf("unclean enabled: %+v, want leader 2 and ISR [2]", p)
		}
		if !enabled && (p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{1})) {
			t.Errorf("unclean disabled: %+v, want no leader and the ISR kept as [1]", p)
		}
		// The last ISR member coming back leads again.
		c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: e1})
		if p := c.Image().Topics[tid].Partitions[0]; !enabled && p.Leader != 1 {
			t.Errorf("unfenced last ISR member: %+v, want leader 1", p)
		}
	}
}

func TestControllersRestartFromSnapshotAndWAL(t *testing.T) {
	q := newQuorum(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 5; cfg.CatchUpEntries = 2 })
	for id := int32(1); id <= 3; id++ {
		q.register(id, "")
	}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		q.createTopic(name, 2, 3)
	}
	q.retry(func(c *Controller) error {
		return c.AlterConfigs(ctx(t), []ConfigChange{{ResourceType: metadata.ResourceTopic, ResourceName: "a", Name: "retention.ms", Value: new("1000")}})
	})
	want := q.active().Image()
	waitFor(t, "every controller at the same offset", func() bool {
		for _, o := range q.ctls {
			if o.Image().Offset != want.Offset {
				return false
			}
		}
		return true
	})
	for _, id := range []int32{1, 2, 3} {
		q.stop(id)
	}
	for _, id := range []int32{1, 2, 3} {
		q.start(id, nil)
	}
	n := q.active()
	waitFor(t, "the restarted quorum to reach the old offset", func() bool { return n.Image().Offset >= want.Offset })
	got := n.Image()
	for name, id := range want.TopicIDs {
		tp := got.Topics[id]
		if tp == nil || tp.Name != name || len(tp.Partitions) != 2 {
			t.Fatalf("topic %s after restart: %+v", name, tp)
		}
	}
	if got.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "a"}]["retention.ms"] != "1000" || len(got.Brokers) != 3 {
		t.Fatalf("configs or brokers lost: %+v %+v", got.Configs, got.Brokers)
	}
}

func TestLaggingControllerInstallsTheLeadersSnapshot(t *testing.T) {
	q := newQuorum(t, 3, func(cfg *Config) { cfg.SnapshotEntries = 4; cfg.CatchUpEntries = 1 })
	q.register(1, "")
	c := q.active()
	var lag int32
	for id := range q.ctls {
		if id != c.cfg.NodeID {
			lag = id
			break
		}
	}
	before := q.ctls[lag].Image().Offset
	q.stop(lag)
	for _, name := range []string{"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10"} {
		q.retry(func(c *Controller) error {
			res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
			if err == nil && res[0].Err != nil && !errors.Is(res[0].Err, kerr.TopicAlreadyExists) {
				t.Fatal(res[0].Err)
			}
			return err
		})
	}
	q.start(lag, nil)
	waitFor(t, "the lagging controller to catch up", func() bool {
		return q.ctls[lag].Image().TopicByName("s10") != nil && q.ctls[lag].Image().TopicByName("s1") != nil
	})
	// The leader compacted its log far past where this controller stopped
	// (a snapshot every 4 entries, 1 kept), so raft could only catch it up
	// with a snapshot; it holds one past that point. (raftnode's
	// TestLaggingNodeCatchesUpFromASnapshot checks the install itself.)
	des, err := os.ReadDir(filepath.Join(q.dirs[lag], MetadataDir))
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "snap-") {
			newest = de.Name()
		}
	}
	var idx uint64
	if _, err := fmt.Sscanf(newest, "snap-%d.snap", &idx); err != nil || idx <= before {
		t.Fatalf("newest snapshot %q of the lagging controller (stopped at %d): %v", newest, before, err)
	}
}

func TestInMemoryControllerWithoutDataDir(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Config{NodeID: 0, Voters: map[int32]string{0: ln.Addr().String()}, Listener: ln,
		ClusterID: testClusterID, TickInterval: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "node 0 active", func() bool { return c.Leader() == 0 && c.Image().ClusterID != "" })
	register(t, c, 0, "")
	if _, err := os.Stat(MetadataDir); !os.IsNotExist(err) {
		t.Fatalf("a controller without a data dir wrote to the working directory: %v", err)
	}
}

func TestSubscribeSeesEveryAppliedChange(t *testing.T) {
	c := newQuorum(t, 1, nil).active()
	ch, cancel := c.Subscribe()
	defer cancel()
	register(t, c, 1, "")
	createTopic(t, c, "sub", 1, 1)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case im := <-ch:
			if im.TopicByName("sub") != nil {
				return
			}
		case <-deadline:
			t.Fatal("no image with the topic arrived")
		}
	}
}

// TestControllerTellsItsNodeTheClusterID: every voter's raft node learns
// the cluster id when it applies the ClusterRecord, so its transport
// refuses nodes of other clusters (raftnode's
// TestQuorumRefusesANodeOfAnotherCluster), and a restarted voter knows it
// again once it has applied its log.
func TestControllerTellsItsNodeTheClusterID(t *testing.T) {
	q := newQuorum(t, 3, nil)
	q.active()
	for id, c := range q.ctls {
		waitFor(t, fmt.Sprintf("node %d to know the cluster id", id), func() bool { return c.Node().ClusterID() == testClusterID })
	}
	q.stop(3)
	q.start(3, nil)
	waitFor(t, "the restarted node to know the cluster id", func() bool { return q.ctls[3].Node().ClusterID() == testClusterID })
}

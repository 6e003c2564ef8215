package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestControlledShutdownMovesLeadershipsBeforeGrantingIt follows KIP-631's
// controlled shutdown on an RF=3 topic: the broker that wants to shut down
// stays unfenced while its leaderships move to other ISR members and it
// leaves every ISR; ShouldShutDown waits until every other active broker
// has reported a metadata offset past that move; then it is fenced.
func TestControlledShutdownMovesLeadershipsBeforeGrantingIt(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = register(t, c, id, "")
	}
	tid := createTopic(t, c, "t", 6, 3)
	victim := int32(1)
	led := 0
	for _, p := range c.Image().Topics[tid].Partitions {
		if p.Leader == victim {
			led++
		}
	}
	if led == 0 {
		t.Fatal("placement gave the victim no leadership; the test needs one")
	}
	hb := func(id int32, shut bool, offset int64) HeartbeatResult {
		t.Helper()
		res, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id], CurrentMetadataOffset: offset, WantShutDown: shut})
		if err != nil {
			t.Fatalf("heartbeat of %d: %v", id, err)
		}
		return res
	}
	// The others report an offset from before the move.
	before := int64(c.Image().Offset)
	hb(2, false, before)
	hb(3, false, before)

	res := hb(victim, true, before)
	if res.ShouldShutDown || res.IsFenced {
		t.Fatalf("first shutdown heartbeat: %+v, want a controlled shutdown in progress (unfenced, not yet granted)", res)
	}
	im := c.Image()
	for pid, p := range im.Topics[tid].Partitions {
		if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
			t.Fatalf("partition %d after the move: leader %d isr %v", pid, p.Leader, p.ISR)
		}
	}
	if !c.InControlledShutdown(victim) {
		t.Fatal("the victim is not in controlled shutdown")
	}
	// A leader may not take it back into an ISR meanwhile.
	for pid, p := range im.Topics[tid].Partitions {
		res, err := c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: p.Leader, BrokerEpoch: epochs[p.Leader],
			Partitions: []AlterPartitionItem{{TopicID: tid, Partition: pid, LeaderEpoch: p.LeaderEpoch,
				PartitionEpoch: p.PartitionEpoch, NewISR: append(slices.Clone(p.ISR), victim)}}})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "AlterPartition adding the broker in controlled shutdown", res[0].Err, kerr.IneligibleReplica)
		break
	}
	// Not granted while another active broker is behind the move.
	if res := hb(victim, true, int64(im.Offset)); res.ShouldShutDown {
		t.Fatalf("granted before the other brokers applied the move: %+v", res)
	}
	// Granted once both have.
	hb(2, false, int64(im.Offset))
	hb(3, false, int64(im.Offset))
	res = hb(victim, true, int64(im.Offset))
	if !res.ShouldShutDown || !res.IsFenced {
		t.Fatalf("after every broker applied the move: %+v, want ShouldShutDown and fenced", res)
	}
	if c.InControlledShutdown(victim) {
		t.Fatal("the victim is still in controlled shutdown after being fenced")
	}
	if !c.Image().Brokers[victim].Fenced {
		t.Fatal("the victim is not fenced in the image")
	}
}

// TestControlledShutdownExcludesTheBrokerFromElections fences another
// broker while one is in controlled shutdown: leaderships it gives up go
// to a broker not shutting down, or to no one.
func TestControlledShutdownExcludesTheBrokerFromElections(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	epochs := map[int32]int64{}
	for id := int32(1); id <= 2; id++ {
		epochs[id] = register(t, c, id, "")
	}
	// Partition 0 led by 2 with broker 1 in its ISR; partition 1 led by 1.
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {2, 1}, 1: {1, 2}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create: %v %v", err, res)
	}
	tid := res[0].TopicID
	// Broker 2 is behind, so 1's shutdown stays in progress.
	if _, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2], CurrentMetadataOffset: 0}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], CurrentMetadataOffset: epochs[1], WantShutDown: true}); err != nil || r.ShouldShutDown {
		t.Fatalf("enter controlled shutdown: %+v %v", r, err)
	}
	if r, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2], CurrentMetadataOffset: 0, WantFence: true}); err != nil || !r.IsFenced {
		t.Fatalf("fence broker 2: %+v %v", r, err)
	}
	for pid, p := range c.Image().Topics[tid].Partitions {
		if p.Leader == 1 {
			t.Fatalf("partition %d went to the broker in controlled shutdown: %+v", pid, p)
		}
	}
}

// TestShutdownOfABrokerThatLeadsNothingIsImmediate: nothing to move, so
// the first WantShutDown heartbeat is granted and fences it.
func TestShutdownOfABrokerThatLeadsNothingIsImmediate(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	epoch := register(t, c, 4, "")
	r, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: 4, BrokerEpoch: epoch, CurrentMetadataOffset: epoch, WantShutDown: true})
	if err != nil || !r.ShouldShutDown || !r.IsFenced {
		t.Fatalf("%+v %v, want granted and fenced", r, err)
	}
}

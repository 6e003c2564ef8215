package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// startObserver starts node id as an observer (a broker-only node's
// controller) on a new raft listener and returns it with its address.
func (q *quorum) startObserver(id int32) (*Controller, string) {
	q.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		q.t.Fatal(err)
	}
	q.dirs[id] = q.t.TempDir()
	c, err := Start(Config{NodeID: id, Voters: q.voters, Observer: true, DataDir: q.dirs[id], Listener: ln,
		ClusterID: testClusterID, Now: q.clock.Now, Rand: rand.New(rand.NewPCG(uint64(id), 7)),
		TickInterval: 50 * time.Millisecond, ElectionTicks: 10, WriteTimeout: 10 * time.Second, Logger: quiet})
	if err != nil {
		q.t.Fatalf("start observer %d: %v", id, err)
	}
	q.t.Cleanup(func() { c.Close() })
	return c, ln.Addr().String()
}

// TestObserverJoinsWhenItsBrokerRegistersAndAppliesTheLog registers a
// broker-only node with its raft address: the active controller adds it as
// a learner, it applies the log (its own registration, a topic created
// afterwards) and publishes the images, and it answers every operation
// NOT_CONTROLLER naming the active controller.
func TestObserverJoinsWhenItsBrokerRegistersAndAppliesTheLog(t *testing.T) {
	q := newQuorum(t, 3, nil)
	const id = 10
	obs, addr := q.startObserver(id)
	images, unsubscribe := obs.Subscribe()
	defer unsubscribe()
	var epoch int64
	q.retry(func(c *Controller) error {
		var err error
		epoch, err = c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: id, ClusterID: testClusterID,
			IncarnationID: metadata.UUID{id, 1}, RaftAddr: addr,
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9192}}})
		return err
	})
	// The registration is committed when it returns; the other voters
	// apply the conf change adding the learner when they apply the log.
	for vid, c := range q.ctls {
		waitFor(t, fmt.Sprintf("voter %d to know observer %d at %s", vid, id, addr), func() bool { return c.Observers()[id] == addr })
	}
	waitFor(t, "the observer to apply its own registration", func() bool {
		b := obs.Image().Brokers[id]
		return b != nil && b.Epoch == epoch
	})
	// Its broker heartbeats with the observer's offset and is unfenced.
	q.retry(func(c *Controller) error {
		res, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epoch, CurrentMetadataOffset: int64(obs.Image().Offset)})
		if err == nil && (res.IsFenced || !res.IsCaughtUp) {
			return kerr.RequestTimedOut // not yet caught up: again
		}
		return err
	})
	tid := q.createTopic("seen-by-observer", 3, 1)
	waitFor(t, "a published image with the topic on the observer", func() bool {
		select {
		case im := <-images:
			return im.Topics[tid] != nil && len(im.Topics[tid].Partitions) == 3
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	lead := q.active().cfg.NodeID
	waitFor(t, "the observer to know the active controller", func() bool { return obs.Leader() == lead })
	_, err := obs.CreateTopics(ctx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false)
	var nc *NotControllerError
	if !errors.As(err, &nc) || nc.LeaderID != lead {
		t.Fatalf("CreateTopics on the observer: %v, want NOT_CONTROLLER naming %d", err, lead)
	}
	qs := q.ctls[lead].Node().Quorum()
	if len(qs.Observers) != 1 || qs.Observers[0].NodeID != id || len(qs.Voters) != 3 {
		t.Fatalf("quorum: voters %v observers %v", qs.Voters, qs.Observers)
	}

	// The active controller moves: the new one still replicates to it.
	q.stop(lead)
	tid2 := q.createTopic("after-failover", 1, 1)
	waitFor(t, "the observer to apply a topic created by the new active controller", func() bool {
		return obs.Image().Topics[tid2] != nil
	})
}

func TestRegisterRefusesAVoterAsObserverAndABadRaftAddress(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	for _, tc := range []struct {
		id   int32
		addr string
	}{
		{1, "127.0.0.1:9000"}, // a voter
		{5, "no-port"},
		{5, "host:0"},
	} {
		_, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: tc.id, ClusterID: testClusterID,
			IncarnationID: metadata.UUID{9}, RaftAddr: tc.addr})
		wantCode(t, "register "+tc.addr, err, kerr.InvalidRegistration)
	}
}

func TestObserverStartRefusesAVoterID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Start(Config{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1"}, Observer: true, DataDir: t.TempDir(),
		Listener: ln, ClusterID: testClusterID, Logger: quiet})
	if err == nil {
		t.Fatal("a voter id started as an observer")
	}
}

// TestUnregisterBrokerRemovesTheRegistrationAndTheObserver unregisters a
// broker-only node: its registration leaves the image, its ISR
// memberships and leaderships go as when it is fenced, it leaves the
// quorum's observers, and a second unregistration is
// BROKER_ID_NOT_REGISTERED.
func TestUnregisterBrokerRemovesTheRegistrationAndTheObserver(t *testing.T) {
	q := newQuorum(t, 1, nil)
	c := q.active()
	register(t, c, 0, "") // the voter's own broker
	const id = 7
	obs, addr := q.startObserver(id)
	epoch, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: id, ClusterID: testClusterID,
		IncarnationID: metadata.UUID{id}, RaftAddr: addr,
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9300}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the observer's broker unfenced", func() bool {
		res, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epoch, CurrentMetadataOffset: int64(obs.Image().Offset)})
		return err == nil && !res.IsFenced
	})
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {id, 0}, 1: {0, id}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create: %v %v", err, res)
	}
	tid := res[0].TopicID
	if err := c.UnregisterBroker(ctx(t), id); err != nil {
		t.Fatalf("UnregisterBroker: %v", err)
	}
	im := c.Image()
	if im.Brokers[id] != nil {
		t.Fatal("the broker is still registered")
	}
	for pid, p := range im.Topics[tid].Partitions {
		if p.Leader != 0 || len(p.ISR) != 1 || p.ISR[0] != 0 {
			t.Fatalf("partition %d after unregistering %d: leader %d ISR %v", pid, id, p.Leader, p.ISR)
		}
	}
	if _, ok := c.Observers()[id]; ok {
		t.Fatal("the unregistered broker-only node is still an observer")
	}
	wantCode(t, "unregister again", c.UnregisterBroker(ctx(t), id), kerr.BrokerIDNotRegistered)
}

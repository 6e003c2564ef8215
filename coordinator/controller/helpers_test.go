package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

const testClusterID = "gregor-test-cluster"

// fakeClock is the broker-session clock of a test: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// quorum is n controllers on loopback sharing one fake clock.
type quorum struct {
	t      testing.TB
	clock  *fakeClock
	voters map[int32]string
	dirs   map[int32]string
	ctls   map[int32]*Controller
	tune   func(*Config)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newQuorum(t testing.TB, n int, tune func(*Config)) *quorum {
	t.Helper()
	q := &quorum{t: t, clock: &fakeClock{now: time.Unix(1_800_000_000, 0)}, voters: map[int32]string{},
		dirs: map[int32]string{}, ctls: map[int32]*Controller{}, tune: tune}
	lns := map[int32]net.Listener{}
	for i := int32(1); i <= int32(n); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], q.voters[i], q.dirs[i] = ln, ln.Addr().String(), t.TempDir()
	}
	for id, ln := range lns {
		q.start(id, ln)
	}
	t.Cleanup(func() {
		for _, c := range q.ctls {
			c.Close()
		}
	})
	return q
}

func (q *quorum) start(id int32, ln net.Listener) {
	q.t.Helper()
	if ln == nil {
		var err error
		waitFor(q.t, "the controller port to be free", func() bool {
			ln, err = net.Listen("tcp", q.voters[id])
			return err == nil
		})
	}
	tick := 20 * time.Millisecond
	if len(q.voters) > 1 {
		// A longer election timeout (500ms-1s) keeps leadership stable on
		// a loaded machine; the tests retry on NOT_CONTROLLER all the same.
		tick = 50 * time.Millisecond
	}
	cfg := Config{NodeID: id, Voters: q.voters, DataDir: q.dirs[id], Listener: ln, ClusterID: testClusterID,
		Now: q.clock.Now, Rand: rand.New(rand.NewPCG(uint64(id), 7)), TickInterval: tick,
		ElectionTicks: 10, WriteTimeout: 10 * time.Second, Logger: quiet}
	if q.tune != nil {
		q.tune(&cfg)
	}
	c, err := Start(cfg)
	if err != nil {
		q.t.Fatalf("start controller %d: %v", id, err)
	}
	q.ctls[id] = c
}

func (q *quorum) stop(id int32) {
	q.ctls[id].Close()
	delete(q.ctls, id)
}

// active waits for an active controller all running ones agree on and
// that has written the cluster id.
func (q *quorum) active() *Controller {
	q.t.Helper()
	var lead int32
	waitFor(q.t, "an active controller", func() bool {
		lead = -1
		for _, c := range q.ctls {
			l := c.Leader()
			if l < 0 || (lead >= 0 && l != lead) {
				return false
			}
			lead = l
		}
		return lead >= 0 && q.ctls[lead] != nil && q.ctls[lead].Image().ClusterID != ""
	})
	return q.ctls[lead]
}

// retry runs op against the active controller until it does not fail with
// NOT_CONTROLLER (the leader may change under a test).
func (q *quorum) retry(op func(c *Controller) error) {
	q.t.Helper()
	waitFor(q.t, "an operation on the active controller", func() bool {
		err := op(q.active())
		if errors.Is(err, kerr.NotController) || errors.Is(err, kerr.RequestTimedOut) {
			return false
		}
		if err != nil {
			q.t.Fatalf("operation failed: %v", err)
		}
		return true
	})
}

// register registers and unfences broker id on whichever controller is
// active.
func (q *quorum) register(id int32, rack string) int64 {
	q.t.Helper()
	var epoch int64
	q.retry(func(c *Controller) error {
		var err error
		epoch, err = c.RegisterBroker(ctx(q.t), BrokerRegistration{BrokerID: id, ClusterID: testClusterID,
			IncarnationID: metadata.UUID{byte(id), 1}, Rack: rack,
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092 + id}}})
		return err
	})
	q.retry(func(c *Controller) error {
		res, err := c.Heartbeat(ctx(q.t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epoch, CurrentMetadataOffset: epoch})
		if err == nil && res.IsFenced {
			q.t.Fatalf("broker %d still fenced: %+v", id, res)
		}
		return err
	})
	return epoch
}

// createTopic creates a topic on whichever controller is active (a retry
// after a write that did commit finds the topic there).
func (q *quorum) createTopic(name string, partitions int32, rf int16) metadata.UUID {
	q.t.Helper()
	var id metadata.UUID
	q.retry(func(c *Controller) error {
		res, err := c.CreateTopics(ctx(q.t), []CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: rf}}, false)
		if err != nil {
			return err
		}
		if errors.Is(res[0].Err, kerr.TopicAlreadyExists) {
			id = c.Image().TopicByName(name).ID
			return nil
		}
		if res[0].Err != nil {
			q.t.Fatalf("create %s: %v", name, res[0].Err)
		}
		id = res[0].TopicID
		return nil
	})
	return id
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// register registers broker id (with rack) and heartbeats it unfenced,
// returning its epoch.
func register(t testing.TB, c *Controller, id int32, rack string) int64 {
	t.Helper()
	epoch, err := c.RegisterBroker(ctx(t), BrokerRegistration{BrokerID: id, ClusterID: testClusterID,
		IncarnationID: metadata.UUID{byte(id), 1}, Rack: rack,
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092 + id}}})
	if err != nil {
		t.Fatalf("register broker %d: %v", id, err)
	}
	res, err := c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: epoch, CurrentMetadataOffset: epoch})
	if err != nil || res.IsFenced || !res.IsCaughtUp {
		t.Fatalf("heartbeat broker %d: %+v %v", id, res, err)
	}
	return epoch
}

func createTopic(t testing.TB, c *Controller, name string, partitions int32, rf int16) metadata.UUID {
	t.Helper()
	res, err := c.CreateTopics(ctx(t), []CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: rf}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create %s: %v %v", name, err, res)
	}
	return res[0].TopicID
}

func wantCode(t testing.TB, what string, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %s", what, err, want.Message)
	}
}

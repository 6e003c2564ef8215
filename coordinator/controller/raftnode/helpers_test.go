package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

// listSM is a state machine that keeps the applied entries in order.
type listSM struct {
	mu       sync.Mutex
	items    []string
	restores []uint64 // the index of each snapshot restored
	leader   int32
	term     uint64
}

func (s *listSM) Apply(index, term uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	s.mu.Lock()
	s.items = append(s.items, string(data))
	s.mu.Unlock()
}

func (s *listSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []byte(strings.Join(s.items, "\n")), nil
}

func (s *listSM) Restore(index, term uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = nil
	if len(data) > 0 {
		s.items = strings.Split(string(data), "\n")
	}
	s.restores = append(s.restores, index)
	return nil
}

func (s *listSM) LeaderChanged(leader int32, term uint64) {
	s.mu.Lock()
	s.leader, s.term = leader, term
	s.mu.Unlock()
}

func (s *listSM) restored() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.restores)
}

func (s *listSM) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

// testCluster is n voters on loopback, each with its own directory.
type testCluster struct {
	t      *testing.T
	voters map[int32]string
	dirs   map[int32]string
	nodes  map[int32]*Node
	sms    map[int32]*listSM
	tune   func(*Config)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTestCluster(t *testing.T, n int, tune func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, voters: map[int32]string{}, dirs: map[int32]string{}, nodes: map[int32]*Node{},
		sms: map[int32]*listSM{}, tune: tune}
	lns := map[int32]net.Listener{}
	for i := int32(1); i <= int32(n); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.voters[i] = ln.Addr().String()
		c.dirs[i] = filepath.Join(t.TempDir(), "__cluster_metadata")
	}
	for id, ln := range lns {
		c.start(id, ln)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.Close()
		}
	})
	return c
}

// start starts voter id on ln, or on a new listener on its address when ln is nil.
func (c *testCluster) start(id int32, ln net.Listener) {
	c.t.Helper()
	if ln == nil {
		ln = c.listen(c.voters[id])
	}
	c.startNode(id, ln, false)
}

// listen listens on addr, waiting up to 10 s for a port a stopped node held to be free again.
func (c *testCluster) listen(addr string) net.Listener {
	c.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		ln, err = net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return ln
}

// startNode starts node id, a voter or a learner, on ln with its directory and a new state machine.
func (c *testCluster) startNode(id int32, ln net.Listener, learner bool) {
	c.t.Helper()
	sm := &listSM{leader: -1}
	cfg := Config{NodeID: id, Voters: c.voters, Learner: learner, Dir: c.dirs[id], Listener: ln, StateMachine: sm,
		TickInterval: 20 * time.Millisecond, ElectionTicks: 10, Logger: quiet}
	if c.tune != nil {
		c.tune(&cfg)
	}
	nd, err := Start(cfg)
	if err != nil {
		c.t.Fatalf("start node %d (learner %v): %v", id, learner, err)
	}
	c.nodes[id], c.sms[id] = nd, sm
}

func (c *testCluster) stop(id int32) {
	c.nodes[id].Close()
	delete(c.nodes, id)
}

// leader waits for a leader that every running node agrees on.
func (c *testCluster) leader() int32 {
	c.t.Helper()
	var lead int32 = -1
	waitFor(c.t, "a leader all running nodes agree on", func() bool {
		lead = -1
		for _, nd := range c.nodes {
			l := nd.Status().Leader
			if l < 0 || (lead >= 0 && l != lead) {
				return false
			}
			lead = l
		}
		return lead >= 0 && c.nodes[lead] != nil
	})
	return lead
}

// propose proposes on the leader until it is applied on the leader.
func (c *testCluster) propose(data string) {
	c.t.Helper()
	waitFor(c.t, "proposal "+data+" applied", func() bool {
		lead := c.leader()
		sm := c.sms[lead]
		if slices.Contains(sm.list(), data) {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.nodes[lead].Propose(ctx, []byte(data)); err != nil && !errors.Is(err, raft.ErrProposalDropped) {
			c.t.Logf("propose: %v", err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if slices.Contains(sm.list(), data) {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func items(prefix string, n int) []string {
	var v []string
	for i := range n {
		v = append(v, fmt.Sprintf("%s%d", prefix, i))
	}
	return v
}

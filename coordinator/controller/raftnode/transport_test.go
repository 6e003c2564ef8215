package raftnode

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestTransportClosesConnectionsThatBreakTheRules: a connection without a
// hello, a hello of an unknown version or of another cluster, a frame over
// the size limit, a message for another node and a message from a stranger
// each close the connection, and the quorum goes on committing.
func TestTransportClosesConnectionsThatBreakTheRules(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.MaxFrameBytes = 1 << 16; cfg.ClusterID = "ours" })
	c.propose("before")
	target := c.nodes[1].Addr().String()
	stranger, other := uint64(99), uint64(3)
	to := raftID(1)
	forOther, _ := appendFrame(nil, &pb.Message{Type: pb.MsgHeartbeat.Enum(), To: &other, From: &to})
	fromStranger, _ := appendFrame(nil, &pb.Message{Type: pb.MsgHeartbeat.Enum(), To: &to, From: &stranger})
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	hi := appendHello(nil, raftID(2), "ours")
	v3 := appendHello(nil, raftID(2), "ours")
	v3[4+len(helloMagic)] = 3
	for name, frame := range map[string][]byte{
		"oversized":         append(hi, huge...),
		"for another node":  append(hi, forOther...),
		"from a stranger":   append(hi, fromStranger...),
		"no hello":          forOther,
		"unknown version":   v3,
		"another cluster":   appendHello(nil, raftID(2), "theirs"),
		"oversized hello":   binary.BigEndian.AppendUint32(nil, 1<<20),
		"another cluster's": append(appendHello(nil, raftID(2), "theirs"), forOther...),
	} {
		conn, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: connection not closed by the node: %v", name, err)
		}
		conn.Close()
	}
	c.propose("after")
	c.sameOnAll([]string{"before", "after"})
	if n := c.nodes[1].tr.foreign.Load(); n != 2 {
		t.Errorf("%d connections refused as another cluster's, want 2", n)
	}
}

// TestQuorumRefusesANodeOfAnotherCluster: two quorums, A and B; B's node 3
// restarts (its log B's) misconfigured with A's nodes 1 and 2 as its
// peers. A refuses its connections, keeps its leader and term and commits;
// B goes on without it. A node that does not know its cluster id yet is
// let in, and once told its id it reconnects saying it.
func TestQuorumRefusesANodeOfAnotherCluster(t *testing.T) {
	a := newTestCluster(t, 3, func(cfg *Config) { cfg.ClusterID = "cluster-a" })
	b := newTestCluster(t, 3, func(cfg *Config) { cfg.ClusterID = "cluster-b" })
	a.propose("a1")
	b.propose("b1")
	b.sameOnAll([]string{"b1"})
	lead := a.leader()
	term := a.nodes[lead].Status().Term

	b.stop(3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stray, err := Start(Config{NodeID: 3, Voters: map[int32]string{1: a.voters[1], 2: a.voters[2], 3: ln.Addr().String()},
		Dir: b.dirs[3], Listener: ln, StateMachine: &listSM{leader: -1}, ClusterID: "cluster-b",
		TickInterval: 20 * time.Millisecond, ElectionTicks: 10, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	refused := func() int64 { return a.nodes[1].tr.foreign.Load() + a.nodes[2].tr.foreign.Load() }
	waitFor(t, "the stray node's connections refused", func() bool { return refused() >= 4 })
	a.propose("a2")
	a.sameOnAll([]string{"a1", "a2"})
	b.propose("b2")
	b.sameOnAll([]string{"b1", "b2"})
	for id, nd := range a.nodes {
		if st := nd.Status(); st.Leader != lead || st.Term != term {
			t.Errorf("A's node %d: leader %d term %d, want leader %d term %d as before the stray node", id, st.Leader, st.Term, lead, term)
		}
		if id == 3 && nd.tr.foreign.Load() != 0 {
			t.Errorf("A's node 3 refused a connection; nothing of B dials it")
		}
	}
	if st := stray.Status(); st.Leader != -1 {
		t.Errorf("the stray node follows leader %d", st.Leader)
	}

	// A new node, not yet told the id, joins; told it, it goes on.
	c := newTestCluster(t, 3, func(cfg *Config) {
		if cfg.NodeID != 3 {
			cfg.ClusterID = "cluster-c"
		}
	})
	c.propose("c1")
	c.sameOnAll([]string{"c1"})
	c.nodes[3].SetClusterID("cluster-c")
	c.propose("c2")
	c.sameOnAll([]string{"c1", "c2"})
	for id, nd := range c.nodes {
		if n := nd.tr.foreign.Load(); n != 0 {
			t.Errorf("C's node %d refused %d connections of its own cluster", id, n)
		}
	}
}

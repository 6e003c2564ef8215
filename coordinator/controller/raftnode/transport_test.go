package raftnode

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestTransportClosesConnectionsThatBreakTheRules: a frame over the size
// limit, a message for another node and a message from a stranger each
// close the connection, and the quorum goes on committing.
func TestTransportClosesConnectionsThatBreakTheRules(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.MaxFrameBytes = 1 << 16 })
	c.propose("before")
	target := c.nodes[1].Addr().String()
	stranger, other := uint64(99), uint64(3)
	to := raftID(1)
	forOther, _ := appendFrame(nil, &pb.Message{Type: pb.MsgHeartbeat.Enum(), To: &other, From: &to})
	fromStranger, _ := appendFrame(nil, &pb.Message{Type: pb.MsgHeartbeat.Enum(), To: &to, From: &stranger})
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	for name, frame := range map[string][]byte{"oversized": huge, "for another node": forOther, "from a stranger": fromStranger} {
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
}

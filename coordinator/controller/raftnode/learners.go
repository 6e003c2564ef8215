package raftnode

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Learners are the quorum's non-voting members, Kafka's observers: nodes
// with process.roles=broker that replicate and apply the metadata log but
// never vote and never lead (etcd raft's learners).
//
// The leader adds one with a ConfChangeAddLearnerNode whose context is the
// learner's raft address, so every member that applies the conf change
// learns where to send (the leader replicates to it; a follower that is
// elected later must too). Since raft's ConfState keeps ids and no
// addresses, a snapshot's data carries the learners' addresses ahead of
// the state machine's bytes (encodeSnapshotData), so a member restored
// from a snapshot, or a learner that receives one, knows them as well; a
// conf change after the snapshot is applied again from the WAL on restart.

// Membership is the quorum's configuration as this node has applied it.
type Membership struct {
	Voters   []int32          // by id
	Learners map[int32]string // learner id -> raft address
}

// IsLearner reports whether id is a learner of m.
func (m Membership) IsLearner(id int32) bool {
	_, ok := m.Learners[id]
	return ok
}

// Membership returns the configuration this node has applied.
func (n *Node) Membership() Membership {
	m := n.members.Load()
	return Membership{Voters: slices.Clone(m.Voters), Learners: maps.Clone(m.Learners)}
}

// publishMembership publishes the applied conf state and the learners'
// addresses. It runs on the Ready goroutine (and in Start).
func (n *Node) publishMembership() {
	m := &Membership{Learners: map[int32]string{}}
	for _, id := range n.confState.GetVoters() {
		m.Voters = append(m.Voters, nodeID(id))
	}
	slices.Sort(m.Voters)
	for _, id := range n.confState.GetLearners() {
		m.Learners[nodeID(id)] = n.learnerAddrs[id]
	}
	n.members.Store(m)
}

// applyConfChange applies a committed conf change to raft and to the
// transport's peers: a learner added (with its address as the context)
// becomes a peer, a removed node stops being one. Static voters keep their
// configured addresses. It reports whether a learner was added.
func (n *Node) applyConfChange(cc pb.ConfChangeI) (learnerAdded bool) {
	n.confState = n.raft.ApplyConfChange(cc)
	for _, ch := range cc.AsV2().GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeType_ConfChangeAddLearnerNode:
			addr := string(cc.AsV2().GetContext())
			if _, static := n.cfg.Voters[nodeID(id)]; static || addr == "" {
				continue
			}
			n.learnerAddrs[id] = addr
			learnerAdded = true
			if id != raftID(n.cfg.NodeID) {
				n.tr.setPeer(id, addr)
			}
		case pb.ConfChangeType_ConfChangeRemoveNode:
			delete(n.learnerAddrs, id)
			if _, static := n.cfg.Voters[nodeID(id)]; !static && id != raftID(n.cfg.NodeID) {
				n.tr.removePeer(id)
			}
		}
	}
	// Addresses of ids no longer learners are forgotten.
	for id := range n.learnerAddrs {
		if !slices.Contains(n.confState.GetLearners(), id) {
			delete(n.learnerAddrs, id)
		}
	}
	n.publishMembership()
	return learnerAdded
}

// restoreLearners takes the learners' addresses from a restored snapshot
// and makes the transport's peers match. Ready goroutine (and Start).
func (n *Node) restoreLearners(addrs map[uint64]string) {
	for id := range n.learnerAddrs {
		if _, ok := addrs[id]; !ok && id != raftID(n.cfg.NodeID) {
			n.tr.removePeer(id)
		}
	}
	n.learnerAddrs = map[uint64]string{}
	for id, addr := range addrs {
		if !slices.Contains(n.confState.GetLearners(), id) {
			continue
		}
		n.learnerAddrs[id] = addr
		if id != raftID(n.cfg.NodeID) {
			n.tr.setPeer(id, addr)
		}
	}
	n.publishMembership()
}

// AddLearner adds node id as a learner whose raft transport listens on
// addr, or records its new address when it is a learner already. It
// returns once this node has applied the change. Only the leader can
// propose it (raft.ErrProposalDropped elsewhere); a voter id is refused.
// etcd raft takes one conf change at a time and turns one proposed while
// another is pending into an empty entry, so the proposal is repeated
// until it is applied or ctx ends.
func (n *Node) AddLearner(ctx context.Context, id int32, addr string) error {
	if id < 0 {
		return fmt.Errorf("raftnode: learner id %d is negative", id)
	}
	if _, ok := n.cfg.Voters[id]; ok {
		return fmt.Errorf("raftnode: node %d is a voter and cannot become a learner", id)
	}
	if addr == "" {
		return fmt.Errorf("raftnode: learner %d has no raft address", id)
	}
	done := func() bool { a, ok := n.members.Load().Learners[id]; return ok && a == addr }
	cc := &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeAddLearnerNode.Enum(), NodeId: ptr(raftID(id)), Context: []byte(addr)}
	return n.confChange(ctx, cc, done)
}

// RemoveLearner removes learner id from the quorum (a no-op when it is
// not one); voters cannot be removed. It returns once this node has
// applied the change.
func (n *Node) RemoveLearner(ctx context.Context, id int32) error {
	if _, ok := n.cfg.Voters[id]; ok {
		return fmt.Errorf("raftnode: node %d is a voter; voters are static and cannot be removed", id)
	}
	done := func() bool { return !n.members.Load().IsLearner(id) }
	cc := &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: ptr(raftID(id))}
	return n.confChange(ctx, cc, done)
}

func (n *Node) confChange(ctx context.Context, cc *pb.ConfChange, done func() bool) error {
	retry := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
	tick := time.NewTicker(n.cfg.TickInterval)
	defer tick.Stop()
	for !done() {
		select {
		case <-n.done:
			return ErrStopped
		default:
		}
		if err := n.raft.ProposeConfChange(ctx, cc); err != nil {
			return err
		}
		for deadline := time.Now().Add(retry); !done() && time.Now().Before(deadline); {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-n.done:
				return ErrStopped
			case <-tick.C:
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// msgJoin is a learner's request to be added, sent to every voter while
// it knows no leader: a raftpb.Message of type MsgUnreachable, which raft
// only uses within a node and never sends, from the learner, whose context
// is its raft address. A new learner needs it because it knows only the
// voters' raft addresses, and no leader or Kafka listener, until it is in
// the configuration. The transport hands it to joinRequested instead of
// raft.
const msgJoin = pb.MsgUnreachable

// askToJoin sends a join request to every voter. Ready goroutine.
func (n *Node) askToJoin() {
	self := raftID(n.cfg.NodeID)
	msgs := make([]*pb.Message, 0, len(n.cfg.Voters))
	for id := range n.cfg.Voters {
		msgs = append(msgs, &pb.Message{Type: msgJoin.Enum(), To: ptr(raftID(id)), From: ptr(self),
			Context: []byte(n.cfg.AdvertisedAddr)})
	}
	n.tr.send(msgs)
}

// joinRequested handles a learner's join request: the leader adds it
// (AddLearner, on a goroutine of its own, one at a time per node id);
// other members ignore it, since the learner asks every voter. A voter's
// id, or an address that is not host:port, is ignored. It runs on a
// transport read goroutine and does not block.
func (n *Node) joinRequested(from uint64, addr string) {
	id := nodeID(from)
	if _, voter := n.cfg.Voters[id]; voter || from == 0 || n.leader.Load() != n.cfg.NodeID {
		return
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
		return
	}
	if n.members.Load().Learners[id] == addr {
		return
	}
	if _, busy := n.joining.LoadOrStore(id, true); busy {
		return
	}
	go func() {
		defer n.joining.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Duration(n.cfg.ElectionTicks)*n.cfg.TickInterval)
		defer cancel()
		if err := n.AddLearner(ctx, id, addr); err != nil {
			n.log.Debug("adding a learner that asked to join failed", "learner", id, "err", err)
			return
		}
		n.log.Info("learner joined the quorum", "learner", id, "raft_addr", addr)
	}()
}

// maxLearners bounds the learners a snapshot's data may list.
const maxLearners = 1 << 16

// encodeSnapshotData is a snapshot's data: the learners' addresses, then
// the state machine's bytes.
//
//	+--------------+----------------------------------------+----------------+
//	| count uint32 | count x (raft id uint64, len uint16,   | state machine  |
//	| big endian   |          address bytes), by id         | bytes          |
//	+--------------+----------------------------------------+----------------+
func encodeSnapshotData(learners map[uint64]string, sm []byte) []byte {
	ids := slices.Sorted(maps.Keys(learners))
	b := binary.BigEndian.AppendUint32(nil, uint32(len(ids)))
	for _, id := range ids {
		addr := learners[id]
		if len(addr) > 0xffff {
			addr = addr[:0xffff]
		}
		b = binary.BigEndian.AppendUint64(b, id)
		b = binary.BigEndian.AppendUint16(b, uint16(len(addr)))
		b = append(b, addr...)
	}
	return append(b, sm...)
}

// decodeSnapshotData splits encodeSnapshotData's bytes. It never panics and
// allocates no more than the input allows; damage is ErrCorrupt.
func decodeSnapshotData(b []byte) (learners map[uint64]string, sm []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: snapshot data of %d bytes has no learner list", ErrCorrupt, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if n > maxLearners || uint64(n)*10 > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: snapshot data claims %d learners in %d bytes", ErrCorrupt, n, len(b))
	}
	learners = make(map[uint64]string, n)
	for range n {
		if len(b) < 10 {
			return nil, nil, fmt.Errorf("%w: snapshot data: learner list cut short", ErrCorrupt)
		}
		id, l := binary.BigEndian.Uint64(b), int(binary.BigEndian.Uint16(b[8:]))
		b = b[10:]
		if len(b) < l {
			return nil, nil, fmt.Errorf("%w: snapshot data: learner address cut short", ErrCorrupt)
		}
		learners[id] = string(b[:l])
		b = b[l:]
	}
	return learners, b, nil
}

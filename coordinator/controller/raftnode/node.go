package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/vfs"
)

// StateMachine is what the node replicates. Every method is called on the
// node's one Ready goroutine, never concurrently.
type StateMachine interface {
	// Apply applies the committed normal entry at index. data is empty for
	// the entry a new leader commits at the start of its term.
	Apply(index, term uint64, data []byte)
	// Snapshot returns the state as of the last Apply (or Restore).
	Snapshot() ([]byte, error)
	// Restore replaces the state with a snapshot's, taken at index.
	Restore(index, term uint64, data []byte) error
	// LeaderChanged reports the leader (-1: none known) and the term.
	LeaderChanged(leader int32, term uint64)
}

// Config configures a Node.
type Config struct {
	// NodeID is this node's Kafka node id; it must be among Voters, or,
	// for a learner, must not be.
	NodeID int32
	// Voters are the static voters by node id (ParseVoters).
	Voters map[int32]string
	// Learner starts the node as a learner (Kafka's observer, a
	// process.roles=broker node): not a voter, it asks the voters to add
	// it (a join request, learners.go) until it knows a leader, then
	// receives the log or a snapshot and applies it like a voter, but
	// never votes or campaigns. Listener is required.
	Learner bool
	// AdvertisedAddr is a learner's raft address as the voters reach it
	// (default: the Listener's address).
	AdvertisedAddr string
	// Dir holds the WAL and snapshots (e.g. <data>/__cluster_metadata).
	Dir string
	// FS is the file system; nil is the operating system's.
	FS vfs.FS
	// Listener receives raft traffic; nil listens on Voters[NodeID] (a
	// learner must give one).
	Listener net.Listener
	// TickInterval is raft's clock (default 100ms); ElectionTicks (10)
	// and HeartbeatTicks (1) count in it.
	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// SnapshotEntries: a snapshot is taken every that many applied entries
	// (default 10000). CatchUpEntries entries before a snapshot stay in the
	// log for slow followers (default 1000).
	SnapshotEntries uint64
	CatchUpEntries  uint64
	// ClusterID is the cluster id the node already knows at start, if any
	// (SetClusterID tells it one learned later); see SetClusterID.
	ClusterID string
	// MaxFrameBytes bounds a received raft frame (default 64 MiB).
	MaxFrameBytes int
	StateMachine  StateMachine
	Logger        *slog.Logger
}

// Status is a node's view of the quorum.
type Status struct {
	NodeID  int32
	Leader  int32 // -1 when no leader is known
	Term    uint64
	Applied uint64
}

// Node is one voter of the controller quorum: etcd raft's Node driven by a
// Ready loop that persists entries and the hard state (and fsyncs) before
// any message is sent, a WAL and snapshots in Config.Dir, and a TCP
// transport. Its methods are safe for concurrent use.
type Node struct {
	cfg  Config
	raft raft.Node
	ms   *raft.MemoryStorage
	wal  *wal
	tr   *transport
	log  *slog.Logger
	fs   vfs.FS

	leader  atomic.Int32
	term    atomic.Uint64
	applied atomic.Uint64

	// Owned by the Ready goroutine.
	confState    *pb.ConfState
	snapIndex    uint64
	learnerAddrs map[uint64]string // raft id -> address, of the learners of confState

	members atomic.Pointer[Membership] // the applied configuration
	joining sync.Map                   // learner ids being added after a join request

	stop     chan struct{}
	done     chan struct{}
	errMu    sync.Mutex
	err      error
	closeOne sync.Once
}

func raftID(id int32) uint64 { return uint64(id) + 1 }
func nodeID(id uint64) int32 { return int32(id - 1) }
func leaderOf(lead uint64) int32 {
	if lead == raft.None {
		return -1
	}
	return nodeID(lead)
}

// Start recovers the node's state from Config.Dir (the newest snapshot and
// the WAL after it; a torn WAL tail is cut, other damage is ErrCorrupt),
// restores the state machine, and starts raft, the transport and the Ready
// loop. A node with no state bootstraps the static voters.
func Start(cfg Config) (*Node, error) {
	_, voter := cfg.Voters[cfg.NodeID]
	switch {
	case cfg.Learner && voter:
		return nil, fmt.Errorf("raftnode: node %d is one of the voters, so it cannot start as a learner", cfg.NodeID)
	case !cfg.Learner && !voter:
		return nil, fmt.Errorf("raftnode: node %d is not among the voters", cfg.NodeID)
	case cfg.Learner && cfg.Listener == nil:
		return nil, fmt.Errorf("raftnode: learner %d has no listener", cfg.NodeID)
	case cfg.NodeID < 0:
		return nil, fmt.Errorf("raftnode: node id %d is negative", cfg.NodeID)
	}
	if cfg.StateMachine == nil {
		return nil, errors.New("raftnode: no state machine")
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OSFS{}
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 1
	}
	if cfg.SnapshotEntries == 0 {
		cfg.SnapshotEntries = 10000
	}
	if cfg.CatchUpEntries == 0 {
		cfg.CatchUpEntries = 1000
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("raft_node", cfg.NodeID), fs: cfg.FS,
		stop: make(chan struct{}), done: make(chan struct{}), learnerAddrs: map[uint64]string{}}
	n.leader.Store(-1)
	n.members.Store(&Membership{Learners: map[int32]string{}})

	if err := cfg.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftnode: create %s: %w", cfg.Dir, err)
	}
	snap, err := loadSnapshot(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, err
	}
	w, rec, err := openWAL(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, err
	}
	n.wal = w
	ms := raft.NewMemoryStorage()
	var snapIndex uint64
	if snap != nil {
		snapIndex = snap.GetMetadata().GetIndex()
	}
	if rec.snapshot != nil && rec.snapshot.GetIndex() > snapIndex {
		w.close()
		return nil, fmt.Errorf("%w: the WAL starts after snapshot %d, but the newest readable snapshot is at %d",
			ErrCorrupt, rec.snapshot.GetIndex(), snapIndex)
	}
	ents := rec.entries
	for len(ents) > 0 && ents[0].GetIndex() <= snapIndex {
		ents = ents[1:]
	}
	if len(ents) > 0 && ents[0].GetIndex() != snapIndex+1 {
		w.close()
		return nil, fmt.Errorf("%w: the WAL's entries start at %d, after snapshot %d", ErrCorrupt, ents[0].GetIndex(), snapIndex)
	}
	n.confState = &pb.ConfState{}
	var learners map[uint64]string
	if snap != nil {
		var smData []byte
		learners, smData, err = decodeSnapshotData(snap.GetData())
		if err != nil {
			w.close()
			return nil, fmt.Errorf("raftnode: snapshot %d: %w", snapIndex, err)
		}
		if err := ms.ApplySnapshot(snap); err != nil {
			w.close()
			return nil, fmt.Errorf("raftnode: load snapshot: %w", err)
		}
		if err := cfg.StateMachine.Restore(snapIndex, snap.GetMetadata().GetTerm(), smData); err != nil {
			w.close()
			return nil, fmt.Errorf("raftnode: restore snapshot %d: %w", snapIndex, err)
		}
		n.confState = proto.Clone(snap.GetMetadata().GetConfState()).(*pb.ConfState)
		n.snapIndex = snapIndex
		n.applied.Store(snapIndex)
	}
	if err := ms.Append(ents); err != nil {
		w.close()
		return nil, fmt.Errorf("raftnode: load entries: %w", err)
	}
	if rec.hardState != nil {
		if err := ms.SetHardState(rec.hardState); err != nil {
			w.close()
			return nil, fmt.Errorf("raftnode: load hard state: %w", err)
		}
		n.term.Store(rec.hardState.GetTerm())
	}
	n.ms = ms

	ln := cfg.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.Voters[cfg.NodeID])
		if err != nil {
			w.close()
			return nil, fmt.Errorf("raftnode: controller listener: %w", err)
		}
	}
	rc := &raft.Config{
		ID:                        raftID(cfg.NodeID),
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   ms,
		Applied:                   snapIndex,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		Logger:                    raftLogger{n.log},
	}
	fresh := snap == nil && rec.hardState == nil && len(ents) == 0
	if fresh && !cfg.Learner {
		peers := make([]raft.Peer, 0, len(cfg.Voters))
		for id := range cfg.Voters {
			peers = append(peers, raft.Peer{ID: raftID(id)})
		}
		n.raft = raft.StartNode(rc, peers)
	} else {
		// A new learner starts with an empty log and no configuration: the
		// leader that adds it sends it the log (or a snapshot) from the
		// start, configuration included.
		n.raft = raft.RestartNode(rc)
	}
	voters := make(map[uint64]string, len(cfg.Voters))
	for id, addr := range cfg.Voters {
		voters[raftID(id)] = addr
	}
	if cfg.Learner && cfg.AdvertisedAddr == "" {
		n.cfg.AdvertisedAddr = ln.Addr().String()
	}
	n.tr = newTransport(raftID(cfg.NodeID), ln, voters, n.raft, cfg.MaxFrameBytes, n.log)
	n.tr.onJoin = n.joinRequested
	n.tr.setClusterID(cfg.ClusterID)
	n.restoreLearners(learners)
	n.tr.start()
	go n.run()
	return n, nil
}

// Addr is the address the node's transport listens on.
func (n *Node) Addr() net.Addr { return n.tr.ln.Addr() }

// SetClusterID tells the node the id of the cluster it belongs to, as its
// applied log (the ClusterRecord) or snapshot names it. From then on every
// connection it opens says the id in its hello, and a peer whose hello
// names another cluster is refused with all its messages (Kafka answers
// INCONSISTENT_CLUSTER_ID). An empty id is ignored: a cluster's id never
// goes away. Safe to call from the state machine.
func (n *Node) SetClusterID(id string) {
	if id == "" || n.tr.localClusterID() == id {
		return
	}
	n.tr.setClusterID(id)
	n.log.Info("controller quorum cluster id known", "cluster_id", id)
}

// ClusterID returns the cluster id the node knows, or "" before it is told.
func (n *Node) ClusterID() string { return n.tr.localClusterID() }

// Status returns the node's current view.
func (n *Node) Status() Status {
	return Status{NodeID: n.cfg.NodeID, Leader: n.leader.Load(), Term: n.term.Load(), Applied: n.applied.Load()}
}

// Propose proposes data as a normal entry. It returns once raft has taken
// the proposal, not when it is committed: the state machine sees the entry
// in Apply if it commits. A node that is not the leader refuses
// (raft.ErrProposalDropped); proposals are not forwarded.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	return n.raft.Propose(ctx, data)
}

// Block drops every raft message to and from the given node ids until the
// next call (Block() unblocks all): fault injection for partition tests.
func (n *Node) Block(ids ...int32) {
	r := make([]uint64, len(ids))
	for i, id := range ids {
		r[i] = raftID(id)
	}
	n.tr.block(r)
}

// Done is closed when the node has stopped, by Close or by a failure
// (Err).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is the failure that stopped the node, if any.
func (n *Node) Err() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.err
}

// Close stops the node: the Ready loop, raft, the transport, the WAL.
func (n *Node) Close() error {
	n.closeOne.Do(func() { close(n.stop) })
	<-n.done
	return nil
}

func (n *Node) fail(err error) {
	n.errMu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.errMu.Unlock()
	n.log.Error("controller quorum node stopped", "err", err)
}

// run is the Ready loop.
func (n *Node) run() {
	defer func() {
		n.raft.Stop()
		n.tr.close()
		n.wal.close()
		n.leader.Store(-1)
		n.cfg.StateMachine.LeaderChanged(-1, n.term.Load())
		close(n.done)
	}()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	var lastLead uint64 = raft.None
	ticks := 0
	for {
		select {
		case <-n.stop:
			return
		case <-ticker.C:
			n.raft.Tick()
			if ticks++; n.cfg.Learner && lastLead == raft.None && ticks%n.cfg.ElectionTicks == 1 {
				n.askToJoin()
			}
		case <-n.tr.notify:
			unreachable, snaps := n.tr.takeReports()
			for _, id := range unreachable {
				n.raft.ReportUnreachable(id)
			}
			for id, st := range snaps {
				n.raft.ReportSnapshot(id, st)
			}
		case rd := <-n.raft.Ready():
			if err := n.handleReady(rd, &lastLead); err != nil {
				n.fail(err)
				return
			}
			n.raft.Advance()
		}
	}
}

func (n *Node) handleReady(rd raft.Ready, lastLead *uint64) error {
	// 1. Persist: a received snapshot, then entries and the hard state,
	// all durable before any message leaves.
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := saveSnapshot(n.fs, n.cfg.Dir, rd.Snapshot); err != nil {
			return err
		}
		hs, _, _ := n.ms.InitialState()
		if err := n.wal.compact(rd.Snapshot.GetMetadata(), hs, nil); err != nil {
			return err
		}
	}
	if err := n.wal.save(rd.HardState, rd.Entries, rd.MustSync); err != nil {
		return err
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.ms.ApplySnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("raftnode: apply snapshot to the log: %w", err)
		}
	}
	if rd.HardState != nil {
		if err := n.ms.SetHardState(rd.HardState); err != nil {
			return fmt.Errorf("raftnode: set hard state: %w", err)
		}
	}
	if err := n.ms.Append(rd.Entries); err != nil {
		return fmt.Errorf("raftnode: append to the log: %w", err)
	}
	// 2. Send.
	n.tr.send(rd.Messages)
	// 3. Leadership.
	if rd.HardState != nil && rd.HardState.GetTerm() != n.term.Load() {
		n.term.Store(rd.HardState.GetTerm())
		if rd.SoftState == nil {
			n.cfg.StateMachine.LeaderChanged(leaderOf(*lastLead), n.term.Load())
		}
	}
	if rd.SoftState != nil && rd.SoftState.Lead != *lastLead {
		*lastLead = rd.SoftState.Lead
		n.leader.Store(leaderOf(*lastLead))
		n.cfg.StateMachine.LeaderChanged(leaderOf(*lastLead), n.term.Load())
	}
	// 4. Apply.
	if !raft.IsEmptySnap(rd.Snapshot) {
		meta := rd.Snapshot.GetMetadata()
		learners, smData, err := decodeSnapshotData(rd.Snapshot.GetData())
		if err != nil {
			return fmt.Errorf("raftnode: snapshot %d: %w", meta.GetIndex(), err)
		}
		if err := n.cfg.StateMachine.Restore(meta.GetIndex(), meta.GetTerm(), smData); err != nil {
			return fmt.Errorf("raftnode: restore snapshot %d: %w", meta.GetIndex(), err)
		}
		n.confState = proto.Clone(meta.GetConfState()).(*pb.ConfState)
		n.restoreLearners(learners)
		n.snapIndex = meta.GetIndex()
		n.applied.Store(meta.GetIndex())
	}
	learnerAdded := false
	for _, e := range rd.CommittedEntries {
		switch e.GetType() {
		case pb.EntryNormal:
			n.cfg.StateMachine.Apply(e.GetIndex(), e.GetTerm(), e.GetData())
		case pb.EntryConfChange:
			cc := &pb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("%w: conf change at %d: %v", ErrCorrupt, e.GetIndex(), err)
			}
			learnerAdded = n.applyConfChange(cc) || learnerAdded
		case pb.EntryConfChangeV2:
			cc := &pb.ConfChangeV2{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("%w: conf change at %d: %v", ErrCorrupt, e.GetIndex(), err)
			}
			learnerAdded = n.applyConfChange(cc) || learnerAdded
		}
		n.applied.Store(e.GetIndex())
	}
	// 5. Snapshot and compact. A learner is added with a snapshot at once:
	// etcd raft ignores a snapshot whose configuration does not hold the
	// receiving node, and the leader sends a new learner its newest one.
	if applied := n.applied.Load(); applied-n.snapIndex >= n.cfg.SnapshotEntries || (learnerAdded && applied > n.snapIndex) {
		return n.snapshot(applied)
	}
	return nil
}

// snapshot saves the state machine at applied, then compacts the log and
// the WAL, keeping CatchUpEntries entries before it.
func (n *Node) snapshot(applied uint64) error {
	data, err := n.cfg.StateMachine.Snapshot()
	if err != nil {
		return fmt.Errorf("raftnode: state machine snapshot: %w", err)
	}
	snap, err := n.ms.CreateSnapshot(applied, n.confState, encodeSnapshotData(n.learnerAddrs, data))
	if err != nil {
		return fmt.Errorf("raftnode: create snapshot: %w", err)
	}
	if err := saveSnapshot(n.fs, n.cfg.Dir, snap); err != nil {
		return err
	}
	n.snapIndex = applied
	compactTo := uint64(0)
	if applied > n.cfg.CatchUpEntries {
		compactTo = applied - n.cfg.CatchUpEntries
	}
	if first, _ := n.ms.FirstIndex(); compactTo >= first {
		if err := n.ms.Compact(compactTo); err != nil {
			return fmt.Errorf("raftnode: compact the log: %w", err)
		}
	}
	first, _ := n.ms.FirstIndex()
	last, _ := n.ms.LastIndex()
	var kept []*pb.Entry
	if last >= first {
		kept, err = n.ms.Entries(first, last+1, ^uint64(0))
		if err != nil {
			return fmt.Errorf("raftnode: read kept entries: %w", err)
		}
	}
	hs, _, _ := n.ms.InitialState()
	if err := n.wal.compact(snap.GetMetadata(), hs, kept); err != nil {
		return err
	}
	n.log.Debug("controller snapshot taken", "index", applied, "kept_entries", len(kept))
	return nil
}

// VoterState is a voter's replication progress as the leader sees it.
type VoterState struct {
	NodeID int32
	// LogEnd is the index up to which the voter's log is known to match the
	// leader's (raft's Match), the leader's own last index for itself.
	LogEnd uint64
	// RecentActive: the leader heard from it within an election timeout.
	RecentActive bool
}

// QuorumState is what DescribeQuorum reports: the leader, its term (the
// leader epoch), the commit index (the high watermark) and, on the leader,
// each voter's and each learner's (observer's) progress.
type QuorumState struct {
	Leader    int32
	Term      uint64
	Commit    uint64
	Voters    []VoterState // only on the leader; empty elsewhere
	Observers []VoterState // the learners, only on the leader
}

// Quorum returns the quorum's state as this node knows it.
func (n *Node) Quorum() QuorumState {
	select {
	case <-n.done:
		return QuorumState{Leader: -1, Term: n.term.Load()}
	default:
	}
	st := n.raft.Status()
	q := QuorumState{Leader: leaderOf(st.Lead), Term: st.HardState.GetTerm(), Commit: st.HardState.GetCommit()}
	for id, pr := range st.Progress {
		vs := VoterState{NodeID: nodeID(id), LogEnd: pr.Match, RecentActive: pr.RecentActive || id == st.ID}
		if pr.IsLearner {
			q.Observers = append(q.Observers, vs)
		} else {
			q.Voters = append(q.Voters, vs)
		}
	}
	slices.SortFunc(q.Voters, func(a, b VoterState) int { return int(a.NodeID) - int(b.NodeID) })
	slices.SortFunc(q.Observers, func(a, b VoterState) int { return int(a.NodeID) - int(b.NodeID) })
	return q
}

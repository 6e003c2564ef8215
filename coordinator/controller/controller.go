package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/gregor-broker/gregor/coordinator/controller/raftnode"
	"github.com/gregor-broker/gregor/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
)

// MetadataDir is the directory under the data dir that holds the quorum's
// WAL and snapshots.
const MetadataDir = "__cluster_metadata"

// Config configures a Controller.
type Config struct {
	// NodeID is this controller's node id, one of Voters (or, for an
	// observer, not).
	NodeID int32
	// Voters are the static voters (raftnode.ParseVoters parses Kafka's
	// controller.quorum.voters syntax).
	Voters map[int32]string
	// Observer runs this node as a raft learner of the quorum (a
	// process.roles=broker node): it replicates and applies the metadata
	// log and publishes images, but never votes or becomes the active
	// controller, so every operation answers NOT_CONTROLLER naming the
	// leader. The active controller adds it when its broker registers with
	// a raft address (BrokerRegistration.RaftAddr), or when the observer,
	// knowing no leader yet, asks the voters to join (raftnode's join
	// request). Listener is required.
	Observer bool
	// ObserverAddr is an observer's raft address as the voters reach it
	// (default: the Listener's address); its broker registers the same.
	ObserverAddr string
	// DataDir holds MetadataDir.
	DataDir string
	// FS is the file system; nil is the operating system's, or an
	// in-memory one when DataDir is "" (as the broker runs without a data
	// dir; nothing survives Close then).
	FS vfs.FS
	// Listener receives quorum traffic; nil listens on Voters[NodeID].
	Listener net.Listener
	// ClusterID is the cluster's id. The first leader writes it to the log
	// when the log has none; brokers registering with another are refused
	// (INCONSISTENT_CLUSTER_ID).
	ClusterID string
	// BootstrapRecords go into a new log with the cluster id, as the
	// records kafka-storage format writes into the bootstrap checkpoint
	// (--add-scram's UserScramCredentialRecords); a log that has a cluster
	// id never gets them.
	BootstrapRecords []metadata.Record
	// SessionTimeout is broker.session.timeout.ms: a broker that has not
	// heartbeated for that long is fenced (default 9s).
	SessionTimeout time.Duration
	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when CreateTopics asks for -1
	// (defaults 1 and 1).
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// UncleanLeaderElection is unclean.leader.election.enable for topics
	// without the topic config (default false).
	UncleanLeaderElection bool
	// WriteTimeout bounds a write that the caller's context does not bound
	// (default 30s); a write that does not commit in time is
	// REQUEST_TIMED_OUT.
	WriteTimeout time.Duration
	// Now is the clock for broker sessions (default time.Now).
	Now func() time.Time
	// Rand chooses topic ids and placement starts (default: random seed).
	Rand *rand.Rand
	// Raft timing and snapshots; zero values take raftnode's defaults.
	TickInterval    time.Duration
	ElectionTicks   int
	SnapshotEntries uint64
	CatchUpEntries  uint64
	Logger          *slog.Logger
}

// NotControllerError is NOT_CONTROLLER with the controller this node
// knows of (-1: none, as during an election or without a majority).
// errors.Is(err, kerr.NotController) holds.
type NotControllerError struct {
	LeaderID int32
}

func (e *NotControllerError) Error() string {
	if e.LeaderID < 0 {
		return "controller: NOT_CONTROLLER: no controller is elected (no quorum majority reachable)"
	}
	return fmt.Sprintf("controller: NOT_CONTROLLER: the active controller is node %d", e.LeaderID)
}

// Unwrap makes errors.Is(err, kerr.NotController) hold.
func (e *NotControllerError) Unwrap() error { return kerr.NotController }

// Controller is one node of the controller quorum. On the raft leader it
// is the active controller: it validates requests against the applied
// metadata image and writes records through raft; on a follower, writes
// answer NotControllerError naming the leader. Every node applies the
// committed records to its image and publishes it to subscribers. Methods
// are safe for concurrent use.
type Controller struct {
	cfg  Config
	node *raftnode.Node
	log  *slog.Logger

	// writeMu serialises the active controller's operations, so each one
	// validates against an image that holds every earlier write (it waits
	// for its own write to be applied before releasing it).
	writeMu sync.Mutex
	seq     atomic.Uint64

	mu          sync.Mutex
	image       *metadata.Image                   // live state machine; guarded by mu
	leader      int32                             // guarded by mu
	term        uint64                            // guarded by mu
	appliedTerm uint64                            // term of the last applied entry; guarded by mu
	waiters     map[uint64]chan *metadata.Image   // guarded by mu
	subs        map[chan *metadata.Image]struct{} // guarded by mu
	changed     chan struct{}                     // closed and replaced on every apply or leader change; guarded by mu

	published atomic.Pointer[metadata.Image]

	// Broker sessions, on the active controller only; guarded by writeMu.
	contact     map[int32]time.Time
	contactTerm uint64
	// metadataOffsets is each broker's CurrentMetadataOffset from its last
	// heartbeat; controlledShutdown the brokers in controlled shutdown,
	// with the offset of the write that moved their leaderships
	// (pendingShutdownOffset until it is known), as Kafka's
	// BrokerHeartbeatManager keeps them. Guarded by writeMu.
	metadataOffsets    map[int32]int64
	controlledShutdown map[int32]int64

	stop chan struct{}
	done chan struct{}
}

// Start starts a controller: it recovers the quorum's state from
// <DataDir>/__cluster_metadata and joins the quorum.
func Start(cfg Config) (*Controller, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClusterID == "" {
		return nil, errors.New("controller: no cluster id")
	}
	if cfg.FS == nil && cfg.DataDir == "" {
		cfg.FS = vfs.NewMemFS()
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("controller", cfg.NodeID), image: metadata.NewImage(), leader: -1,
		waiters: map[uint64]chan *metadata.Image{}, subs: map[chan *metadata.Image]struct{}{},
		changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	// Sequence numbers start at a random point, so an entry this node
	// proposed in an earlier run can never be taken for a new write's.
	c.seq.Store(rand.Uint64() >> 1)
	c.published.Store(c.image.Clone())
	node, err := raftnode.Start(raftnode.Config{
		NodeID: cfg.NodeID, Voters: cfg.Voters, Learner: cfg.Observer, AdvertisedAddr: cfg.ObserverAddr, Dir: filepath.Join(cfg.DataDir, MetadataDir), FS: cfg.FS,
		Listener: cfg.Listener, TickInterval: cfg.TickInterval, ElectionTicks: cfg.ElectionTicks,
		SnapshotEntries: cfg.SnapshotEntries, CatchUpEntries: cfg.CatchUpEntries,
		StateMachine: (*stateMachine)(c), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	// Apply and Restore read c.node under c.mu: from here on they tell the
	// node the cluster id the image names (SetClusterID).
	c.mu.Lock()
	c.node = node
	node.SetClusterID(c.image.ClusterID)
	c.mu.Unlock()
	go c.sessions()
	return c, nil
}

// Close leaves the quorum and stops the controller.
func (c *Controller) Close() error {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
	return c.node.Close()
}

// Addr is the address of the quorum listener.
func (c *Controller) Addr() net.Addr { return c.node.Addr() }

// Node is the raft node under the controller (its status, and Block for
// fault-injection tests).
func (c *Controller) Node() *raftnode.Node { return c.node }

// Leader returns the active controller's node id, or -1 when none is known.
func (c *Controller) Leader() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Image returns the latest applied metadata image. It is shared: callers
// must not change it.
func (c *Controller) Image() *metadata.Image { return c.published.Load() }

// Subscribe returns a channel that receives the latest image after every
// applied entry (an unread image is replaced by a newer one, so a slow
// reader skips to the newest) and a function that ends the subscription.
// The current image is sent at once.
func (c *Controller) Subscribe() (<-chan *metadata.Image, func()) {
	ch := make(chan *metadata.Image, 1)
	ch <- c.published.Load()
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

// stateMachine is the Controller as raft's state machine; its methods run
// on the raft node's Ready goroutine.
type stateMachine Controller

func (s *stateMachine) Apply(index, term uint64, data []byte) {
	c := (*Controller)(s)
	var batch metadata.Batch
	if len(data) > 0 {
		var err error
		batch, err = metadata.DecodeBatch(data)
		if err != nil {
			// Every replica refuses the same entry; it changes nothing.
			c.log.Error("metadata entry does not decode; skipped", "index", index, "err", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range batch.Records {
		if err := c.image.Apply(index, r); err != nil {
			c.log.Error("metadata record does not fit the image; skipped", "index", index, "err", err)
		}
	}
	c.image.Offset = index
	c.appliedTerm = term
	c.tellClusterIDLocked()
	im := c.publishLocked()
	if batch.Proposer == uint64(c.cfg.NodeID)+1 {
		if w := c.waiters[batch.Seq]; w != nil {
			w <- im
			delete(c.waiters, batch.Seq)
		}
	}
}

// tellClusterIDLocked tells the raft node the cluster id of the applied
// image, so its transport refuses nodes of another cluster. Until New has
// the node (a snapshot restored while it starts) New tells it. c.mu is held.
func (c *Controller) tellClusterIDLocked() {
	if c.node != nil {
		c.node.SetClusterID(c.image.ClusterID)
	}
}

// publishLocked publishes a clone of the live image. c.mu is held.
func (c *Controller) publishLocked() *metadata.Image {
	im := c.image.Clone()
	c.published.Store(im)
	for ch := range c.subs {
		select {
		case <-ch:
		default:
		}
		ch <- im
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return im
}

func (s *stateMachine) Snapshot() ([]byte, error) {
	c := (*Controller)(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	return metadata.EncodeSnapshot(c.image), nil
}

func (s *stateMachine) Restore(index, term uint64, data []byte) error {
	c := (*Controller)(s)
	im, err := metadata.DecodeSnapshot(data)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.image = im
	c.image.Offset = index
	c.appliedTerm = term
	c.tellClusterIDLocked()
	c.publishLocked()
	return nil
}

func (s *stateMachine) LeaderChanged(leader int32, term uint64) {
	c := (*Controller)(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if leader != c.leader {
		c.log.Info("controller quorum leader changed", "leader", leader, "term", term)
	}
	c.leader, c.term = leader, term
	if leader != c.cfg.NodeID {
		// A write in flight may or may not commit under the new leader; its
		// caller is told NOT_CONTROLLER, as Kafka's controller does when it
		// resigns.
		for seq, w := range c.waiters {
			close(w)
			delete(c.waiters, seq)
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// active returns the image to validate a write against when this node is
// the active controller: the raft leader that has applied an entry of its
// own term (so every entry committed before its term is applied). It waits
// for that while this node leads and ctx allows. c.writeMu is held.
func (c *Controller) active(ctx context.Context) (*metadata.Image, error) {
	for {
		c.mu.Lock()
		leader, term, applied, changed := c.leader, c.term, c.appliedTerm, c.changed
		c.mu.Unlock()
		if leader != c.cfg.NodeID {
			return nil, &NotControllerError{LeaderID: leader}
		}
		if applied == term {
			im := c.published.Load()
			if c.contactTerm != term {
				// A new active controller gives every broker a full session
				// from now, as Kafka's BrokerHeartbeatManager starts afresh.
				c.contact = map[int32]time.Time{}
				c.metadataOffsets = map[int32]int64{}
				c.controlledShutdown = map[int32]int64{}
				now := c.cfg.Now()
				for id := range im.Brokers {
					c.contact[id] = now
				}
				c.contactTerm = term
			}
			return im, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, kerr.RequestTimedOut
		}
	}
}

// propose writes recs as one entry and waits until it is applied here,
// returning the image just after it. c.writeMu is held.
func (c *Controller) propose(ctx context.Context, recs []metadata.Record) (*metadata.Image, error) {
	seq := c.seq.Add(1)
	data := metadata.EncodeBatch(metadata.Batch{Proposer: uint64(c.cfg.NodeID) + 1, Seq: seq, Records: recs})
	w := make(chan *metadata.Image, 1)
	c.mu.Lock()
	c.waiters[seq] = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiters, seq)
		c.mu.Unlock()
	}()
	if err := c.node.Propose(ctx, data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) || errors.Is(err, raftnode.ErrStopped) {
			return nil, &NotControllerError{LeaderID: c.Leader()}
		}
		if ctx.Err() != nil {
			return nil, kerr.RequestTimedOut
		}
		return nil, err
	}
	select {
	case im, ok := <-w:
		if !ok {
			return nil, &NotControllerError{LeaderID: c.Leader()}
		}
		return im, nil
	case <-ctx.Done():
		c.log.Warn("metadata write not committed in time: no majority of the controller quorum acknowledged it",
			"records", len(recs))
		return nil, kerr.RequestTimedOut
	}
}

// write runs one controller operation: under writeMu, build computes the
// records from the current image; they are written and applied. It returns
// the image after the write (the current one when build wrote nothing).
func (c *Controller) write(ctx context.Context, build func(im *metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.WriteTimeout)
		defer cancel()
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	im, err := c.active(ctx)
	if err != nil {
		return nil, err
	}
	if boot := bootstrapRecords(im, c.cfg.ClusterID, c.cfg.BootstrapRecords); len(boot) > 0 {
		if im, err = c.propose(ctx, boot); err != nil {
			return nil, err
		}
	}
	recs, err := build(im)
	if err != nil || len(recs) == 0 {
		return im, err
	}
	return c.propose(ctx, recs)
}

// bootstrapRecords are what a log needs before any operation: the
// cluster id (ClusterRecord) and the finalized feature levels, as Kafka's
// bootstrap metadata. A new log gets both in one entry; a log written
// before Gregor had feature levels (no metadata.version) gets them when a
// controller of this release is first active. The sessions loop writes
// through write on every tick, so that happens right after activation.
func bootstrapRecords(im *metadata.Image, clusterID string, more []metadata.Record) []metadata.Record {
	var recs []metadata.Record
	if im.ClusterID == "" {
		recs = append(recs, &metadata.ClusterRecord{ClusterID: clusterID})
	}
	if _, ok := im.Features[metadata.FeatureMetadataVersion]; !ok {
		recs = append(recs, metadata.BootstrapFeatures()...)
	}
	if im.ClusterID == "" {
		recs = append(recs, more...)
	}
	return recs
}

// sessions fences brokers whose session expired, on the active controller.
func (c *Controller) sessions() {
	defer close(c.done)
	interval := c.cfg.TickInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.node.Done():
			return
		case <-t.C:
			if c.Leader() != c.cfg.NodeID {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.SessionTimeout)
			if err := c.fenceExpired(ctx); err != nil && !errors.Is(err, kerr.NotController) {
				c.log.Warn("fencing expired broker sessions failed", "err", err)
			}
			cancel()
		}
	}
}

// ParseVoters parses Kafka's controller.quorum.voters syntax
// ("1@host:port,2@host:port"); see raftnode.ParseVoters.
func ParseVoters(s string) (map[int32]string, error) { return raftnode.ParseVoters(s) }

package raftnode

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const (
	// peerQueueLen is how many messages wait for one peer; past it messages
	// are dropped and raft, told the peer is unreachable, sends again.
	peerQueueLen = 1024
	backoffMin   = 50 * time.Millisecond
	backoffMax   = time.Second
	writeTimeout = 5 * time.Second
	dialTimeout  = time.Second
)

// stepper is where the transport delivers received messages: raft.Node.
type stepper interface {
	Step(ctx context.Context, m *pb.Message) error
}

// transport carries raft messages between voters over TCP: each message is
// a frame of a 4-byte big-endian length and a marshalled raftpb.Message. One
// goroutine per peer owns the outbound connection, dialling again with
// backoff when it breaks; one goroutine per inbound connection reads frames
// and steps them into raft.
//
// What raft must be told (a peer unreachable, a snapshot sent or failed) is
// collected under mu and picked up by the Ready goroutine (takeReports)
// when notify fires, so neither side ever blocks on the other.
type transport struct {
	id       uint64
	ln       net.Listener
	raft     stepper
	onJoin   func(from uint64, addr string) // a learner's join request; must not block
	maxFrame int
	log      *slog.Logger
	// peers is replaced whole (copy on write) under mu by setPeer and
	// removePeer, so send and the read loops look peers up without a lock.
	peers atomic.Pointer[map[uint64]*peer]

	blocked atomic.Pointer[map[uint64]bool]

	// clusterID is the cluster this node belongs to, nil or empty until
	// it is known (SetClusterID); every connection's hello carries it.
	clusterID atomic.Pointer[string]
	// foreign counts connections refused because their hello names
	// another cluster (and the messages dropped with them).
	foreign atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	in          map[net.Conn]struct{}          // guarded by mu
	unreachable map[uint64]bool                // guarded by mu
	snapStatus  map[uint64]raft.SnapshotStatus // guarded by mu
	started     bool                           // guarded by mu
	notify      chan struct{}                  // cap 1: reports are waiting
	foreignSeen map[uint64]string              // peer -> the foreign cluster id already logged; guarded by mu
}

type peer struct {
	id   uint64
	addr string
	q    chan outFrame
	gone chan struct{} // closed when the peer is removed or replaced
}

// outFrame is a message marshalled on the Ready goroutine, as etcd raft
// asks (entries must not change while they are marshalled).
type outFrame struct {
	frame []byte
	snap  bool
}

func newTransport(id uint64, ln net.Listener, voters map[uint64]string, r stepper, maxFrame int, log *slog.Logger) *transport {
	ctx, cancel := context.WithCancel(context.Background())
	t := &transport{id: id, ln: ln, raft: r, maxFrame: maxFrame, log: log,
		ctx: ctx, cancel: cancel, in: map[net.Conn]struct{}{},
		unreachable: map[uint64]bool{}, snapStatus: map[uint64]raft.SnapshotStatus{}, notify: make(chan struct{}, 1),
		foreignSeen: map[uint64]string{}}
	empty := map[uint64]bool{}
	t.blocked.Store(&empty)
	peers := map[uint64]*peer{}
	t.peers.Store(&peers)
	for pid, addr := range voters {
		if pid != id {
			t.setPeer(pid, addr)
		}
	}
	return t
}

func (t *transport) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = true
	t.wg.Add(1)
	go t.acceptLoop()
	for _, p := range *t.peers.Load() {
		t.wg.Add(1)
		go t.sendLoop(p)
	}
}

// setPeer adds a peer at addr, or moves it there: a learner the quorum
// added, or one that came back on another address.
func (t *transport) setPeer(id uint64, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	if p := old[id]; p != nil && p.addr == addr {
		return
	}
	peers := make(map[uint64]*peer, len(old)+1)
	for k, v := range old {
		peers[k] = v
	}
	if p := old[id]; p != nil {
		close(p.gone)
	}
	p := &peer{id: id, addr: addr, q: make(chan outFrame, peerQueueLen), gone: make(chan struct{})}
	peers[id] = p
	t.peers.Store(&peers)
	if t.started && t.ctx.Err() == nil {
		t.wg.Add(1)
		go t.sendLoop(p)
	}
}

// removePeer stops sending to id: a learner the quorum removed.
func (t *transport) removePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	p := old[id]
	if p == nil {
		return
	}
	close(p.gone)
	peers := make(map[uint64]*peer, len(old))
	for k, v := range old {
		if k != id {
			peers[k] = v
		}
	}
	t.peers.Store(&peers)
}

// send marshals messages and queues them for their peers without
// blocking. It is called on the Ready goroutine.
func (t *transport) send(msgs []*pb.Message) {
	blocked := *t.blocked.Load()
	peers := *t.peers.Load()
	for _, m := range msgs {
		p := peers[m.GetTo()]
		if p == nil {
			continue
		}
		snap := m.GetType() == pb.MsgSnap
		if blocked[p.id] {
			t.report(p.id, snap)
			continue
		}
		frame, err := appendFrame(nil, m)
		if err != nil {
			t.log.Error("raft message not encoded", "to", p.id, "err", err)
			t.report(p.id, snap)
			continue
		}
		select {
		case p.q <- outFrame{frame: frame, snap: snap}:
		default:
			t.report(p.id, snap)
		}
	}
}

// report notes that a message to peer did not go out (and, for a
// snapshot, that its sending failed).
func (t *transport) report(peer uint64, snapFailed bool) {
	t.mu.Lock()
	t.unreachable[peer] = true
	if snapFailed {
		t.snapStatus[peer] = raft.SnapshotFailure
	}
	t.mu.Unlock()
	t.wake()
}

func (t *transport) snapshotSent(peer uint64) {
	t.mu.Lock()
	t.snapStatus[peer] = raft.SnapshotFinish
	t.mu.Unlock()
	t.wake()
}

func (t *transport) wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// takeReports returns and clears what raft must be told.
func (t *transport) takeReports() (unreachable []uint64, snaps map[uint64]raft.SnapshotStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.unreachable {
		unreachable = append(unreachable, id)
	}
	clear(t.unreachable)
	if len(t.snapStatus) > 0 {
		snaps = t.snapStatus
		t.snapStatus = map[uint64]raft.SnapshotStatus{}
	}
	return unreachable, snaps
}

func (t *transport) sendLoop(p *peer) {
	defer t.wg.Done()
	backoff := backoffMin
	for {
		d := net.Dialer{Timeout: dialTimeout}
		conn, err := d.DialContext(t.ctx, "tcp", p.addr)
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			t.drain(p)
			select {
			case <-t.ctx.Done():
				return
			case <-p.gone:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, backoffMax)
			continue
		}
		backoff = backoffMin
		id := t.localClusterID()
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := conn.Write(appendHello(nil, t.id, id)); err != nil {
			t.log.Debug("raft peer connection lost", "peer", p.id, "err", err)
		} else {
			t.writeLoop(p, conn, id)
		}
		conn.Close()
		select {
		case <-t.ctx.Done():
			return
		case <-p.gone:
			return
		default:
		}
	}
}

// drain drops every queued message for p, telling raft.
func (t *transport) drain(p *peer) {
	for {
		select {
		case f := <-p.q:
			t.report(p.id, f.snap)
		default:
			return
		}
	}
}

// writeLoop writes p's frames to conn, whose hello named cluster id, until
// a write fails or the transport closes. Once the node learns its cluster
// id the connection is given up (its next frame dropped, raft told) so the
// next one says the id in its hello.
func (t *transport) writeLoop(p *peer, conn net.Conn, id string) {
	w := bufio.NewWriterSize(conn, 64<<10)
	for {
		var f outFrame
		select {
		case <-t.ctx.Done():
			return
		case <-p.gone:
			return
		case f = <-p.q:
		}
		if t.localClusterID() != id {
			t.report(p.id, f.snap)
			return
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.Write(f.frame)
		if err == nil && (f.snap || len(p.q) == 0) {
			err = w.Flush()
		}
		if err != nil {
			t.log.Debug("raft peer connection lost", "peer", p.id, "err", err)
			t.report(p.id, f.snap)
			return
		}
		if f.snap {
			t.snapshotSent(p.id)
		}
	}
}

// appendFrame appends m's frame to b.
func appendFrame(b []byte, m *pb.Message) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b, err := proto.MarshalOptions{}.MarshalAppend(b, m)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

// errFrameTooLarge: a peer's frame claims more than the limit.
var errFrameTooLarge = errors.New("raftnode: raft frame over the size limit")

// readFrame reads one frame from r into a message. The length is checked
// against max before anything is allocated.
func readFrame(r io.Reader, max int, buf []byte) (*pb.Message, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, buf, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return nil, buf, fmt.Errorf("%w: %d > %d", errFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, buf, err
	}
	m, err := decodeMessage(buf)
	return m, buf, err
}

// decodeMessage unmarshals a frame's body. Entries and snapshot data are
// copied out of the frame buffer by proto (no aliasing), so the buffer can
// be reused.
func decodeMessage(b []byte) (*pb.Message, error) {
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("raftnode: bad raft frame: %w", err)
	}
	return m, nil
}

func (t *transport) acceptLoop() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() == nil {
				t.log.Error("controller listener failed", "err", err)
			}
			return
		}
		t.mu.Lock()
		if t.ctx.Err() != nil {
			t.mu.Unlock()
			conn.Close()
			return
		}
		t.in[conn] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.readLoop(conn)
	}
}

func (t *transport) readLoop(conn net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.in, conn)
		t.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	h, err := readHello(r)
	if err != nil {
		if t.ctx.Err() == nil {
			t.log.Error("raft connection refused: bad hello", "remote", conn.RemoteAddr(), "err", err)
		}
		return
	}
	if t.foreignCluster(h) {
		return
	}
	var buf []byte
	for {
		m, b, err := readFrame(r, t.maxFrame, buf)
		buf = b
		if err != nil {
			if t.ctx.Err() == nil && !errors.Is(err, io.EOF) {
				t.log.Debug("raft connection closed", "remote", conn.RemoteAddr(), "err", err)
			}
			return
		}
		if t.foreignCluster(h) { // this node learned its id after the hello
			return
		}
		if m.GetType() == msgJoin && m.GetTo() == t.id {
			if t.onJoin != nil {
				t.onJoin(m.GetFrom(), string(m.GetContext()))
			}
			continue
		}
		if m.GetTo() != t.id || (*t.peers.Load())[m.GetFrom()] == nil {
			t.log.Warn("raft message for another node or from a stranger dropped", "to", m.GetTo(), "from", m.GetFrom())
			return
		}
		if (*t.blocked.Load())[m.GetFrom()] {
			continue
		}
		if len(buf) > 1<<20 {
			buf = nil // do not keep a snapshot-sized buffer
		}
		if err := t.raft.Step(t.ctx, m); err != nil && t.ctx.Err() != nil {
			return
		}
	}
}

// setClusterID records the cluster id this node belongs to.
// An id over the hello's limit is cut there, as appendHello cuts it, so
// both ends compare the same bytes.
func (t *transport) setClusterID(id string) {
	if len(id) > maxClusterIDBytes {
		id = id[:maxClusterIDBytes]
	}
	t.clusterID.Store(&id)
}

func (t *transport) localClusterID() string {
	if p := t.clusterID.Load(); p != nil {
		return *p
	}
	return ""
}

// foreignCluster reports whether a connection whose hello is h belongs to
// another cluster: both this node and the sender know their cluster ids,
// and they differ (Kafka's INCONSISTENT_CLUSTER_ID). A sender that does not
// know its id yet (a new node before the first ClusterRecord) is let in.
// A refusal is counted, and logged once per peer and foreign id.
func (t *transport) foreignCluster(h hello) bool {
	local := t.localClusterID()
	if local == "" || h.clusterID == "" || h.clusterID == local {
		return false
	}
	t.foreign.Add(1)
	t.mu.Lock()
	first := t.foreignSeen[h.from] != h.clusterID
	t.foreignSeen[h.from] = h.clusterID
	t.mu.Unlock()
	if first {
		t.log.Error("raft connection from a node of another cluster refused; its messages are dropped",
			"peer", h.from, "peer_cluster_id", h.clusterID, "cluster_id", local)
	}
	return true
}

// block drops every message to and from the given peers until unblocked;
// the fault injection of partition tests.
func (t *transport) block(ids []uint64) {
	m := map[uint64]bool{}
	for _, id := range ids {
		m[id] = true
	}
	t.blocked.Store(&m)
}

func (t *transport) close() {
	t.cancel()
	t.ln.Close()
	t.mu.Lock()
	for c := range t.in {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

package broker

// Transactions between brokers, in cluster mode. A transactional id's
// coordinator is the leader of its partition of __transaction_state
// (txnCoordinatorOf). Two kinds of request cross brokers for it, each on
// connections of its own, one per peer node and one request in flight per
// node, as Kafka's inter-broker send threads do:
//
//   - a partition leader verifies a transactional produce, or a group
//     coordinator a TxnOffsetCommit, with the id's coordinator
//     (txnVerifier: AddPartitionsToTxn v5, batched per coordinator node, as
//     Kafka's AddPartitionsToTxnManager);
//   - the coordinator writes markers into partitions other brokers lead
//     (txn_marker_channel.go: WriteTxnMarkers, one request per destination
//     carrying every marker pending for it, as Kafka's
//     TransactionMarkerChannelManager).

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
)

// interBrokerRequestTimeout bounds one inter-broker request, Kafka's
// request.timeout.ms default.
const interBrokerRequestTimeout = 30 * time.Second

// peerClients holds one connection per peer node for one kind of
// inter-broker request. Safe for concurrent use.
type peerClients struct {
	clientID string
	security *peer.Security
	mu       sync.Mutex
	byNode   map[int32]*controllerRPC // guarded by mu
}

// get returns node's connection, made on first use.
func (pc *peerClients) get(node int32) *controllerRPC {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.byNode == nil {
		pc.byNode = map[int32]*controllerRPC{}
	}
	c := pc.byNode[node]
	if c == nil {
		c = newControllerRPC(pc.clientID, pc.security)
		pc.byNode[node] = c
	}
	return c
}

// close closes every connection; a request in flight fails, and any later
// one too.
func (pc *peerClients) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, c := range pc.byNode {
		c.close()
	}
}

// brokerAddr returns the Kafka listener of live broker id from the applied
// image; ok is false for an unknown or fenced broker, which is not sent
// anything (Kafka's metadata cache has no alive node for it).
func (c *cluster) brokerAddr(id int32) (addr string, ok bool) {
	im := c.currentImage()
	if im == nil {
		return "", false
	}
	br := im.Brokers[id]
	if br == nil || br.Fenced {
		return "", false
	}
	host, port, ok := brokerEndpoint(br, c.b.cfg.InterBrokerListenerName)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), true
}

// txnStatePartition returns transactional id's partition of
// __transaction_state, nil if the topic does not exist here.
func (b *Broker) txnStatePartition(id string) *partition.Partition {
	t := b.lookupTopic(txnStateTopic)
	if t == nil {
		return nil
	}
	parts := b.partitions(t)
	if len(parts) == 0 {
		return nil
	}
	return parts[group.PartitionFor(id, int32(len(parts)))]
}

// txnCoordinatorOf says where id's transaction coordinator is: this broker
// (local; always on a single node), or another node, or nowhere known
// (COORDINATOR_NOT_AVAILABLE, as Kafka's AddPartitionsToTxnManager answers
// when the partition has no live leader).
func (b *Broker) txnCoordinatorOf(id string) (local bool, node int32, code int16) {
	if !b.isCluster() {
		return true, b.cfg.NodeID, 0
	}
	p := b.txnStatePartition(id)
	if p == nil {
		return false, -1, kerr.CoordinatorNotAvailable.Code
	}
	st := p.State()
	switch {
	case st != nil && st.Local:
		return true, b.cfg.NodeID, 0
	case st == nil || st.Leader < 0: // no leader, or no role applied yet
		return false, -1, kerr.CoordinatorNotAvailable.Code
	}
	return false, st.Leader, 0
}

// txnVerifier sends the questions of this broker's partition leaders and
// group coordinator to the transaction coordinators of other nodes: one
// AddPartitionsToTxn (v4+, the batched form) per coordinator node at a
// time, carrying every transaction that waits for that node, as Kafka's
// AddPartitionsToTxnManager.
type txnVerifier struct {
	b     *Broker
	peers peerClients
	mu    sync.Mutex
	nodes map[int32]*verifierNode // guarded by mu
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
}

// verifierNode is what waits for one coordinator node.
type verifierNode struct {
	pending  []*verifyCall
	inflight bool
}

// verifyCall is one transaction's question and where its answer goes.
type verifyCall struct {
	tx   kmsg.AddPartitionsToTxnRequestTransaction
	done chan map[txn.Partition]int16 // buffered; each partition's code
}

func newTxnVerifier(b *Broker) *txnVerifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &txnVerifier{b: b, peers: peerClients{clientID: "gregor-txn-verification", security: b.interBroker}, nodes: map[int32]*verifierNode{}, ctx: ctx, stop: cancel}
}

// close fails every question in flight and waits for the senders.
func (v *txnVerifier) close() {
	v.stop()
	v.peers.close()
	v.wg.Wait()
}

// ask sends node's coordinator the question whether (verifyOnly) or that
// (add) transaction id of producer pid at epoch holds parts, and returns
// each partition's code, as the coordinator answers it and Kafka's
// AddPartitionsToTxnManager passes it on: a request that fails or times
// out is NETWORK_EXCEPTION for every partition, an error of the whole
// response (CLUSTER_AUTHORIZATION_FAILED as INVALID_TXN_STATE) too. A
// question for an id already waiting for node replaces it: the older
// epoch's caller gets INVALID_PRODUCER_EPOCH, a caller at the same epoch
// NETWORK_EXCEPTION (a client retry), as Kafka does.
func (v *txnVerifier) ask(ctx context.Context, node int32, id string, pid int64, epoch int16, parts []txn.Partition, verifyOnly bool) map[txn.Partition]int16 {
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, verifyOnly
	for _, p := range parts {
		i := len(tx.Topics) - 1
		if i < 0 || tx.Topics[i].Topic != p.Topic {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic = p.Topic
			tx.Topics = append(tx.Topics, tt)
			i++
		}
		tx.Topics[i].Partitions = append(tx.Topics[i].Partitions, p.Partition)
	}
	call := &verifyCall{tx: tx, done: make(chan map[txn.Partition]int16, 1)}

	v.mu.Lock()
	n := v.nodes[node]
	if n == nil {
		n = &verifierNode{}
		v.nodes[node] = n
	}
	for i, old := range n.pending {
		if old.tx.TransactionalID != id {
			continue
		}
		if epoch < old.tx.ProducerEpoch {
			v.mu.Unlock()
			return allCodes(parts, kerr.InvalidProducerEpoch.Code)
		}
		code := kerr.NetworkException.Code
		if old.tx.ProducerEpoch < epoch {
			code = kerr.InvalidProducerEpoch.Code
		}
		old.done <- allCodes(txnPartitionsOf(old.tx), code)
		n.pending = append(n.pending[:i], n.pending[i+1:]...)
		break
	}
	n.pending = append(n.pending, call)
	v.maybeSendLocked(node, n)
	v.mu.Unlock()

	select {
	case codes := <-call.done:
		return codes
	case <-ctx.Done():
		return allCodes(parts, kerr.NetworkException.Code)
	}
}

// maybeSendLocked starts a request to node with everything pending for
// it, unless one is in flight; its sender sends the next when it is
// answered. v.mu is held.
func (v *txnVerifier) maybeSendLocked(node int32, n *verifierNode) {
	if n.inflight || len(n.pending) == 0 {
		return
	}
	calls := n.pending
	n.pending, n.inflight = nil, true
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		v.send(node, calls)
		v.mu.Lock()
		n.inflight = false
		v.maybeSendLocked(node, n)
		v.mu.Unlock()
	}()
}

// send asks node about calls in one request and answers each.
func (v *txnVerifier) send(node int32, calls []*verifyCall) {
	fail := func(code int16) {
		for _, c := range calls {
			c.done <- allCodes(txnPartitionsOf(c.tx), code)
		}
	}
	addr, ok := v.b.cluster.brokerAddr(node)
	if !ok {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	for _, c := range calls {
		req.Transactions = append(req.Transactions, c.tx)
	}
	ctx, cancel := context.WithTimeout(v.ctx, interBrokerRequestTimeout)
	defer cancel()
	raw, err := v.peers.get(node).do(ctx, addr, req)
	if err != nil {
		v.b.log.Warn("AddPartitionsToTxn to the transaction coordinator failed", "node", node, "err", err)
		fail(kerr.NetworkException.Code)
		return
	}
	resp := raw.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		code := resp.ErrorCode
		if code == kerr.ClusterAuthorizationFailed.Code {
			code = kerr.InvalidTxnState.Code
		}
		fail(code)
		return
	}
	byID := map[string]map[txn.Partition]int16{}
	for _, rt := range resp.Transactions {
		codes := map[txn.Partition]int16{}
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				codes[txn.Partition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
		byID[rt.TransactionalID] = codes
	}
	for _, c := range calls {
		got := byID[c.tx.TransactionalID]
		out := map[txn.Partition]int16{}
		for _, p := range txnPartitionsOf(c.tx) {
			code, ok := got[p]
			if !ok {
				code = kerr.NetworkException.Code // a coordinator that left it out did not answer it
			}
			out[p] = code
		}
		c.done <- out
	}
}

// allCodes answers every partition with code.
func allCodes(parts []txn.Partition, code int16) map[txn.Partition]int16 {
	out := make(map[txn.Partition]int16, len(parts))
	for _, p := range parts {
		out[p] = code
	}
	return out
}

// txnPartitionsOf lists the partitions of one transaction of a request.
func txnPartitionsOf(tx kmsg.AddPartitionsToTxnRequestTransaction) []txn.Partition {
	var out []txn.Partition
	for _, t := range tx.Topics {
		for _, p := range t.Partitions {
			out = append(out, txn.Partition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

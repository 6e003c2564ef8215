package broker

// The transaction coordinator's part of the broker. A coordinator/runtime
// drives the coordinator/txn state machine from one goroutine: handlers
// send it events and wait for their answers; tickers feed it time (the
// retry tick, and the timers that abort timed out transactions and expire
// transactional ids). After each event it appends the
// records the coordinator produced to __transaction_state (one batch per
// partition of the topic, each flushed per the topic's flush policy), then
// answers, and only then writes the transaction markers the event asked
// for, through Broker.writeMarker, the path WriteTxnMarkers takes, into
// the partitions of this broker. When every marker of a transaction is
// written, the completion (CompleteCommit or CompleteAbort) is appended.
//
// A marker that cannot be written (a storage error) is retried every
// txnMarkerRetryInterval; the transaction stays in PrepareCommit or
// PrepareAbort meanwhile, and its producer gets CONCURRENT_TRANSACTIONS,
// as in Kafka. A partition that no longer exists needs no marker, as
// Kafka's marker channel drops the partitions of deleted topics. A marker
// refused with INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED
// (which a single coordinator never causes) is logged and counted as
// written, so that the transaction is not stuck.
//
// If an append to __transaction_state fails, the event's answer is
// NOT_COORDINATOR (COORDINATOR_NOT_AVAILABLE when the topic cannot be
// created), as Kafka's TransactionStateManager maps a failed append, and
// the coordinator is rebuilt from the log, since its in-memory transition
// did not become durable.
//
// On start, before the listener opens, __transaction_state is replayed if
// it exists; the coordinator's goroutine then writes the markers of
// transactions found in PrepareCommit or PrepareAbort before it takes any
// request (a marker written twice is harmless).
//
// In cluster mode the partitions of __transaction_state this broker leads
// are pushed into the runtime as applyRoles applies them
// (coordinatorLeadership, Kafka's onElection and onResignation). At any
// change the coordinator is rebuilt from the partitions led (as Kafka, to
// the log end), with the markers of transactions left in PrepareCommit or
// PrepareAbort sent again; those of partitions no longer led are dropped,
// their pending markers abandoned to the new coordinator. The change is
// applied before the next event or tick, so no request is served from a
// state that is not loaded; requests wait while it loads. The
// coordinator's memory holds nothing the log does not, so reloading every
// led partition loses nothing.
//
// The topic is created on first use, with transaction.state.log.num.partitions
// partitions, compacted.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/runtime"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// txnMarkerRetryInterval is how soon markers that could not be written are
// tried again.
const txnMarkerRetryInterval = 500 * time.Millisecond

// txnCoordinator is the transaction coordinator's part of the broker: a
// coordinator/runtime driving a txn.Coordinator (txnShard), the runtime's
// Env for __transaction_state (txnEnv), and the markers.
type txnCoordinator struct {
	b        *Broker
	coordCfg txn.Config
	rt       *runtime.Runtime[*txnShard, txn.Record]
	ctx      context.Context // the runtime's: ended when it stops

	// Owned by the runtime's goroutine.
	parts         []*partition.Partition // __transaction_state's, once it exists (stateParts)
	markersFailed bool
	markers       markerChannel // markers for partitions led elsewhere (cluster mode)

	// verifier asks the coordinators of other nodes (cluster mode; nil on
	// a single node). Safe for concurrent use.
	verifier *txnVerifier
	senders  sync.WaitGroup // the marker requests in flight, and their answers' forwarder
}

// newTxns makes the transaction coordinator, neither loaded nor running,
// so that the leadership the controller's first image gives is pushed into
// it (coordinatorLeadership) before startTxns loads.
func (b *Broker) newTxns() *txnCoordinator {
	tc := &txnCoordinator{
		b:       b,
		markers: newMarkerChannel(b.interBroker),
		coordCfg: txn.Config{
			MaxTimeoutMs:       b.cfg.TransactionMaxTimeoutMs,
			IDExpirationMs:     b.cfg.TransactionalIDExpirationMs,
			TransactionVersion: finalizedTransactionVersion,
		},
	}
	abortEvery := time.Duration(b.cfg.TransactionAbortTimedOutTransactionCleanupIntervalMs) * time.Millisecond
	expireEvery := time.Duration(b.cfg.TransactionRemoveExpiredTransactionCleanupIntervalMs) * time.Millisecond
	tc.rt = runtime.New(runtime.Config[*txnShard, txn.Record]{
		Name: txnStateTopic,
		New:  func() *txnShard { return &txnShard{tc: tc, c: txn.New(tc.coordCfg)} },
		Env:  txnEnv{tc},
		// The retry tick: markers that could not be written.
		TickEvery: txnMarkerRetryInterval,
		Timers: []runtime.Timer[*txnShard]{
			{Every: abortEvery, Fire: func(s *txnShard, now int64) {
				if ids := s.c.AbortTimedOut(now, tc.inputs()); len(ids) > 0 {
					b.log.Info("aborting timed out transactions", "transactional_ids", ids)
				}
			}},
			{Every: expireEvery, Fire: func(s *txnShard, now int64) {
				if ids := s.c.ExpireIDs(now, tc.inputs()); len(ids) > 0 {
					b.log.Info("expired transactional ids", "transactional_ids", ids)
				}
			}},
		},
		// The coordinator's memory holds nothing the log does not, so
		// reloading every led partition loses nothing.
		ReloadOnGain: true,
		Fail:         func(_ any, code int16) any { return code },
		ErrorCode: func(err error) int16 {
			if errors.Is(err, errTxnStateTopic) {
				return kerr.CoordinatorNotAvailable.Code
			}
			return appendErrorCode(err)
		},
		Log: b.log,
	})
	tc.ctx = tc.rt.Context()
	return tc
}

// startTxns replays __transaction_state, if it exists (on a single node
// every partition, in cluster mode those the applied image has this
// broker lead), and starts the coordinator's goroutine, which first
// writes the markers of transactions left half-completed.
func (b *Broker) startTxns() error {
	tc := b.txns
	if b.isCluster() {
		tc.verifier = newTxnVerifier(b)
	} else if t := b.lookupTopic(txnStateTopic); t != nil {
		for _, p := range b.partitions(t) {
			tc.rt.Led(p.Index(), 0)
		}
	}
	if err := tc.rt.Start(); err != nil {
		if tc.verifier != nil {
			tc.verifier.close()
		}
		return err
	}
	b.setTxnOffsetCommitVerifier(tc.verifyTxnOffsetCommit)
	tc.senders.Add(1)
	go tc.forwardMarkerAnswers()
	return nil
}

// forwardMarkerAnswers hands the answers of the marker requests to the
// coordinator's goroutine, each followed by a cycle (the completions they
// allow, the markers still to send).
func (tc *txnCoordinator) forwardMarkerAnswers() {
	defer tc.senders.Done()
	for {
		select {
		case ans := <-tc.markers.results:
			if tc.rt.Run(tc.ctx, func(s *txnShard, _ int64) { tc.markersAnswered(s.c, ans) }) != nil {
				return
			}
		case <-tc.ctx.Done():
			return
		}
	}
}

// txnShard is the runtime's State: the transaction coordinator, the
// answers its events owe, and what it loaded.
type txnShard struct {
	tc      *txnCoordinator
	c       *txn.Coordinator
	replies []runtime.Reply // 0 each, once the event's records are appended
	markers []txn.Marker    // the cycle's, written once it is answered
	scratch batch.Scratch
	records int // loaded since the last Loaded
}

// Replay feeds one batch of partition p of __transaction_state to the
// coordinator; control batches are skipped, and so are records that are
// not of Kafka's transaction log schemas (a client wrote the topic), as
// Kafka skips unknown keys.
func (s *txnShard) Replay(_ int64, p int32, one []byte) error {
	h, err := batch.ParseHeader(one)
	if err != nil {
		return err
	}
	if h.Control() {
		return nil
	}
	return batch.ForEachRecord(one, &s.scratch, func(_ *batch.Header, r *batch.Record) bool {
		var value []byte
		if r.Value != nil {
			value = append([]byte(nil), r.Value...)
		}
		if err := s.c.Load(append([]byte(nil), r.Key...), value); err != nil {
			s.tc.b.log.Warn("skipping a record of "+txnStateTopic, "partition", p, "err", err)
		} else {
			s.records++
		}
		return true
	})
}

// Loaded asks for the markers of the transactions loaded in PrepareCommit
// or PrepareAbort, sent at the next cycle. The runtime counts parts as
// loaded once Loaded returns, so in cluster mode the ids served here are
// those of parts.
func (s *txnShard) Loaded(_ int64, parts []int32) {
	in := s.tc.inputs()
	if in.Serving != nil {
		in.Serving = s.tc.servingOf(parts)
	}
	s.c.PendingMarkers(in)
	clear(s.tc.markers.abandoned)
	s.tc.b.log.Info("transaction coordinator loaded", "records", s.records, "transactional_ids", s.c.Len(), "partitions", len(parts))
	s.records = 0
}

// Tick is the retry tick: markers that could not be written are asked
// for again.
func (s *txnShard) Tick(int64) {
	if s.tc.markersFailed {
		s.tc.markersFailed = false
		s.c.PendingMarkers(s.tc.inputs())
	}
}

// Abort: the transaction coordinator parks no request.
func (s *txnShard) Abort(int16) {}

func (s *txnShard) Ready() ([]txn.Record, []runtime.Reply) {
	replies := s.replies
	s.replies = nil
	eff := s.c.Ready()
	s.markers = eff.Markers
	return eff.Records, replies
}

// Answered writes the markers the cycle's records allow, once they are
// appended and answered, and reports them written; another cycle appends
// the completions that makes.
func (s *txnShard) Answered() bool {
	markers := s.markers
	s.markers = nil
	if len(markers) == 0 {
		return false
	}
	now := nowMillis()
	for _, m := range markers {
		s.c.MarkersWritten(now, m.TransactionalID, m.ProducerID, m.ProducerEpoch, s.tc.writeMarkers(m))
	}
	return true
}

// Settled sends the markers queued for other brokers. The markers of a
// cycle whose append failed are not written.
func (s *txnShard) Settled() {
	s.markers = nil
	s.tc.sendMarkers(s.tc.ctx)
}

// Rebuilt: after a revert, the markers the load asked for are retried on
// the retry tick; after a failed reload, so are those of the state kept.
func (s *txnShard) Rebuilt(reverted, ok bool) {
	switch {
	case reverted && ok:
		s.c.Ready()
		s.tc.markersFailed = true
	case !reverted && !ok:
		s.tc.markersFailed = true
	}
}

// writeMarkers writes m's markers into the partitions this broker leads,
// queues those of partitions led elsewhere for their leaders
// (txn_marker_channel.go), and returns the partitions done with: written,
// or of a topic that is gone.
func (tc *txnCoordinator) writeMarkers(m txn.Marker) []txn.Partition {
	if tc.markers.abandoned[txnKey{m.TransactionalID, m.ProducerID, m.ProducerEpoch}] {
		return nil
	}
	km := kmsg.NewWriteTxnMarkersRequestMarker()
	km.ProducerID, km.ProducerEpoch, km.Committed = m.ProducerID, m.ProducerEpoch, m.Commit
	km.TransactionVersion = m.TransactionVersion
	km.CoordinatorEpoch = tc.coordinatorEpoch(m.TransactionalID)
	var done []txn.Partition
	for _, p := range m.Partitions {
		t := tc.b.lookupTopic(p.Topic)
		var part *partition.Partition
		if t != nil {
			part = tc.b.partition(t, p.Partition)
		}
		if part != nil && !tc.b.leadsHere(part) {
			st := part.State()
			if st == nil || st.Leader < 0 || !tc.queueRemote(m, km.CoordinatorEpoch, p, st.Leader) {
				tc.markersFailed = true // no live leader yet: routed again on the retry tick
			}
			continue
		}
		code := tc.b.writeMarker(t, p.Partition, km, tc.ctx.Done())
		switch code {
		case 0, kerr.UnknownTopicOrPartition.Code:
			done = append(done, p)
		case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
			tc.b.log.Warn("transaction marker refused; counting it as written", "transactional_id", m.TransactionalID,
				"topic", p.Topic, "partition", p.Partition, "err", kerr.ErrorForCode(code))
			done = append(done, p)
		default:
			tc.markersFailed = true
		}
	}
	return done
}

// coordinatorEpoch is the leader epoch of id's __transaction_state
// partition, which Kafka's coordinator stamps on its markers: the image's
// in cluster mode.
func (tc *txnCoordinator) coordinatorEpoch(id string) int32 {
	parts := tc.stateParts()
	if len(parts) == 0 {
		return 0
	}
	p := parts[group.PartitionFor(id, int32(len(parts)))]
	if st := p.State(); st != nil {
		return st.LeaderEpoch
	}
	return p.LeaderEpoch()
}

// stateParts returns the partitions of __transaction_state, nil while the
// topic does not exist; in cluster mode another broker may have created
// it since this one started.
func (tc *txnCoordinator) stateParts() []*partition.Partition {
	if tc.parts == nil {
		if t := tc.b.lookupTopic(txnStateTopic); t != nil {
			tc.parts = tc.b.partitions(t)
			adoptSingleNode(tc.b, tc.rt, tc.parts)
		}
	}
	return tc.parts
}

// inputs are what the coordinator's calls are given besides their
// requests (txn.Inputs): in cluster mode the ids served are owns', on a
// single node every id; producer ids come from newProducerID.
func (tc *txnCoordinator) inputs() txn.Inputs {
	in := txn.Inputs{NewProducerID: tc.newProducerID}
	if tc.b.isCluster() {
		in.Serving = tc.owns
	}
	return in
}

// newProducerID allocates a producer id for the coordinator, from the
// blocks idempotent producers take theirs from: UNKNOWN_SERVER_ERROR when
// the ids are exhausted, COORDINATOR_LOAD_IN_PROGRESS when no block can be
// reserved (the client retries).
func (tc *txnCoordinator) newProducerID() (int64, int16) {
	pid, err := tc.b.allocateProducerID()
	switch {
	case errors.Is(err, errProducerIDsExhausted):
		tc.b.log.Error("cannot allocate a producer id", "err", err)
		return -1, kerr.UnknownServerError.Code
	case err != nil:
		tc.b.log.Error("cannot reserve producer ids", "err", err)
		return -1, kerr.CoordinatorLoadInProgress.Code
	}
	return pid, 0
}

// owns says, in cluster mode and on the coordinator's goroutine, whether
// this broker serves transactional id id: as the runtime says of the id's
// partition of __transaction_state (runtime.Serving: 0 while it is led
// here and loaded, NOT_COORDINATOR when it is not led here,
// COORDINATOR_LOAD_IN_PROGRESS while it is led but not loaded), and
// NOT_COORDINATOR while the topic does not exist (FindCoordinator creates
// it).
func (tc *txnCoordinator) owns(id string) int16 {
	parts := tc.stateParts()
	if len(parts) == 0 {
		return kerr.NotCoordinator.Code
	}
	return tc.rt.Serving(group.PartitionFor(id, int32(len(parts))))
}

// servingOf is owns for the state a load is building, before the runtime
// counts its partitions as loaded: the ids of parts are served.
func (tc *txnCoordinator) servingOf(parts []int32) func(id string) int16 {
	loaded := map[int32]bool{}
	for _, p := range parts {
		loaded[p] = true
	}
	return func(id string) int16 {
		n := int32(len(tc.stateParts()))
		if n == 0 || !loaded[group.PartitionFor(id, n)] {
			return kerr.NotCoordinator.Code
		}
		return 0
	}
}

// errTxnStateTopic marks a failure to create __transaction_state.
var errTxnStateTopic = errors.New("broker: " + txnStateTopic + " cannot be created")

// createTopic creates __transaction_state as Kafka does:
// transaction.state.log.num.partitions partitions, compacted, with
// transaction.state.log.segment.bytes (100 MiB). On a single node its
// partitions, empty, are loaded as they are; in cluster mode the roles the
// controller gives them are pushed in as they are applied.
func (tc *txnCoordinator) createTopic() error {
	parts, err := tc.b.createInternalTopic(tc.b.txnStateTopicCreation())
	if err != nil {
		return err
	}
	tc.parts = parts
	adoptSingleNode(tc.b, tc.rt, parts)
	return nil
}

// txnEnv is the runtime's Env: __transaction_state.
type txnEnv struct{ tc *txnCoordinator }

// Read reads partition p of __transaction_state from its start to where
// a coordinator loads (coordinatorLoadEnd), a batch at a time.
func (e txnEnv) Read(p int32, fn func(batch []byte) error) error {
	return readCoordinatorLog(txnStateTopic, e.tc.stateParts(), p, fn)
}

// Append writes records as one v2 batch per partition and applies the
// topic's flush policy before it returns.
func (e txnEnv) Append(recs []txn.Record, stop <-chan struct{}) error {
	tc := e.tc
	if tc.stateParts() == nil {
		if err := tc.createTopic(); err != nil {
			return fmt.Errorf("%w: %v", errTxnStateTopic, err)
		}
	}
	n := int32(len(tc.parts))
	return tc.b.appendByPartition(tc.parts, len(recs),
		func(i int) int32 { return group.PartitionFor(recs[i].TransactionalID, n) },
		func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value },
		txnLogAppendTimeout, stop)
}

// call runs fn on the coordinator's goroutine, with the inputs its calls
// take (inputs), and waits until its records are appended: 0, or the error
// code a failed append is answered with.
func (tc *txnCoordinator) call(r *request, fn func(c *txn.Coordinator, now int64, in txn.Inputs)) (int16, error) {
	return tc.callCtx(r.ctx, fn)
}

// callCtx is call for a caller that is not a request of its own. Once
// the event is taken, it waits for its answer even if ctx ends.
func (tc *txnCoordinator) callCtx(ctx context.Context, fn func(c *txn.Coordinator, now int64, in txn.Inputs)) (int16, error) {
	reply, err := tc.rt.Submit(ctx, func(s *txnShard, now int64, id runtime.ID) {
		s.replies = append(s.replies, runtime.Reply{ID: id, Result: int16(0)})
		fn(s.c, now, tc.inputs())
	})
	if errors.Is(err, runtime.ErrStopped) {
		return 0, errTxnsStopped
	}
	if err != nil {
		return 0, err
	}
	select {
	case code := <-reply:
		return code.(int16), nil
	case <-tc.rt.Done():
		return 0, errTxnsStopped
	}
}

// errTxnsStopped is returned to callers once the broker closes.
var errTxnsStopped = errors.New("broker: transaction coordinator stopped")

// stop ends the goroutine; handlers still waiting get an error and close
// their connections.
func (tc *txnCoordinator) stop() {
	tc.rt.Stop()
	tc.markers.peers.close()
	tc.senders.Wait()
	if tc.verifier != nil {
		tc.verifier.close()
	}
}

// verifyTxnOffsetCommit answers the group coordinator's question about a
// TxnOffsetCommit (KIP-890), as Kafka's leader asks its transaction
// coordinator with AddPartitionsToTxn: with add false (TxnOffsetCommit
// v0-v4), whether the group's __consumer_offsets partition is in the
// ongoing transaction of tid, whose producer must be pid at epoch (verify
// only: TRANSACTION_ABORTABLE if not); with add true (v5, transactions V2),
// it adds the partition to the transaction, as AddPartitionsToTxn v5 does.
// It returns the coordinator's error, nil when all is well, and
// NETWORK_EXCEPTION when the coordinator could not be asked. startTxns
// connects it to TxnOffsetCommit (key 28, setTxnOffsetCommitVerifier).
func (tc *txnCoordinator) verifyTxnOffsetCommit(ctx context.Context, tid string, pid int64, epoch int16, groupID string, add bool) *kerr.Error {
	tp := txn.Partition{Topic: offsetsTopic, Partition: group.PartitionFor(groupID, tc.b.cfg.OffsetsTopicPartitions)}
	if local, node, code := tc.b.txnCoordinatorOf(tid); code != 0 {
		return kerr.ErrorForCode(code).(*kerr.Error)
	} else if !local {
		// Kafka's group coordinator asks through AddPartitionsToTxnManager.
		if code := tc.verifier.ask(ctx, node, tid, pid, epoch, []txn.Partition{tp}, !add)[tp]; code != 0 {
			return kerr.ErrorForCode(code).(*kerr.Error)
		}
		return nil
	}
	var code int16
	appendCode, err := tc.callCtx(ctx, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		if add {
			code = c.AddPartitions(now, tid, pid, epoch, []txn.Partition{tp}, 2, in)
			return
		}
		var parts map[txn.Partition]int16
		if code, parts = c.VerifyPartitions(tid, pid, epoch, []txn.Partition{tp}, in); code == 0 {
			code = parts[tp]
		}
	})
	switch {
	case err != nil:
		return kerr.NetworkException
	case appendCode != 0:
		code = appendCode
	}
	if code == 0 {
		return nil
	}
	return kerr.ErrorForCode(code).(*kerr.Error)
}

// txnStateTopicCreation is how __transaction_state is created.
// In cluster mode it has transaction.state.log.replication.factor replicas
// and transaction.state.log.min.isr as min.insync.replicas, as Kafka.
func (b *Broker) txnStateTopicCreation() topicCreation {
	tc := topicCreation{
		name:              txnStateTopic,
		partitions:        b.cfg.TransactionStateLogNumPartitions,
		replicationFactor: 1,
		configs:           topicconfig.Configs{"cleanup.policy": "compact", "segment.bytes": "104857600"},
	}
	if b.isCluster() {
		tc.replicationFactor = b.cfg.TransactionStateLogReplicationFactor
		tc.configs["min.insync.replicas"] = strconv.Itoa(int(b.cfg.TransactionStateLogMinISR))
	}
	return tc
}

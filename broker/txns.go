package broker

// The transaction coordinator's driver. One goroutine owns the
// coordinator/txn state machine: handlers send it events and wait for
// their answers; tickers feed it time. After each event it appends the
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
// The topic is created on first use, with transaction.state.log.num.partitions
// partitions, compacted.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// txnMarkerRetryInterval is how soon markers that could not be written are
// tried again.
const txnMarkerRetryInterval = 500 * time.Millisecond

// txnCoordinator drives a txn.Coordinator from one goroutine.
type txnCoordinator struct {
	b      *Broker
	events chan txnEvent
	cancel context.CancelFunc
	done   chan struct{}
	ctx    context.Context // the run goroutine's; set when it starts

	// Owned by the run goroutine.
	coordCfg      txn.Config
	coord         *txn.Coordinator
	parts         []*partition.Partition // __transaction_state's, once it exists (stateParts)
	loaded        map[int32]int32        // cluster mode: the partitions loaded, with their leader epochs
	markersFailed bool
	markers       markerChannel // markers for partitions led elsewhere (cluster mode)

	// verifier asks the coordinators of other nodes (cluster mode; nil on
	// a single node). Safe for concurrent use.
	verifier *txnVerifier
	senders  sync.WaitGroup // the marker requests in flight
}

// txnEvent is one step: fn runs on the coordinator, its records are
// appended, and reply (buffered) receives 0 or the error code the failed
// append is answered with.
type txnEvent struct {
	fn    func(c *txn.Coordinator, now int64)
	reply chan int16
}

// startTxns replays __transaction_state, if it exists, and starts the
// coordinator's goroutine, which first writes the markers of transactions
// left half-completed.
func (b *Broker) startTxns() error {
	tc := &txnCoordinator{
		b:       b,
		events:  make(chan txnEvent),
		done:    make(chan struct{}),
		markers: newMarkerChannel(),
		coordCfg: txn.Config{
			MaxTimeoutMs:       b.cfg.TransactionMaxTimeoutMs,
			IDExpirationMs:     b.cfg.TransactionalIDExpirationMs,
			TransactionVersion: finalizedTransactionVersion,
			NewProducerID: func() (int64, int16) {
				pid, err := b.allocateProducerID()
				switch {
				case errors.Is(err, errProducerIDsExhausted):
					b.log.Error("cannot allocate a producer id", "err", err)
					return -1, kerr.UnknownServerError.Code
				case err != nil:
					b.log.Error("cannot reserve producer ids", "err", err)
					return -1, kerr.CoordinatorLoadInProgress.Code
				}
				return pid, 0
			},
		},
	}
	if b.isCluster() {
		tc.coordCfg.Owns = tc.owns
		tc.verifier = newTxnVerifier(b)
	}
	tc.coord = txn.New(tc.coordCfg)
	if t := b.lookupTopic(txnStateTopic); t != nil {
		tc.parts = b.partitions(t)
		if err := tc.replay(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	tc.cancel = cancel
	b.txns = tc
	b.setTxnOffsetCommitVerifier(tc.verifyTxnOffsetCommit)
	go tc.run(ctx)
	return nil
}

// replay feeds every record of __transaction_state to a fresh coordinator.
func (tc *txnCoordinator) replay() error {
	coord := txn.New(tc.coordCfg)
	var scratch batch.Scratch
	loaded := 0
	led := tc.ledPartitions()
	for _, p := range tc.parts {
		if led != nil {
			if _, ok := led[p.Index()]; !ok {
				continue // another broker coordinates its ids
			}
		}
		end := coordinatorLoadEnd(p)
		for off := p.Log().StartOffset(); off < end; {
			data, err := p.Log().Read(off, 1<<20, end)
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", txnStateTopic, p.Index(), err)
			}
			if len(data) == 0 {
				break
			}
			err = batch.Split(data, func(one []byte) error {
				h, err := batch.ParseHeader(one)
				if err != nil {
					return err
				}
				off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
				if h.Control() {
					return nil
				}
				return batch.ForEachRecord(one, &scratch, func(_ *batch.Header, r *batch.Record) bool {
					var value []byte
					if r.Value != nil {
						value = append([]byte(nil), r.Value...)
					}
					if err := coord.Load(append([]byte(nil), r.Key...), value); err != nil {
						// Not a record of Kafka's transaction log schemas (a
						// client wrote the topic): skipped, as Kafka skips
						// unknown keys.
						tc.b.log.Warn("skipping a record of "+txnStateTopic, "partition", p.Index(), "err", err)
					} else {
						loaded++
					}
					return true
				})
			})
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", txnStateTopic, p.Index(), err)
			}
		}
	}
	coord.PendingMarkers()
	tc.coord = coord
	tc.loaded = led
	clear(tc.markers.abandoned)
	tc.b.log.Info("transaction coordinator loaded", "records", loaded, "transactional_ids", coord.Len(), "partitions", len(led))
	return nil
}

// ledPartitions returns, in cluster mode, the partitions of
// __transaction_state this broker leads and their leader epochs (nil on a
// single node, which serves them all).
func (tc *txnCoordinator) ledPartitions() map[int32]int32 {
	if !tc.b.isCluster() {
		return nil
	}
	return ledPartitions(tc.stateParts())
}

// syncLeadership reloads the coordinator from the log when the partitions
// of __transaction_state this broker leads, or their leader epochs, are
// not the ones it loaded (Kafka's onElection and onResignation): the
// transactions of partitions it now leads are read from their logs (as
// Kafka, to the log end), with the markers of those left in PrepareCommit
// or PrepareAbort sent again; those of partitions it no longer leads are
// dropped, their pending markers abandoned to the new coordinator. It runs
// on the coordinator's goroutine before each event and on the retry tick,
// so no request is served from a state that is not loaded; requests wait
// while it loads. The coordinator's memory holds nothing the log does not,
// so reloading every led partition loses nothing.
func (tc *txnCoordinator) syncLeadership() {
	if !tc.b.isCluster() {
		return
	}
	led := tc.ledPartitions()
	if maps.Equal(led, tc.loaded) {
		return
	}
	if err := tc.replay(); err != nil {
		tc.b.log.Error("loading "+txnStateTopic+" after a leadership change failed; retrying", "err", err)
		tc.markersFailed = true
		return
	}
	tc.flush(nil)
}

func (tc *txnCoordinator) run(ctx context.Context) {
	defer close(tc.done)
	abortEvery := time.Duration(tc.b.cfg.TransactionAbortTimedOutTransactionCleanupIntervalMs) * time.Millisecond
	expireEvery := time.Duration(tc.b.cfg.TransactionRemoveExpiredTransactionCleanupIntervalMs) * time.Millisecond
	abortTicker := time.NewTicker(abortEvery)
	defer abortTicker.Stop()
	expireTicker := time.NewTicker(expireEvery)
	defer expireTicker.Stop()
	retryTicker := time.NewTicker(txnMarkerRetryInterval)
	defer retryTicker.Stop()
	tc.ctx = ctx
	tc.flush(nil) // the markers of transactions loaded half-completed
	for {
		select {
		case ev := <-tc.events:
			tc.syncLeadership()
			ev.fn(tc.coord, nowMillis())
			tc.flush(ev.reply)
		case ans := <-tc.markers.results:
			tc.markersAnswered(ans)
			tc.flush(nil)
		case <-abortTicker.C:
			if ids := tc.coord.AbortTimedOut(nowMillis()); len(ids) > 0 {
				tc.b.log.Info("aborting timed out transactions", "transactional_ids", ids)
			}
			tc.flush(nil)
		case <-expireTicker.C:
			if ids := tc.coord.ExpireIDs(nowMillis()); len(ids) > 0 {
				tc.b.log.Info("expired transactional ids", "transactional_ids", ids)
			}
			tc.flush(nil)
		case <-retryTicker.C:
			tc.syncLeadership()
			if tc.markersFailed {
				tc.markersFailed = false
				tc.coord.PendingMarkers()
				tc.flush(nil)
			}
		case <-ctx.Done():
			return
		}
	}
}

// flush appends the coordinator's records, answers reply (if any), then
// writes the markers and appends the completions they allow, until the
// coordinator asks for nothing more.
func (tc *txnCoordinator) flush(reply chan int16) {
	defer tc.sendMarkers(tc.ctx)
	for {
		eff := tc.coord.Ready()
		if len(eff.Records) > 0 {
			if err := tc.appendRecords(eff.Records); err != nil {
				code := appendErrorCode(err)
				if errors.Is(err, errTxnStateTopic) {
					code = kerr.CoordinatorNotAvailable.Code
				}
				tc.revert(err)
				if reply != nil {
					reply <- code
				}
				return
			}
		}
		if reply != nil {
			reply <- 0
			reply = nil
		}
		if len(eff.Markers) == 0 {
			return
		}
		now := nowMillis()
		for _, m := range eff.Markers {
			tc.coord.MarkersWritten(now, m.TransactionalID, m.ProducerID, m.ProducerEpoch, tc.writeMarkers(m))
		}
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
		}
	}
	return tc.parts
}

// owns is the coordinator's txn.Config.Owns in cluster mode: this broker
// serves a transactional id while it leads the id's partition of
// __transaction_state, and answers NOT_COORDINATOR otherwise (the topic
// not existing yet included: FindCoordinator creates it).
func (tc *txnCoordinator) owns(id string) int16 {
	parts := tc.stateParts()
	if len(parts) == 0 || !tc.b.leadsHere(parts[group.PartitionFor(id, int32(len(parts)))]) {
		return kerr.NotCoordinator.Code
	}
	return 0
}

// errTxnStateTopic marks a failure to create __transaction_state.
var errTxnStateTopic = errors.New("broker: " + txnStateTopic + " cannot be created")

// revert rebuilds the coordinator from the log after a failed append, as
// its in-memory transitions are not durable. If even the replay fails, the
// old coordinator is kept and the error logged.
func (tc *txnCoordinator) revert(err error) {
	tc.b.log.Error("appending to "+txnStateTopic+" failed; reverting the transaction coordinator to the log", "err", err)
	if tc.parts == nil {
		tc.coord = txn.New(tc.coordCfg)
		return
	}
	old := tc.coord
	if rerr := tc.replay(); rerr != nil {
		tc.b.log.Error("replaying "+txnStateTopic+" after a failed append failed; keeping the unreverted state", "err", rerr)
		tc.coord = old
		return
	}
	tc.coord.Ready() // the markers PendingMarkers asked for are retried on the ticker
	tc.markersFailed = true
}

// createTopic creates __transaction_state as Kafka does:
// transaction.state.log.num.partitions partitions, compacted, with
// transaction.state.log.segment.bytes (100 MiB).
func (tc *txnCoordinator) createTopic() error {
	parts, err := tc.b.createInternalTopic(tc.b.txnStateTopicCreation())
	if err != nil {
		return err
	}
	tc.parts = parts
	return nil
}

// appendRecords writes records as one v2 batch per partition and applies
// the topic's flush policy before it returns.
func (tc *txnCoordinator) appendRecords(recs []txn.Record) error {
	if tc.stateParts() == nil {
		if err := tc.createTopic(); err != nil {
			return fmt.Errorf("%w: %v", errTxnStateTopic, err)
		}
	}
	n := int32(len(tc.parts))
	byPart := map[int32][]batch.Record{}
	var order []int32
	for _, r := range recs {
		p := group.PartitionFor(r.TransactionalID, n)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], batch.Record{OffsetDelta: int32(len(byPart[p])), Key: r.Key, Value: r.Value})
	}
	now := nowMillis()
	var errs []error
	for _, pi := range order {
		if err := tc.b.appendCoordinatorBatch(tc.parts[pi], -1, -1, byPart[pi], now, txnLogAppendTimeout, tc.ctx.Done()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// call runs fn on the coordinator's goroutine and waits until its records
// are appended: 0, or the error code a failed append is answered with.
func (tc *txnCoordinator) call(r *request, fn func(c *txn.Coordinator, now int64)) (int16, error) {
	return tc.callCtx(r.ctx, fn)
}

// callCtx is call for a caller that is not a request of its own.
func (tc *txnCoordinator) callCtx(ctx context.Context, fn func(c *txn.Coordinator, now int64)) (int16, error) {
	reply := make(chan int16, 1)
	select {
	case tc.events <- txnEvent{fn: fn, reply: reply}:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-tc.done:
		return 0, errors.New("broker: transaction coordinator stopped")
	}
	select {
	case code := <-reply:
		return code, nil
	case <-tc.done:
		return 0, errors.New("broker: transaction coordinator stopped")
	}
}

// stop ends the goroutine; handlers still waiting get an error and close
// their connections.
func (tc *txnCoordinator) stop() {
	tc.cancel()
	<-tc.done
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
	appendCode, err := tc.callCtx(ctx, func(c *txn.Coordinator, now int64) {
		if add {
			code = c.AddPartitions(now, tid, pid, epoch, []txn.Partition{tp}, 2)
			return
		}
		var parts map[txn.Partition]int16
		if code, parts = c.VerifyPartitions(tid, pid, epoch, []txn.Partition{tp}); code == 0 {
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

package broker

// The group coordinator's driver. One goroutine owns the
// coordinator/group state machine: handlers send it events through a
// channel and wait for their answer; a ticker feeds it time. After each
// event it appends the records the coordinator produced to
// __consumer_offsets, then hands out the answers, so an acknowledged offset
// commit is in the log. A JoinGroup or SyncGroup that the coordinator parks
// leaves its handler waiting on its own answer channel; the goroutine moves
// on, so a parked request holds only its own connection (whose later
// requests wait behind it, as in Kafka).
//
// On start, before the listener opens, __consumer_offsets is created if it
// is missing and replayed from its start to rebuild groups and offsets, so
// COORDINATOR_LOAD_IN_PROGRESS is never needed.
//
// Transactional offset commits (TxnOffsetCommit) are written as a
// transactional batch of the producer, which opens its transaction in the
// partition's producer state (the LSO stops there). The transaction ends
// with a marker that the goroutine itself writes (writeMarker: every
// append to __consumer_offsets is the goroutine's, as in Kafka, whose
// group coordinator writes the markers of its partitions), and once the
// marker is as durable as the flush policy asks, the coordinator commits
// or drops the producer's pending offsets of that partition. Replay does
// the same in log order: the offset commits of a transactional batch wait
// for their producer's marker, and those still waiting at the end of the
// log stay pending.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// groupTickInterval is how often the coordinator is given the time, which
// bounds how late a session or rebalance timeout fires.
const groupTickInterval = 20 * time.Millisecond

// groupCoordinator drives a group.Coordinator from one goroutine.
type groupCoordinator struct {
	b      *Broker
	events chan groupEvent
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the run goroutine.
	coordCfg group.Config
	coord    *group.Coordinator
	parts    []*partition.Partition
	loaded   map[int32]int32 // cluster mode: the partitions loaded, with their leader epochs
	stopping <-chan struct{} // closed when the coordinator stops
	nextID   group.ReplyID
	waiting  map[group.ReplyID]chan any
}

// groupEvent is one step for the coordinator. reply, if set, receives the
// answer to the request fn submits under the id it is given.
type groupEvent struct {
	fn    func(c *group.Coordinator, now int64, id group.ReplyID)
	reply chan any
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// groupElsewhere reports whether, in cluster mode, another broker
// coordinates groupID (leads its partition of __consumer_offsets): the
// membership APIs answer NOT_COORDINATOR, as Kafka's runtime does for a
// partition it does not own, so that the member looks the coordinator up
// again instead of being told its membership is unknown here.
func (b *Broker) groupElsewhere(groupID string) bool {
	return b.isCluster() && !b.cluster.coordinates(groupID)
}

// startGroups replays __consumer_offsets, if it exists, and starts the
// coordinator's goroutine. The topic itself is created on first use, when
// the coordinator first has records to write, as Kafka creates it on the
// first FindCoordinator.
func (b *Broker) startGroups() error {
	gc := &groupCoordinator{
		b:       b,
		events:  make(chan groupEvent),
		done:    make(chan struct{}),
		waiting: map[group.ReplyID]chan any{},
		coordCfg: group.Config{
			InitialRebalanceDelayMs:      *b.cfg.GroupInitialRebalanceDelayMs,
			MinSessionTimeoutMs:          b.cfg.GroupMinSessionTimeoutMs,
			MaxSessionTimeoutMs:          b.cfg.GroupMaxSessionTimeoutMs,
			MaxSize:                      b.cfg.GroupMaxSize,
			OffsetsRetentionMs:           b.cfg.OffsetsRetentionMinutes * 60 * 1000,
			NewMemberID:                  newMemberID,
			ConsumerSessionTimeoutMs:     b.cfg.GroupConsumerSessionTimeoutMs,
			ConsumerHeartbeatIntervalMs:  b.cfg.GroupConsumerHeartbeatIntervalMs,
			ConsumerMaxSize:              b.cfg.GroupConsumerMaxSize,
			ConsumerAssignors:            b.cfg.GroupConsumerAssignors,
			ConsumerAssignmentIntervalMs: *b.cfg.GroupConsumerAssignmentIntervalMs,
			ConsumerAssignorOffload:      *b.cfg.GroupConsumerAssignorOffloadEnable,
		},
	}
	gc.coord = group.New(gc.coordCfg)
	if t := b.lookupTopic(offsetsTopic); t != nil {
		gc.parts = b.partitions(t)
		if err := gc.replay(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gc.cancel, gc.stopping = cancel, ctx.Done()
	b.groups = gc
	go gc.run(ctx)
	return nil
}

// newMemberID is Kafka's member id: the client id, a dash and a random UUID.
func newMemberID(clientID string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return clientID + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// replay feeds every record of __consumer_offsets to the coordinator.
func (gc *groupCoordinator) replay() error { return gc.replayPartitions(nil) }

// replayPartitions feeds the records of the partitions of
// __consumer_offsets this broker leads (all of them on a single node) to
// the coordinator; with only set, just those among them, into the
// coordinator as it is (their groups are not in it: a group lives in one
// partition).
func (gc *groupCoordinator) replayPartitions(only map[int32]bool) error {
	now := nowMillis()
	var scratch batch.Scratch
	loaded := 0
	var led map[int32]int32
	if gc.b.isCluster() {
		led = ledPartitions(gc.parts)
	}
	for _, p := range gc.parts {
		if led != nil {
			if _, ok := led[p.Index()]; !ok {
				continue // another broker coordinates its groups
			}
		}
		if only != nil && !only[p.Index()] {
			continue
		}
		end := coordinatorLoadEnd(p)
		for off := p.Log().StartOffset(); off < end; {
			data, err := p.Log().Read(off, 1<<20, end)
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", offsetsTopic, p.Index(), err)
			}
			if len(data) == 0 {
				break
			}
			err = batch.Split(data, func(one []byte) error {
				if h, err := batch.ParseHeader(one); err == nil && h.Control() {
					// A transaction marker: it ends its producer's
					// transactional offset commits in this partition.
					off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
					m, ok, err := batch.ParseEndTxnMarker(one, &scratch)
					if err != nil {
						return fmt.Errorf("the control batch at offset %d: %w", h.BaseOffset, err)
					}
					if ok {
						gc.coord.CompleteTransaction(now, h.ProducerID, p.Index(), int32(len(gc.parts)), m.Commit)
					}
					return nil
				}
				var loadErr error
				if err := batch.ForEachRecord(one, &scratch, func(h *batch.Header, r *batch.Record) bool {
					off = h.BaseOffset + int64(r.OffsetDelta) + 1
					var value []byte
					if r.Value != nil {
						value = append([]byte(nil), r.Value...)
					}
					key := append([]byte(nil), r.Key...)
					var err error
					if h.Transactional() && h.ProducerID >= 0 {
						err = gc.coord.LoadTransactional(now, h.ProducerID, key, value)
					} else {
						err = gc.coord.Load(now, key, value)
					}
					switch {
					case errors.Is(err, group.ErrBadRecord):
						// Not a record Gregor writes (a client produced
						// to the topic, or a share or streams group
						// record): skipped.
						gc.b.log.Warn("skipping a record of "+offsetsTopic, "partition", p.Index(), "err", err)
					case err != nil:
						loadErr = err
						return false
					default:
						loaded++
					}
					return true
				}); err != nil {
					return err
				}
				if h, err := batch.ParseHeader(one); err == nil {
					off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
				}
				return loadErr
			})
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", offsetsTopic, p.Index(), err)
			}
		}
	}
	gc.coord.LoadDone(now)
	gc.coord.Ready() // loading has no effects to act on
	gc.loaded = led
	gc.b.log.Info("group coordinator loaded", "records", loaded, "partitions", len(led))
	return nil
}

// syncLeadership reloads the coordinator from the log when the partitions
// of __consumer_offsets this broker leads, or their leader epochs, are not
// the ones it loaded (Kafka's onElection and onResignation, cluster mode
// only): every parked JoinGroup and SyncGroup is answered NOT_COORDINATOR,
// and the groups and offsets of the partitions it leads now are replayed
// from their logs (to the log end, as Kafka loads), those of partitions it
// no longer leads dropped. It runs on the coordinator's goroutine before
// each event and tick, so no request is served from a state that is not
// loaded (requests wait while it loads, rather than being answered
// COORDINATOR_LOAD_IN_PROGRESS). Partitions it newly leads are loaded
// beside the groups it has. When it loses one, unlike Kafka, which unloads
// one partition at a time, the whole coordinator is rebuilt: the groups of
// partitions that did not move come back as after a restart (members keep
// their ids, their sessions start again; their parked requests are
// answered NOT_COORDINATOR and sent again after a coordinator lookup).
func (gc *groupCoordinator) syncLeadership() {
	if !gc.b.isCluster() {
		return
	}
	if gc.parts == nil {
		if t := gc.b.lookupTopic(offsetsTopic); t != nil {
			gc.parts = gc.b.partitions(t)
		}
	}
	led := ledPartitions(gc.parts)
	if maps.Equal(led, gc.loaded) {
		return
	}
	gained, lost := map[int32]bool{}, false
	for p, epoch := range led {
		if e, ok := gc.loaded[p]; !ok {
			gained[p] = true
		} else if e != epoch {
			lost = true // led again at a new epoch: its state may have moved on elsewhere
		}
	}
	for p := range gc.loaded {
		if _, ok := led[p]; !ok {
			lost = true
		}
	}
	if !lost {
		// Only new partitions: their groups are loaded beside the
		// others, which go on undisturbed (the roles of a new topic's
		// partitions are applied one by one, so this is common).
		err := gc.replayPartitions(gained)
		if err == nil {
			return
		}
		// Partly loaded: start over from nothing.
		gc.b.log.Error("loading "+offsetsTopic+" after a leadership change failed; reloading every partition", "err", err)
	}
	old := gc.coord
	old.AbortParked(kerr.NotCoordinator.Code)
	gc.deliver(old.Ready().Replies, 0)
	gc.coord = group.New(gc.coordCfg)
	if err := gc.replay(); err != nil {
		gc.b.log.Error("loading "+offsetsTopic+" after a leadership change failed; retrying", "err", err)
		gc.coord = old
	}
}

func (gc *groupCoordinator) run(ctx context.Context) {
	defer close(gc.done)
	ticker := time.NewTicker(groupTickInterval)
	defer ticker.Stop()
	for {
		select {
		case ev := <-gc.events:
			gc.syncLeadership()
			gc.nextID++
			if ev.reply != nil {
				gc.waiting[gc.nextID] = ev.reply
			}
			ev.fn(gc.coord, nowMillis(), gc.nextID)
		case <-ticker.C:
			gc.syncLeadership()
			gc.coord.Tick(nowMillis())
		case <-ctx.Done():
			return
		}
		gc.flush()
	}
}

// flush appends the coordinator's records, then delivers its answers. If
// the append fails, the coordinator's decisions do not stand: see revert.
func (gc *groupCoordinator) flush() {
	eff := gc.coord.Ready()
	if len(eff.Records) > 0 {
		if err := gc.appendRecords(eff.Records); err != nil {
			gc.revert(eff.Replies, err)
			return
		}
	}
	gc.deliver(eff.Replies, 0)
}

// deliver hands out answers; a non-zero code fails each (group.Fail).
func (gc *groupCoordinator) deliver(replies []group.Reply, code int16) {
	for _, r := range replies {
		ch, ok := gc.waiting[r.ID]
		if !ok {
			continue
		}
		delete(gc.waiting, r.ID)
		res := r.Result
		if code != 0 {
			res = group.Fail(res, code)
		}
		ch <- res // buffered: the handler may have gone
	}
}

// errOffsetsTopic marks a failure to create __consumer_offsets.
var errOffsetsTopic = errors.New("broker: " + offsetsTopic + " cannot be created")

// appendErrorCode is the error the group coordinator answers when its
// records could not be written, as Kafka's GroupCoordinatorService maps a
// failed append: no offsets topic (UNKNOWN_TOPIC_OR_PARTITION there) is
// COORDINATOR_NOT_AVAILABLE, a storage error (KAFKA_STORAGE_ERROR) is
// NOT_COORDINATOR, so clients look the coordinator up again and retry.
// In cluster mode, replicas that do not take the append
// (NOT_ENOUGH_REPLICAS before it, NOT_ENOUGH_REPLICAS_AFTER_APPEND or
// REQUEST_TIMED_OUT while waiting) are COORDINATOR_NOT_AVAILABLE, as
// Kafka's CoordinatorOperationExceptionHelper and
// TransactionStateManager.appendTransactionToLog map them; a leadership
// lost meanwhile (NOT_LEADER_OR_FOLLOWER) is NOT_COORDINATOR.
func appendErrorCode(err error) int16 {
	var ce *coordinatorAppendError
	switch {
	case errors.Is(err, errOffsetsTopic):
		return kerr.CoordinatorNotAvailable.Code
	case errors.As(err, &ce) && ce.err != kerr.NotLeaderForPartition:
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.NotCoordinator.Code
}

// revert handles a failed append as Kafka's CoordinatorRuntime does: the
// in-memory state goes back to what the log holds. The answers of this
// batch and every parked request are failed, and the coordinator is
// rebuilt by replaying __consumer_offsets. If even the replay fails, the
// old coordinator is kept (nothing better is known) and the error logged.
func (gc *groupCoordinator) revert(replies []group.Reply, err error) {
	code := appendErrorCode(err)
	gc.b.log.Error("appending to "+offsetsTopic+" failed; reverting the group coordinator to the log", "err", err)
	gc.deliver(replies, code)
	old := gc.coord
	old.AbortParked(code)
	gc.deliver(old.Ready().Replies, 0)
	gc.coord = group.New(gc.coordCfg)
	if rerr := gc.replay(); rerr != nil {
		gc.b.log.Error("replaying "+offsetsTopic+" after a failed append failed; keeping the unreverted state", "err", rerr)
		gc.coord = old
	}
}

// createOffsetsTopic creates __consumer_offsets with
// offsets.topic.num.partitions partitions, compacted, with Kafka's
// offsets.topic.segment.bytes (100 MiB).
func (gc *groupCoordinator) createOffsetsTopic() error {
	parts, err := gc.b.createInternalTopic(gc.b.offsetsTopicCreation())
	if err != nil {
		return err
	}
	gc.parts = parts
	return nil
}

// recordBatch is the records of one batch: one partition, and one
// producer's transaction or none.
type recordBatch struct {
	partition int32
	txn       group.Producer // ID -1: not transactional
}

// appendRecords writes records as one v2 batch per partition, and per
// producer for transactional records: those go in a transactional batch
// with the producer's id and epoch and no sequence, as Kafka's
// coordinator writes them, checked for the producer epoch only
// (OriginCoordinator).
func (gc *groupCoordinator) appendRecords(recs []group.Record) error {
	if gc.parts == nil {
		if err := gc.createOffsetsTopic(); err != nil {
			return fmt.Errorf("%w: %v", errOffsetsTopic, err)
		}
	}
	n := int32(len(gc.parts))
	byBatch := map[recordBatch][]batch.Record{}
	var order []recordBatch
	for _, r := range recs {
		k := recordBatch{partition: group.PartitionFor(r.GroupID, n), txn: group.Producer{ID: -1, Epoch: -1}}
		if r.Txn != nil {
			k.txn = *r.Txn
		}
		if _, ok := byBatch[k]; !ok {
			order = append(order, k)
		}
		byBatch[k] = append(byBatch[k], batch.Record{OffsetDelta: int32(len(byBatch[k])), Key: r.Key, Value: r.Value})
	}
	now := nowMillis()
	var errs []error
	for _, k := range order {
		if err := gc.b.appendCoordinatorBatch(gc.parts[k.partition], k.txn.ID, k.txn.Epoch, byBatch[k], now, offsetsCommitTimeout, gc.stopping); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// txnAppendError is how the __consumer_offsets partition of group would
// refuse a transactional batch of producer: INVALID_PRODUCER_EPOCH for an
// epoch older than the partition's, else nil. Run on the coordinator's
// goroutine.
func (gc *groupCoordinator) txnAppendError(groupID string, producer group.Producer) *kerr.Error {
	if gc.parts == nil {
		return nil
	}
	p := gc.parts[group.PartitionFor(groupID, int32(len(gc.parts)))]
	return p.CheckProducerEpoch(producer.ID, producer.Epoch)
}

// writeMarker writes transaction marker m in p, a partition of
// __consumer_offsets, on the coordinator's goroutine, and then, the marker
// being as durable as the partition's flush policy asks, commits or drops
// the producer's pending offsets of the groups in p. It is what
// Broker.writeMarker does for that topic, as Kafka delegates those markers
// to its group coordinator (GroupCoordinator.completeTransaction). A
// refused or failed marker completes nothing.
func (gc *groupCoordinator) writeMarker(p *partition.Partition, m partition.TxnMarker) (partition.MarkerOutcome, error) {
	var out partition.MarkerOutcome
	var werr error
	err := gc.do(func(c *group.Coordinator, now int64) {
		if gc.parts == nil { // created by another broker (cluster mode)
			if t := gc.b.lookupTopic(offsetsTopic); t != nil {
				gc.parts = gc.b.partitions(t)
			}
		}
		out, werr = p.WriteTxnMarker(m, now)
		if werr == nil && out.Refused == nil && len(gc.parts) > 0 {
			c.CompleteTransaction(now, m.PID, p.Index(), int32(len(gc.parts)), m.Commit)
		}
	})
	if err != nil {
		return partition.MarkerOutcome{}, err
	}
	return out, werr
}

// do runs fn on the coordinator's goroutine and waits for it, for a
// caller without a request of its own (a marker the transaction
// coordinator writes in process). It fails only once the coordinator has
// stopped.
func (gc *groupCoordinator) do(fn func(c *group.Coordinator, now int64)) error {
	done := make(chan struct{})
	ev := groupEvent{fn: func(c *group.Coordinator, now int64, _ group.ReplyID) { fn(c, now); close(done) }}
	select {
	case gc.events <- ev:
	case <-gc.done:
		return errGroupsStopped
	}
	<-done
	return nil
}

// errGroupsStopped is returned to callers once the broker closes.
var errGroupsStopped = errors.New("broker: group coordinator stopped")

// call submits a request to the coordinator and waits for its answer, which
// may be parked behind later events. It fails if the connection or the
// broker goes away first.
func (gc *groupCoordinator) call(r *request, fn func(c *group.Coordinator, now int64, id group.ReplyID)) (any, error) {
	reply := make(chan any, 1)
	select {
	case gc.events <- groupEvent{fn: fn, reply: reply}:
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	case <-gc.done:
		return nil, errGroupsStopped
	}
	select {
	case res := <-reply:
		return res, nil
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	case <-gc.done:
		return nil, errGroupsStopped
	}
}

// read runs fn on the coordinator's goroutine for a request that is
// answered at once (DescribeGroups, ListGroups).
func (gc *groupCoordinator) read(r *request, fn func(c *group.Coordinator, now int64)) error {
	var wg sync.WaitGroup
	wg.Add(1)
	ev := groupEvent{fn: func(c *group.Coordinator, now int64, _ group.ReplyID) { fn(c, now); wg.Done() }}
	select {
	case gc.events <- ev:
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-gc.done:
		return errGroupsStopped
	}
	wg.Wait()
	return nil
}

// stop ends the goroutine; handlers still waiting get an error and close
// their connections.
func (gc *groupCoordinator) stop() {
	gc.cancel()
	<-gc.done
}

// clientHost is the client's address as Kafka reports it: "/" + IP.
func clientHost(r *request) string {
	if r.conn == nil || r.conn.nc == nil {
		return ""
	}
	addr := r.conn.nc.RemoteAddr().String()
	if i := lastColon(addr); i > 0 {
		addr = addr[:i]
	}
	if len(addr) > 1 && addr[0] == '[' {
		addr = addr[1 : len(addr)-1]
	}
	return "/" + addr
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}

// offsetsTopicCreation is how __consumer_offsets is created.
func (b *Broker) offsetsTopicCreation() topicCreation {
	tc := topicCreation{
		name:              offsetsTopic,
		partitions:        b.cfg.OffsetsTopicPartitions,
		replicationFactor: 1,
		configs:           topicconfig.Configs{"cleanup.policy": "compact", "segment.bytes": "104857600"},
	}
	if b.isCluster() {
		tc.replicationFactor = b.cfg.OffsetsTopicReplicationFactor
	}
	return tc
}

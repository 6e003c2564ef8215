package broker

// The group coordinator's part of the broker. A coordinator/runtime drives
// the coordinator/group state machine from one goroutine: handlers send it
// events and wait for their answer; a ticker feeds it time. After each
// event it appends the records the coordinator produced to
// __consumer_offsets, then hands out the answers, so an acknowledged offset
// commit is in the log. This file gives the runtime its State (groupShard:
// how a batch of __consumer_offsets is replayed) and its Env (groupEnv:
// the appends, the topic created on first use), and pushes leadership into
// it (coordinatorLeadership). A JoinGroup or SyncGroup that the coordinator parks
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
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/runtime"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// groupTickInterval is how often the coordinator is given the time, which
// bounds how late a session or rebalance timeout fires.
const groupTickInterval = 20 * time.Millisecond

// groupCoordinator is the group coordinator's part of the broker: a
// coordinator/runtime driving a group.Coordinator (groupShard), and the
// runtime's Env for __consumer_offsets (groupEnv).
type groupCoordinator struct {
	b        *Broker
	coordCfg group.Config
	rt       *runtime.Runtime[*groupShard, group.Record]

	// Owned by the runtime's goroutine.
	parts []*partition.Partition // __consumer_offsets's, once it exists (offsetsParts)

	// shareInits counts the share-group state initializations under way
	// (share_groups.go), which stop waits for.
	shareInits sync.WaitGroup
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

// newGroups makes the group coordinator, neither loaded nor running, so
// that the leadership the controller's first image gives is pushed into
// it (coordinatorLeadership) before startGroups loads.
func (b *Broker) newGroups() *groupCoordinator {
	gc := &groupCoordinator{
		b: b,
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
	gc.rt = runtime.New(runtime.Config[*groupShard, group.Record]{
		Name:      offsetsTopic,
		New:       func() *groupShard { return &groupShard{gc: gc, c: group.New(gc.coordCfg)} },
		Env:       groupEnv{gc},
		TickEvery: groupTickInterval,
		Fail:      group.Fail,
		ErrorCode: appendErrorCode,
		Log:       b.log,
	})
	return gc
}

// startGroups replays __consumer_offsets, if it exists, and starts the
// coordinator's goroutine: on a single node every partition, in cluster
// mode those the applied image has this broker lead. The topic itself is
// created on first use, when the coordinator first has records to write,
// as Kafka creates it on the first FindCoordinator.
func (b *Broker) startGroups() error {
	gc := b.groups
	if t := b.lookupTopic(offsetsTopic); t != nil && !b.isCluster() {
		for _, p := range b.partitions(t) {
			gc.rt.Led(p.Index(), 0)
		}
	}
	return gc.rt.Start()
}

// coordinatorLeadership tells the coordinator of p's topic, if p is a
// partition of __consumer_offsets or __transaction_state, that this broker
// leads p at epoch (led) or no longer leads it: Kafka's onElection and
// onResignation. applyRoles calls it for every partition whose role it
// applies. For the group coordinator, a partition gained is loaded beside
// the others (the roles of a new topic's partitions are
// applied one by one, so this is common); one lost, or led again at a new
// epoch, rebuilds the coordinator from the partitions led, every parked
// JoinGroup and SyncGroup answered NOT_COORDINATOR. Unlike Kafka, which
// unloads one partition at a time, the groups of partitions that did not
// move come back as after a restart (members keep their ids, their
// sessions start again). The coordinator applies the change before its
// next event or tick, loading to the log end as Kafka loads, so no request
// is served from a state that is not loaded; requests wait while it
// loads rather than being answered COORDINATOR_LOAD_IN_PROGRESS.
func (b *Broker) coordinatorLeadership(p *partition.Partition, epoch int32, led bool) {
	var rt interface {
		Led(p, epoch int32)
		Lost(p int32)
	}
	switch {
	case p.Topic() == offsetsTopic && b.groups != nil:
		rt = b.groups.rt
	case p.Topic() == txnStateTopic && b.txns != nil:
		rt = b.txns.rt // its reload is described in txns.go
	case p.Topic() == shareGroupStateTopic && b.shares != nil:
		rt = b.shares.rt
	default:
		return
	}
	if led {
		rt.Led(p.Index(), epoch)
	} else {
		rt.Lost(p.Index())
	}
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

// offsetsParts returns the partitions of __consumer_offsets, nil while the
// topic does not exist; in cluster mode another broker may have created
// it since this one started. Run on the coordinator's goroutine.
func (gc *groupCoordinator) offsetsParts() []*partition.Partition {
	if gc.parts == nil {
		if t := gc.b.lookupTopic(offsetsTopic); t != nil {
			gc.parts = gc.b.partitions(t)
			adoptSingleNode(gc.b, gc.rt, gc.parts)
		}
	}
	return gc.parts
}

// adoptSingleNode has the runtime of a single node's coordinator serve
// every partition of parts, its topic found or created since it started,
// as loaded (nothing of it was replayed; a revert replays it). In cluster
// mode the roles applied say which partitions are loaded.
func adoptSingleNode[S runtime.State[R], R any](b *Broker, rt *runtime.Runtime[S, R], parts []*partition.Partition) {
	if b.isCluster() {
		return
	}
	led := map[int32]int32{}
	for _, p := range parts {
		led[p.Index()] = 0
	}
	rt.Adopt(led)
}

// groupShard is the runtime's State: the group coordinator, and what it
// loaded.
type groupShard struct {
	gc      *groupCoordinator
	c       *group.Coordinator
	scratch batch.Scratch
	records int // loaded since the last Loaded
	// inits are the share-group state initializations the records being
	// appended ask for, started once they are (Answered; share_groups.go).
	inits []group.ShareStateInit
}

// Replay feeds one batch of partition p of __consumer_offsets to the
// coordinator. A transaction marker ends its producer's transactional
// offset commits in p; a record that is not one Gregor writes is skipped.
func (s *groupShard) Replay(now int64, p int32, one []byte) error {
	if h, err := batch.ParseHeader(one); err == nil && h.Control() {
		m, ok, err := batch.ParseEndTxnMarker(one, &s.scratch)
		if err != nil {
			return fmt.Errorf("the control batch at offset %d: %w", h.BaseOffset, err)
		}
		if ok {
			s.c.CompleteTransaction(now, h.ProducerID, p, int32(len(s.gc.offsetsParts())), m.Commit)
		}
		return nil
	}
	var loadErr error
	if err := batch.ForEachRecord(one, &s.scratch, func(h *batch.Header, r *batch.Record) bool {
		var value []byte
		if r.Value != nil {
			value = append([]byte(nil), r.Value...)
		}
		key := append([]byte(nil), r.Key...)
		var err error
		if h.Transactional() && h.ProducerID >= 0 {
			err = s.c.LoadTransactional(now, h.ProducerID, key, value)
		} else {
			err = s.c.Load(now, key, value)
		}
		switch {
		case errors.Is(err, group.ErrBadRecord):
			// Not a record Gregor writes (a client produced to the
			// topic, or a share or streams group record): skipped.
			s.gc.b.log.Warn("skipping a record of "+offsetsTopic, "partition", p, "err", err)
		case err != nil:
			loadErr = err
			return false
		default:
			s.records++
		}
		return true
	}); err != nil {
		return err
	}
	return loadErr
}

// Loaded ends a load: the coordinator finishes what loading leaves (the
// consumer groups' epochs and timers).
func (s *groupShard) Loaded(now int64, parts []int32) {
	s.c.LoadDone(now)
	s.c.Ready() // loading has no effects to act on
	s.gc.b.log.Info("group coordinator loaded", "records", s.records, "partitions", len(parts))
	s.records = 0
}

func (s *groupShard) Tick(now int64)   { s.c.Tick(now) }
func (s *groupShard) Abort(code int16) { s.c.AbortParked(code) }

func (s *groupShard) Ready() ([]group.Record, []runtime.Reply) {
	eff := s.c.Ready()
	s.inits = append(s.inits, eff.ShareStateInits...)
	var replies []runtime.Reply
	if len(eff.Replies) > 0 {
		replies = make([]runtime.Reply, len(eff.Replies))
		for i, r := range eff.Replies {
			replies[i] = runtime.Reply{ID: runtime.ID(r.ID), Result: r.Result}
		}
	}
	return eff.Records, replies
}

// Answered starts the share-group state initializations of the cycle,
// whose records are now appended.
func (s *groupShard) Answered() bool {
	for _, init := range s.inits {
		s.gc.shareInits.Add(1)
		go func() {
			defer s.gc.shareInits.Done()
			s.gc.initializeShareState(init)
		}()
	}
	s.inits = nil
	return false
}

// Settled forgets the initializations of a cycle whose append failed: the
// records asking for them are not in the log.
func (s *groupShard) Settled() { s.inits = nil }

func (s *groupShard) Rebuilt(reverted, ok bool) {}

// groupEnv is the runtime's Env: __consumer_offsets.
type groupEnv struct{ gc *groupCoordinator }

// Read reads partition p of __consumer_offsets from its start to where a
// coordinator loads (coordinatorLoadEnd), a batch at a time.
func (e groupEnv) Read(p int32, fn func(batch []byte) error) error {
	return readCoordinatorLog(offsetsTopic, e.gc.offsetsParts(), p, fn)
}

// readCoordinatorLog calls fn with each batch of partition p of a
// coordinator's topic, whose partitions are parts, from the log start to
// coordinatorLoadEnd.
func readCoordinatorLog(topic string, parts []*partition.Partition, p int32, fn func(batch []byte) error) error {
	if p < 0 || int(p) >= len(parts) {
		return nil
	}
	part := parts[p]
	end := coordinatorLoadEnd(part)
	for off := part.Log().StartOffset(); off < end; {
		data, err := part.Log().Read(off, 1<<20, end)
		if err != nil {
			return fmt.Errorf("broker: replaying %s-%d: %w", topic, p, err)
		}
		if len(data) == 0 {
			break
		}
		err = batch.Split(data, func(one []byte) error {
			if err := fn(one); err != nil {
				return err
			}
			h, err := batch.ParseHeader(one)
			if err != nil {
				return err
			}
			off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
			return nil
		})
		if err != nil {
			return fmt.Errorf("broker: replaying %s-%d: %w", topic, p, err)
		}
	}
	return nil
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
// lost meanwhile (NOT_LEADER_OR_FOLLOWER) is NOT_COORDINATOR. A failed
// append reverts the coordinator to the log (coordinator/runtime): the
// answers of that event and every parked request get this code.
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

// createOffsetsTopic creates __consumer_offsets with
// offsets.topic.num.partitions partitions, compacted, with Kafka's
// offsets.topic.segment.bytes (100 MiB). On a single node its partitions,
// empty, are loaded as they are; in cluster mode the roles the controller
// gives them are pushed in as they are applied.
func (gc *groupCoordinator) createOffsetsTopic() error {
	parts, err := gc.b.createInternalTopic(gc.b.offsetsTopicCreation())
	if err != nil {
		return err
	}
	gc.parts = parts
	adoptSingleNode(gc.b, gc.rt, parts)
	return nil
}

// recordBatch is the records of one batch: one partition, and one
// producer's transaction or none.
type recordBatch struct {
	partition int32
	txn       group.Producer // ID -1: not transactional
}

// Append writes records as one v2 batch per partition, and per producer
// for transactional records: those go in a transactional batch with the
// producer's id and epoch and no sequence, as Kafka's coordinator writes
// them, checked for the producer epoch only (OriginCoordinator).
func (e groupEnv) Append(recs []group.Record, stop <-chan struct{}) error {
	gc := e.gc
	if gc.offsetsParts() == nil {
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
		if err := gc.b.appendCoordinatorBatch(gc.parts[k.partition], k.txn.ID, k.txn.Epoch, byBatch[k], now, offsetsCommitTimeout, stop); err != nil {
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
	if gc.offsetsParts() == nil {
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
	err := gc.rt.Run(context.Background(), func(s *groupShard, now int64) {
		parts := gc.offsetsParts() // created by another broker (cluster mode)
		out, werr = p.WriteTxnMarker(m, now)
		if werr == nil && out.Refused == nil && len(parts) > 0 {
			s.c.CompleteTransaction(now, m.PID, p.Index(), int32(len(parts)), m.Commit)
		}
	})
	if err != nil {
		return partition.MarkerOutcome{}, errGroupsStopped
	}
	return out, werr
}

// errGroupsStopped is returned to callers once the broker closes.
var errGroupsStopped = errors.New("broker: group coordinator stopped")

// call submits a request to the coordinator and waits for its answer, which
// may be parked behind later events. It fails if the connection or the
// broker goes away first.
func (gc *groupCoordinator) call(r *request, fn func(c *group.Coordinator, now int64, id group.ReplyID)) (any, error) {
	res, err := gc.rt.Call(r.ctx, func(s *groupShard, now int64, id runtime.ID) { fn(s.c, now, group.ReplyID(id)) })
	if errors.Is(err, runtime.ErrStopped) {
		err = errGroupsStopped
	}
	return res, err
}

// read runs fn on the coordinator's goroutine for a request that is
// answered at once (DescribeGroups, ListGroups).
func (gc *groupCoordinator) read(r *request, fn func(c *group.Coordinator, now int64)) error {
	err := gc.rt.Run(r.ctx, func(s *groupShard, now int64) { fn(s.c, now) })
	if errors.Is(err, runtime.ErrStopped) {
		err = errGroupsStopped
	}
	return err
}

// stop ends the goroutine; handlers still waiting get an error and close
// their connections. It returns once the share-group state
// initializations under way have ended too (they end when the runtime's
// context does).
func (gc *groupCoordinator) stop() {
	gc.rt.Stop()
	gc.shareInits.Wait()
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

package share

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the broker settings the coordinator obeys, in Kafka's
// names and units. Its zero value is not Kafka's defaults (0 updates per
// snapshot is a valid setting): start from DefaultConfig.
type Config struct {
	// UpdatesPerSnapshot is share.coordinator.snapshot.update.records.per.snapshot
	// (0 to 500, Kafka's default 500): a write to a share-partition that
	// has had this many ShareUpdate records since its last ShareSnapshot
	// writes a ShareSnapshot instead. Negative: the default.
	UpdatesPerSnapshot int
	// ColdPartitionSnapshotIntervalMs is
	// share.coordinator.cold.partition.snapshot.interval.ms (Kafka's
	// default 300000): SnapshotColdPartitions snapshots a share-partition
	// not snapshotted for this long. Not above 0: the default.
	ColdPartitionSnapshotIntervalMs int64
}

// Defaults of Config, Kafka 4.4.0's ShareCoordinatorConfig.
const (
	DefaultUpdatesPerSnapshot              = 500
	DefaultColdPartitionSnapshotIntervalMs = 300000
	// DefaultStatePartitions is share.coordinator.state.topic.num.partitions.
	DefaultStatePartitions = 50
)

// DefaultConfig is Kafka's configuration.
func DefaultConfig() Config {
	return Config{UpdatesPerSnapshot: DefaultUpdatesPerSnapshot, ColdPartitionSnapshotIntervalMs: DefaultColdPartitionSnapshotIntervalMs}
}

// Inputs are what a call needs of the world outside the coordinator,
// besides its request and the time; the driver gives them with each call,
// as coordinator/txn is given its Inputs.
type Inputs struct {
	// Serving says whether this coordinator serves share-partition k: 0,
	// or the error Kafka's CoordinatorRuntime gives for a key whose
	// __share_group_state partition is not led here (NOT_COORDINATOR) or
	// not loaded yet (COORDINATOR_LOAD_IN_PROGRESS). Nil: every key is
	// served.
	Serving func(k Key) int16
	// Partitions is the topic image: the partition count of the topic
	// with id, false for a topic that does not exist. Nil stands for
	// Kafka's null metadata image, where every request is
	// UNKNOWN_TOPIC_OR_PARTITION.
	Partitions func(id [16]byte) (int32, bool)
	// Inactive says the share coordinator is not running (Kafka's
	// ShareCoordinatorService before startup or after shutdown): every
	// partition of a request is COORDINATOR_NOT_AVAILABLE.
	Inactive bool
	// StatePartitions is how many partitions __share_group_state has,
	// which SnapshotColdPartitions groups share-partitions by, as Kafka
	// runs it per partition. Not above 0: DefaultStatePartitions.
	StatePartitions int32
}

func (in Inputs) serving(k Key) int16 {
	if in.Serving == nil {
		return 0
	}
	return in.Serving(k)
}

// topicKnown is the metadata check of Kafka's maybeGet*Error: the topic
// exists and has the partition.
func (in Inputs) topicKnown(k Key) bool {
	if in.Partitions == nil {
		return false
	}
	n, ok := in.Partitions(k.TopicID)
	return ok && n > k.Partition
}

// Coordinator is the share coordinator's state, Kafka's
// ShareCoordinatorShard over every partition of __share_group_state this
// broker serves. It is not safe for concurrent use: one goroutine drives
// it.
type Coordinator struct {
	cfg          Config
	states       map[Key]*Offset // shareStateMap
	leaderEpochs map[Key]int32   // leaderEpochMap
	stateEpochs  map[Key]int32   // stateEpochMap
	updates      map[Key]int     // snapshotUpdateCount
	records      []Record
}

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	if cfg.UpdatesPerSnapshot < 0 {
		cfg.UpdatesPerSnapshot = DefaultUpdatesPerSnapshot
	}
	if cfg.ColdPartitionSnapshotIntervalMs <= 0 {
		cfg.ColdPartitionSnapshotIntervalMs = DefaultColdPartitionSnapshotIntervalMs
	}
	return &Coordinator{
		cfg:          cfg,
		states:       map[Key]*Offset{},
		leaderEpochs: map[Key]int32{},
		stateEpochs:  map[Key]int32{},
		updates:      map[Key]int{},
	}
}

// Ready returns, and forgets, the records the calls so far produced, to
// be appended to __share_group_state before their answers go out.
func (c *Coordinator) Ready() []Record {
	r := c.records
	c.records = nil
	return r
}

// Load applies one record of __share_group_state, replayed in log order.
// A record of neither schema is refused (ErrBadRecord), and so is one
// Kafka's replay fails on; the state is then unchanged.
func (c *Coordinator) Load(key, value []byte) error {
	typ, k, o, err := DecodeRecord(key, value)
	if err != nil {
		return err
	}
	return c.replay(typ, k, o)
}

// errUpdateTombstone: Kafka writes tombstones with ShareSnapshot keys
// only; its replay of a ShareUpdate tombstone fails.
var errUpdateTombstone = fmt.Errorf("%w: a ShareUpdate tombstone", ErrBadRecord)

// replay is Kafka's ShareCoordinatorShard.replay: handleShareSnapshot and
// handleShareUpdate. It changes nothing when it fails.
func (c *Coordinator) replay(typ int16, k Key, o *Offset) error {
	if typ == SnapshotType {
		if o == nil {
			delete(c.states, k)
			delete(c.leaderEpochs, k)
			delete(c.stateEpochs, k)
			delete(c.updates, k)
			return nil
		}
		c.raise(c.leaderEpochs, k, o.LeaderEpoch)
		c.raise(c.stateEpochs, k, o.StateEpoch)
		c.states[k] = o
		if n, ok := c.updates[k]; ok && n >= c.cfg.UpdatesPerSnapshot {
			c.updates[k] = 0
		}
		return nil
	}
	if o == nil {
		return errUpdateTombstone
	}
	next := o
	if cur := c.states[k]; cur != nil {
		var err error
		if next, err = merge(cur, o); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
	}
	c.raise(c.leaderEpochs, k, o.LeaderEpoch)
	c.states[k] = next
	c.updates[k]++
	return nil
}

// raise is maybeUpdateLeaderEpochMap and maybeUpdateStateEpochMap: an
// epoch only goes up.
func (c *Coordinator) raise(m map[Key]int32, k Key, epoch int32) {
	if cur, ok := m[k]; !ok || cur < epoch {
		m[k] = epoch
	}
}

// merge is Kafka's ShareCoordinatorShard.merge: an update on the state so
// far. A start offset or leader epoch of -1 keeps the current one; the
// batches are combined from the new start offset.
func merge(cur, upd *Offset) (*Offset, error) {
	start := upd.StartOffset
	if start == -1 {
		start = cur.StartOffset
	}
	leader := upd.LeaderEpoch
	if leader == -1 {
		leader = cur.LeaderEpoch
	}
	batches, err := Combine(cur.Batches, upd.Batches, start)
	if err != nil {
		return nil, err
	}
	return &Offset{
		SnapshotEpoch: cur.SnapshotEpoch, StateEpoch: cur.StateEpoch, LeaderEpoch: leader, StartOffset: start,
		DeliveryCompleteCount: upd.DeliveryCompleteCount, Batches: batches,
		CreateTimestamp: cur.CreateTimestamp, WriteTimestamp: cur.WriteTimestamp,
	}, nil
}

// emit applies a record the coordinator produced, as Kafka's runtime
// replays a write operation's records, and queues it for the log. Nothing
// changes when the replay fails.
func (c *Coordinator) emit(rec Record, typ int16, o *Offset) error {
	if err := c.replay(typ, rec.SharePartition, o); err != nil {
		return err
	}
	c.records = append(c.records, rec)
	return nil
}

// partitionWrite is the part of a WriteShareGroupState partition that
// generateShareStateRecord reads.
type partitionWrite struct {
	stateEpoch, leaderEpoch int32
	startOffset             int64
	deliveryCompleteCount   int32
	batches                 []Batch
}

// stateRecord is Kafka's generateShareStateRecord: a ShareSnapshot when
// the share-partition has had UpdatesPerSnapshot updates since its last
// snapshot, else a ShareUpdate. The leader epoch is the request's only
// when updateLeader (a read that moves it); a write keeps the current one.
func (c *Coordinator) stateRecord(now int64, k Key, cur *Offset, w partitionWrite, updateLeader bool) (Record, int16, *Offset, error) {
	leader := cur.LeaderEpoch
	if updateLeader {
		leader = w.leaderEpoch
	}
	start := max(w.startOffset, cur.StartOffset)
	dcc := w.deliveryCompleteCount
	switch {
	case w.startOffset == cur.StartOffset:
		dcc = max(w.deliveryCompleteCount, cur.DeliveryCompleteCount)
	case w.startOffset < cur.StartOffset:
		dcc = cur.DeliveryCompleteCount
	}
	if c.updates[k] >= c.cfg.UpdatesPerSnapshot {
		batches, err := Combine(cur.Batches, w.batches, start)
		if err != nil {
			return Record{}, 0, nil, err
		}
		o := &Offset{SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: cur.StateEpoch, LeaderEpoch: leader, StartOffset: start,
			DeliveryCompleteCount: dcc, Batches: batches, CreateTimestamp: now, WriteTimestamp: now}
		return SnapshotRecord(k, o), SnapshotType, o, nil
	}
	batches, err := Combine(nil, w.batches, start)
	if err != nil {
		return Record{}, 0, nil, err
	}
	o := &Offset{SnapshotEpoch: cur.SnapshotEpoch, LeaderEpoch: leader, StartOffset: start, DeliveryCompleteCount: dcc, Batches: batches}
	return UpdateRecord(k, o), UpdateType, o, nil
}

// failure is one partition's error: its code and message (nil: none).
type failure struct {
	code int16
	msg  *string
}

func str(s string) *string { return &s }

// fail is an error with Kafka's message for the error itself
// (Errors.message()).
func fail(e *kerr.Error) failure { return failure{e.Code, str(kafkaMessage(e.Code))} }

// failWith is an error with the message of the exception Kafka gives.
func failWith(e *kerr.Error, msg string) failure { return failure{e.Code, str(msg)} }

// Kafka's ShareCoordinatorShard exceptions.
const (
	msgNegativePartition   = "The partition id cannot be a negative number."
	msgNegativeLeaderEpoch = "The leader epoch cannot be a negative number."
	msgNegativeStateEpoch  = "The state epoch cannot be a negative number."
	msgWriteUninitialized  = "Write operation on uninitialized share partition not allowed."
	msgReadUninitialized   = "Read operation on uninitialized share partition not allowed."
	msgNotAvailable        = "Share coordinator is not available."
)

// Prefixes of the ShareCoordinatorService's answers for an operation that
// failed in the runtime (not the coordinator's own errors).
const (
	opWrite      = "Unable to write share group state: "
	opRead       = "Unable to read share group state: "
	opSummary    = "Unable to read share group state summary: "
	opInitialize = "Unable to initialize share group state: "
	opDelete     = "Unable to delete share group state: "
)

// kafkaMessage is the default message of Kafka's exception for code, for
// the codes the share coordinator answers.
func kafkaMessage(code int16) string {
	switch code {
	case kerr.UnknownServerError.Code:
		return "The server experienced an unexpected error when processing the request."
	case kerr.UnknownTopicOrPartition.Code:
		return "This server does not host this topic-partition."
	case kerr.CoordinatorLoadInProgress.Code:
		return "The coordinator is loading and hence can't process requests."
	case kerr.CoordinatorNotAvailable.Code:
		return "The coordinator is not available."
	case kerr.NotCoordinator.Code:
		return "This is not the correct coordinator."
	case kerr.InvalidRequest.Code:
		return "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details."
	case kerr.FencedLeaderEpoch.Code:
		return "The leader epoch in the request is older than the epoch on the broker."
	case kerr.FencedStateEpoch.Code:
		return "The coordinator rejected the request because the state epoch did not match."
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Description
	}
	return "Unknown error"
}

// OperationErrorCode is Kafka's CoordinatorOperationExceptionHelper:
// the code a share coordinator operation that failed with code answers.
// An append that failed for want of replicas or in time is
// COORDINATOR_NOT_AVAILABLE, one that lost its leadership or its disk
// NOT_COORDINATOR, a network error COORDINATOR_LOAD_IN_PROGRESS, one too
// large UNKNOWN_SERVER_ERROR; other codes pass as they are. The driver
// maps a failed append's code with it.
func OperationErrorCode(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// refused is the answer for a key the runtime does not serve (or an
// operation that failed in it): the code mapped by OperationErrorCode, and
// the message of the exception after the operation's prefix, as Kafka's
// ShareCoordinatorService answers.
func refused(op string, code int16) failure {
	return failure{OperationErrorCode(code), str(op + kafkaMessage(code))}
}

// crashed is the answer when Kafka's shard throws (errCombine): the
// runtime fails the operation, UNKNOWN_SERVER_ERROR with the exception's
// message after the operation's prefix.
func crashed(op string, err error) failure {
	msg := err.Error()
	if errors.Is(err, errCombine) {
		msg = combineFailure
	}
	return failure{kerr.UnknownServerError.Code, str(op + msg)}
}

// sortedKeys lists ks by group, topic id and partition.
func sortedKeys[V any](m map[Key]V) []Key {
	ks := make([]Key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.GroupID != b.GroupID {
			return a.GroupID < b.GroupID
		}
		if a.TopicID != b.TopicID {
			for x := range a.TopicID {
				if a.TopicID[x] != b.TopicID[x] {
					return a.TopicID[x] < b.TopicID[x]
				}
			}
		}
		return a.Partition < b.Partition
	})
	return ks
}

// SnapshotColdPartitions is Kafka's snapshotColdPartitions, run every
// ColdPartitionSnapshotIntervalMs on each partition of __share_group_state:
// every share-partition not snapshotted for the interval is snapshotted
// again (its snapshot epoch up by one, its write time now), so that the
// log before it can be pruned. As in Kafka, a partition of
// __share_group_state where no share-partition has its create and write
// times equal is passed over whole. Keys in refuses are passed over.
func (c *Coordinator) SnapshotColdPartitions(now int64, in Inputs) {
	n := in.StatePartitions
	if n <= 0 {
		n = DefaultStatePartitions
	}
	groups := map[int32][]Key{}
	for _, k := range sortedKeys(c.states) {
		if in.serving(k) != 0 {
			continue
		}
		p := PartitionFor(k, n)
		groups[p] = append(groups[p], k)
	}
	parts := make([]int32, 0, len(groups))
	for p := range groups {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		keys := groups[p]
		written := 0
		for _, k := range keys {
			if o := c.states[k]; o.CreateTimestamp != o.WriteTimestamp {
				written++
			}
		}
		if written == len(keys) {
			continue
		}
		for _, k := range keys {
			o := c.states[k]
			if now-o.WriteTimestamp < c.cfg.ColdPartitionSnapshotIntervalMs {
				continue
			}
			s := o.clone()
			s.SnapshotEpoch++
			s.WriteTimestamp = now
			_ = c.emit(SnapshotRecord(k, s), SnapshotType, s) // a snapshot replays without fail
		}
	}
}

// TopicsDeleted is Kafka's maybeCleanupShareState, when topics are
// deleted: the state of every share-partition of those topics is removed,
// with a tombstone. Keys in refuses are passed over.
func (c *Coordinator) TopicsDeleted(ids [][16]byte, in Inputs) {
	if len(ids) == 0 {
		return
	}
	gone := map[[16]byte]bool{}
	for _, id := range ids {
		gone[id] = true
	}
	for _, k := range sortedKeys(c.states) {
		if gone[k.TopicID] && in.serving(k) == 0 {
			_ = c.emit(TombstoneRecord(k), SnapshotType, nil)
		}
	}
}

// State is a copy of share-partition k's state, and false when it has
// none.
func (c *Coordinator) State(k Key) (Offset, bool) {
	o := c.states[k]
	if o == nil {
		return Offset{}, false
	}
	return *o.clone(), true
}

// Epochs are the leader and state epochs the coordinator has recorded
// for k (Kafka's leaderEpochMap and stateEpochMap), and how many updates
// it has had since its last snapshot.
func (c *Coordinator) Epochs(k Key) (leader, state int32, updates int, ok bool) {
	leader, ok = c.leaderEpochs[k]
	state = c.stateEpochs[k]
	return leader, state, c.updates[k], ok
}

// Keys lists the share-partitions with a state, sorted.
func (c *Coordinator) Keys() []Key { return sortedKeys(c.states) }

// Len is how many share-partitions have a state.
func (c *Coordinator) Len() int { return len(c.states) }

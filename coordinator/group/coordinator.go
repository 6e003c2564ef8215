package group

import (
	"sort"
	"strconv"
)

// Config holds the broker settings the coordinator obeys. Times are in
// milliseconds, as in Kafka's configuration.
type Config struct {
	// InitialRebalanceDelayMs is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members. Kafka's
	// default is 3000; 0 completes the join as soon as every member is in.
	InitialRebalanceDelayMs int64
	// MinSessionTimeoutMs and MaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (defaults 6000 and 1800000). A JoinGroup outside them is
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeoutMs, MaxSessionTimeoutMs int32
	// MaxSize is group.max.size (default: unlimited, as Kafka's
	// Integer.MAX_VALUE). A new member beyond it is GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// OffsetsRetentionMs is offsets.retention.minutes in milliseconds
	// (default 10080 minutes, seven days).
	OffsetsRetentionMs int64
	// OffsetsRetentionCheckIntervalMs is
	// offsets.retention.check.interval.ms (default 600000).
	OffsetsRetentionCheckIntervalMs int64
	// MaxMetadataBytes is offset.metadata.max.bytes (default 4096): longer
	// commit metadata is OFFSET_METADATA_TOO_LARGE.
	MaxMetadataBytes int
	// NewMemberID returns a fresh member id for a client. Kafka uses
	// clientId + "-" + a random UUID; the default, a counter, is
	// deterministic for tests but must not be used across restarts.
	NewMemberID func(clientID string) string

	// ConsumerSessionTimeoutMs is group.consumer.session.timeout.ms
	// (default 45000): a consumer group member that sends no heartbeat for
	// this long is fenced.
	ConsumerSessionTimeoutMs int32
	// ConsumerHeartbeatIntervalMs is group.consumer.heartbeat.interval.ms
	// (default 5000), told to every consumer group member.
	ConsumerHeartbeatIntervalMs int32
	// ConsumerMaxSize is group.consumer.max.size (default: unlimited). A
	// new member beyond it is GROUP_MAX_SIZE_REACHED.
	ConsumerMaxSize int
	// ConsumerAssignors is group.consumer.assignors: the server assignors a
	// member may name, the first being the default (Kafka's default
	// "uniform,range"). Only "uniform" and "range" exist; other names are
	// ignored (the broker's configuration parser refuses them).
	ConsumerAssignors []string
	// ConsumerAssignmentIntervalMs is group.consumer.assignment.interval.ms
	// (Kafka 4.3+, KIP-1263; Kafka's default 1000): a consumer group's
	// target assignment is computed at most once per interval. The zero
	// value, 0, computes it at the heartbeat that finds the group epoch
	// ahead, as Kafka before 4.3 did.
	ConsumerAssignmentIntervalMs int64
	// ConsumerAssignorOffload is group.consumer.assignor.offload.enable
	// (Kafka 4.3+; Kafka's default true): the assignor runs off the
	// heartbeat path, so the heartbeat that starts a computation is
	// answered before it lands (consumer_assign.go). The zero value, false,
	// runs it inline.
	ConsumerAssignorOffload bool

	// ShareSessionTimeoutMs is group.share.session.timeout.ms (default
	// 45000): a share group member that sends no heartbeat for this long
	// is fenced.
	ShareSessionTimeoutMs int32
	// ShareHeartbeatIntervalMs is group.share.heartbeat.interval.ms
	// (default 5000), told to every share group member.
	ShareHeartbeatIntervalMs int32
	// ShareMaxSize is group.share.max.size (default 200). A new member
	// beyond it is GROUP_MAX_SIZE_REACHED.
	ShareMaxSize int
	// ShareAssignmentIntervalMs is group.share.assignment.interval.ms
	// (Kafka's default 1000): a share group's target is computed at most
	// once per interval. The zero value computes it at every heartbeat
	// that finds the group epoch ahead.
	ShareAssignmentIntervalMs int64
	// ShareInitializeRetryIntervalMs is
	// group.share.initialize.retry.interval.ms (default 30000): partitions
	// whose state initialization was asked this long ago and not reported
	// done are asked again.
	ShareInitializeRetryIntervalMs int64
}

// Defaults of Config, Kafka's.
const (
	DefaultInitialRebalanceDelayMs         = 3000
	DefaultMinSessionTimeoutMs             = 6000
	DefaultMaxSessionTimeoutMs             = 1800000
	DefaultOffsetsRetentionMs              = 10080 * 60 * 1000
	DefaultOffsetsRetentionCheckIntervalMs = 600000
	DefaultMaxMetadataBytes                = 4096
	DefaultConsumerSessionTimeoutMs        = 45000
	DefaultConsumerHeartbeatIntervalMs     = 5000
	DefaultShareSessionTimeoutMs           = 45000
	DefaultShareHeartbeatIntervalMs        = 5000
	DefaultShareMaxSize                    = 200
	DefaultShareInitializeRetryIntervalMs  = 30000
)

func (c *Config) setDefaults() {
	if c.InitialRebalanceDelayMs < 0 {
		c.InitialRebalanceDelayMs = 0
	}
	if c.MinSessionTimeoutMs <= 0 {
		c.MinSessionTimeoutMs = DefaultMinSessionTimeoutMs
	}
	if c.MaxSessionTimeoutMs <= 0 {
		c.MaxSessionTimeoutMs = DefaultMaxSessionTimeoutMs
	}
	if c.MaxSize <= 0 {
		c.MaxSize = int(^uint32(0) >> 1)
	}
	if c.OffsetsRetentionMs <= 0 {
		c.OffsetsRetentionMs = DefaultOffsetsRetentionMs
	}
	if c.OffsetsRetentionCheckIntervalMs <= 0 {
		c.OffsetsRetentionCheckIntervalMs = DefaultOffsetsRetentionCheckIntervalMs
	}
	if c.MaxMetadataBytes <= 0 {
		c.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	if c.ConsumerSessionTimeoutMs <= 0 {
		c.ConsumerSessionTimeoutMs = DefaultConsumerSessionTimeoutMs
	}
	if c.ConsumerHeartbeatIntervalMs <= 0 {
		c.ConsumerHeartbeatIntervalMs = DefaultConsumerHeartbeatIntervalMs
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = int(^uint32(0) >> 1)
	}
	if c.ShareSessionTimeoutMs <= 0 {
		c.ShareSessionTimeoutMs = DefaultShareSessionTimeoutMs
	}
	if c.ShareHeartbeatIntervalMs <= 0 {
		c.ShareHeartbeatIntervalMs = DefaultShareHeartbeatIntervalMs
	}
	if c.ShareMaxSize <= 0 {
		c.ShareMaxSize = DefaultShareMaxSize
	}
	if c.ShareAssignmentIntervalMs < 0 {
		c.ShareAssignmentIntervalMs = 0
	}
	if c.ShareInitializeRetryIntervalMs <= 0 {
		c.ShareInitializeRetryIntervalMs = DefaultShareInitializeRetryIntervalMs
	}
	var known []string
	for _, a := range c.ConsumerAssignors {
		if assignors[a] != nil && !contains(known, a) {
			known = append(known, a)
		}
	}
	c.ConsumerAssignors = known
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{UniformAssignor, RangeAssignor}
	}
	if c.NewMemberID == nil {
		n := 0
		c.NewMemberID = func(clientID string) string {
			n++
			return clientID + "-" + strconv.Itoa(n)
		}
	}
}

// ReplyID identifies one request to its driver; the answer to it carries
// the same id, possibly in the effects of a later event.
type ReplyID uint64

// Reply is the answer to one request. Result is one of *JoinResult,
// *SyncResult, *HeartbeatResult, *LeaveResult, *CommitResult,
// *FetchResult, *DeleteGroupsResult, *OffsetDeleteResult,
// *ConsumerHeartbeatResult, *ShareHeartbeatResult.
type Reply struct {
	ID     ReplyID
	Result any
}

// Record is one record for __consumer_offsets, in the partition of
// GroupID (PartitionFor). A nil Value is a tombstone.
type Record struct {
	GroupID    string
	Key, Value []byte
	// Txn, if set, is the producer whose transaction the record belongs
	// to (a TxnOffsetCommit): the driver writes it in a transactional
	// batch with the producer's id and epoch, apart from other records.
	Txn *Producer
}

// Effects is what the events since the last Ready produced. Records must be
// appended before Replies are sent.
type Effects struct {
	Records []Record
	Replies []Reply
	// ShareStateInits are the share-group state initializations to ask of
	// the share coordinator, after Records are appended (share.go).
	ShareStateInits []ShareStateInit
}

// Coordinator holds every group and its offsets. It is not safe for
// concurrent use: one goroutine drives it.
type Coordinator struct {
	cfg     Config
	groups  map[string]*group
	pending Effects
	// nextExpiryCheck is when offsets are next checked for expiry.
	nextExpiryCheck int64

	// txns holds the transactional offset commits waiting for their
	// producer's marker: producer id -> group -> partition (Kafka's
	// pendingTransactionalOffsets); openTxns the producers with pending
	// offsets in each group (openTransactionsByGroup). See txn.go.
	txns     map[int64]map[string]map[topicPartition]committedOffset
	openTxns map[string]map[int64]bool
	// seq numbers offset records in the order they are made or loaded,
	// which is their order in the log (committedOffset.seq).
	seq int64
}

// New returns a coordinator with no groups.
func New(cfg Config) *Coordinator {
	cfg.setDefaults()
	return &Coordinator{cfg: cfg, groups: map[string]*group{},
		txns: map[int64]map[string]map[topicPartition]committedOffset{}, openTxns: map[string]map[int64]bool{}}
}

// Ready returns the effects produced since the previous call and forgets
// them. The caller owns the returned slices.
func (c *Coordinator) Ready() Effects {
	e := c.pending
	c.pending = Effects{}
	return e
}

func (c *Coordinator) reply(id ReplyID, result any) {
	c.pending.Replies = append(c.pending.Replies, Reply{ID: id, Result: result})
}

func (c *Coordinator) record(groupID string, key, value []byte) {
	c.pending.Records = append(c.pending.Records, Record{GroupID: groupID, Key: key, Value: value})
}

// Tick advances time: it expires members whose session timed out, pending
// members that never rejoined, rebalances whose timeout passed, and offsets
// past their retention.
func (c *Coordinator) Tick(now int64) {
	for _, id := range c.sortedGroupIDs() {
		c.fireTimers(id, now, nil, true)
	}
	if now >= c.nextExpiryCheck {
		c.nextExpiryCheck = now + c.cfg.OffsetsRetentionCheckIntervalMs
		c.expireOffsets(now)
	}
}

// fireDueTimers fires the timers of group id that are due by now: member
// sessions, pending members, join, sync and rebalance timeouts. Every
// request about a group calls it first, so the request sees the group as
// Kafka's timer, which fires at the deadline itself, would have left it,
// not as the driver's last Tick did: a DeleteGroups sent the moment the
// members' sessions end finds the group Empty. topics, when not nil, is
// the topic image for a consumer group's subscription hash.
//
// An offloaded target computation (ConsumerAssignorOffload) lands only at
// a Tick, as Kafka's lands in a write of its own after the assignor thread
// is done, not within a request that arrives meanwhile.
func (c *Coordinator) fireDueTimers(id string, now int64, topics Topics) {
	c.fireTimers(id, now, topics, false)
}

func (c *Coordinator) fireTimers(id string, now int64, topics Topics, fromTick bool) {
	g := c.groups[id]
	switch {
	case g == nil:
	case g.cg != nil:
		c.tickConsumerGroup(g, now, topics, fromTick)
	case g.sg != nil:
		c.tickShareGroup(g, now, topics)
	default:
		c.tickGroup(g, now)
	}
}

func (c *Coordinator) sortedGroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

package replication

import (
	"context"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
)

// Settings is replication's keys of server.properties, Kafka's names and
// defaults; the broker's Config embeds it, so each is defined once.
type Settings struct {
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: a follower not
	// caught up for that long leaves the ISR, checked every half of it.
	// Default 30000.
	ReplicaLagTimeMaxMs int64
	// ReplicaFetchWaitMaxMs (default 500), ReplicaFetchMinBytes (1),
	// ReplicaFetchMaxBytes (per partition, 1 MiB) and
	// ReplicaFetchResponseMaxBytes (10 MiB) are replica.fetch.wait.max.ms,
	// replica.fetch.min.bytes, replica.fetch.max.bytes and
	// replica.fetch.response.max.bytes.
	ReplicaFetchWaitMaxMs        int32
	ReplicaFetchMinBytes         int32
	ReplicaFetchMaxBytes         int32
	ReplicaFetchResponseMaxBytes int32
	// ReplicaFetchBackoffMs is replica.fetch.backoff.ms: the pause after a
	// failed replica fetch. Default 1000.
	ReplicaFetchBackoffMs int64
	// ReplicaHighWatermarkCheckpointIntervalMs is
	// replica.high.watermark.checkpoint.interval.ms. Default 5000.
	ReplicaHighWatermarkCheckpointIntervalMs int64
}

// Config is what a Manager is made with.
type Config struct {
	// NodeID is this broker's node.id.
	NodeID int32
	// Settings is the replica.* keys, as the broker's Config holds them.
	Settings
	// ListOffsetsVersion is the ListOffsets version a follower asks its
	// leader's log start and high watermark with (the highest served).
	ListOffsetsVersion int16
	// Logger receives replication's logs.
	Logger *slog.Logger
	// BeforeFetch, if set, is called by a fetcher before each fetch round
	// with its leader's id; tests pause fetchers with it.
	BeforeFetch func(leader int32)
}

// Env is what replication needs of the broker. Its methods are called
// holding no lock of this package, but NewConn, which must take none
// (doc.go).
type Env interface {
	// BrokerEpoch is this node's broker epoch, -1 while it is not
	// registered.
	BrokerEpoch() int64
	// Endpoint is broker id's Kafka listener in the image last applied:
	// registered is false when the image does not hold the broker, port
	// is -1 when it registered no endpoint.
	Endpoint(id int32) (host string, port int32, registered bool)
	// NewConn returns a new connection for a fetcher to its leader: a
	// *peer.Conn with client id FetchClientID.
	NewConn() Conn
	// Partitions lists every partition of the catalogue, for the ISR
	// expiry check and the high watermark checkpoint.
	Partitions() []TopicPartition
	// AlterPartition sends one partition's AlterPartition to the active
	// controller, with the followers' broker epochs (AlterPartition v3).
	// An error is the request's, and AlterISR retries it.
	AlterPartition(ctx context.Context, req controller.AlterPartitionRequest, followerEpochs map[int32]int64) (controller.AlterPartitionResult, error)
}

// Conn is a fetcher's connection to its leader (peer.Conn's methods): Do
// sends a request to the Kafka listener at addr, dialling it first when
// needed, and Close ends the connection for good.
type Conn interface {
	Do(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error)
	Close()
}

// Topic is what replication reads of a partition's topic. Its configs may
// change at any time, so it is asked at each use; it is called holding a
// fetcher's mutex and must take no lock.
type Topic interface {
	// MinInsyncReplicas is the topic's min.insync.replicas (acks.go).
	MinInsyncReplicas() int
	// FollowerThrottled reports whether the topic's
	// follower.replication.throttled.replicas names the replica of
	// partition on broker.
	FollowerThrottled(partition, broker int32) bool
}

// Manager is this node's replication in cluster mode (acks.go's waits
// need none): the replica
// fetchers of the partitions it follows, and the leader's ISR expiry,
// ISR changes and high watermark checkpoint (isr.go).
type Manager struct {
	cfg    Config
	env    Env
	quotas *Quotas
	log    *slog.Logger

	// ctx ends when the broker stops replicating: every goroutine of the
	// Manager returns then, and Wait waits for them.
	ctx context.Context
	wg  sync.WaitGroup

	fetchers fetcherManager
}

// New returns a Manager that runs until ctx ends. quotas are the broker's
// replication throttles, whose follower side the fetchers apply.
func New(ctx context.Context, cfg Config, env Env, quotas *Quotas) *Manager {
	m := &Manager{cfg: cfg, env: env, quotas: quotas, log: cfg.Logger, ctx: ctx}
	m.fetchers.mgr = m
	return m
}

// Follow makes the fetchers follow exactly the partitions given, by
// leader: fetchers are started for new leaders and stopped for leaders no
// longer followed. A partition whose leader epoch changed starts over.
func (m *Manager) Follow(follow map[int32][]Target) { m.fetchers.update(follow) }

// Wait waits for the Manager's goroutines to return, once its ctx ended.
func (m *Manager) Wait() { m.wg.Wait() }

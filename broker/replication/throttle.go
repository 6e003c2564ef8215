package replication

// Replication throttles (KIP-73): the two rates and what the leader and
// the follower decide with them. The broker owns the rest of the
// throttles: the rates as dynamic broker configs and the topics'
// throttled-replica lists (broker/replication_throttle.go says where they
// come from), and recording the bytes a leader sends.
//
// The leader (Quotas.LeaderThrottles, asked by the broker's readReplica
// for a partition the topic's leader list names): a fetch from a follower
// that is not in the ISR is answered with no records while the leader's
// measured rate is above its bound (ReplicaManager.shouldLeaderThrottle).
//
// The follower (the fetcher's buildRequest): a partition its follower list
// names is left out of the fetch while the follower's rate is above its
// bound, unless the replica was caught up at its last fetch (the leader's
// high watermark at or below its log end: RemoteLeaderEndPoint's
// shouldFollowerThrottle). The bytes fetched for listed partitions are
// recorded. A fetcher whose every partition is left out waits
// replica.fetch.backoff.ms, as Kafka's fetcher backs off when it has
// nothing to fetch; it never spins.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/quota"
)

// Quotas are a broker's two replication quotas:
// leader.replication.throttled.rate (Leader) and
// follower.replication.throttled.rate (Follower). The broker sets their
// bounds from its dynamic configs.
type Quotas struct {
	Leader, Follower quota.Replication
}

// Init sets both quotas' windows: replication.quota.window.num samples of
// replication.quota.window.size.seconds.
func (qs *Quotas) Init(windowNum, windowSizeSeconds int) {
	now := func() int64 { return time.Now().UnixMilli() }
	windowMs := int64(windowSizeSeconds) * 1000
	qs.Leader.Init(windowNum, windowMs, now)
	qs.Follower.Init(windowNum, windowMs, now)
}

// LeaderThrottles reports whether the leader answers replica's fetch of p,
// a partition its leader list names, without records now.
func (qs *Quotas) LeaderThrottles(p *partition.Partition, replica int32) bool {
	return qs.Leader.Exceeded() && !p.InISR(replica)
}

// followerThrottles reports whether fp is left out of the next fetch.
// f.mu held; the quota's lock is a leaf taken after it.
func (f *replicaFetcher) followerThrottles(fp *fetchPartition) bool {
	return !fp.inSync && fp.Topic.FollowerThrottled(fp.Partition.Index(), f.mgr.cfg.NodeID) &&
		f.mgr.quotas.Follower.Exceeded()
}

// fetched records what a fetch brought for a partition: its record bytes
// when the follower list names it, and whether the replica is caught up
// (the leader's high watermark at or below the new log end, end; 0 when
// nothing was appended), known from its first answer and updated whenever
// records are appended, as Kafka's PartitionFetchState.lag. Called by the
// fetch loop, which alone reads and writes fp.lagKnown and fp.inSync: no
// lock.
func (f *replicaFetcher) fetched(s sentPartition, rp *kmsg.FetchResponseTopicPartition, end int64) {
	fp := s.fp
	if n := len(rp.RecordBatches); n > 0 && fp.Topic.FollowerThrottled(fp.Partition.Index(), f.mgr.cfg.NodeID) {
		f.mgr.quotas.Follower.Record(int64(n))
	}
	if end > 0 || !fp.lagKnown {
		next := s.fetchOffset
		if end > 0 {
			next = end
		}
		fp.lagKnown, fp.inSync = true, rp.HighWatermark <= next
	}
}

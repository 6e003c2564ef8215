package broker

// Fetch from follower (KIP-392), cluster mode.
//
// Which replica a consumer may read from is Kafka's
// FetchParams.fetchOnlyLeader: a consumer's Fetch v11 or later (the
// versions that carry rack_id, which Kafka takes as client metadata) may
// be served by any replica of the partition; an older consumer fetch, like
// every follower's, only by the leader (NOT_LEADER_OR_FOLLOWER elsewhere).
// A follower serves a consumer's read from its own log, up to its own high
// watermark (or last stable offset under read_committed), which the
// follower learns from the leader as it replicates; an offset below its
// log start or past its log end is OFFSET_OUT_OF_RANGE, on which Kafka's
// consumer drops the preferred read replica and goes back to the leader.
// (OFFSET_NOT_AVAILABLE is ListOffsets' answer for a lagging high
// watermark, not Fetch's, in Kafka as here.)
//
// With replica.selector.class set to Kafka's RackAwareReplicaSelector,
// the leader chooses, for each partition of a consumer fetch v11+, a
// preferred read replica as Kafka's ReplicaManager.findPreferredReadReplica
// and RackAwareReplicaSelector do: the candidates are the leader and the
// in-sync followers that hold the fetch offset; with a rack_id, those in
// the client's rack; the leader when it is among them, else the most
// caught-up of them (largest log end offset, then most recently caught up,
// then highest broker id). When that is a follower, the partition's answer
// names it in preferred_read_replica and carries no records (only the
// leader's high watermark, last stable offset and log start offset), and
// the fetch is answered at once; the client fetches from that replica
// until its metadata refresh or an error. Without the selector (the
// default) the leader serves every consumer itself.
//
// A follower holds the fetch offset when its log end offset, as of its
// last fetch, is at or past it and the offset is not below the log start
// (the leader's: Kafka checks the follower's own log start offset, which
// its fetches carry and Gregor's leader does not keep; a follower's log
// start follows the leader's).
//
// gregor_fetch_follower_reads_total counts partition reads a follower
// served to consumers, gregor_fetch_preferred_read_replica_total the
// partition answers that sent a consumer to another replica.

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

// RackAwareReplicaSelector is the value of replica.selector.class that
// turns fetch from follower on, Kafka's class name.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// fetchFromFollowerMetrics are KIP-392's counters.
type fetchFromFollowerMetrics struct {
	followerReads      prometheus.Counter
	preferredReplicaTo prometheus.Counter
}

func newFetchFromFollowerMetrics(reg *prometheus.Registry) fetchFromFollowerMetrics {
	m := fetchFromFollowerMetrics{
		followerReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_fetch_follower_reads_total",
			Help: "Partition reads of consumer fetches this broker served as a follower of the partition (KIP-392).",
		}),
		preferredReplicaTo: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gregor_fetch_preferred_read_replica_total",
			Help: "Partition answers of consumer fetches in which this leader named another replica as the preferred read replica (KIP-392).",
		}),
	}
	reg.MustRegister(m.followerReads, m.preferredReplicaTo)
	return m
}

// consumerFetch reports whether req is a consumer's fetch, not a
// replica's (Kafka's FetchRequest.isConsumer).
func consumerFetch(req *kmsg.FetchRequest) bool { return fetchReplicaID(req) < 0 }

// readsAsFollower reports whether this broker serves req's read of p
// although another broker (or none) leads p: it is one of p's replicas and
// req is a consumer fetch v11+. The read then goes through readPartition
// like the leader's, against this replica's log and high watermark.
func (b *Broker) readsAsFollower(req *kmsg.FetchRequest, p *partition.Partition) bool {
	if req.Version < 11 || !consumerFetch(req) {
		return false
	}
	st := p.State()
	if st == nil || st.Local || !slices.Contains(st.Replicas, b.cfg.NodeID) {
		return false
	}
	b.metrics.fetchFromFollower.followerReads.Inc()
	return true
}

// replicaView is what a leader knows of one replica when choosing a
// preferred read replica (Kafka's ReplicaView).
type replicaView struct {
	id                 int32
	rack               string
	logEndOffset       int64
	sinceCaughtUpMs    int64
	holdsFetchedOffset bool
}

// readReplicaView returns the leader's view of follower id of p for a fetch
// at offset (Kafka's DefaultReplicaView from the follower's Replica
// state): its log end offset and time since it was last caught up, from
// its fetches (partition/replica.go), and whether it holds the offset. ok is false
// while the leader has not seen the follower fetch since taking the lead.
func readReplicaView(p *partition.Partition, id int32, rack string, offset, now int64) (v replicaView, ok bool) {
	leo, caughtUp, ok := p.FollowerView(id)
	if !ok {
		return replicaView{}, false
	}
	return replicaView{id: id, rack: rack, logEndOffset: leo, sinceCaughtUpMs: now - caughtUp,
		holdsFetchedOffset: offset <= leo && offset >= p.Log().StartOffset()}, true
}

// selectReadReplica is Kafka's RackAwareReplicaSelector.select over the
// leader and the followers that may serve the read: the leader unless
// the client names a rack that holds candidates without the leader, then
// the most caught-up of those.
func selectReadReplica(clientRack string, leader replicaView, followers []replicaView) int32 {
	if clientRack == "" || leader.rack == clientRack {
		return leader.id
	}
	best := -1
	for i, f := range followers {
		if f.rack != clientRack {
			continue
		}
		if best < 0 || moreCaughtUp(f, followers[best]) {
			best = i
		}
	}
	if best < 0 {
		return leader.id
	}
	return followers[best].id
}

// moreCaughtUp orders replicas as Kafka's ReplicaView.comparator: log end
// offset, then time since last caught up (less is better), then id.
func moreCaughtUp(a, b replicaView) bool {
	if a.logEndOffset != b.logEndOffset {
		return a.logEndOffset > b.logEndOffset
	}
	if a.sinceCaughtUpMs != b.sinceCaughtUpMs {
		return a.sinceCaughtUpMs < b.sinceCaughtUpMs
	}
	return a.id > b.id
}

// preferredReadReplica returns the replica the leader of p points the
// consumer fetch req (at rp) to, or -1 to serve it here: Kafka's
// findPreferredReadReplica, with the selector configured, on the leader,
// for a consumer fetch v11+.
func (b *Broker) preferredReadReplica(req *kmsg.FetchRequest, rp kmsg.FetchRequestTopicPartition, p *partition.Partition, listener string) int32 {
	if b.cfg.ReplicaSelectorClass != RackAwareReplicaSelector || !b.isCluster() || req.Version < 11 || !consumerFetch(req) {
		return -1
	}
	st := p.State()
	if st == nil || !st.Local || req.Rack == "" {
		return -1
	}
	im := b.cluster.currentImage()
	if im == nil {
		return -1
	}
	rackOf := func(id int32) string {
		if br := im.Brokers[id]; br != nil {
			return br.Rack
		}
		return ""
	}
	self, now := b.cfg.NodeID, time.Now().UnixMilli()
	leader := replicaView{id: self, rack: rackOf(self), logEndOffset: p.Log().EndOffset()}
	var followers []replicaView
	for _, id := range st.ISR {
		if id == self {
			continue
		}
		if br := im.Brokers[id]; br == nil || br.Fenced {
			continue
		} else if _, _, ok := brokerEndpoint(br, listener); !ok {
			continue // no endpoint on the client's listener to send it to
		}
		if v, ok := readReplicaView(p, id, rackOf(id), rp.FetchOffset, now); ok && v.holdsFetchedOffset {
			followers = append(followers, v)
		}
	}
	if id := selectReadReplica(req.Rack, leader, followers); id != self {
		return id
	}
	return -1
}

// answerWithReadReplica fills sp for a read the leader sends to replica
// id: no records, the leader's offsets, after the leader epoch check
// Kafka's fetchOffsetSnapshot makes.
func (b *Broker) answerWithReadReplica(rp kmsg.FetchRequestTopicPartition, p *partition.Partition, id int32, sp *kmsg.FetchResponseTopicPartition) {
	if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); e != nil {
		sp.ErrorCode = e.Code
		return
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.HighWatermark(), p.LastStableOffset(), p.Log().StartOffset()
	sp.PreferredReadReplica = id
	b.metrics.fetchFromFollower.preferredReplicaTo.Inc()
}

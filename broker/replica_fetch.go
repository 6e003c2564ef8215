package broker

// The leader's side of a replica fetch (Kafka's Partition.fetchRecords for
// a follower): a Fetch whose replica id (ReplicaState from v15) names a
// broker, in cluster mode.
//
// The broker must be a replica of the partition (NOT_LEADER_OR_FOLLOWER
// otherwise) fetching at this leader's epoch (FENCED_LEADER_EPOCH when its
// epoch is older, UNKNOWN_LEADER_EPOCH when newer). A follower whose last
// fetched epoch ends here before its fetch offset, or is not an epoch of
// this log, is answered with the diverging epoch and where it ends (v12+,
// KIP-595), and no records, for it to truncate. Otherwise the read goes up
// to the log end, not the high watermark, whatever the isolation level, and
// the fetch offset is the follower's log end offset: the follower's state
// is updated (partition/replica.go), which may move the high watermark (waking
// consumers and acks=all produces) or put the follower back in the ISR.

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/gregor-broker/gregor/storage"
)

// readReplica is readPartition for a fetch from replica.
//
// urgent is set when the follower has not been sent the current high
// watermark yet: the fetch is answered without waiting for data, so that
// followers learn a new high watermark at once (Kafka's DelayedFetch
// completes a follower's fetch whose high watermark is behind).
//
// A partition that a replication throttle holds back (replication_throttle.go)
// is answered without records; throttledBytes sums the record bytes of the
// partitions the leader's throttle lists.
func (b *Broker) readReplica(req *kmsg.FetchRequest, rp kmsg.FetchRequestTopicPartition, t *topic, p *partition.Partition, replica int32, limit int, minOneBatch bool, sp *kmsg.FetchResponseTopicPartition, urgent *bool, throttledBytes *int64) storage.Slice {
	st := p.State()
	if st == nil || !slices.Contains(st.Replicas, replica) || replica == b.cfg.NodeID {
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return storage.Slice{}
	}
	if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); e != nil {
		sp.ErrorCode = e.Code
		return storage.Slice{}
	}
	hw, lso, start := p.HighWatermark(), p.LastStableOffset(), p.Log().StartOffset()
	if req.Version >= 12 && rp.LastFetchedEpoch >= 0 {
		epoch, end := p.Log().EndOffsetForEpoch(rp.LastFetchedEpoch)
		if epoch < rp.LastFetchedEpoch || end < rp.FetchOffset {
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = epoch, end
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, start
			return storage.Slice{}
		}
	}
	leo := p.Log().EndOffset()
	if rp.FetchOffset < start || rp.FetchOffset > leo {
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		return storage.Slice{}
	}
	throttle, listed := b.leaderThrottles(t, p, replica)
	if throttle {
		limit, minOneBatch = 0, false
	}
	var records storage.Slice
	if limit > 0 || minOneBatch {
		var err error
		records, err = p.Log().ReadSlice(rp.FetchOffset, max(limit, 0), leo)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) {
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
			} else {
				b.log.Error("read failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
				sp.ErrorCode = kerr.KafkaStorageError.Code
			}
			return storage.Slice{}
		}
		if !minOneBatch && records.Len() > int64(limit) {
			records.Release()
			records = storage.Slice{}
		}
	}
	eligible := isrEligible(b.cluster.currentImage(), replica, req.ReplicaState.Epoch)
	ok, moved, expand, staleHW := p.FollowerFetch(replica, req.ReplicaState.Epoch, rp.FetchOffset, leo, rp.CurrentLeaderEpoch, eligible, time.Now().UnixMilli())
	if !ok {
		records.Release()
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return storage.Slice{}
	}
	if p.FollowerLogStart(replica, rp.LogStartOffset) {
		moved = true // a DeleteRecords may be waiting for it
	}
	if moved {
		p.Wake()
		hw = p.HighWatermark()
		lso = p.LastStableOffset()
	}
	if expand != nil {
		b.log.Info("expanding the ISR", "topic", p.Topic(), "partition", p.Index(), "isr", expand)
		b.cluster.repl.AlterISR(p, t.id)
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, start
	if staleHW {
		*urgent = true
	}
	if listed {
		*throttledBytes += records.Len()
	}
	return records
}

// isrEligible reports whether broker may join an ISR: registered in the
// image, unfenced, and at the broker epoch it fetched with (-1: not given,
// below Fetch v15).
func isrEligible(im *metadata.Image, broker int32, epoch int64) bool {
	if im == nil {
		return false
	}
	br := im.Brokers[broker]
	return br != nil && !br.Fenced && (epoch < 0 || br.Epoch == epoch)
}

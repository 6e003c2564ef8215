package broker

// OffsetForLeaderEpoch (key 23), v2-v4, the range Kafka 4 serves.
//
// Behavior:
//   - per partition, the largest leader epoch at or below the requested one
//     and where it ended, from the log's leader-epoch checkpoint (Kafka's
//     LeaderEpochFileCache.endOffsetFor); (-1, -1) with no error when the
//     log cannot say;
//   - errors as Kafka's ReplicaManager: UNKNOWN_TOPIC_OR_PARTITION, and
//     FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH for an older or newer
//     current leader epoch, each with epoch and end offset -1.
//
// Version notes:
//   - v3+ carries ReplicaId, which changes nothing; v4 is flexible.
//
// docs/apis.md#offsetforleaderepoch has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

func init() { register(23, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(b *Broker, r *request, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.OffsetForLeaderEpochResponse](req)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			var p *partition.Partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if p.NotLeader() {
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); e != nil {
				sp.ErrorCode = e.Code
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

package broker

// OffsetForLeaderEpoch (key 23), v2-v4, the range Kafka 4 serves.
//
// Answers, for each partition, the largest leader epoch at or below the
// requested one and the offset where it ended, from the partition log's
// leader-epoch checkpoint (storage's EndOffsetForEpoch, Kafka's
// LeaderEpochFileCache.endOffsetFor): the requested epoch and the log end
// offset for the current epoch; for an older epoch the next epoch's start
// offset; UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET (-1, -1) with no error
// when the log cannot say (an epoch newer than any, or -1). Consumers use it
// (KIP-320) to detect log truncation after a leader change; followers will
// use it to truncate when replication exists.
//
// A single node leads every partition at epoch 0 from its first start, so
// the answers are the current epoch's. Errors, as Kafka's
// ReplicaManager.lastOffsetForLeaderEpoch: an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; a current leader epoch (v2+, -1 for none)
// older than the partition's is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH. Every error carries epoch -1 and end offset -1.
// There is no authorizer, so TOPIC_AUTHORIZATION_FAILED never occurs.
// ReplicaId (v3+) changes nothing: this broker is every partition's leader.
// v4: flexible.

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

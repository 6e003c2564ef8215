package broker

// DescribeQuorum (key 55), v0-v1, in cluster mode only (a single node has
// no quorum and does not advertise it).
//
// Behavior:
//   - a node whose voter is not the raft leader forwards the request to
//     the active controller's node, as Kafka's brokers, since only the
//     leader knows each voter's progress;
//   - the answer is __cluster_metadata partition 0: the leader, its term as
//     leader epoch, the commit index as high watermark, and each voter's
//     and observer's (broker-only node, raft learner) log end, up to which
//     its log matches the leader's;
//   - UNKNOWN_TOPIC_OR_PARTITION for any other partition;
//     NOT_LEADER_OR_FOLLOWER for a forwarded request whose leader is not
//     this node.
//
// Version notes:
//   - v1's LastFetchTimestamp and LastCaughtUpTimestamp are -1 (Kafka's
//     "unknown"): Gregor keeps no fetch times.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerScoped(clusterOnly, 55, 0, 1, handleDescribeQuorum) }

func handleDescribeQuorum(b *Broker, r *request, req *kmsg.DescribeQuorumRequest) (kmsg.Response, error) {
	q := b.cluster.ctrl.Node().Quorum()
	if q.Leader >= 0 && q.Leader != b.cfg.NodeID && !forwarded(r) {
		if addr, err := b.cluster.activeEndpoint(q.Leader); err == nil {
			ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
			defer cancel()
			fwd := *req
			raw, err := b.cluster.rpc.do(ctx, addr, &fwd)
			if err == nil {
				resp := raw.(*kmsg.DescribeQuorumResponse)
				resp.SetVersion(req.Version)
				return resp, nil
			}
			b.log.Debug("forwarding DescribeQuorum to the active controller failed", "err", err)
		}
	}
	resp := newResponse[*kmsg.DescribeQuorumResponse](req)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeQuorumResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDescribeQuorumResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case rt.Topic != clusterMetadataTopic || rp.Partition != 0:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case q.Leader != b.cfg.NodeID:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				sp.LeaderID, sp.LeaderEpoch = q.Leader, int32(q.Term)
			default:
				sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = q.Leader, int32(q.Term), int64(q.Commit)
				for _, v := range q.Voters {
					rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rs.ReplicaID, rs.LogEndOffset = v.NodeID, int64(v.LogEnd)
					sp.CurrentVoters = append(sp.CurrentVoters, rs)
				}
				sp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
				for _, o := range q.Observers {
					rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rs.ReplicaID, rs.LogEndOffset = o.NodeID, int64(o.LogEnd)
					sp.Observers = append(sp.Observers, rs)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

package broker

// DescribeTopicPartitions (key 75), v0, what kafka-topics --describe and the
// Java admin client's describeTopics use from Kafka 3.8 on.
//
// Behavior:
//   - topics in name order from the cursor's topic and partition; an empty
//     list is every existing topic; at most ResponsePartitionLimit
//     partitions (clamped to 1..2000, Kafka's
//     max.request.partition.size.limit default), NextCursor naming the
//     first left out;
//   - UNKNOWN_TOPIC_OR_PARTITION for a missing named topic
//     (INVALID_TOPIC_EXCEPTION for a bad name); a cursor whose topic is not
//     in a non-empty list, or with a negative partition, is INVALID_REQUEST
//     for every requested topic, as Kafka's handler throws;
//   - authorized operations are every topic operation (no authorizer);
//   - on a cluster, the image's leader, replicas and ISR
//     (LEADER_NOT_AVAILABLE without a leader), as Metadata.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(75, 0, 0, handleDescribeTopicPartitions) }

// maxDescribePartitions is Kafka's max.request.partition.size.limit default.
const maxDescribePartitions = 2000

func handleDescribeTopicPartitions(b *Broker, r *request, req *kmsg.DescribeTopicPartitionsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeTopicPartitionsResponse](req)
	all := len(req.Topics) == 0
	cursorTopic, cursorPartition := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPartition = req.Cursor.Topic, req.Cursor.Partition
	}
	var names []string
	if all {
		b.mu.RLock()
		for name := range b.catalog.byName {
			if name >= cursorTopic {
				names = append(names, name)
			}
		}
		b.mu.RUnlock()
	} else {
		seen := map[string]bool{}
		for _, rt := range req.Topics {
			if rt.Topic >= cursorTopic && !seen[rt.Topic] {
				seen[rt.Topic] = true
				names = append(names, rt.Topic)
			}
		}
		if req.Cursor != nil && (!seen[cursorTopic] || cursorPartition < 0) {
			for _, rt := range req.Topics {
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				name := rt.Topic
				st.Topic, st.ErrorCode, st.Partitions = &name, kerr.InvalidRequest.Code, []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil
		}
	}
	if all && req.Cursor != nil && cursorPartition < 0 {
		return resp, nil // Kafka's error response names the requested topics: none
	}
	sort.Strings(names)

	remaining := max(min(req.ResponsePartitionLimit, maxDescribePartitions), 1)
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topicName := name
		st.Topic = &topicName
		st.IsInternal = isInternalTopic(name)
		st.AuthorizedOperations = allTopicOperations
		t := b.lookupTopic(name)
		if t == nil {
			if all {
				continue // deleted since listed
			}
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if validateTopicName(name) != nil {
				st.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.id
		parts := b.partitions(t)
		first := int32(0)
		if name == cursorTopic {
			first = cursorPartition
		}
		upper := min(int32(len(parts)), first+remaining)
		for i := first; i < upper; i++ {
			p := parts[i]
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.Partition = p.Index()
			sp.LeaderID = b.cfg.NodeID
			sp.LeaderEpoch = p.LeaderEpoch()
			sp.Replicas = []int32{b.cfg.NodeID}
			sp.ISR = []int32{b.cfg.NodeID}
			sp.EligibleLeaderReplicas = []int32{}
			sp.LastKnownELR = []int32{}
			sp.OfflineReplicas = []int32{}
			if st := p.State(); st != nil {
				// The image's leadership, replicas and ISR.
				sp.LeaderID, sp.LeaderEpoch = st.Leader, st.LeaderEpoch
				sp.Replicas, sp.ISR = st.Replicas, st.ISR
				sp.OfflineReplicas = b.cluster.offline(st.Replicas)
				if st.Leader < 0 {
					sp.ErrorCode = kerr.LeaderNotAvailable.Code
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if st.Partitions == nil {
			st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		}
		resp.Topics = append(resp.Topics, st)
		if upper < int32(len(parts)) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: upper}
			break
		}
		if upper > first {
			remaining -= upper - first
		}
	}
	return resp, nil
}

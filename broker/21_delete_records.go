package broker

// DeleteRecords (key 21), v0-v2, the range Kafka 4 serves.
//
// Moves a partition's log start offset forward to the requested offset (-1
// means the high watermark), deleting the segments wholly below it, and
// answers with the new low watermark (the log start offset). The new start
// is checkpointed before the answer, so it survives a restart; Fetch and
// ListOffsets honour it at once (a fetch below it is OFFSET_OUT_OF_RANGE,
// earliest is the new start). An offset at or below the current start
// changes nothing and answers the current start. With one replica the low
// watermark is reached when the call returns, so TimeoutMillis is not
// waited on.
//
// Errors, as Kafka's ReplicaManager and Partition.deleteRecordsOnLeader
// decide them: an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
// an internal topic (__consumer_offsets, ...) INVALID_TOPIC_EXCEPTION; a
// topic whose cleanup.policy lacks "delete" POLICY_VIOLATION; an offset
// below -1, or above the high watermark, OFFSET_OUT_OF_RANGE; the low
// watermark is -1 with every error.
// v2: flexible.

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/storage"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(b *Broker, r *request, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DeleteRecordsResponse](req)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			var p *partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			switch {
			case internalTopics[rt.Topic]:
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.notLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				if low, kErr := b.deleteRecords(t, p, rp.Offset); kErr != nil {
					sp.ErrorCode = kErr.Code
				} else {
					sp.LowWatermark = low
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// hasListItem reports whether the comma-separated list holds item.
func hasListItem(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == item {
			return true
		}
	}
	return false
}

// deleteRecords moves p's log start offset to offset (-1: the high
// watermark) and returns the new log start offset.
func (b *Broker) deleteRecords(t *topic, p *partition, offset int64) (int64, *kerr.Error) {
	policy, ok := b.topicConfigs(t)["cleanup.policy"]
	if !ok {
		policy, _ = topicDefault("cleanup.policy")(b)
	}
	if !hasListItem(policy, "delete") {
		return -1, kerr.PolicyViolation
	}
	if offset == -1 {
		offset = p.highWatermark()
	}
	if offset < 0 || offset > p.highWatermark() {
		return -1, kerr.OffsetOutOfRange
	}
	if err := p.log.SetStartOffset(offset); err != nil {
		if errors.Is(err, storage.ErrClosed) { // deleted meanwhile
			return -1, kerr.UnknownTopicOrPartition
		}
		b.log.Error("deleting records failed", "topic", p.topic, "partition", p.index, "offset", offset, "err", err)
		return -1, kerr.KafkaStorageError
	}
	return p.log.StartOffset(), nil
}

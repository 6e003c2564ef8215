package broker

// DeleteRecords (key 21), v0-v2, the range Kafka 4 serves.
//
// Moves a partition's log start offset forward to the requested offset (-1
// means the high watermark), deleting the segments wholly below it, and
// answers with the new low watermark (the log start offset). The new start
// is checkpointed before the answer, so it survives a restart; Fetch and
// ListOffsets honour it at once (a fetch below it is OFFSET_OUT_OF_RANGE,
// earliest is the new start). An offset at or below the current start
// changes nothing and answers the current start. On a single node the low
// watermark is reached when the call returns, so TimeoutMillis is not
// waited on. In cluster mode, as Kafka's DelayedDeleteRecords, the answer
// waits until the low watermark - the smallest log start offset over the
// leader and its followers on live brokers, which follow the leader's log
// start - has reached the offset, or until TimeoutMillis
// (REQUEST_TIMED_OUT, the records being deleted on the leader already);
// NOT_LEADER_OR_FOLLOWER if the broker stops leading meanwhile.
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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/storage"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(b *Broker, r *request, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DeleteRecordsResponse](req)
	var waits []lowWatermarkWait
	for ti, rt := range req.Topics {
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
			case isInternalTopic(rt.Topic):
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.notLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				if low, required, kErr := b.deleteRecords(t, p, rp.Offset); kErr != nil {
					sp.ErrorCode = kErr.Code
				} else {
					sp.LowWatermark = low
					if p.cluster.Load() != nil {
						waits = append(waits, lowWatermarkWait{p: p, required: required, topic: ti, partition: len(st.Partitions)})
					}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		if err := awaitLowWatermarks(r, req.TimeoutMillis, resp, waits); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// lowWatermarkWait is a DeleteRecords partition waiting for its followers.
type lowWatermarkWait struct {
	p                *partition
	required         int64
	topic, partition int
}

// awaitLowWatermarks waits until each partition's low watermark reaches
// the offset deleted to, as Kafka's DelayedDeleteRecords, filling in the
// low watermarks. An error means the connection is closing.
func awaitLowWatermarks(r *request, timeoutMs int32, resp *kmsg.DeleteRecordsResponse, waits []lowWatermarkWait) error {
	wake := make(chan struct{}, 1)
	for _, w := range waits {
		w.p.watch(wake)
	}
	defer func() {
		for _, w := range waits {
			w.p.unwatch(wake)
		}
	}()
	timer := time.NewTimer(time.Duration(max(timeoutMs, 0)) * time.Millisecond)
	defer timer.Stop()
	for {
		still := waits[:0]
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.partition]
			low, ok := w.p.lowWatermark()
			switch {
			case !ok:
				sp.ErrorCode, sp.LowWatermark = kerr.NotLeaderForPartition.Code, -1
			case low >= w.required:
				sp.LowWatermark = low
			default:
				sp.LowWatermark = low
				still = append(still, w)
			}
		}
		waits = still
		if len(waits) == 0 {
			return nil
		}
		select {
		case <-wake:
		case <-timer.C:
			for _, w := range waits {
				resp.Topics[w.topic].Partitions[w.partition].ErrorCode = kerr.RequestTimedOut.Code
			}
			return nil
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
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
// watermark) and returns the new log start offset and the offset deleted
// to.
func (b *Broker) deleteRecords(t *topic, p *partition, offset int64) (int64, int64, *kerr.Error) {
	policy, ok := b.topicConfigs(t)["cleanup.policy"]
	if !ok {
		policy, _ = topicDefault("cleanup.policy")(b)
	}
	if !hasListItem(policy, "delete") {
		return -1, -1, kerr.PolicyViolation
	}
	if offset == -1 {
		offset = p.highWatermark()
	}
	if offset < 0 || offset > p.highWatermark() {
		return -1, -1, kerr.OffsetOutOfRange
	}
	if err := p.log.SetStartOffset(offset); err != nil {
		if errors.Is(err, storage.ErrClosed) { // deleted meanwhile
			return -1, -1, kerr.UnknownTopicOrPartition
		}
		b.log.Error("deleting records failed", "topic", p.topic, "partition", p.index, "offset", offset, "err", err)
		return -1, -1, kerr.KafkaStorageError
	}
	return p.log.StartOffset(), offset, nil
}

package broker

// DeleteRecords (key 21), v0-v2, the range Kafka 4 serves.
//
// Behavior:
//   - moves the log start offset up to the offset (-1: the high
//     watermark), deleting the segments wholly below, checkpointed before
//     the answer, honoured at once by Fetch and ListOffsets;
//   - on a cluster the answer waits for the low watermark over the live
//     replicas, or TimeoutMillis (REQUEST_TIMED_OUT), as Kafka's
//     DelayedDeleteRecords;
//   - errors as Kafka's: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION
//     for an internal topic, POLICY_VIOLATION without cleanup.policy
//     delete, OFFSET_OUT_OF_RANGE below -1 or above the high watermark,
//     NOT_LEADER_OR_FOLLOWER; the low watermark is -1 with every error.
//
// Version notes:
//   - v2 is flexible.
//
// docs/apis.md#deleterecords has the details.

import (
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
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
			var p *partition.Partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			switch {
			case isInternalTopic(rt.Topic):
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.NotLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				if low, required, kErr := b.deleteRecords(t, p, rp.Offset); kErr != nil {
					sp.ErrorCode = kErr.Code
				} else {
					sp.LowWatermark = low
					if p.State() != nil {
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
	p                *partition.Partition
	required         int64
	topic, partition int
}

// awaitLowWatermarks waits until each partition's low watermark reaches
// the offset deleted to, as Kafka's DelayedDeleteRecords, filling in the
// low watermarks. An error means the connection is closing.
func awaitLowWatermarks(r *request, timeoutMs int32, resp *kmsg.DeleteRecordsResponse, waits []lowWatermarkWait) error {
	wake := make(chan struct{}, 1)
	for _, w := range waits {
		w.p.Watch(wake)
	}
	defer func() {
		for _, w := range waits {
			w.p.Unwatch(wake)
		}
	}()
	timer := time.NewTimer(time.Duration(max(timeoutMs, 0)) * time.Millisecond)
	defer timer.Stop()
	for {
		still := waits[:0]
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.partition]
			low, ok := w.p.LowWatermark()
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
func (b *Broker) deleteRecords(t *topic, p *partition.Partition, offset int64) (int64, int64, *kerr.Error) {
	policy, ok := b.topicConfigs(t)["cleanup.policy"]
	if !ok {
		policy, _ = topicDefault("cleanup.policy")(b)
	}
	if !hasListItem(policy, "delete") {
		return -1, -1, kerr.PolicyViolation
	}
	if offset == -1 {
		offset = p.HighWatermark()
	}
	if offset < 0 || offset > p.HighWatermark() {
		return -1, -1, kerr.OffsetOutOfRange
	}
	if err := p.Log().SetStartOffset(offset); err != nil {
		if errors.Is(err, storage.ErrClosed) { // deleted meanwhile
			return -1, -1, kerr.UnknownTopicOrPartition
		}
		b.log.Error("deleting records failed", "topic", p.Topic(), "partition", p.Index(), "offset", offset, "err", err)
		return -1, -1, kerr.KafkaStorageError
	}
	return p.Log().StartOffset(), offset, nil
}

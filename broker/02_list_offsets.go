package broker

// ListOffsets (key 2), v1-v11, the range Kafka 4 serves.
//
// Behavior:
//   - latest is the high watermark (read_committed: the last stable
//     offset); a timestamp finds the first record, in offset order, at or
//     after it; answers at or past that bound are "none" (offset and
//     timestamp -1);
//   - earliest carries the leader epoch even for an empty log;
//   - INVALID_REQUEST for a partition named twice; any negative timestamp
//     that is not a special value of the version is UNSUPPORTED_VERSION,
//     as Kafka 4.2 answers;
//   - an isolation level other than 0 or 1 makes every partition
//     UNKNOWN_SERVER_ERROR (IsolationLevel.forId's exception, read once).
//
// Version notes:
//   - -2 earliest and -1 latest (v1+), -3 largest timestamp (v7+), -4
//     earliest local (v8+: the log start), -5 latest tiered (v9+) and -6
//     earliest pending upload (v11+), both "none" without tiered storage;
//   - v4+ checks the current leader epoch (FENCED_LEADER_EPOCH,
//     UNKNOWN_LEADER_EPOCH).
//
// docs/apis.md#listoffsets has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/protocol/batch"
)

func init() { register(2, 1, 11, handleListOffsets) }

// Special ListOffsets timestamps.
const (
	latestTimestamp                = -1
	earliestTimestamp              = -2
	maxTimestamp                   = -3
	earliestLocalTimestamp         = -4
	latestTieredTimestamp          = -5
	earliestPendingUploadTimestamp = -6
)

func handleListOffsets(b *Broker, r *request, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ListOffsetsResponse](req)
	if len(req.Topics) > 0 && !validIsolationLevel(req.IsolationLevel) {
		return invalidIsolationListOffsets(req, resp), nil
	}
	type tp struct {
		topic     string
		partition int32
	}
	seen := map[tp]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[tp{rt.Topic, rp.Partition}]++
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			var p *partition.Partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			switch {
			case seen[tp{rt.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.NotLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); e != nil && req.Version >= 4 {
					sp.ErrorCode = e.Code
					break
				}
				if err := b.listOffset(req, r, p, rp.Timestamp, &sp); err != nil {
					b.log.Error("list offsets failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
					sp.ErrorCode = kerr.KafkaStorageError.Code
					sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, r *request, p *partition.Partition, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	fetchable := p.HighWatermark()
	if req.IsolationLevel == 1 {
		fetchable = p.LastStableOffset()
	}
	v := req.Version
	switch {
	case ts == latestTimestamp:
		sp.Offset, sp.LeaderEpoch = fetchable, p.LeaderEpoch()
		return nil
	case ts == earliestTimestamp, ts == earliestLocalTimestamp && v >= 8:
		sp.Offset, sp.LeaderEpoch = p.Log().StartOffset(), p.LeaderEpoch()
		return nil
	case ts == latestTieredTimestamp && v >= 9, ts == earliestPendingUploadTimestamp && v >= 11:
		return nil // no tiered storage: none
	case ts == maxTimestamp && v >= 7:
		one, found, err := p.Log().MaxTimestampBatch()
		if err != nil || !found {
			return err
		}
		return b.recordAt(one, r, fetchable, sp, func(h *batch.Header, recTS int64) bool { return recTS == h.MaxTimestamp })
	case ts < 0:
		sp.ErrorCode = kerr.UnsupportedVersion.Code
		return nil
	default:
		one, found, err := p.Log().BatchAtTimestamp(ts)
		if err != nil || !found {
			return err
		}
		return b.recordAt(one, r, fetchable, sp, func(_ *batch.Header, recTS int64) bool { return recTS >= ts })
	}
}

// recordAt fills sp with the first record of one that matches, if it lies
// below fetchable.
func (b *Broker) recordAt(one []byte, r *request, fetchable int64, sp *kmsg.ListOffsetsResponseTopicPartition, match func(*batch.Header, int64) bool) error {
	return batch.ForEachRecord(one, &r.conn.scratch, func(h *batch.Header, rec *batch.Record) bool {
		recTS := h.RecordTimestamp(rec)
		if !match(h, recTS) {
			return true
		}
		if offset := h.BaseOffset + int64(rec.OffsetDelta); offset < fetchable {
			sp.Offset, sp.Timestamp = offset, recTS
			sp.LeaderEpoch = h.PartitionLeaderEpoch
		}
		return false
	})
}

// invalidIsolationListOffsets is Kafka's answer to a ListOffsets whose
// isolation level IsolationLevel.forId refuses: Kafka reads it once for the
// whole request, and ListOffsetsRequest.getErrorResponse answers every
// partition UNKNOWN_SERVER_ERROR with no offset or timestamp.
func invalidIsolationListOffsets(req *kmsg.ListOffsetsRequest, resp *kmsg.ListOffsetsResponse) *kmsg.ListOffsetsResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownServerError.Code
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

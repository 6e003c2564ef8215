package broker

// WriteTxnMarkers (key 27), v1-v2, the range Kafka 4.2 serves.
//
// Behavior:
//   - a transaction coordinator's request to a partition leader: write a
//     commit or abort marker for the producer in each named partition
//     (partition.WriteTxnMarker; Gregor's own coordinator takes that path
//     in process and sends this request only to other leaders,
//     txn_marker_channel.go);
//   - per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH for
//     an older producer epoch, TRANSACTION_COORDINATOR_FENCED for an older
//     coordinator epoch, KAFKA_STORAGE_ERROR for a failed write; on a
//     cluster NOT_LEADER_OR_FOLLOWER, and the answer waits for the ISR
//     (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
//     REQUEST_TIMED_OUT);
//   - a marker in __consumer_offsets goes through the group coordinator,
//     which commits or drops the producer's pending offsets (groups.go);
//   - markers of one producer id share one response entry, as in Kafka.
//
// Version notes:
//   - v0 closes the connection, as Kafka 4.2 does; v1 is flexible;
//   - v2 carries the transaction version, which changes the epoch check.
//
// docs/apis.md#writetxnmarkers has the details.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

func init() { registerScoped(everywhere, 27, 1, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(b *Broker, r *request, req *kmsg.WriteTxnMarkersRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.WriteTxnMarkersResponse](req)
	byPID := map[int64]int{} // producer id -> index in resp.Markers
	for _, m := range req.Markers {
		i, ok := byPID[m.ProducerID]
		if !ok {
			i = len(resp.Markers)
			byPID[m.ProducerID] = i
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			resp.Markers = append(resp.Markers, rm)
		}
		rm := &resp.Markers[i]
		for _, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			t := b.lookupTopic(mt.Topic)
			for _, index := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = index
				rp.ErrorCode = b.writeMarker(t, index, m, r.ctx.Done())
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
	}
	return resp, nil
}

// writeMarker writes marker m in partition index of t (nil: unknown) and
// returns the partition's error code. In cluster mode it waits for the
// in-sync replicas, or until stop is closed (the caller is going away).
func (b *Broker) writeMarker(t *topic, index int32, m kmsg.WriteTxnMarkersRequestMarker, stop <-chan struct{}) int16 {
	var p *partition.Partition
	if t != nil {
		p = b.partition(t, index)
	}
	if p == nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	if !b.leadsHere(p) {
		// Cluster mode: another broker leads it; the coordinator sends
		// the marker there once its image says so.
		return kerr.NotLeaderForPartition.Code
	}
	st := p.State()
	minISR := 1
	if st != nil {
		minISR = t.effective.Load().minInsyncReplicas
		if len(p.ISR()) < partition.EffectiveMinISR(minISR, len(st.Replicas)) {
			return kerr.NotEnoughReplicas.Code
		}
	}
	leaderEpoch := p.LeaderEpoch()
	tm := partition.TxnMarker{PID: m.ProducerID, Epoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch,
		Commit: m.Committed, TransactionVersion: m.TransactionVersion}
	var out partition.MarkerOutcome
	var err error
	if p.Topic() == offsetsTopic {
		out, err = b.groups.writeMarker(p, tm)
		if errors.Is(err, errGroupsStopped) {
			return kerr.NotLeaderForPartition.Code
		}
	} else {
		out, err = p.WriteTxnMarker(tm, time.Now().UnixMilli())
	}
	switch {
	case err != nil:
		b.log.Error("writing a transaction marker failed", "topic", p.Topic(), "partition", p.Index(), "producer_id", m.ProducerID, "err", err)
		return kerr.KafkaStorageError.Code
	case out.Refused != nil:
		b.log.Debug("transaction marker refused", "topic", p.Topic(), "partition", p.Index(), "reason", out.Message)
		return out.Refused.Code
	}
	if st != nil {
		// Kafka appends markers with acks=all: the coordinator completes
		// the transaction only once every marker is on the in-sync
		// replicas, so no leader change can lose one.
		p.Appended()
		if err := awaitCoordinatorReplication(p, out.Offset+1, leaderEpoch, minISR, interBrokerRequestTimeout, stop); err != nil {
			var ce *coordinatorAppendError
			if errors.As(err, &ce) {
				return ce.err.Code
			}
			return kerr.RequestTimedOut.Code
		}
	}
	return 0
}

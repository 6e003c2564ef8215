package broker

// The transaction coordinator's markers for partitions other brokers lead,
// after Kafka's TransactionMarkerChannelManager and
// TransactionMarkerRequestCompletionHandler. Everything here but the
// sending itself runs on the coordinator's goroutine (txns.go).
//
// A marker's partitions are grouped by their leader in the applied image;
// the markers waiting for one destination go in one WriteTxnMarkers
// request, and while it is in flight the next ones wait for its answer.
// The answer, back on the coordinator's goroutine, completes each
// partition as Kafka's completion handler does:
//
//   - NONE, and UNSUPPORTED_FOR_MESSAGE_FORMAT or UNSUPPORTED_VERSION: the
//     partition is done;
//   - UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
//     NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
//     KAFKA_STORAGE_ERROR, and a request that failed as a whole: tried
//     again after txnMarkerRetryInterval, to the partition's leader in the
//     image then; a partition whose topic is gone from the image by then
//     needs no marker (Kafka drops partitions without a leader endpoint);
//   - INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: the producer
//     or a newer coordinator has moved on; the transaction's markers are
//     abandoned, as Kafka's removeMarkersForTxn, and it stays in
//     PrepareCommit or PrepareAbort here.
//
// An answer for a transactional id this broker no longer coordinates is
// dropped: the new coordinator sends the markers again when it loads the
// transaction. A partition with no live leader waits, like Kafka's queue
// for unknown brokers, and is routed again on the retry tick.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/coordinator/txn"
)

// markerKey is one partition of one transaction's markers.
type markerKey struct {
	txnKey
	part txn.Partition
}

// txnKey is one transaction: a transactional id and its producer id and
// epoch while it prepares its end.
type txnKey struct {
	id    string
	pid   int64
	epoch int16
}

// queuedMarker is one transaction's marker for the partitions one
// destination leads.
type queuedMarker struct {
	m                txn.Marker
	coordinatorEpoch int32
	parts            []txn.Partition
}

// markerChannel is the coordinator's queues of markers for other brokers.
// Owned by the coordinator's goroutine.
type markerChannel struct {
	queued   map[int32][]queuedMarker // destination -> markers not yet sent
	inflight map[int32]bool           // destinations with a request in flight
	pending  map[markerKey]bool       // partitions queued or in flight
	// abandoned transactions are not sent again (fenced).
	abandoned map[txnKey]bool
	peers     peerClients
	results   chan markerAnswer
}

// markerAnswer is a destination's answer to one WriteTxnMarkers request,
// or the error that request failed with.
type markerAnswer struct {
	dest int32
	sent []queuedMarker
	resp *kmsg.WriteTxnMarkersResponse
	err  error
}

func newMarkerChannel(sec *peer.Security) markerChannel {
	return markerChannel{
		queued: map[int32][]queuedMarker{}, inflight: map[int32]bool{}, pending: map[markerKey]bool{},
		abandoned: map[txnKey]bool{}, peers: peerClients{clientID: "gregor-txn-markers", security: sec},
		results: make(chan markerAnswer),
	}
}

// queueRemote queues marker m for partition part, which broker leader
// leads, unless it is already queued or in flight. It reports false when
// the leader is not a live broker: the caller retries later.
func (tc *txnCoordinator) queueRemote(m txn.Marker, coordinatorEpoch int32, part txn.Partition, leader int32) bool {
	ch := &tc.markers
	k := markerKey{txnKey{m.TransactionalID, m.ProducerID, m.ProducerEpoch}, part}
	if ch.pending[k] {
		return true
	}
	if _, ok := tc.b.cluster.brokerAddr(leader); !ok {
		return false
	}
	ch.pending[k] = true
	q := ch.queued[leader]
	if n := len(q); n > 0 && q[n-1].m.TransactionalID == m.TransactionalID && q[n-1].m.ProducerID == m.ProducerID &&
		q[n-1].m.ProducerEpoch == m.ProducerEpoch && q[n-1].coordinatorEpoch == coordinatorEpoch {
		q[n-1].parts = append(q[n-1].parts, part)
		return true
	}
	ch.queued[leader] = append(q, queuedMarker{m: m, coordinatorEpoch: coordinatorEpoch, parts: []txn.Partition{part}})
	return true
}

// sendMarkers sends each destination without a request in flight every
// marker queued for it, as one WriteTxnMarkers request.
func (tc *txnCoordinator) sendMarkers(ctx context.Context) {
	ch := &tc.markers
	for dest, q := range ch.queued {
		if ch.inflight[dest] || len(q) == 0 {
			continue
		}
		delete(ch.queued, dest)
		ch.inflight[dest] = true
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		for _, qm := range q {
			km := kmsg.NewWriteTxnMarkersRequestMarker()
			km.ProducerID, km.ProducerEpoch, km.Committed = qm.m.ProducerID, qm.m.ProducerEpoch, qm.m.Commit
			km.TransactionVersion, km.CoordinatorEpoch = qm.m.TransactionVersion, qm.coordinatorEpoch
			for _, p := range qm.parts {
				i := len(km.Topics) - 1
				if i < 0 || km.Topics[i].Topic != p.Topic {
					mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
					mt.Topic = p.Topic
					km.Topics = append(km.Topics, mt)
					i++
				}
				km.Topics[i].Partitions = append(km.Topics[i].Partitions, p.Partition)
			}
			req.Markers = append(req.Markers, km)
		}
		addr, ok := tc.b.cluster.brokerAddr(dest)
		client := ch.peers.get(dest)
		tc.senders.Add(1)
		go func() {
			defer tc.senders.Done()
			ans := markerAnswer{dest: dest, sent: q}
			if !ok {
				ans.err = errNoLiveLeader
			} else {
				rctx, cancel := context.WithTimeout(ctx, interBrokerRequestTimeout)
				resp, err := client.do(rctx, addr, req)
				cancel()
				if err != nil {
					ans.err = err
				} else {
					ans.resp = resp.(*kmsg.WriteTxnMarkersResponse)
				}
			}
			select {
			case ch.results <- ans:
			case <-ctx.Done():
			}
		}()
	}
}

// errNoLiveLeader is a destination that left the image between queueing
// and sending.
var errNoLiveLeader = errors.New("broker: the markers' destination is no longer a live broker")

// markersAnswered applies a destination's answer (Kafka's
// TransactionMarkerRequestCompletionHandler) and reports the partitions
// done to the coordinator c.
func (tc *txnCoordinator) markersAnswered(c *txn.Coordinator, ans markerAnswer) {
	ch := &tc.markers
	delete(ch.inflight, ans.dest)
	codes := map[markerKey]int16{}
	if ans.resp != nil {
		for _, rm := range ans.resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					// The answer is keyed by producer id, as Kafka's.
					codes[markerKey{txnKey{pid: rm.ProducerID}, txn.Partition{Topic: rt.Topic, Partition: rp.Partition}}] = rp.ErrorCode
				}
			}
		}
	} else {
		tc.b.log.Warn("WriteTxnMarkers failed; retrying", "node", ans.dest, "err", ans.err)
	}
	now := nowMillis()
	for _, qm := range ans.sent {
		tk := txnKey{qm.m.TransactionalID, qm.m.ProducerID, qm.m.ProducerEpoch}
		for _, p := range qm.parts {
			delete(ch.pending, markerKey{tk, p})
		}
		if tc.owns(qm.m.TransactionalID) != 0 {
			continue // no longer coordinated here: the new coordinator sends them
		}
		var done []txn.Partition
		abandon := false
		for _, p := range qm.parts {
			code := kerr.NetworkException.Code
			if ans.resp != nil {
				var ok bool
				if code, ok = codes[markerKey{txnKey{pid: qm.m.ProducerID}, p}]; !ok {
					code = kerr.UnknownServerError.Code
				}
			}
			switch code {
			case 0, kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
				done = append(done, p)
			case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
				tc.b.log.Warn("transaction marker refused; abandoning the transaction's markers", "transactional_id", qm.m.TransactionalID,
					"topic", p.Topic, "partition", p.Partition, "node", ans.dest, "err", kerr.ErrorForCode(code))
				abandon = true
			default:
				if ans.resp != nil {
					tc.b.log.Info("transaction marker not written; retrying", "transactional_id", qm.m.TransactionalID,
						"topic", p.Topic, "partition", p.Partition, "node", ans.dest, "err", kerr.ErrorForCode(code))
				}
				tc.markersFailed = true
			}
		}
		if abandon {
			ch.abandoned[tk] = true
			continue
		}
		if len(done) > 0 {
			c.MarkersWritten(now, qm.m.TransactionalID, qm.m.ProducerID, qm.m.ProducerEpoch, done)
		}
	}
}

package broker

// Fetch (key 1), v4-v18, the range Kafka 4 serves.
//
// Behavior:
//   - whole batches from the one holding the fetch offset up to the high
//     watermark (the last stable offset under read_committed, with the
//     aborted transactions of what is returned), within the partition's and
//     the response's max bytes, the first batch whole even if larger;
//   - records go from the segment files to the socket with sendfile
//     (fetch_send.go), never through the heap;
//   - long poll: below min.bytes the fetch waits up to max.wait.ms for an
//     append, and the connection's later requests wait with it; a fetch of
//     no existing partition is answered at once;
//   - an isolation level other than 0 or 1 is UNKNOWN_SERVER_ERROR once a
//     partition that exists is named (IsolationLevel.forId's exception);
//   - errors: OFFSET_OUT_OF_RANGE outside [log start, log end],
//     FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH for an older or newer
//     current leader epoch;
//   - no fetch sessions (KIP-227): session id 0 in every answer, and an
//     incremental fetch (epoch > 0) is FETCH_SESSION_ID_NOT_FOUND;
//   - on a cluster a replica's fetch is a follower's (replica_fetch.go); a
//     follower serves consumers v11+ (KIP-392, fetch_follower.go);
//   - consumer_byte_rate caps max bytes and throttles (throttle.go).
//
// Version notes:
//   - v4-v18 are Kafka 4's range; v11+ carries the rack (KIP-392);
//   - v13+ names topics by id (UNKNOWN_TOPIC_ID);
//   - v15+ names the replica in ReplicaState instead of ReplicaID.
//
// docs/apis.md#fetch has the details and where they match Kafka.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/storage"
)

func init() { register(1, 4, 18, handleFetch) }

func handleFetch(b *Broker, r *request, req *kmsg.FetchRequest) (kmsg.Response, error) {
	if b.isCluster() && fetchReplicaID(req) >= 0 {
		// Replication is not subject to client quotas, but to the
		// replication throttle (replication_throttle.go).
		resp, err := fetch(b, r, req)
		if err == nil {
			b.recordLeaderThrottled(resp)
		}
		return resp, err
	}
	b.capFetch(r, req)
	resp, err := fetch(b, r, req)
	if err != nil {
		return nil, err
	}
	return b.throttleFetch(r, resp), nil
}

// fetchReplicaID is the broker a fetch comes from (ReplicaState from v15,
// ReplicaID below), or -1 for a consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// fetch answers a fetch, waiting for data as the request allows.
func fetch(b *Broker, r *request, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.FetchResponse](req)
	if req.Version >= 7 {
		if req.SessionEpoch > 0 {
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return resp, nil
		}
	}
	if !validIsolationLevel(req.IsolationLevel) && b.fetchNamesAPartition(req) {
		return invalidIsolationFetch(req, resp), nil
	}
	reply := &fetchReply{FetchResponse: resp}
	replica := int32(-1) // a single node serves every fetch as a consumer's, as before replication
	if b.isCluster() {
		replica = fetchReplicaID(req)
	}

	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var wake chan struct{}
	for {
		total, anyError, parts := b.readFetch(req, reply, replica, r.conn.l.cfg.Name)
		// With no partition to read (no topics, or none known) Kafka
		// answers at once (ReplicaManager.fetchMessages).
		if len(parts) == 0 || total >= int(req.MinBytes) || anyError || req.MaxWaitMillis <= 0 || total >= int(req.MaxBytes) {
			return reply, nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return reply, nil
		}
		if wake == nil {
			wake = make(chan struct{}, 1)
		}
		for _, p := range parts {
			p.Watch(wake)
		}
		// Re-check once registered: an append may have landed in between.
		if t2, _, _ := b.readFetch(req, reply, replica, r.conn.l.cfg.Name); t2 >= int(req.MinBytes) {
			for _, p := range parts {
				p.Unwatch(wake)
			}
			return reply, nil
		}
		reply.release() // hold no segment file while waiting; the next read takes fresh slices
		timer := time.NewTimer(remaining)
		select {
		case <-wake:
		case <-timer.C:
		case <-r.ctx.Done():
		}
		timer.Stop()
		for _, p := range parts {
			p.Unwatch(wake)
		}
		if r.ctx.Err() != nil {
			return nil, r.ctx.Err()
		}
	}
}

// validIsolationLevel is whether level is read_uncommitted (0) or
// read_committed (1), the two IsolationLevel.forId knows.
func validIsolationLevel(level int8) bool { return level == 0 || level == 1 }

// fetchNamesAPartition is whether req names a partition that exists, the
// ones Kafka goes on to read (and only then looks at the isolation level).
func (b *Broker) fetchNamesAPartition(req *kmsg.FetchRequest) bool {
	for _, rt := range req.Topics {
		t := b.lookupTopicRef(req.Version >= 13, rt.Topic, rt.TopicID)
		if t == nil {
			continue
		}
		for _, rp := range rt.Partitions {
			if b.partition(t, rp.Partition) != nil {
				return true
			}
		}
	}
	return false
}

// invalidIsolationFetch is Kafka's answer to a fetch whose isolation level
// IsolationLevel.forId refuses: the IllegalArgumentException becomes
// UNKNOWN_SERVER_ERROR in FetchRequest.getErrorResponse, at the top level,
// and below v13 also in every partition of the request.
func invalidIsolationFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) *kmsg.FetchResponse {
	code := kerr.UnknownServerError.Code
	resp.ErrorCode, resp.SessionID = code, req.SessionID
	if req.Version >= 13 {
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			sp.RecordBatches = []byte{}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// readFetch fills reply from the logs, replacing what an earlier call put
// there, and returns the record bytes gathered, whether any partition
// failed, and the partitions read.
func (b *Broker) readFetch(req *kmsg.FetchRequest, reply *fetchReply, replica int32, listener string) (total int, anyError bool, parts []*partition.Partition) {
	resp := reply.FetchResponse
	reply.release()
	reply.leaderThrottledBytes = 0
	resp.Topics = resp.Topics[:0]
	resp.Brokers = resp.Brokers[:0]
	responseBudget := int(req.MaxBytes)
	if req.Version < 3 || responseBudget <= 0 {
		responseBudget = int(^uint32(0) >> 1)
	}
	minOneBatch := true
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.lookupTopicRef(req.Version >= 13, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			// Kafka always sends a record set, empty when there is nothing;
			// librdkafka and sarama refuse a null one (size -1). The records
			// themselves go in reply.records.
			sp.RecordBatches = []byte{}
			var records storage.Slice
			var p *partition.Partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			switch {
			case t == nil && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				// Kafka's error-only partition answer has an empty, non-null
				// list of aborted transactions.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case p.NotLeader() && !b.readsAsFollower(req, p):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				if req.Version >= 12 {
					b.cluster.fetchCurrentLeader(p, &sp, resp, listener)
				}
			default:
				if id := b.preferredReadReplica(req, rp, p, listener); id >= 0 {
					// KIP-392 (fetch_follower.go): answered at once, no records.
					b.answerWithReadReplica(rp, p, id, &sp)
					anyError = true
					break
				}
				parts = append(parts, p)
				limit := min(int(rp.PartitionMaxBytes), responseBudget)
				if replica >= 0 {
					records = b.readReplica(req, rp, t, p, replica, limit, minOneBatch, &sp, &anyError, &reply.leaderThrottledBytes)
				} else {
					records = b.readPartition(req, rp, p, limit, minOneBatch, &sp)
				}
				n := int(records.Len())
				total += n
				responseBudget -= n
				if n > 0 {
					minOneBatch = false
				}
			}
			if sp.ErrorCode != 0 || replica >= 0 && sp.DivergingEpoch.EndOffset >= 0 {
				anyError = true // answered at once, as a diverging epoch is (Kafka's DelayedFetch)
			}
			st.Partitions = append(st.Partitions, sp)
			reply.records = append(reply.records, records)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return total, anyError, parts
}

// readPartition fills sp's fields but the records, and returns the records
// as a slice of the log, which the caller must release.
func (b *Broker) readPartition(req *kmsg.FetchRequest, rp kmsg.FetchRequestTopicPartition, p *partition.Partition, limit int, minOneBatch bool, sp *kmsg.FetchResponseTopicPartition) storage.Slice {
	if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); e != nil {
		sp.ErrorCode = e.Code
		return storage.Slice{}
	}
	hw, lso := p.HighWatermark(), p.LastStableOffset()
	upTo := hw
	if req.IsolationLevel == 1 {
		upTo = lso
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	start := p.Log().StartOffset()
	if rp.FetchOffset < start || rp.FetchOffset > p.Log().EndOffset() {
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		return storage.Slice{}
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, start
	if limit <= 0 && !minOneBatch {
		return storage.Slice{}
	}
	records, err := p.Log().ReadSlice(rp.FetchOffset, max(limit, 0), upTo)
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			sp.ErrorCode = kerr.OffsetOutOfRange.Code
		} else {
			b.log.Error("read failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			sp.ErrorCode = kerr.KafkaStorageError.Code
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		return storage.Slice{}
	}
	// The log returns the first batch whole even when it alone exceeds
	// limit; only the response's first batch may do that.
	if !minOneBatch && records.Len() > int64(limit) {
		records.Release()
		return storage.Slice{}
	}
	if req.IsolationLevel == 1 && records.Len() > 0 {
		sp.AbortedTransactions = abortedTransactions(p.Log().AbortedTxns(rp.FetchOffset, records.NextOffset()))
	}
	return records
}

// abortedTransactions renders the aborted transactions overlapping a
// read_committed fetch's data, [fetch offset, the offset after the data),
// as Kafka's addAbortedTransactions bounds them, so that the client drops
// their records.
func abortedTransactions(txns []storage.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(txns))
	for i, a := range txns {
		out[i] = kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out
}

// checkLeaderEpoch compares a client's current leader epoch (-1: none) with
// the partition's.
func checkLeaderEpoch(clientEpoch, leaderEpoch int32) *kerr.Error {
	switch {
	case clientEpoch == -1 || clientEpoch == leaderEpoch:
		return nil
	case clientEpoch < leaderEpoch:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

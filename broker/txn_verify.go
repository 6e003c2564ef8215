package broker

// Transaction verification on produce (KIP-890 part 1). Before a
// transactional batch may open the producer's transaction in a partition,
// the leader asks the transaction coordinator whether the transaction
// added the partition: in Kafka, an AddPartitionsToTxn with verifyOnly
// (v4+) from the leader to the coordinator; here, a call to the in-process
// coordinator (txn.Coordinator.VerifyPartitions). A batch of a transaction
// already open in the partition at the same epoch is not verified again.
// Produce v12+ comes from a transactions V2 client, which sends no
// AddPartitionsToTxn: there the question adds the partition to the
// transaction instead (Kafka's AddPartitionsToTxnManager with the
// addPartition operation), and so begins the transaction if need be.
//
// A positive answer leaves a guard for the producer in the partition
// (partition.Partition.SetTxnGuard, Kafka's VerificationGuard), set on the
// coordinator's goroutine when it answers; a marker removes it, and the
// append opens the transaction only if its guard is still there.
// So a batch verified just before its transaction was aborted cannot open
// a transaction that no marker will ever close.
//
// Answers, as Kafka's AddPartitionsToTxnManager and ReplicaManager
// translate the coordinator's: a partition not in the transaction is
// TRANSACTION_ABORTABLE for Produce v11 and INVALID_TXN_STATE before
// ("Partition was not added to the transaction"); PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS (the previous
// transaction is completing) is asked again for a while for Produce v12+
// and then passed on, and is NOT_ENOUGH_REPLICAS before v12; coordinator
// unavailability is NOT_ENOUGH_REPLICAS, which every client retries without
// a metadata refresh; INVALID_PRODUCER_ID_MAPPING is passed on. A
// request with a transactional batch but no transactional id is refused
// whole before anything else: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
// every partition, as KafkaApis.handleProduceRequest answers it.

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// lastTxnGuard numbers verification guards; 0 is never handed out.
var lastTxnGuard atomic.Uint64

// verifyTxnBatch verifies transactional batch h for partition p. It
// returns the guard to append under, or the error to answer with.
func (b *Broker) verifyTxnBatch(r *request, req *kmsg.ProduceRequest, p *partition.Partition, h *batch.Header) (uint64, *kerr.Error, string, error) {
	if req.TransactionID == nil { // the first batch was not transactional, this one is
		return 0, kerr.TransactionalIDAuthorizationFailed, "", nil
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	if p.TxnOpenAt(pid, epoch) {
		return 0, nil, "", nil
	}

	// Transactions V2: the produce adds its partition, and a
	// CONCURRENT_TRANSACTIONS (the producer's previous transaction is
	// still writing its markers, common right after EndTxn) is asked
	// again every add.partitions.to.txn.retry.backoff.ms until
	// add.partitions.to.txn.retry.backoff.max.ms (at most the request
	// timeout) has passed since the first question, as Kafka's
	// ReplicaManager does for the addPartition operation.
	add := req.Version >= 12
	start := time.Now()
	maxWait := min(time.Duration(*b.cfg.AddPartitionsToTxnRetryBackoffMaxMs)*time.Millisecond, interBrokerRequestTimeout)
	var guard uint64
	var code int16
	for {
		var err error
		guard, code, err = b.askTxnCoordinator(r, req, p, pid, epoch, add)
		if err != nil {
			return 0, nil, "", err
		}
		if !add || code != kerr.ConcurrentTransactions.Code || time.Since(start) >= maxWait {
			break
		}
		select {
		case <-time.After(time.Duration(b.cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond):
		case <-r.ctx.Done():
			return 0, nil, "", r.ctx.Err()
		}
	}
	switch code {
	case 0:
		return guard, nil, "", nil
	case kerr.ProducerFenced.Code:
		return 0, kerr.InvalidProducerEpoch, "", nil
	case kerr.TransactionAbortable.Code:
		if req.Version > 10 {
			return 0, kerr.TransactionAbortable, "", nil
		}
		return 0, kerr.InvalidTxnState, "Partition was not added to the transaction", nil
	case kerr.ConcurrentTransactions.Code:
		if add {
			// Kafka 4 passes it on to a transactions V2 producer, which
			// retries it: it is common while a commit completes.
			return 0, kerr.ConcurrentTransactions, "", nil
		}
		return 0, kerr.NotEnoughReplicas, fmt.Sprintf("Unable to verify the partition has been added to the transaction. Underlying error: %s", kerr.ErrorForCode(code)), nil
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return 0, kerr.NotEnoughReplicas, fmt.Sprintf("Unable to verify the partition has been added to the transaction. Underlying error: %s", kerr.ErrorForCode(code)), nil
	}
	return 0, kerr.ErrorForCode(code).(*kerr.Error), "", nil
}

// askTxnCoordinator asks the transaction coordinator of req's
// transactional id once whether (add false) or that (add true) producer
// pid's transaction at epoch holds p, in process or on its node, and
// returns the guard of a positive answer and the coordinator's code for p.
func (b *Broker) askTxnCoordinator(r *request, req *kmsg.ProduceRequest, p *partition.Partition, pid int64, epoch int16, add bool) (uint64, int16, error) {
	id := *req.TransactionID
	tp := txn.Partition{Topic: p.Topic(), Partition: p.Index()}
	guard := lastTxnGuard.Add(1)
	local, node, code := b.txnCoordinatorOf(id)
	switch {
	case code != 0:
		return 0, code, nil
	case !local:
		guard, code = b.verifyTxnBatchRemotely(r, node, id, p, pid, epoch, !add, guard)
		return guard, code, nil
	}
	var top int16
	var parts map[txn.Partition]int16
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		if add {
			// Transactions V2: the produce adds its partition (Kafka's
			// leader sends AddPartitionsToTxn v5 without verifyOnly).
			top = c.AddPartitions(now, id, pid, epoch, []txn.Partition{tp}, 2, in)
		} else {
			top, parts = c.VerifyPartitions(id, pid, epoch, []txn.Partition{tp}, in)
		}
		if top == 0 && parts[tp] == 0 {
			// Set on the coordinator's goroutine, which writes every
			// marker: the markers of the producer's previous transaction
			// are all written by now and cannot remove this guard; only
			// the markers of the transaction just verified can.
			p.SetTxnGuard(pid, guard)
		}
	})
	if err != nil {
		return 0, 0, err
	}
	if code == 0 {
		code = top
	}
	if code == 0 {
		code = parts[tp]
	}
	return guard, code, nil
}

// hasTransactionalRecords is Kafka's RequestUtils.hasTransactionalRecords:
// whether the first batch of some partition's records is transactional,
// from its attributes alone: the header is parsed once, by the partition's
// batch.Validate.
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if m, _ := batch.Magic(p.Records); m != 2 {
				continue // an old message set has no transactional flag
			}
			if batch.IsTransactional(p.Records) { // the attributes, read in place
				return true
			}
		}
	}
	return false
}

// refuseTransactionalProduce answers every partition of req with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (ProduceRequest.getErrorResponse);
// with acks=0 that answer is null and Kafka closes the connection instead.
func refuseTransactionalProduce(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) (kmsg.Response, error) {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.TransactionalIDAuthorizationFailed.Code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil, errAcksZeroFailed(failedPartitions(resp))
	}
	return resp, nil
}

// verifyTxnBatchRemotely asks node, the coordinator of transaction id, about
// p (verifyOnly, or adding it for a transactions V2 produce), as Kafka's
// AddPartitionsToTxnManager: the guard is set before the question is
// sent, and a marker reaching p meanwhile removes it. Unlike the in-process
// question, this one cannot be ordered against the coordinator's markers:
// a marker of the producer's previous transaction (same epoch in V2, which
// bumps it when the transaction ends), still on its way when the
// producer's next transaction sent this batch, may remove the guard of a
// positive answer. Then the question is asked again with a new guard: if
// the transaction verified has ended meanwhile, the coordinator now says
// so (a V2 transaction's end bumps the epoch: PRODUCER_FENCED; a V1 one
// leaves the partition out); if it has not, a marker of it cannot have
// been written, and the new guard stands. Kafka leaves that window open
// (INVALID_TXN_STATE on the append); asking again closes it but for a
// marker arriving between the last answer and the append.
func (b *Broker) verifyTxnBatchRemotely(r *request, node int32, id string, p *partition.Partition, pid int64, epoch int16, verifyOnly bool, guard uint64) (uint64, int16) {
	tp := txn.Partition{Topic: p.Topic(), Partition: p.Index()}
	for attempt := 1; ; attempt++ {
		p.SetTxnGuard(pid, guard)
		code := b.txns.verifier.ask(r.ctx, node, id, pid, epoch, []txn.Partition{tp}, verifyOnly)[tp]
		if code != 0 || p.HasTxnGuard(pid, guard) || attempt == 3 {
			return guard, code
		}
		guard = lastTxnGuard.Add(1)
	}
}

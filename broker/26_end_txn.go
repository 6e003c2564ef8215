package broker

// EndTxn (key 26), v0-v4. v3: flexible. v2 allows PRODUCER_FENCED (below
// it, INVALID_PRODUCER_EPOCH), v4 TRANSACTION_ABORTABLE. v5 (transactions
// V2, KIP-890 part 2: an epoch bump per transaction) is not served, since
// Gregor does not finalize transaction.version 2.
//
// Commits or aborts the producer's ongoing transaction, as Kafka's
// TransactionCoordinator.handleEndTransaction for a client of transactions
// V1: the answer is given once PrepareCommit or PrepareAbort is in
// __transaction_state; the coordinator then writes the markers into every
// partition of the transaction (txns.go) and appends CompleteCommit or
// CompleteAbort. INVALID_REQUEST for an empty transactional id,
// INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id,
// PRODUCER_FENCED for another epoch; ending again the way the last
// transaction ended succeeds, the other way (or with no transaction) is
// INVALID_TXN_STATE, and while the markers of the same end are being
// written, CONCURRENT_TRANSACTIONS.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { register(26, 0, 4, handleEndTxn) }

func handleEndTxn(b *Broker, r *request, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.EndTxnResponse](req)
	var res txn.EndResult
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64) {
		res = c.EndTxn(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		res = txn.EndResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
	}
	if res.ErrorCode == kerr.ProducerFenced.Code && req.Version < 2 {
		res.ErrorCode = kerr.InvalidProducerEpoch.Code
	}
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = res.ErrorCode, res.ProducerID, res.ProducerEpoch
	return resp, nil
}

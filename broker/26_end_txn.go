package broker

// EndTxn (key 26), v0-v5. v3: flexible. v2 allows PRODUCER_FENCED (below
// it, INVALID_PRODUCER_EPOCH), v4 TRANSACTION_ABORTABLE. v5 is transactions
// V2 (KIP-890 part 2), which Kafka picks by the request version
// (transactionVersionForEndTxn): every end bumps the producer epoch, and the
// answer carries the producer id and epoch to go on with.
//
// Commits or aborts the producer's ongoing transaction, as Kafka's
// TransactionCoordinator.handleEndTransaction (txn.Coordinator.EndTxn has
// both tables): the answer is given once PrepareCommit or PrepareAbort is
// in __transaction_state; the coordinator then writes the markers into
// every partition of the transaction (txns.go) and appends CompleteCommit
// or CompleteAbort. INVALID_REQUEST for an empty transactional id,
// INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id,
// PRODUCER_FENCED for an epoch that is neither the transaction's nor (v5) a
// retry's; ending again the way the last transaction ended succeeds, the
// other way (or with no transaction) is INVALID_TXN_STATE, and while the
// markers of the same end are being written, CONCURRENT_TRANSACTIONS. v5
// also aborts an empty transaction, bumping the epoch.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 26, 0, 5, handleEndTxn) }

func handleEndTxn(b *Broker, r *request, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.EndTxnResponse](req)
	var res txn.EndResult
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64) {
		res = c.EndTxn(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, txnVersionForEndTxn(req.Version))
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

// txnVersionForEndTxn is Kafka's TransactionVersion.transactionVersionForEndTxn.
func txnVersionForEndTxn(version int16) int16 {
	if version > 4 {
		return 2
	}
	return 0
}

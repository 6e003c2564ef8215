package broker

// EndTxn (key 26), v0-v5.
//
// Behavior:
//   - commits or aborts the producer's transaction as Kafka's
//     TransactionCoordinator (txn.Coordinator.EndTxn has both tables): the
//     answer comes once PrepareCommit or PrepareAbort is in
//     __transaction_state, then the markers are written (txns.go) and the
//     Complete state appended;
//   - INVALID_REQUEST for an empty id, INVALID_PRODUCER_ID_MAPPING,
//     PRODUCER_FENCED, INVALID_TXN_STATE for the other end or no
//     transaction, CONCURRENT_TRANSACTIONS while the same end's markers are
//     written; ending again the same way succeeds.
//
// Version notes:
//   - v2 allows PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below), v3 is
//     flexible, v4 allows TRANSACTION_ABORTABLE;
//   - v5 is transactions V2 (KIP-890 part 2): every end bumps the epoch,
//     the answer carries the id and epoch to go on with, and an empty
//     transaction is aborted too.
//
// docs/apis.md#endtxn has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 26, 0, 5, handleEndTxn) }

func handleEndTxn(b *Broker, r *request, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.EndTxnResponse](req)
	var res txn.EndResult
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		res = c.EndTxn(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, txnVersionForEndTxn(req.Version), in)
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

package broker

// DescribeTransactions (key 65), v0 (flexible).
//
// Behavior:
//   - each transactional id's state from the transaction coordinator, as
//     Kafka's handleDescribeTransactions: state name, producer id and
//     epoch, timeout, start time (-1: no transaction), and the ongoing
//     transaction's partitions (in PrepareCommit or PrepareAbort, those
//     still waiting for their marker);
//   - TRANSACTIONAL_ID_NOT_FOUND for an unknown id, INVALID_REQUEST for an
//     empty one.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(b *Broker, r *request, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeTransactionsResponse](req)
	type described struct {
		t    txn.Txn
		code int16
	}
	out := make([]described, len(req.TransactionalIDs))
	if _, err := b.txns.call(r, func(c *txn.Coordinator, _ int64, in txn.Inputs) {
		for i, id := range req.TransactionalIDs {
			out[i].t, out[i].code = c.Describe(id, in)
		}
	}); err != nil {
		return nil, err
	}
	for i, id := range req.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID, s.ErrorCode = id, out[i].code
		if s.ErrorCode == 0 {
			t := &out[i].t
			s.State, s.TimeoutMillis, s.StartTimestamp = t.State.String(), t.TimeoutMs, t.StartMs
			s.ProducerID, s.ProducerEpoch = t.ProducerID, t.ProducerEpoch
			for _, p := range t.SortedPartitions() {
				if n := len(s.Topics); n == 0 || s.Topics[n-1].Topic != p.Topic {
					tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					tt.Topic = p.Topic
					s.Topics = append(s.Topics, tt)
				}
				last := &s.Topics[len(s.Topics)-1]
				last.Partitions = append(last.Partitions, p.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}

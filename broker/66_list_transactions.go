package broker

// ListTransactions (key 66), v0-v2 (flexible).
//
// Behavior:
//   - the transaction coordinator's ids with producer id and state,
//     filtered as Kafka's listTransactionStates: by state names (unknown
//     ones listed back in UnknownStateFilters, matching nothing) and
//     producer ids.
//
// Version notes:
//   - v1+ filter by duration: transactions begun more than
//     DurationFilterMillis ago (-1: no filter);
//   - v2+ by a regular expression the whole id must match (RE2, as Kafka's
//     re2j; null or empty: no filter; invalid:
//     INVALID_REGULAR_EXPRESSION).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 66, 0, 2, handleListTransactions) }

func handleListTransactions(b *Broker, r *request, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ListTransactionsResponse](req)
	f := txn.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, DurationMs: -1}
	if req.Version >= 1 {
		f.DurationMs = req.DurationFilterMillis
	}
	if p := req.TransactionalIDPattern; req.Version >= 2 && p != nil && *p != "" {
		if _, err := regexp.Compile(*p); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = regexp.MustCompile(`^(?:` + *p + `)$`) // re2j's matches(): the whole id
	}
	var listed []txn.Listed
	var unknown []string
	if _, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		listed, unknown = c.List(now, f, in)
	}); err != nil {
		return nil, err
	}
	resp.UnknownStateFilters = unknown
	for _, l := range listed {
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = l.ID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}

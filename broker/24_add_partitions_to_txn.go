package broker

// AddPartitionsToTxn (key 24), v0-v5.
//
// Behavior:
//   - per transaction, as Kafka's KafkaApis: an unknown partition
//     (UNKNOWN_TOPIC_OR_PARTITION) or, in the client's form, an internal
//     topic's (TOPIC_AUTHORIZATION_FAILED) adds nothing, the others
//     OPERATION_NOT_ATTEMPTED; otherwise the transaction coordinator adds
//     them and its one code answers every partition (INVALID_REQUEST,
//     INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
//     CONCURRENT_TRANSACTIONS), once the state is in __transaction_state;
//   - VerifyOnly changes nothing: 0 for a partition the transaction holds,
//     TRANSACTION_ABORTABLE otherwise.
//
// Version notes:
//   - v0-v3 are the client's form, one transaction; v4+ batches them, the
//     form a leader sends its coordinator (Gregor's own leaders ask in
//     process, txn_verify.go), and is transaction version 2;
//   - v2 allows PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below), v3 is
//     flexible, v5 allows TRANSACTION_ABORTABLE.
//
// docs/apis.md#addpartitionstotxn has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 24, 0, 5, handleAddPartitionsToTxn) }

// txnAddition is one transaction of an AddPartitionsToTxn request.
type txnAddition struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	parts      []txn.Partition // in request order, without duplicates
}

func handleAddPartitionsToTxn(b *Broker, r *request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AddPartitionsToTxnResponse](req)
	var adds []txnAddition
	if req.Version < 4 {
		a := txnAddition{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch}
		for _, t := range req.Topics {
			a.parts = appendTxnPartitions(a.parts, t.Topic, t.Partitions)
		}
		adds = append(adds, a)
	} else {
		for _, t := range req.Transactions {
			a := txnAddition{id: t.TransactionalID, pid: t.ProducerID, epoch: t.ProducerEpoch, verifyOnly: t.VerifyOnly}
			for _, tt := range t.Topics {
				a.parts = appendTxnPartitions(a.parts, tt.Topic, tt.Partitions)
			}
			adds = append(adds, a)
		}
	}
	for _, a := range adds {
		codes, err := b.addPartitionsToTxn(r, req.Version, a)
		if err != nil {
			return nil, err
		}
		if req.Version < 4 {
			resp.Topics = txnResultsV3(a.parts, codes)
			continue
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = a.id
		for _, t := range txnResultsV3(a.parts, codes) {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = t.Topic
			for _, p := range t.Partitions {
				tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				tp.Partition, tp.ErrorCode = p.Partition, p.ErrorCode
				tt.Partitions = append(tt.Partitions, tp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// appendTxnPartitions adds topic's partitions to parts, skipping those
// already there.
func appendTxnPartitions(parts []txn.Partition, topic string, indexes []int32) []txn.Partition {
next:
	for _, i := range indexes {
		p := txn.Partition{Topic: topic, Partition: i}
		for _, q := range parts {
			if q == p {
				continue next
			}
		}
		parts = append(parts, p)
	}
	return parts
}

// addPartitionsToTxn serves one transaction and returns each partition's
// error code.
func (b *Broker) addPartitionsToTxn(r *request, version int16, a txnAddition) (map[txn.Partition]int16, error) {
	codes := make(map[txn.Partition]int16, len(a.parts))
	refused := false
	for _, p := range a.parts {
		switch {
		case version < 4 && isInternalTopic(p.Topic):
			codes[p] = kerr.TopicAuthorizationFailed.Code
			refused = true
		case !b.hasPartition(p.Topic, p.Partition):
			codes[p] = kerr.UnknownTopicOrPartition.Code
			refused = true
		}
	}
	if refused {
		for _, p := range a.parts {
			if _, ok := codes[p]; !ok {
				codes[p] = kerr.OperationNotAttempted.Code
			}
		}
		return codes, nil
	}
	var one int16
	var each map[txn.Partition]int16
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		if a.verifyOnly {
			one, each = c.VerifyPartitions(a.id, a.pid, a.epoch, a.parts, in)
		} else {
			one = c.AddPartitions(now, a.id, a.pid, a.epoch, a.parts, txnVersionForAddPartitions(version), in)
		}
	})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		one = code
	}
	if one == kerr.ProducerFenced.Code && version < 2 {
		one = kerr.InvalidProducerEpoch.Code
	}
	for _, p := range a.parts {
		codes[p] = one
		if one == 0 && each != nil {
			codes[p] = each[p]
		}
	}
	return codes, nil
}

// txnResultsV3 groups codes by topic, in the order of parts.
func txnResultsV3(parts []txn.Partition, codes map[txn.Partition]int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	index := map[string]int{}
	for _, p := range parts {
		i, ok := index[p.Topic]
		if !ok {
			i = len(out)
			index[p.Topic] = i
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = p.Topic
			out = append(out, t)
		}
		rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, codes[p]
		out[i].Partitions = append(out[i].Partitions, rp)
	}
	return out
}

// hasPartition reports whether partition index of topic exists.
func (b *Broker) hasPartition(topic string, index int32) bool {
	t := b.lookupTopic(topic)
	return t != nil && b.partition(t, index) != nil
}

// txnVersionForAddPartitions is Kafka's
// TransactionVersion.transactionVersionForAddPartitionsToTxn: v4+ comes
// from a partition leader adding a partition for a transactions V2 produce.
func txnVersionForAddPartitions(version int16) int16 {
	if version > 3 {
		return 2
	}
	return 0
}

package broker

// AddOffsetsToTxn (key 25), v0-v4. v3: flexible. v2 allows PRODUCER_FENCED
// (below it, INVALID_PRODUCER_EPOCH), v4 TRANSACTION_ABORTABLE.
//
// Adds the group's partition of __consumer_offsets (Kafka's partitionFor:
// the group id's Java hash modulo offsets.topic.num.partitions) to the
// producer's transaction, so that the transaction's markers reach the
// offsets a TxnOffsetCommit writes there. The transaction coordinator
// decides as for AddPartitionsToTxn (txn.Coordinator.AddPartitions), with
// the same errors; the partition need not exist yet (__consumer_offsets is
// created on its first use, and a marker for a partition that does not
// exist is not needed).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { registerScoped(everywhere, 25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(b *Broker, r *request, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AddOffsetsToTxnResponse](req)
	tp := txn.Partition{Topic: offsetsTopic, Partition: group.PartitionFor(req.Group, b.cfg.OffsetsTopicPartitions)}
	var one int16
	code, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
		one = c.AddPartitions(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.Partition{tp}, 0, in) // Kafka passes TV_0
	})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		one = code
	}
	if one == kerr.ProducerFenced.Code && req.Version < 2 {
		one = kerr.InvalidProducerEpoch.Code
	}
	resp.ErrorCode = one
	return resp, nil
}

package broker

// AddOffsetsToTxn (key 25), v0-v4.
//
// Behavior:
//   - adds the group's __consumer_offsets partition (Kafka's partitionFor:
//     the group id's Java hash modulo offsets.topic.num.partitions) to the
//     producer's transaction, so that its markers reach the offsets a
//     TxnOffsetCommit writes there;
//   - decided as AddPartitionsToTxn (txn.Coordinator.AddPartitions), with
//     the same errors; the partition need not exist yet (the topic is
//     created on first use, and a partition that does not exist needs no
//     marker).
//
// Version notes:
//   - v2 allows PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below); v3 is
//     flexible; v4 allows TRANSACTION_ABORTABLE.

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

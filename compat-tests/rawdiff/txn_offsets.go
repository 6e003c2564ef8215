package main

// TxnOffsetCommit: the refusals that come before the transaction is
// verified, and what the verification with the transaction coordinator
// answers for a transactional id it does not know.

import "github.com/twmb/franz-go/pkg/kmsg"

// txnOffsetCommit builds a TxnOffsetCommit of offset 3 for partition of
// topic in group (topic+"-g" when group is "-g"), from producer id 4242,
// which no transaction coordinator knows.
func txnOffsetCommit(version int16, group, topicSuffix string, partition int32) func(topic string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = version
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = topic+"-tx", 4242, 0
		if group != "" {
			req.Group = topic + group
		}
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic + topicSuffix
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = partition, 3, -1
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req
	}
}

func txnOffsetSetup(c *conn, topic string) error {
	if err := topicWithData(c, topic); err != nil {
		return err
	}
	return waitCoordinator(c, topic+"-g", 0)
}

// txnCoordinatorSetup also waits for the transaction coordinator of
// topic+"-tx" (Kafka creates __transaction_state for it), so that Kafka's
// verification reaches a coordinator.
func txnCoordinatorSetup(c *conn, topic string) error {
	if err := txnOffsetSetup(c, topic); err != nil {
		return err
	}
	return waitCoordinator(c, topic+"-tx", 1)
}

var txnOffsetEntries = []entry{
	{name: "TxnOffsetCommit v4 unknown topic", setup: txnOffsetSetup, req: txnOffsetCommit(4, "-g", "-missing", 0)},
	{name: "TxnOffsetCommit v4 unknown partition", setup: txnOffsetSetup, req: txnOffsetCommit(4, "-g", "", 7)},
	{name: "TxnOffsetCommit v4 empty group id", setup: txnOffsetSetup, req: txnOffsetCommit(4, "", "", 0)},
	{name: "TxnOffsetCommit v3 outside a transaction", setup: txnCoordinatorSetup, req: txnOffsetCommit(3, "-g", "", 0)},
	{name: "TxnOffsetCommit v4 outside a transaction", setup: txnCoordinatorSetup, req: txnOffsetCommit(4, "-g", "", 0)},
	{name: "TxnOffsetCommit v5 outside a transaction", setup: txnCoordinatorSetup, req: txnOffsetCommit(5, "-g", "", 0)},
}

package main

// The transaction coordinator's APIs: InitProducerId with a transactional
// id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions, and the transactional produce checks, each refusal
// compared with Kafka's. The transactional id of an entry is topic+"-tx";
// setups that need a producer leave its id and epoch in txnProducer for
// the request built right after them on the same side.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// txnProducer is the producer the last setup initialized (entries run one
// side at a time: setup, then request).
var txnProducer struct {
	id    int64
	epoch int16
}

func initTxnReq(version int16, id string, timeoutMs int32) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	return req
}

// txnSetup creates topic with data and waits for the transaction
// coordinator of topic+"-tx" (Kafka creates __transaction_state for it).
func txnSetup(c *conn, topic string) error {
	if err := topicWithData(c, topic); err != nil {
		return err
	}
	return waitCoordinator(c, topic+"-tx", 1)
}

// txnInitSetup is txnSetup, then InitProducerId for topic+"-tx".
func txnInitSetup(c *conn, topic string) error {
	if err := txnSetup(c, topic); err != nil {
		return err
	}
	deadline := time.Now().Add(setupTimeout)
	for {
		resp, err := c.roundTrip(initTxnReq(4, topic+"-tx", 60000))
		if err != nil {
			return err
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		switch {
		case r.ErrorCode == 0:
			txnProducer.id, txnProducer.epoch = r.ProducerID, r.ProducerEpoch
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("InitProducerId: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// txnCommittedSetup is txnInitSetup, then a transaction on partition 0 of
// topic committed and complete.
func txnCommittedSetup(c *conn, topic string) error {
	if err := txnInitSetup(c, topic); err != nil {
		return err
	}
	resp, err := c.roundTrip(addPartitionsReq(3, topic, txnProducer.id, txnProducer.epoch, topic)(topic))
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	deadline := time.Now().Add(setupTimeout)
	for { // the first answer is NONE; CONCURRENT_TRANSACTIONS while the markers are written
		resp, err := c.roundTrip(endTxnReq(3, true, 0)(topic))
		if err != nil {
			return err
		}
		code := resp.(*kmsg.EndTxnResponse).ErrorCode
		if code == 0 {
			if resp, err = c.roundTrip(endTxnReq(3, true, 0)(topic)); err != nil {
				return err
			}
			if resp.(*kmsg.EndTxnResponse).ErrorCode == 0 {
				return nil
			}
		} else if code != kerr.ConcurrentTransactions.Code {
			return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(code))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("EndTxn: the commit did not complete")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// addPartitionsReq adds partition 0 of each topic (topic+suffix) for
// producer pid at epoch; pid -2 means txnProducer's.
func addPartitionsReq(version int16, _ string, pid int64, epoch int16, topics ...string) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = version
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = topic+"-tx", pid, epoch
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = t, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
}

// fromSetup builds a request with the producer the setup left, its epoch
// moved by epochDelta.
func fromSetup(build func(topic string, pid int64, epoch int16) kmsg.Request, epochDelta int16) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		return build(topic, txnProducer.id, txnProducer.epoch+epochDelta)
	}
}

// endTxnReq ends topic+"-tx"'s transaction as the setup's producer, its
// epoch moved by epochDelta.
func endTxnReq(version int16, commit bool, epochDelta int16) func(string) kmsg.Request {
	return fromSetup(func(topic string, pid int64, epoch int16) kmsg.Request {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = version
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = topic+"-tx", pid, epoch, commit
		return req
	}, epochDelta)
}

func endTxnUnknown(topic string) kmsg.Request {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = topic+"-tx", 4242, 0, true
	return req
}

func addOffsetsUnknown(topic string) kmsg.Request {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = topic+"-tx", 4242, 0, topic+"-g"
	return req
}

func describeTxnReq(suffix string) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{topic + suffix}
		return req
	}
}

func listTxnReq(version int16, pattern *string, states ...string) func(string) kmsg.Request {
	return func(string) kmsg.Request {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = version
		req.StateFilters, req.TransactionalIDPattern = states, pattern
		return req
	}
}

// txnProduce sends a transactional batch for the setup's producer to
// partition 0 of topic, with the transactional id or without.
func txnProduce(version int16, withID bool) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		pid, epoch := txnProducer.id, txnProducer.epoch
		if !withID {
			pid, epoch = 4242, 0
		}
		recs := []batch.Record{{Value: []byte("v")}}
		one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid,
			ProducerEpoch: epoch, BaseSequence: 0, Transactional: true}, recs)
		if err != nil {
			panic(err)
		}
		req := produceReq(version, -1, topic, 0, one)
		if withID {
			req.TransactionID = kmsg.StringPtr(topic + "-tx")
		}
		return req
	}
}

var txnEntries = []entry{
	{name: "InitProducerId v4 transactional", setup: txnSetup, req: func(t string) kmsg.Request { return initTxnReq(4, t+"-tx", 60000) }, mask: []string{"ProducerID"}},
	{name: "InitProducerId v4 transaction timeout above the maximum", setup: txnSetup, req: func(t string) kmsg.Request { return initTxnReq(4, t+"-tx", 900001) }},
	{name: "InitProducerId v4 zero transaction timeout", setup: txnSetup, req: func(t string) kmsg.Request { return initTxnReq(4, t+"-tx", 0) }},
	{name: "InitProducerId v4 empty transactional id", setup: txnSetup, req: func(string) kmsg.Request { return initTxnReq(4, "", 60000) }},
	{name: "AddPartitionsToTxn v3 unknown transactional id", setup: txnSetup, req: func(t string) kmsg.Request { return addPartitionsReq(3, t, 4242, 0, t)(t) }},
	{name: "AddPartitionsToTxn v3 unknown topic", setup: txnInitSetup, req: fromSetup(func(t string, pid int64, epoch int16) kmsg.Request {
		return addPartitionsReq(3, t, pid, epoch, t, t+"-missing")(t)
	}, 0)},
	{name: "AddPartitionsToTxn v1 wrong epoch", setup: txnInitSetup, req: fromSetup(func(t string, pid int64, epoch int16) kmsg.Request {
		return addPartitionsReq(1, t, pid, epoch, t)(t)
	}, 1)},
	{name: "AddPartitionsToTxn v3 wrong epoch", setup: txnInitSetup, req: fromSetup(func(t string, pid int64, epoch int16) kmsg.Request {
		return addPartitionsReq(3, t, pid, epoch, t)(t)
	}, 1)},
	{name: "AddPartitionsToTxn v3 added", setup: txnInitSetup, req: fromSetup(func(t string, pid int64, epoch int16) kmsg.Request {
		return addPartitionsReq(3, t, pid, epoch, t)(t)
	}, 0)},
	{name: "AddOffsetsToTxn v3 unknown transactional id", setup: txnSetup, req: addOffsetsUnknown},
	{name: "EndTxn v3 unknown transactional id", setup: txnSetup, req: endTxnUnknown},
	{name: "EndTxn v3 no transaction", setup: txnInitSetup, req: endTxnReq(3, true, 0)},
	{name: "EndTxn v1 wrong epoch", setup: txnInitSetup, req: endTxnReq(1, false, 1)},
	{name: "EndTxn v3 wrong epoch", setup: txnInitSetup, req: endTxnReq(3, false, 1)},
	{name: "EndTxn v3 commit again", setup: txnCommittedSetup, req: endTxnReq(3, true, 0)},
	{name: "EndTxn v3 abort after commit", setup: txnCommittedSetup, req: endTxnReq(3, false, 0)},
	{name: "DescribeTransactions unknown transactional id", setup: txnSetup, req: describeTxnReq("-tx")},
	{name: "DescribeTransactions after InitProducerId", setup: txnInitSetup, req: describeTxnReq("-tx"), mask: []string{"TransactionStates.0.ProducerID"}},
	{name: "DescribeTransactions committed", setup: txnCommittedSetup, req: describeTxnReq("-tx"),
		mask: []string{"TransactionStates.0.ProducerID", "TransactionStates.0.StartTimestamp"}},
	{name: "ListTransactions v2 invalid pattern", setup: txnSetup, req: listTxnReq(2, kmsg.StringPtr("("))},
	{name: "ListTransactions v1 unknown state filter", setup: txnSetup, req: listTxnReq(1, nil, "Ongoing", "Bogus"), mask: []string{"TransactionStates"}},
	{name: "Produce v9 transactional batch without a transactional id", setup: txnSetup, req: txnProduce(9, false)},
	{name: "Produce v9 transactional batch to a partition never added", setup: txnInitSetup, req: txnProduce(9, true)},
	{name: "Produce v11 transactional batch to a partition never added", setup: txnInitSetup, req: txnProduce(11, true)},
}

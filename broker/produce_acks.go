package broker

// acks=all in cluster mode (Kafka's appendRecordsToLeader min.insync.replicas
// check and DelayedProduce).
//
// Before the append, a partition whose committed ISR is smaller than the
// topic's min.insync.replicas (capped at the replication factor, Kafka 4's
// effectiveMinIsr) refuses an acks=all batch with NOT_ENOUGH_REPLICAS and
// appends nothing. After the appends (and their fsyncs), the handler waits,
// on the connection's goroutine and holding no lock, until the high
// watermark of every partition appended to has passed its batch:
// partitions wake it when their high watermark moves or their leadership
// changes (partition.watch). A partition whose maximal ISR shrank below
// min.insync.replicas meanwhile answers NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// one this broker stopped leading NOT_LEADER_OR_FOLLOWER, and one still
// waiting when the request's timeout passes REQUEST_TIMED_OUT (the batch
// stays in the log, as in Kafka). Like any request, the wait holds the
// connection's later requests back, so one producer's order is kept.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

// enoughISR checks min.insync.replicas before an acks=all append, filling
// sp with NOT_ENOUGH_REPLICAS when the ISR is too small.
func enoughISR(t *topic, p *partition.Partition, sp *kmsg.ProduceResponseTopicPartition, version int16) bool {
	isr, replicas, leading := p.LeaderISR()
	if !leading {
		return true // the append refuses it: NOT_LEADER_OR_FOLLOWER
	}
	minISR := partition.EffectiveMinISR(t.effective.Load().minInsyncReplicas, replicas)
	if len(isr) >= minISR {
		return true
	}
	sp.ErrorCode = kerr.NotEnoughReplicas.Code
	if version >= 8 {
		msg := fmt.Sprintf("The size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for partition %s-%d", isr, minISR, p.Topic(), p.Index())
		sp.ErrorMessage = &msg
	}
	return false
}

// awaitReplication waits until every partition appended to by an acks=all
// produce has replicated its batch, or the request times out. An error
// means the connection or the broker is closing.
func (b *Broker) awaitReplication(r *request, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, flushes []pendingFlush) error {
	var waiting []pendingFlush
	for _, f := range flushes {
		if resp.Topics[f.topic].Partitions[f.partition].ErrorCode == 0 {
			waiting = append(waiting, f)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	wake := make(chan struct{}, 1)
	for _, f := range waiting {
		f.p.Watch(wake)
	}
	defer func() {
		for _, f := range flushes {
			f.p.Unwatch(wake)
		}
	}()
	timer := time.NewTimer(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	defer timer.Stop()
	for {
		still := waiting[:0]
		for _, f := range waiting {
			done, e := f.p.ReplicationDone(f.end, f.epoch, f.t.effective.Load().minInsyncReplicas)
			if !done {
				still = append(still, f)
				continue
			}
			if e != nil {
				resp.Topics[f.topic].Partitions[f.partition].ErrorCode = e.Code
			}
		}
		waiting = still
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-wake:
		case <-timer.C:
			for _, f := range waiting {
				resp.Topics[f.topic].Partitions[f.partition].ErrorCode = kerr.RequestTimedOut.Code
			}
			return nil
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

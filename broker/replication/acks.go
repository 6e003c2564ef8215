package replication

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
// changes (Partition.Watch). A partition whose maximal ISR shrank below
// min.insync.replicas meanwhile answers NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// one this broker stopped leading NOT_LEADER_OR_FOLLOWER, and one still
// waiting when the request's timeout passes REQUEST_TIMED_OUT (the batch
// stays in the log, as in Kafka). Like any request, the wait holds the
// connection's later requests back, so one producer's order is kept.
//
// EnoughISR is the check before the append, AwaitAcks the wait after it;
// both need only the partitions and their topics' min.insync.replicas.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

// EnoughISR checks min.insync.replicas before an acks=all append, filling
// sp with NOT_ENOUGH_REPLICAS when the ISR is too small.
func EnoughISR(t Topic, p *partition.Partition, sp *kmsg.ProduceResponseTopicPartition, version int16) bool {
	isr, replicas, leading := p.LeaderISR()
	if !leading {
		return true // the append refuses it: NOT_LEADER_OR_FOLLOWER
	}
	minISR := partition.EffectiveMinISR(t.MinInsyncReplicas(), replicas)
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

// An Ack is one partition an acks=all produce appended to and waits for.
type Ack struct {
	Partition *partition.Partition
	Topic     Topic  // its min.insync.replicas, read at each check
	End       int64  // the offset after the batch
	Epoch     int32  // the leader epoch of the append
	Code      *int16 // the partition's error code in the response
}

// AwaitAcks waits until every partition of acks has replicated its batch,
// or timeout passes, setting the Code of each that fails. An error is
// ctx's: the connection or the broker is closing.
func AwaitAcks(ctx context.Context, timeout time.Duration, acks []Ack) error {
	waiting := append([]Ack(nil), acks...) // compacted as partitions finish
	if len(waiting) == 0 {
		return nil
	}
	wake := make(chan struct{}, 1)
	for _, f := range waiting {
		f.Partition.Watch(wake)
	}
	defer func() {
		for _, f := range acks {
			f.Partition.Unwatch(wake)
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		still := waiting[:0]
		for _, f := range waiting {
			done, e := f.Partition.ReplicationDone(f.End, f.Epoch, f.Topic.MinInsyncReplicas())
			if !done {
				still = append(still, f)
				continue
			}
			if e != nil {
				*f.Code = e.Code
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
				*f.Code = kerr.RequestTimedOut.Code
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

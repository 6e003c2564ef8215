package broker

// What the group and transaction coordinators share about their internal
// topics (__consumer_offsets, __transaction_state): creating the topic on
// first use, and appending one batch of a coordinator's records with the
// topic's flush policy, so that an answered request is as durable as an
// answered produce.

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// Kafka's internal topics (its Topic.INTERNAL_TOPICS): written by the
// coordinators only, reported with IsInternal in Metadata and
// DescribeTopicPartitions, never auto-created by a client's request, and
// closed to Produce and DeleteRecords. This is the one list of them.
const (
	offsetsTopic         = "__consumer_offsets"  // committed offsets and group metadata
	txnStateTopic        = "__transaction_state" // transaction metadata
	shareGroupStateTopic = "__share_group_state" // share-group state (KIP-932), the share coordinator's
)

// isInternalTopic reports whether name is one of Kafka's internal topics.
func isInternalTopic(name string) bool {
	switch name {
	case offsetsTopic, txnStateTopic, shareGroupStateTopic:
		return true
	}
	return false
}

// clusterMetadataTopic is the metadata quorum's log, which DescribeQuorum
// names. It is no topic of the catalogue (Kafka's Topic.isInternal is false
// for it too); the quorum keeps it in a directory of that name.
const clusterMetadataTopic = controller.MetadataDir

// createInternalTopic creates the internal topic c describes, or finds it
// if it exists, and returns its partitions.
func (b *Broker) createInternalTopic(c topicCreation) ([]*partition.Partition, error) {
	t, kErr, msg := b.createTopic(c)
	if errors.Is(kErr, kerr.TopicAlreadyExists) {
		t, kErr = b.lookupTopic(c.name), nil
	}
	if kErr != nil || t == nil {
		return nil, fmt.Errorf("broker: creating %s: %v: %s", c.name, kErr, msg)
	}
	return b.partitions(t), nil
}

// appendByPartition appends a coordinator's records to its topic's
// partitions parts: record i goes to partition partitionOf(i), and each
// partition gets one batch (appendCoordinatorBatch, not transactional) in
// the order its first record comes. Every partition is tried; the errors
// are joined.
func (b *Broker) appendByPartition(parts []*partition.Partition, n int, partitionOf func(i int) int32, keyValue func(i int) (key, value []byte),
	timeout time.Duration, stop <-chan struct{}) error {
	byPart := map[int32][]batch.Record{}
	var order []int32
	for i := range n {
		p := partitionOf(i)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		k, v := keyValue(i)
		byPart[p] = append(byPart[p], batch.Record{OffsetDelta: int32(len(byPart[p])), Key: k, Value: v})
	}
	now := nowMillis()
	var errs []error
	for _, pi := range order {
		if err := b.appendCoordinatorBatch(parts[pi], -1, -1, byPart[pi], now, timeout, stop); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// appendCoordinatorBatch appends recs to p as one v2 batch stamped now,
// then waits for p's flush policy. A producer id of -1 makes an ordinary
// batch; any other makes a transactional batch of that producer and epoch
// with no sequence, as Kafka's coordinators write transactional offset
// commits, checked for the producer epoch only (OriginCoordinator). The
// coordinator calling it is the partition's only writer, so a refusal
// means its state is not the partition's: an error, like a failed write.
//
// In cluster mode the append is acks=all, as Kafka's coordinators write:
// refused before it (NOT_ENOUGH_REPLICAS) when the ISR is smaller than the
// topic's min.insync.replicas, and answered once the high watermark has
// passed it, or with the error that ended the wait (a coordinatorAppendError:
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER, or
// REQUEST_TIMED_OUT after timeout). The coordinator's goroutine waits,
// until stop is closed at the latest (the coordinator is stopping).
func (b *Broker) appendCoordinatorBatch(p *partition.Partition, pid int64, epoch int16, recs []batch.Record, now int64, timeout time.Duration, stop <-chan struct{}) error {
	if !b.leadsHere(p) {
		return fmt.Errorf("%w: %s-%d", errNotLocalLeader, p.Topic(), p.Index())
	}
	st := p.State()
	minISR := 1
	if st != nil {
		if t := b.lookupTopic(p.Topic()); t != nil {
			minISR = t.effective.Load().minInsyncReplicas
		}
		if isr := p.ISR(); len(isr) < partition.EffectiveMinISR(minISR, len(st.Replicas)) {
			return &coordinatorAppendError{kerr.NotEnoughReplicas, fmt.Sprintf("%s-%d has ISR %v, fewer than min.insync.replicas %d", p.Topic(), p.Index(), isr, minISR)}
		}
	}
	transactional := pid >= 0
	one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: now, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: -1, PartitionLeaderEpoch: p.LeaderEpoch(), Transactional: transactional}, recs)
	if err != nil {
		return err
	}
	origin := partition.OriginClient
	if transactional {
		origin = partition.OriginCoordinator
	}
	out, err := p.AppendBuilt(origin, one, now)
	if err != nil {
		return err
	}
	if out.Refused == kerr.NotLeaderForPartition { // the role moved since NotLeader looked
		return fmt.Errorf("%w: %s-%d", errNotLocalLeader, p.Topic(), p.Index())
	}
	if out.Refused != nil {
		return fmt.Errorf("broker: %s-%d refused the coordinator's batch: %s", p.Topic(), p.Index(), out.Message)
	}
	p.Appended()
	if err := p.Log().FlushAfterAppend(out.End); err != nil {
		return err
	}
	if st == nil {
		return nil
	}
	p.Appended() // the high watermark may have waited for the fsync
	return awaitCoordinatorReplication(p, out.End, out.LeaderEpoch, minISR, timeout, stop)
}

// awaitCoordinatorReplication waits until p's high watermark reaches end
// (repl-core's ReplicationDone), timeout passes, or stop is closed.
func awaitCoordinatorReplication(p *partition.Partition, end int64, leaderEpoch int32, minISR int, timeout time.Duration, stop <-chan struct{}) error {
	wake := make(chan struct{}, 1)
	p.Watch(wake)
	defer p.Unwatch(wake)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		done, e := p.ReplicationDone(end, leaderEpoch, minISR)
		if done {
			if e != nil {
				return &coordinatorAppendError{e, fmt.Sprintf("%s-%d: waiting for the replicas", p.Topic(), p.Index())}
			}
			return nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return &coordinatorAppendError{kerr.RequestTimedOut, fmt.Sprintf("%s-%d: the replicas did not reach offset %d within %s", p.Topic(), p.Index(), end, timeout)}
		case <-stop:
			return &coordinatorAppendError{kerr.RequestTimedOut, fmt.Sprintf("%s-%d: stopped waiting for the replicas to reach offset %d", p.Topic(), p.Index(), end)}
		}
	}
}

// coordinatorAppendError is a coordinator's append that its replicas did
// not take: the Kafka error Kafka's append path would give the
// coordinator, which maps it for its clients (appendErrorCode).
type coordinatorAppendError struct {
	err *kerr.Error
	msg string
}

func (e *coordinatorAppendError) Error() string { return "broker: " + e.msg + ": " + e.err.Message }
func (e *coordinatorAppendError) Unwrap() error { return e.err }

// Kafka's coordinators wait for the replicas as long as
// offsets.commit.timeout.ms (groups) and request.timeout.ms (the
// transaction log), their defaults.
const (
	offsetsCommitTimeout = 5 * time.Second
	txnLogAppendTimeout  = 30 * time.Second
)

// coordinatorLoadEnd is how far a coordinator loads its partition p: the
// log end in cluster mode, as Kafka's loaders read (a new leader's high
// watermark may still be behind what its predecessor acknowledged), the
// high watermark on a single node.
func coordinatorLoadEnd(p *partition.Partition) int64 {
	if p.State() != nil {
		return p.Log().EndOffset()
	}
	return p.HighWatermark()
}

// leadsHere reports whether this broker leads p: always on a single node;
// in cluster mode once the image has named it leader and the role is
// applied (a partition the catalogue has just created, whose role is not
// applied yet, is not led).
func (b *Broker) leadsHere(p *partition.Partition) bool {
	if p.State() == nil {
		return !b.isCluster()
	}
	_, ok := p.LedHere()
	return ok
}

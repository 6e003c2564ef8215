package broker

// What the group and transaction coordinators share about their internal
// topics (__consumer_offsets, __transaction_state): creating the topic on
// first use, and appending one batch of a coordinator's records with the
// topic's flush policy, so that an answered request is as durable as an
// answered produce.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// createInternalTopic creates the internal topic c describes, or finds it
// if it exists, and returns its partitions.
func (b *Broker) createInternalTopic(c topicCreation) ([]*partition, error) {
	t, kErr, msg := b.createTopic(c)
	if errors.Is(kErr, kerr.TopicAlreadyExists) {
		t, kErr = b.lookupTopic(c.name), nil
	}
	if kErr != nil || t == nil {
		return nil, fmt.Errorf("broker: creating %s: %v: %s", c.name, kErr, msg)
	}
	return b.partitions(t), nil
}

// appendCoordinatorBatch appends recs to p as one v2 batch stamped now,
// then waits for p's flush policy. A producer id of -1 makes an ordinary
// batch; any other makes a transactional batch of that producer and epoch
// with no sequence, as Kafka's coordinators write transactional offset
// commits, checked for the producer epoch only (originCoordinator). The
// coordinator calling it is the partition's only writer, so a refusal
// means its state is not the partition's: an error, like a failed write.
func appendCoordinatorBatch(p *partition, pid int64, epoch int16, recs []batch.Record, now int64) error {
	if p.notLeader() {
		return fmt.Errorf("%w: %s-%d", errNotLocalLeader, p.topic, p.index)
	}
	transactional := pid >= 0
	one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: now, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: -1, PartitionLeaderEpoch: p.leaderEpoch.Load(), Transactional: transactional}, recs)
	if err != nil {
		return err
	}
	origin := originClient
	if transactional {
		origin = originCoordinator
	}
	out, err := p.appendBatchFrom(origin, one, now)
	if err != nil {
		return err
	}
	if out.refused != nil {
		return fmt.Errorf("broker: %s-%d refused the coordinator's batch: %s", p.topic, p.index, out.message)
	}
	p.appended()
	return p.log.FlushAfterAppend(out.end)
}

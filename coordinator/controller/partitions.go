package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// AlterPartitionRequest is a partition leader's AlterPartition request:
// the ISRs it wants, each at the leader and partition epochs it has.
type AlterPartitionRequest struct {
	BrokerID    int32
	BrokerEpoch int64
	Partitions  []AlterPartitionItem
}

// AlterPartitionItem is one partition of an AlterPartition request.
type AlterPartitionItem struct {
	TopicID        metadata.UUID
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterPartitionResult is the outcome for one partition: on success the
// partition's state after the change.
type AlterPartitionResult struct {
	TopicID        metadata.UUID
	Partition      int32
	Err            error
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// AlterPartition changes ISRs, with the checks of Kafka's
// ReplicationControlManager.validateAlterPartitionData, in its order: an
// unknown topic is UNKNOWN_TOPIC_ID, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION; a leader or partition epoch above the
// controller's is NOT_CONTROLLER (this controller is behind); a lower
// leader epoch FENCED_LEADER_EPOCH; a request from a broker that does not
// lead INVALID_REQUEST; a lower partition epoch INVALID_UPDATE_VERSION; an
// ISR with non-replicas or repeats, or without the leader, INVALID_REQUEST;
// an ISR with a fenced broker INELIGIBLE_REPLICA (Kafka answers
// OPERATION_NOT_ATTEMPTED to AlterPartition v0 and v1: the caller maps
// it). A request whose broker epoch is not the broker's is
// STALE_BROKER_EPOCH as a whole (the returned error).
func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) ([]AlterPartitionResult, error) {
	results := make([]AlterPartitionResult, len(req.Partitions))
	im, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		b := im.Brokers[req.BrokerID]
		if b == nil || b.Epoch != req.BrokerEpoch {
			return nil, fmt.Errorf("controller: broker %d is not registered at epoch %d: %w", req.BrokerID, req.BrokerEpoch, kerr.StaleBrokerEpoch)
		}
		var recs []metadata.Record
		for i, item := range req.Partitions {
			r := &results[i]
			r.TopicID, r.Partition = item.TopicID, item.Partition
			r.Err = validateAlterPartition(im, req.BrokerID, item)
			if r.Err != nil {
				continue
			}
			p := im.Topics[item.TopicID].Partitions[item.Partition]
			if !slices.Equal(p.ISR, item.NewISR) {
				recs = append(recs, &metadata.PartitionChangeRecord{TopicID: item.TopicID, PartitionID: item.Partition,
					ISR: slices.Clone(item.NewISR), Leader: metadata.NoLeaderChange})
			}
		}
		return recs, nil
	})
	if err != nil {
		return nil, err
	}
	for i := range results {
		r := &results[i]
		if r.Err != nil {
			continue
		}
		p := im.Topics[r.TopicID].Partitions[r.Partition]
		r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ISR = p.Leader, p.LeaderEpoch, p.PartitionEpoch, slices.Clone(p.ISR)
	}
	return results, nil
}

func validateAlterPartition(im *metadata.Image, broker int32, item AlterPartitionItem) error {
	t := im.Topics[item.TopicID]
	if t == nil {
		return fmt.Errorf("controller: topic id %s: %w", item.TopicID, kerr.UnknownTopicID)
	}
	p := t.Partitions[item.Partition]
	if p == nil {
		return fmt.Errorf("controller: partition %s-%d: %w", t.Name, item.Partition, kerr.UnknownTopicOrPartition)
	}
	switch {
	case item.LeaderEpoch > p.LeaderEpoch, item.PartitionEpoch > p.PartitionEpoch:
		return fmt.Errorf("controller: %s-%d is at leader epoch %d and partition epoch %d here, behind the request: %w",
			t.Name, item.Partition, p.LeaderEpoch, p.PartitionEpoch, kerr.NotController)
	case item.LeaderEpoch < p.LeaderEpoch:
		return fmt.Errorf("controller: %s-%d is at leader epoch %d, not %d: %w", t.Name, item.Partition, p.LeaderEpoch, item.LeaderEpoch, kerr.FencedLeaderEpoch)
	case broker != p.Leader:
		return fmt.Errorf("controller: broker %d does not lead %s-%d (%d does): %w", broker, t.Name, item.Partition, p.Leader, kerr.InvalidRequest)
	case item.PartitionEpoch < p.PartitionEpoch:
		return fmt.Errorf("controller: %s-%d is at partition epoch %d, not %d: %w", t.Name, item.Partition, p.PartitionEpoch, item.PartitionEpoch, kerr.InvalidUpdateVersion)
	}
	for i, r := range item.NewISR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(item.NewISR[:i], r) {
			return fmt.Errorf("controller: ISR %v of %s-%d is not a set of its replicas %v: %w", item.NewISR, t.Name, item.Partition, p.Replicas, kerr.InvalidRequest)
		}
	}
	if !slices.Contains(item.NewISR, p.Leader) {
		return fmt.Errorf("controller: ISR %v of %s-%d does not hold the leader %d: %w", item.NewISR, t.Name, item.Partition, p.Leader, kerr.InvalidRequest)
	}
	for _, r := range item.NewISR {
		if b := im.Brokers[r]; b == nil || b.Fenced {
			return fmt.Errorf("controller: ISR %v of %s-%d holds fenced broker %d: %w", item.NewISR, t.Name, item.Partition, r, kerr.IneligibleReplica)
		}
	}
	return nil
}

// ElectionType is ElectLeaders' election type.
type ElectionType int8

// Election types, Kafka's codes.
const (
	ElectPreferred ElectionType = 0
	ElectUnclean   ElectionType = 1
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectionResult is the outcome for one partition.
type ElectionResult struct {
	TopicPartition
	Err error
}

// ElectLeaders runs leader elections, as Kafka's
// ReplicationControlManager.electLeaders: preferred elects the first
// replica when it is in the ISR and unfenced (else
// PREFERRED_LEADER_NOT_AVAILABLE; ELECTION_NOT_NEEDED when it leads);
// unclean elects, for a partition without a leader, the first unfenced ISR
// member or else the first unfenced replica, which becomes the ISR alone
// (ELECTION_NOT_NEEDED when a leader exists, ELIGIBLE_LEADERS_NOT_AVAILABLE
// when no replica is unfenced). An unknown partition is
// UNKNOWN_TOPIC_OR_PARTITION. With no partitions given, every partition is
// considered and only those elected are reported.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, parts []TopicPartition) ([]ElectionResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("controller: election type %d: %w", typ, kerr.InvalidRequest)
	}
	var results []ElectionResult
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = results[:0]
		all := parts == nil
		if all {
			forEachPartition(im, func(t *metadata.Topic, pid int32, _ *metadata.Partition) {
				parts = append(parts, TopicPartition{Topic: t.Name, Partition: pid})
			})
		}
		var recs []metadata.Record
		for _, tp := range parts {
			t := im.TopicByName(tp.Topic)
			var p *metadata.Partition
			if t != nil {
				p = t.Partitions[tp.Partition]
			}
			if p == nil {
				results = append(results, ElectionResult{tp, fmt.Errorf("controller: %s-%d: %w", tp.Topic, tp.Partition, kerr.UnknownTopicOrPartition)})
				continue
			}
			ch, err := elect(im, typ, p)
			if err != nil {
				if !all {
					results = append(results, ElectionResult{tp, err})
				}
				continue
			}
			ch.TopicID, ch.PartitionID = t.ID, tp.Partition
			recs = append(recs, ch)
			results = append(results, ElectionResult{TopicPartition: tp})
		}
		return recs, nil
	})
	return results, err
}

func elect(im *metadata.Image, typ ElectionType, p *metadata.Partition) (*metadata.PartitionChangeRecord, error) {
	usable := func(id int32) bool { b := im.Brokers[id]; return b != nil && !b.Fenced }
	if typ == ElectPreferred {
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf("controller: partition has no replicas: %w", kerr.PreferredLeaderNotAvailable)
		}
		pref := p.Replicas[0]
		switch {
		case p.Leader == pref:
			return nil, fmt.Errorf("controller: the preferred replica %d leads: %w", pref, kerr.ElectionNotNeeded)
		case !slices.Contains(p.ISR, pref) || !usable(pref):
			return nil, fmt.Errorf("controller: the preferred replica %d is not in the ISR or is fenced: %w", pref, kerr.PreferredLeaderNotAvailable)
		}
		return &metadata.PartitionChangeRecord{Leader: pref}, nil
	}
	if p.Leader != metadata.NoLeader {
		return nil, fmt.Errorf("controller: partition has leader %d: %w", p.Leader, kerr.ElectionNotNeeded)
	}
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && usable(r) {
			return &metadata.PartitionChangeRecord{Leader: r}, nil
		}
	}
	for _, r := range p.Replicas {
		if usable(r) {
			return &metadata.PartitionChangeRecord{Leader: r, ISR: []int32{r}}, nil
		}
	}
	return nil, fmt.Errorf("controller: no replica is unfenced: %w", kerr.EligibleLeadersNotAvailable)
}

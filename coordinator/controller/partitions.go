package controller

import (
	"context"
	"errors"
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
//
// An ISR change goes through partitionChange, so a new ISR that holds
// every target replica of a reassignment completes it; when that removes
// the leader, the change is written and the partition's result is
// NEW_LEADER_ELECTED (Kafka answers FENCED_LEADER_EPOCH to AlterPartition
// v0 and v1: the caller maps it).
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
			if r.Err == nil {
				r.Err = c.refuseInControlledShutdown(im, item)
			}
			if r.Err != nil {
				continue
			}
			t := im.Topics[item.TopicID]
			pc := newPartitionChange(im, item.TopicID, item.Partition, t.Partitions[item.Partition])
			pc.inControlledShutdown = c.controlledShutdown
			pc.isr = item.NewISR
			rec := pc.build()
			if rec == nil {
				continue
			}
			recs = append(recs, rec)
			switch {
			case rec.Leader != metadata.NoLeaderChange && rec.Leader != req.BrokerID:
				// The new ISR completed a reassignment that removed the
				// leader: the change is written, and the requester learns
				// it no longer leads.
				r.Err = kafkaError(kerr.NewLeaderElected, fmt.Sprintf(
					"The AlterPartition request from node %d for %s-%d completed the ongoing partition reassignment and elected node %d.",
					req.BrokerID, t.Name, item.Partition, rec.Leader))
				c.log.Info("AlterPartition completed a reassignment and moved leadership",
					"topic", t.Name, "partition", item.Partition, "from", req.BrokerID, "to", rec.Leader)
			case rec.Adding != nil || rec.Removing != nil:
				c.log.Info("AlterPartition completed a reassignment", "topic", t.Name, "partition", item.Partition,
					"replicas", rec.Replicas)
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

// ElectionTopic names partitions of a topic to elect leaders for.
type ElectionTopic struct {
	Topic      string
	Partitions []int32
}

// ElectionResult is the outcome for one partition: nil, or an error
// wrapping its Kafka error, whose text is Kafka's message.
type ElectionResult struct {
	Partition int32
	Err       error
}

// ElectionTopicResult is the outcome for one topic's partitions.
type ElectionTopicResult struct {
	Topic      string
	Partitions []ElectionResult
}

// ElectLeaders runs leader elections, as Kafka's
// ReplicationControlManager.electLeaders: a PREFERRED election is
// ELECTION_NOT_NEEDED when the first replica leads, an UNCLEAN one when
// the partition has a leader. Otherwise the partition's change is built
// (partitionChange): preferred elects the first replica when it is in the
// ISR and unfenced, else keeps a valid leader, else elects the next valid
// replica; unclean elects the first unfenced ISR member in replica order,
// else the first unfenced replica, which becomes the ISR alone. A change
// that changes nothing is PREFERRED_LEADER_NOT_AVAILABLE or
// ELIGIBLE_LEADERS_NOT_AVAILABLE. An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION. Results follow the request's topics and
// partitions; with topics nil, every topic is listed (by name) with its
// partitions whose answer is not ELECTION_NOT_NEEDED. Every change is
// written in one entry.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, topics []ElectionTopic) ([]ElectionTopicResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, kafkaError(kerr.InvalidRequest, fmt.Sprintf("Unknown election type %d", typ))
	}
	var results []ElectionTopicResult
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = nil
		var recs []metadata.Record
		run := func(topic string, pid int32) error {
			rec, err := c.electLeader(im, typ, topic, pid)
			if rec != nil {
				recs = append(recs, rec)
			}
			return err
		}
		if topics == nil {
			names := make([]string, 0, len(im.TopicIDs))
			for n := range im.TopicIDs {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				tr := ElectionTopicResult{Topic: n, Partitions: []ElectionResult{}}
				for _, pid := range sortedPartitionIDs(im.TopicByName(n)) {
					if err := run(n, pid); !errors.Is(err, kerr.ElectionNotNeeded) {
						tr.Partitions = append(tr.Partitions, ElectionResult{Partition: pid, Err: err})
					}
				}
				results = append(results, tr)
			}
			return recs, nil
		}
		for _, et := range topics {
			tr := ElectionTopicResult{Topic: et.Topic, Partitions: []ElectionResult{}}
			for _, pid := range et.Partitions {
				tr.Partitions = append(tr.Partitions, ElectionResult{Partition: pid, Err: run(et.Topic, pid)})
			}
			results = append(results, tr)
		}
		return recs, nil
	})
	return results, err
}

// electLeader is one partition's election (Kafka's electLeader).
func (c *Controller) electLeader(im *metadata.Image, typ ElectionType, topic string, pid int32) (*metadata.PartitionChangeRecord, error) {
	t := im.TopicByName(topic)
	if t == nil {
		return nil, kafkaError(kerr.UnknownTopicOrPartition, "No such topic as "+topic)
	}
	p := t.Partitions[pid]
	if p == nil {
		return nil, kafkaError(kerr.UnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", topic, pid))
	}
	preferred := metadata.NoLeader
	if len(p.Replicas) > 0 {
		preferred = p.Replicas[0]
	}
	if (typ == ElectPreferred && p.Leader == preferred) || (typ == ElectUnclean && p.Leader != metadata.NoLeader) {
		return nil, kafkaError(kerr.ElectionNotNeeded, "")
	}
	pc := newPartitionChange(im, t.ID, pid, p)
	pc.inControlledShutdown = c.controlledShutdown
	pc.election = electPreferredReplica
	if typ == ElectUnclean {
		pc.election = electUncleanReplica
	}
	rec := pc.build()
	if rec == nil {
		if typ == ElectPreferred {
			return nil, kafkaError(kerr.PreferredLeaderNotAvailable, "")
		}
		return nil, kafkaError(kerr.EligibleLeadersNotAvailable, "")
	}
	if len(rec.ISR) == 1 && !slices.Contains(p.ISR, rec.ISR[0]) {
		c.log.Warn("unclean leader election", "topic", topic, "partition", pid, "leader", rec.ISR[0])
	}
	return rec, nil
}

func sortedPartitionIDs(t *metadata.Topic) []int32 {
	pids := make([]int32, 0, len(t.Partitions))
	for pid := range t.Partitions {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// apiError is a Kafka error with Kafka's message for it: its text is the
// message alone, as Kafka's ApiError carries it to the client, and
// errors.Is matches the Kafka error.
type apiError struct {
	code *kerr.Error
	msg  string
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.code }

// kafkaError returns code with message msg, or with Kafka's default
// message for code when msg is "" (Kafka's new ApiError(Errors.X)).
func kafkaError(code *kerr.Error, msg string) error {
	if msg == "" {
		msg = kafkaMessages[code]
		if msg == "" {
			msg = code.Description
		}
	}
	return &apiError{code: code, msg: msg}
}

// kafkaMessages are Kafka's Errors messages where kerr's description
// differs from them.
var kafkaMessages = map[*kerr.Error]string{
	kerr.ElectionNotNeeded:           "Leader election not needed for topic partition.",
	kerr.PreferredLeaderNotAvailable: "The preferred leader was not available.",
	kerr.EligibleLeadersNotAvailable: "Eligible topic partition leaders are not available.",
	kerr.NoReassignmentInProgress:    "No partition reassignment is in progress.",
}

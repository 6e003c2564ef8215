package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Reassignment asks to move one partition to Replicas (KIP-455), or, with
// Replicas nil, to cancel the partition's ongoing reassignment.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// AlterPartitionReassignments starts or cancels partition reassignments,
// as Kafka's ReplicationControlManager.alterPartitionReassignments; the
// result for each item is nil or an error wrapping its Kafka error, whose
// text is Kafka's message. An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION.
//
// A reassignment to target T of a partition with replicas R: T must be
// non-empty and name registered brokers (fenced ones are accepted, as
// Kafka does), each once (else INVALID_REPLICA_ASSIGNMENT); then, with
// allowRFChange false (KIP-860), T must be as long as the replica set the
// partition is headed for (else INVALID_REPLICATION_FACTOR). The replicas
// become T followed by R∖T, with R∖T removing and T∖R adding (Kafka's
// PartitionReassignmentReplicas). The leader copies the partition to the
// adding replicas and adds them to the ISR (AlterPartition); once the ISR
// holds all of T the reassignment completes (partitionChange): the
// replicas become T, the removed ones leave the ISR, and a removed leader
// gives way to the first ISR member of T. A target whose replicas are all
// in the ISR already (a reordering) completes at once.
//
// Cancelling (Replicas nil) a partition without a reassignment is
// NO_REASSIGNMENT_IN_PROGRESS; otherwise the replicas and the ISR lose the
// adding replicas. When that would empty the ISR, the first original
// replica becomes the ISR alone, an unclean election allowed only with
// unclean.leader.election.enable for the topic (else
// INVALID_REPLICA_ASSIGNMENT).
//
// The changes that pass are written in one entry.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment, allowRFChange bool) ([]error, error) {
	var results []error
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = make([]error, len(reqs))
		var recs []metadata.Record
		for i, r := range reqs {
			rec, err := c.alterReassignment(im, r, allowRFChange)
			if err != nil {
				c.log.Info("unable to alter a partition reassignment", "topic", r.Topic, "partition", r.Partition, "err", err)
				results[i] = err
				continue
			}
			if rec != nil {
				recs = append(recs, rec)
			}
		}
		return recs, nil
	})
	return results, err
}

func (c *Controller) alterReassignment(im *metadata.Image, r Reassignment, allowRFChange bool) (*metadata.PartitionChangeRecord, error) {
	t := im.TopicByName(r.Topic)
	if t == nil {
		return nil, kafkaError(kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find a topic named %s.", r.Topic))
	}
	p := t.Partitions[r.Partition]
	if p == nil {
		return nil, kafkaError(kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", r.Topic, r.Partition))
	}
	pc := newPartitionChange(im, t.ID, r.Partition, p)
	if r.Replicas == nil {
		if !p.Reassigning() {
			return nil, kafkaError(kerr.NoReassignmentInProgress, "")
		}
		// Kafka's PartitionReassignmentRevert.
		replicas := withoutAll(p.Replicas, p.Adding)
		isr := withoutAll(p.ISR, p.Adding)
		unclean := c.unclean(im, r.Topic)
		if len(isr) == 0 {
			if len(replicas) == 0 {
				return nil, kafkaError(kerr.InvalidReplicaAssignment, "Invalid replica assignment: addingReplicas contains all replicas.")
			}
			if !unclean {
				return nil, kafkaError(kerr.InvalidReplicaAssignment, fmt.Sprintf(
					"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", r.Topic, r.Partition))
			}
			isr = []int32{replicas[0]}
		}
		pc.isr, pc.replicas, pc.adding, pc.removing = isr, replicas, []int32{}, []int32{}
		if unclean {
			pc.election = electUncleanReplica
		}
		return pc.build(), nil
	}
	if err := validManualAssignment(im, r.Replicas); err != nil {
		return nil, err
	}
	if !allowRFChange {
		if err := rfUnchanged(p, r.Replicas); err != nil {
			return nil, err
		}
	}
	// Kafka's PartitionReassignmentReplicas: removing and adding in broker
	// id order; the replicas are the target, then the ones leaving.
	removing := sortedDifference(p.Replicas, r.Replicas)
	adding := sortedDifference(r.Replicas, p.Replicas)
	replicas := append(slices.Clone(r.Replicas), removing...)
	if !slices.Equal(replicas, p.Replicas) {
		pc.replicas = replicas
	}
	if len(removing) > 0 {
		pc.removing = removing
	}
	if len(adding) > 0 {
		pc.adding = adding
	}
	return pc.build(), nil
}

// rfUnchanged is Kafka's validatePartitionReplicationFactorUnchanged
// (KIP-860): the target must be as long as the replica set the partition
// is headed for.
func rfUnchanged(p *metadata.Partition, target []int32) error {
	n := len(p.Replicas)
	if p.Reassigning() {
		heading := map[int32]bool{}
		for _, r := range p.Replicas {
			heading[r] = true
		}
		for _, r := range p.Adding {
			heading[r] = true
		}
		for _, r := range p.Removing {
			delete(heading, r)
		}
		n = len(heading)
	}
	if n != len(target) {
		return kafkaError(kerr.InvalidReplicationFactor, fmt.Sprintf("The replication factor is changed from %d to %d", n, len(target)))
	}
	return nil
}

// validManualAssignment is Kafka's validateManualPartitionAssignment for a
// reassignment's target: non-empty, registered brokers, no repeats
// (checked in broker id order, as Kafka does, so the messages match).
func validManualAssignment(im *metadata.Image, target []int32) error {
	if len(target) == 0 {
		return kafkaError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Clone(target)
	slices.Sort(sorted)
	for i, id := range sorted {
		if im.Brokers[id] == nil {
			return kafkaError(kerr.InvalidReplicaAssignment, fmt.Sprintf(
				"The manual partition assignment includes broker %d, but no such broker is registered.", id))
		}
		if i > 0 && sorted[i-1] == id {
			return kafkaError(kerr.InvalidReplicaAssignment, fmt.Sprintf(
				"The manual partition assignment includes the broker %d more than once.", id))
		}
	}
	return nil
}

// sortedDifference returns the members of a not in b, sorted.
func sortedDifference(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// OngoingReassignment is a partition with a reassignment in progress.
type OngoingReassignment struct {
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// TopicReassignments are a topic's ongoing reassignments.
type TopicReassignments struct {
	Topic      string
	Partitions []OngoingReassignment
}

// ListPartitionReassignments lists the ongoing reassignments, as Kafka's
// ReplicationControlManager.listPartitionReassignments: with topics nil
// every reassigning partition, else those of the named partitions
// (topics by name, partitions by id); unknown topics and partitions, and
// partitions not being reassigned, are left out, and so is a topic with
// none left. Only the active controller answers (NOT_CONTROLLER
// elsewhere), from the image of every committed write.
func (c *Controller) ListPartitionReassignments(ctx context.Context, topics []ElectionTopic) ([]TopicReassignments, error) {
	var out []TopicReassignments
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		out = nil
		list := func(t *metadata.Topic, pids []int32) {
			tr := TopicReassignments{Topic: t.Name}
			for _, pid := range pids {
				if p := t.Partitions[pid]; p != nil && p.Reassigning() {
					tr.Partitions = append(tr.Partitions, OngoingReassignment{Partition: pid,
						Replicas: slices.Clone(p.Replicas), Adding: append([]int32{}, p.Adding...), Removing: append([]int32{}, p.Removing...)})
				}
			}
			if len(tr.Partitions) > 0 {
				out = append(out, tr)
			}
		}
		if topics == nil {
			for _, id := range sortedTopicIDsByName(im) {
				t := im.Topics[id]
				list(t, sortedPartitionIDs(t))
			}
			return nil, nil
		}
		for _, et := range topics {
			if t := im.TopicByName(et.Topic); t != nil {
				list(t, et.Partitions)
			}
		}
		return nil, nil
	})
	return out, err
}

func sortedTopicIDsByName(im *metadata.Image) []metadata.UUID {
	names := make([]string, 0, len(im.TopicIDs))
	for n := range im.TopicIDs {
		names = append(names, n)
	}
	slices.Sort(names)
	ids := make([]metadata.UUID, len(names))
	for i, n := range names {
		ids[i] = im.TopicIDs[n]
	}
	return ids
}

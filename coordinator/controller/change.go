package controller

import (
	"slices"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// election is how partitionChange picks a leader, as Kafka's
// PartitionChangeBuilder.Election.
type election int8

const (
	// electOnline keeps the leader while it is valid (in the ISR and
	// unfenced), else elects the first valid replica in replica order.
	electOnline election = iota
	// electPreferredReplica elects the first replica when it is valid,
	// else keeps a valid leader, else elects the next valid replica.
	electPreferredReplica
	// electUncleanReplica is electOnline, then, without a valid replica,
	// the first unfenced replica, which becomes the ISR alone.
	electUncleanReplica
)

// partitionChange computes the PartitionChangeRecord that takes a partition
// to a target state, in the order of Kafka's PartitionChangeBuilder.build:
// a reassignment whose target replicas are all in the target ISR completes
// (the removed replicas leave the replicas and the ISR); a leader is
// elected when the current one is no longer valid; a replica set that
// loses a member bumps the leader epoch. The zero value of each target
// field is "unchanged". The caller fills the targets and calls build.
type partitionChange struct {
	im        *metadata.Image
	topicID   metadata.UUID
	partition int32
	p         *metadata.Partition

	isr, replicas, adding, removing []int32
	election                        election
	// excluded is a broker being fenced in the same write: the image still
	// shows it unfenced, but it may not lead (-1: none).
	excluded int32
	// inControlledShutdown are brokers in controlled shutdown on the active
	// controller (Controller.controlledShutdown): unfenced, but they may
	// not lead, as Kafka's isActive excludes them. Nil: none.
	inControlledShutdown map[int32]int64
}

func newPartitionChange(im *metadata.Image, topicID metadata.UUID, pid int32, p *metadata.Partition) *partitionChange {
	return &partitionChange{im: im, topicID: topicID, partition: pid, p: p,
		isr: p.ISR, replicas: p.Replicas, adding: p.Adding, removing: p.Removing,
		election: electOnline, excluded: -1}
}

// acceptable reports whether broker id may lead: registered, unfenced and
// not being fenced (Kafka's LeaderAcceptor).
func (pc *partitionChange) acceptable(id int32) bool {
	b := pc.im.Brokers[id]
	_, shuttingDown := pc.inControlledShutdown[id]
	return b != nil && !b.Fenced && id != pc.excluded && !shuttingDown
}

func (pc *partitionChange) valid(id int32) bool {
	return slices.Contains(pc.isr, id) && pc.acceptable(id)
}

// completeReassignment is Kafka's
// PartitionReassignmentReplicas.maybeCompleteReassignment: once the ISR
// without the removed replicas is non-empty and holds every remaining
// replica, the reassignment is done.
func (pc *partitionChange) completeReassignment() {
	if len(pc.adding) == 0 && len(pc.removing) == 0 {
		return
	}
	isr, replicas := pc.isr, pc.replicas
	if len(pc.removing) > 0 {
		isr = withoutAll(pc.isr, pc.removing)
		replicas = withoutAll(pc.replicas, pc.removing)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	for _, r := range replicas {
		if !slices.Contains(isr, r) {
			return
		}
	}
	pc.isr, pc.replicas, pc.adding, pc.removing = isr, replicas, []int32{}, []int32{}
}

// elect returns the leader and whether the election was unclean.
func (pc *partitionChange) elect() (int32, bool) {
	if pc.election == electPreferredReplica {
		if len(pc.replicas) > 0 && pc.valid(pc.replicas[0]) {
			return pc.replicas[0], false
		}
		if pc.valid(pc.p.Leader) {
			return pc.p.Leader, false
		}
		for _, r := range pc.replicas[min(1, len(pc.replicas)):] {
			if pc.valid(r) {
				return r, false
			}
		}
		return metadata.NoLeader, false
	}
	if pc.valid(pc.p.Leader) {
		return pc.p.Leader, false
	}
	for _, r := range pc.replicas {
		if pc.valid(r) {
			return r, false
		}
	}
	if pc.election == electUncleanReplica {
		for _, r := range pc.replicas {
			if pc.acceptable(r) {
				return r, true
			}
		}
	}
	return metadata.NoLeader, false
}

// build returns the record, or nil when nothing would change.
func (pc *partitionChange) build() *metadata.PartitionChangeRecord {
	rec := &metadata.PartitionChangeRecord{TopicID: pc.topicID, PartitionID: pc.partition, Leader: metadata.NoLeaderChange}
	pc.completeReassignment()
	if leader, unclean := pc.elect(); leader != pc.p.Leader {
		rec.Leader = leader
		if unclean {
			// The unclean leader's log is the partition's now: data the old
			// ISR had and it lacks is lost.
			rec.ISR = []int32{leader}
		}
	}
	if rec.Leader == metadata.NoLeaderChange && !containsAll(pc.replicas, pc.p.Replicas) {
		// A replica left: a new leader epoch fences it.
		rec.Leader = pc.p.Leader
	}
	if rec.ISR == nil && len(pc.isr) > 0 && !slices.Equal(pc.isr, pc.p.ISR) {
		rec.ISR = slices.Clone(pc.isr)
	}
	if !slices.Equal(pc.replicas, pc.p.Replicas) {
		rec.Replicas = slices.Clone(pc.replicas)
	}
	if !slices.Equal(pc.adding, pc.p.Adding) {
		rec.Adding = append([]int32{}, pc.adding...)
	}
	if !slices.Equal(pc.removing, pc.p.Removing) {
		rec.Removing = append([]int32{}, pc.removing...)
	}
	if rec.Leader == metadata.NoLeaderChange && rec.ISR == nil && rec.Replicas == nil && rec.Adding == nil && rec.Removing == nil {
		return nil
	}
	return rec
}

// containsAll reports whether every member of b is in a.
func containsAll(a, b []int32) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// withoutAll returns s without the members of drop, in order.
func withoutAll(s, drop []int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}

package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PlacementBroker is a broker that can hold replicas.
type PlacementBroker struct {
	ID   int32
	Rack string
}

// Place assigns replicas for partitions startPartition .. startPartition+
// partitions-1, rf replicas each, over brokers, in the manner of Kafka's
// replica assignment (AdminUtils.assignReplicasToBrokers, which KRaft's
// StripedReplicaPlacer refines): leaders go round-robin over the brokers
// from a random start, followers follow at a shift that is random and grows
// each time the leaders wrap around, so leadership and replicas spread
// evenly. When any broker has a rack, brokers are interleaved by rack and
// each partition's replicas take distinct racks before any rack holds two
// (brokers without a rack share the rack ""). rnd makes the choices; the
// same rnd state gives the same placement.
func Place(brokers []PlacementBroker, partitions int, rf int, startPartition int, rnd *rand.Rand) ([][]int32, error) {
	if partitions <= 0 {
		return nil, fmt.Errorf("controller: number of partitions must be larger than 0: %w", kerr.InvalidPartitions)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("controller: replication factor must be larger than 0: %w", kerr.InvalidReplicationFactor)
	}
	if rf > len(brokers) {
		return nil, fmt.Errorf("controller: unable to replicate the partition %d time(s): the target replication factor of %d cannot be reached because only %d broker(s) are registered: %w",
			rf, rf, len(brokers), kerr.InvalidReplicationFactor)
	}
	list := arrange(brokers)
	n := len(list)
	racks := map[int32]string{}
	rackSet := map[string]bool{}
	rackAware := false
	for _, b := range brokers {
		racks[b.ID] = b.Rack
		rackSet[b.Rack] = true
		if b.Rack != "" {
			rackAware = true
		}
	}
	start := rnd.IntN(n)
	shift := rnd.IntN(n)
	out := make([][]int32, 0, partitions)
	for p := startPartition; p < startPartition+partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		replicas := []int32{list[first]}
		if !rackAware {
			for j := 0; j < rf-1; j++ {
				replicas = append(replicas, list[replicaIndex(first, shift, j, n)])
			}
			out = append(out, replicas)
			continue
		}
		usedRacks := map[string]bool{racks[list[first]]: true}
		// Every other broker comes up within n-1 steps of k, so the loop
		// ends well inside its bound.
		for k := 0; len(replicas) < rf && k < 4*n; k++ {
			b := list[replicaIndex(first, shift*len(rackSet), k, n)]
			if slices.Contains(replicas, b) {
				continue
			}
			if usedRacks[racks[b]] && len(usedRacks) < len(rackSet) {
				continue
			}
			replicas = append(replicas, b)
			usedRacks[racks[b]] = true
		}
		out = append(out, replicas)
	}
	return out, nil
}

// replicaIndex is the broker index of a partition's follower j: the first
// replica's index moved on by 1 + (shift+j) mod (n-1), so it is never the
// first replica itself.
func replicaIndex(first, shift, j, n int) int {
	if n == 1 {
		return first
	}
	return (first + 1 + (shift+j)%(n-1)) % n
}

// arrange lists broker ids in id order, or, when racks are set,
// alternating racks (racks in name order, each rack's brokers in id
// order): r1's first, r2's first, r3's first, r1's second, ...
func arrange(brokers []PlacementBroker) []int32 {
	sorted := slices.Clone(brokers)
	slices.SortFunc(sorted, func(a, b PlacementBroker) int { return int(a.ID) - int(b.ID) })
	byRack := map[string][]int32{}
	var rackNames []string
	for _, b := range sorted {
		if _, ok := byRack[b.Rack]; !ok {
			rackNames = append(rackNames, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	if len(rackNames) == 1 {
		ids := make([]int32, len(sorted))
		for i, b := range sorted {
			ids[i] = b.ID
		}
		return ids
	}
	slices.Sort(rackNames)
	var out []int32
	for i := 0; len(out) < len(sorted); i++ {
		for _, r := range rackNames {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

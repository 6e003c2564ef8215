package topicconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The throttled-replica lists (KIP-73): the replicas a leader's and a
// follower's replication throttle rate bound.
const (
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ThrottledReplicas is a parsed throttled-replica list. nil throttles
// nothing.
type ThrottledReplicas struct {
	all      bool
	replicas map[replicaKey]struct{}
}

// replicaKey is one "partition:broker" entry.
type replicaKey struct{ partition, broker int32 }

// Has reports whether the list names the replica of partition on broker.
func (r *ThrottledReplicas) Has(partition, broker int32) bool {
	if r == nil {
		return false
	}
	if r.all {
		return true
	}
	_, ok := r.replicas[replicaKey{partition, broker}]
	return ok
}

var throttledReplicaEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// isThrottledReplicaList reports whether a topic config is one of the
// throttled-replica lists.
func isThrottledReplicaList(name string) bool {
	return name == LeaderThrottledReplicas || name == FollowerThrottledReplicas
}

// listItems splits a list config as Kafka's ConfigDef parses a LIST: an
// empty (blank) value is the empty list, otherwise the comma-separated
// items, trimmed, empty ones kept.
func listItems(value string) []string {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil
	}
	items := strings.Split(value, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// validateThrottledReplicas checks a throttled-replica list as Kafka's
// ThrottledReplicaListValidator does, with its message: "*", or items each
// "partition:broker" (or empty).
func validateThrottledReplicas(name, value string) error {
	items := listItems(value)
	if strings.Join(items, "") == "*" {
		return nil
	}
	for _, it := range items {
		if !throttledReplicaEntry.MatchString(it) {
			return fmt.Errorf("Invalid value [%s] for configuration %s: %s must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
				strings.Join(items, ", "), name, name)
		}
	}
	return nil
}

// ParseThrottledReplicas parses a valid list; nil when it names nothing.
// An id beyond int32 names no replica and is skipped.
func ParseThrottledReplicas(value string) *ThrottledReplicas {
	items := listItems(value)
	if len(items) == 0 {
		return nil
	}
	if strings.Join(items, "") == "*" {
		return &ThrottledReplicas{all: true}
	}
	r := &ThrottledReplicas{replicas: map[replicaKey]struct{}{}}
	for _, it := range items {
		ps, bs, ok := strings.Cut(it, ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseInt(ps, 10, 32)
		b, err2 := strconv.ParseInt(bs, 10, 32)
		if err1 == nil && err2 == nil {
			r.replicas[replicaKey{int32(p), int32(b)}] = struct{}{}
		}
	}
	if len(r.replicas) == 0 {
		return nil
	}
	return r
}

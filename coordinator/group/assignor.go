package group

import (
	"bytes"
	"sort"
)

// TopicID is a topic's UUID, as KIP-848 names topics.
type TopicID [16]byte

// TopicInfo is what the coordinator needs to know of one topic: its id and
// its partition count. A subscription regex may match any topic, internal
// ones included: Kafka's consumer-group regex resolution filters by DESCRIBE
// authorization only, and leaves excluding internal topics to the client.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Topics is the cluster's topics by name, as the driver hands them to the
// coordinator with each ConsumerGroupHeartbeat. The coordinator never keeps
// it beyond the call.
type Topics map[string]TopicInfo

// assignment is a member's partitions by topic id, each list sorted.
type assignment map[TopicID][]int32

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for t, ps := range a {
		out[t] = append([]int32(nil), ps...)
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		qs, ok := b[t]
		if !ok || len(ps) != len(qs) {
			return false
		}
		for i := range ps {
			if ps[i] != qs[i] {
				return false
			}
		}
	}
	return true
}

func (a assignment) has(t TopicID, p int32) bool {
	ps := a[t]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

func (a assignment) add(t TopicID, p int32) {
	ps := a[t]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	if i < len(ps) && ps[i] == p {
		return
	}
	ps = append(ps, 0)
	copy(ps[i+1:], ps[i:])
	ps[i] = p
	a[t] = ps
}

func (a assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// sortedTopics returns the topic ids in byte order, so iteration is
// deterministic.
func (a assignment) sortedTopics() []TopicID {
	out := make([]TopicID, 0, len(a))
	for t := range a {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// assignorMember is one member as an assignor sees it: the topics it
// subscribes to (resolved to ids, existing topics only) and its current
// target partitions.
type assignorMember struct {
	id      string
	topics  map[TopicID]bool
	current assignment
}

// assignorInput is the group as an assignor sees it. Members are sorted by
// id; partitions gives each subscribed topic's partition count.
type assignorInput struct {
	members    []assignorMember
	partitions map[TopicID]int32
	names      map[TopicID]string
}

// An assignor computes a target assignment, by member id, from the
// members' subscriptions. It must be deterministic.
type assignor func(in assignorInput) map[string]assignment

// Assignor names, as clients name them in ServerAssignor and as
// group.consumer.assignors lists them.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

var assignors = map[string]assignor{UniformAssignor: assignUniform, RangeAssignor: assignRange}

type tp struct {
	topic     TopicID
	partition int32
}

// sortedTopicIDs returns the subscribed topics ordered by name, then id,
// which is the order partitions are handed out in.
func (in assignorInput) sortedTopicIDs() []TopicID {
	out := make([]TopicID, 0, len(in.partitions))
	for t := range in.partitions {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if in.names[out[i]] != in.names[out[j]] {
			return in.names[out[i]] < in.names[out[j]]
		}
		return bytes.Compare(out[i][:], out[j][:]) < 0
	})
	return out
}

// assignUniform is the "uniform" assignor (Kafka's UniformAssignor): every
// partition of a subscribed topic goes to one of the members subscribed to
// it, the counts of partitions per member are as even as the subscriptions
// allow, and partitions stay where the previous target put them as far as
// balance permits (stickiness), so a rebalance moves few partitions.
//
// Kafka has two builders (homogeneous and heterogeneous subscriptions);
// this one covers both with the same rules: keep valid previous partitions,
// hand the free ones to the least loaded eligible member, then move
// partitions from the most to the least loaded eligible member until no
// move narrows the gap. Which member gets which partition can differ from
// Kafka's choice; the balance and stickiness properties are the same.
func assignUniform(in assignorInput) map[string]assignment {
	out := make(map[string]assignment, len(in.members))
	count := make(map[string]int, len(in.members))
	owner := map[tp]string{}
	for _, m := range in.members {
		out[m.id] = assignment{}
	}
	// Keep previous partitions that are still valid, never twice.
	for _, m := range in.members {
		for _, t := range m.current.sortedTopics() {
			n, ok := in.partitions[t]
			if !ok || !m.topics[t] {
				continue
			}
			for _, p := range m.current[t] {
				k := tp{t, p}
				if p >= n || owner[k] != "" {
					continue
				}
				owner[k] = m.id
				out[m.id].add(t, p)
				count[m.id]++
			}
		}
	}
	eligible := func(t TopicID) []string {
		var ids []string
		for _, m := range in.members {
			if m.topics[t] {
				ids = append(ids, m.id)
			}
		}
		return ids
	}
	topics := in.sortedTopicIDs()
	eligibleByTopic := make(map[TopicID][]string, len(topics))
	for _, t := range topics {
		eligibleByTopic[t] = eligible(t)
	}
	leastLoaded := func(ids []string) string {
		best := ""
		for _, id := range ids {
			if best == "" || count[id] < count[best] {
				best = id
			}
		}
		return best
	}
	// Hand out free partitions.
	for _, t := range topics {
		ids := eligibleByTopic[t]
		if len(ids) == 0 {
			continue
		}
		for p := int32(0); p < in.partitions[t]; p++ {
			k := tp{t, p}
			if owner[k] != "" {
				continue
			}
			id := leastLoaded(ids)
			owner[k] = id
			out[id].add(t, p)
			count[id]++
		}
	}
	// Balance: move a partition from a member to an eligible member with
	// at least two fewer partitions, highest partitions first, until no
	// such move exists. Each move lowers the sum of squared counts, so the
	// loop ends.
	for moved := true; moved; {
		moved = false
		for _, m := range in.members {
			from := m.id
			for _, t := range out[from].sortedTopics() {
				ps := out[from][t]
				for i := len(ps) - 1; i >= 0; i-- {
					to := leastLoaded(eligibleByTopic[t])
					if to == "" || count[to]+1 >= count[from] {
						break
					}
					p := ps[i]
					ps = append(ps[:i:i], ps[i+1:]...)
					out[from][t] = ps
					out[to].add(t, p)
					count[from]--
					count[to]++
					moved = true
				}
				if len(out[from][t]) == 0 {
					delete(out[from], t)
				}
			}
		}
	}
	return out
}

// assignRange is the "range" assignor (Kafka's RangeAssignor): for each
// topic, the members subscribed to it, sorted by member id, get
// consecutive ranges of partitions; the first (partitions % members)
// members get one more. Members subscribed to the same topics with the same
// partition counts thus get the same partition numbers of each topic
// (co-partitioning). Unlike Kafka's, it is not sticky across epochs beyond
// what the sorted order gives.
func assignRange(in assignorInput) map[string]assignment {
	out := make(map[string]assignment, len(in.members))
	for _, m := range in.members {
		out[m.id] = assignment{}
	}
	for _, t := range in.sortedTopicIDs() {
		var ids []string
		for _, m := range in.members {
			if m.topics[t] {
				ids = append(ids, m.id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		n := in.partitions[t]
		per, extra := n/int32(len(ids)), n%int32(len(ids))
		next := int32(0)
		for i, id := range ids {
			size := per
			if int32(i) < extra {
				size++
			}
			for p := next; p < next+size; p++ {
				out[id].add(t, p)
			}
			next += size
		}
	}
	return out
}

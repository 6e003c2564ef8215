package group

// Kafka 4.4's SimpleAssignor for share groups
// (coordinator/group/assignor/SimpleAssignor with
// SimpleHomogeneousAssignmentBuilder and SimpleHeterogeneousAssignmentBuilder).
// Every assignable partition of the subscribed topics goes to at least one
// member; when there are more members than partitions, a partition is shared
// by desiredSharing = ceil(members / partitions) members. Each member's
// desired count is its slice of desiredSharing * partitions spread evenly
// (ceil(p*(i+1)) - ceil(p*i)). The builder keeps what members already hold
// where it can (stickiness), revoking in this order: partitions of topics
// no longer subscribed, partitions of members holding more than their
// desired count, partitions shared by more than desiredSharing members;
// then it hands the partitions that want more members to the members that
// want more partitions, round-robin. The heterogeneous builder (members
// subscribing to different topics) does the same for each topic among the
// members subscribed to it.
//
// Kafka iterates Java hash maps and sets; Gregor iterates members in the
// order of their ids and partitions in topic-id then partition order, so
// the balance and the stickiness are Kafka's, but when several partitions
// or members are equally good the choice may differ from Kafka's.

import "sort"

// simpleAssignorInput is the share group as the SimpleAssignor sees it:
// members sorted by id with their subscribed topic ids (existing topics)
// and current target, each topic's partition count, and the assignable
// (initialized) partitions.
type simpleAssignorInput struct {
	members     []assignorMember
	partitions  map[TopicID]int32
	assignable  map[TopicID]map[int32]bool
	homogeneous bool
}

func (in simpleAssignorInput) targetPartitions(t TopicID) []int32 {
	var out []int32
	for p := int32(0); p < in.partitions[t]; p++ {
		if in.assignable[t][p] {
			out = append(out, p)
		}
	}
	return out
}

// assignSimple is SimpleAssignor.assign. Every member gets an entry, empty
// when it holds nothing.
func assignSimple(in simpleAssignorInput) map[string]assignment {
	out := map[string]assignment{}
	if len(in.members) == 0 {
		return out
	}
	var result []assignment
	if in.homogeneous {
		result = assignSimpleHomogeneous(in)
	} else {
		result = assignSimpleHeterogeneous(in)
	}
	for i, m := range in.members {
		a := result[i]
		if a == nil {
			a = assignment{}
		}
		for t, ps := range a {
			if len(ps) == 0 {
				delete(a, t)
			}
		}
		out[m.id] = a
	}
	return out
}

// desiredCounts is each of n members' share of sharing*partitions
// assignments, as Kafka computes it with doubles.
func desiredCounts(n, sharing, partitions int) []int {
	out := make([]int, n)
	if n == 0 {
		return out
	}
	precise := float64(sharing*partitions) / float64(n)
	for i := range out {
		out[i] = ceilInt(precise*float64(i+1)) - ceilInt(precise*float64(i))
	}
	return out
}

func ceilInt(f float64) int {
	i := int(f)
	if float64(i) < f {
		i++
	}
	return i
}

func sharingFor(members, partitions int) int {
	if partitions == 0 {
		return 0
	}
	return (members + partitions - 1) / partitions
}

// shareTP is one topic-partition in the builders.
type shareTP struct {
	t TopicID
	p int32
}

func lessTP(a, b shareTP) bool {
	if a.t != b.t {
		return string(a.t[:]) < string(b.t[:])
	}
	return a.p < b.p
}

// assignSimpleHomogeneous is SimpleHomogeneousAssignmentBuilder: every
// member subscribes to the same topics.
func assignSimpleHomogeneous(in simpleAssignorInput) []assignment {
	n := len(in.members)
	subscribed := in.members[0].topics
	result := make([]assignment, n)
	if len(subscribed) == 0 {
		for i := range result {
			result[i] = assignment{}
		}
		return result
	}
	var targets []shareTP
	for _, t := range sortedTopicSet(subscribed) {
		for _, p := range in.targetPartitions(t) {
			targets = append(targets, shareTP{t, p})
		}
	}
	sharing := sharingFor(n, len(targets))
	desired := desiredCounts(n, sharing, len(targets))
	byPartition := map[shareTP]map[int]bool{}
	byMember := make([]map[shareTP]bool, n)
	unfilled, overfilled := map[int]bool{}, map[int]bool{}
	for i, m := range in.members {
		result[i] = m.current.clone()
		byMember[i] = map[shareTP]bool{}
		held := 0
		for _, t := range m.current.sortedTopics() {
			if !subscribed[t] {
				delete(result[i], t)
				continue
			}
			for _, p := range m.current[t] {
				tp := shareTP{t, p}
				held++
				if byPartition[tp] == nil {
					byPartition[tp] = map[int]bool{}
				}
				byPartition[tp][i] = true
				byMember[i][tp] = true
			}
		}
		switch {
		case held < desired[i]:
			unfilled[i] = true
		case held > desired[i]:
			overfilled[i] = true
		}
	}
	// Members holding more than their desired count give up the excess.
	for _, i := range sortedInts(overfilled) {
		for _, tp := range sortedTPs(byMember[i]) {
			if len(byMember[i]) <= desired[i] {
				break
			}
			removePartition(result[i], tp.t, tp.p)
			delete(byPartition[tp], i)
			delete(byMember[i], tp)
		}
	}
	// Partitions shared by more members than desired lose the excess.
	for _, tp := range sortedTPKeys(byPartition) {
		holders := byPartition[tp]
		for _, i := range sortedInts(holders) {
			if len(holders) <= sharing {
				break
			}
			if removePartition(result[i], tp.t, tp.p) {
				delete(holders, i)
				delete(byMember[i], tp)
				unfilled[i] = true
			}
		}
	}
	for _, tp := range targets {
		if byPartition[tp] == nil {
			byPartition[tp] = map[int]bool{}
		}
	}
	order := sortedTPKeys(byPartition)
	holders := make([]map[int]bool, len(order))
	for k, tp := range order {
		holders[k] = byPartition[tp]
	}
	fillRemaining(order, holders, unfilled, sharing, func(i int) int { return len(byMember[i]) }, desired,
		func(i int, tp shareTP) {
			result[i].add(tp.t, tp.p)
			byMember[i][tp] = true
		})
	return result
}

// fillRemaining is assignRemainingPartitions of both builders: it walks
// the partitions once, and for one that wants more members, takes the next
// unfilled members round-robin, skipping those that hold it already, and
// gives up on the partition after a full round that assigned nothing.
func fillRemaining(order []shareTP, holders []map[int]bool, unfilled map[int]bool, sharing int,
	count func(int) int, desired []int, give func(int, shareTP)) {
	if len(unfilled) == 0 {
		return
	}
	members := sortedInts(unfilled)
	pos := 0
	assignedThisRound := false
	for k, tp := range order {
		held := holders[k]
		for toMake := sharing - len(held); toMake > 0; {
			// Skip members removed from the set behind the iterator.
			for pos < len(members) && !unfilled[members[pos]] {
				pos++
			}
			if pos >= len(members) {
				if !assignedThisRound {
					break
				}
				members = sortedInts(unfilled)
				pos = 0
				assignedThisRound = false
				if len(members) == 0 {
					break
				}
			}
			i := members[pos]
			pos++
			if held[i] {
				continue
			}
			give(i, tp)
			held[i] = true
			toMake--
			assignedThisRound = true
			if count(i) >= desired[i] {
				delete(unfilled, i)
			}
		}
		if len(unfilled) == 0 {
			return
		}
	}
}

// assignSimpleHeterogeneous is SimpleHeterogeneousAssignmentBuilder: each
// topic is balanced among the members subscribed to it.
func assignSimpleHeterogeneous(in simpleAssignorInput) []assignment {
	n := len(in.members)
	result := make([]assignment, n)
	for i, m := range in.members {
		result[i] = m.current.clone()
	}
	all := map[TopicID]bool{}
	for _, m := range in.members {
		for t := range m.topics {
			all[t] = true
		}
	}
	for _, t := range sortedTopicSet(all) {
		var subscribers []int
		for i, m := range in.members {
			if m.topics[t] {
				subscribers = append(subscribers, i)
			}
		}
		assignTopicShared(t, in.targetPartitions(t), subscribers, in.members, result)
	}
	// A member keeps nothing of a topic no member subscribes to any more,
	// nor of one it no longer subscribes to itself.
	for i, m := range in.members {
		for t := range result[i] {
			if !m.topics[t] {
				delete(result[i], t)
			}
		}
	}
	return result
}

// assignTopicShared is TopicAssignmentPartialBuilder.build for one topic.
func assignTopicShared(t TopicID, targets []int32, subscribers []int, members []assignorMember, result []assignment) {
	n := len(members)
	sharing := sharingFor(len(subscribers), len(targets))
	desired := make([]int, n)
	if len(subscribers) > 0 {
		for k, c := range desiredCounts(len(subscribers), sharing, len(targets)) {
			desired[subscribers[k]] = c
		}
	}
	subscribed := map[int]bool{}
	for _, i := range subscribers {
		subscribed[i] = true
	}
	byPartition := map[int32]map[int]bool{}
	byMember := map[int]map[int32]bool{}
	for i, m := range members {
		ps := m.current[t]
		if len(ps) == 0 || !subscribed[i] {
			continue
		}
		for _, p := range ps {
			if byPartition[p] == nil {
				byPartition[p] = map[int]bool{}
			}
			byPartition[p][i] = true
			if byMember[i] == nil {
				byMember[i] = map[int32]bool{}
			}
			byMember[i][p] = true
		}
	}
	for _, i := range sortedIntKeys(byMember) {
		held := byMember[i]
		for _, p := range sortedInt32s(held) {
			if len(held) <= desired[i] {
				break
			}
			delete(byPartition[p], i)
			delete(held, p)
			removePartition(result[i], t, p)
		}
	}
	for _, p := range sortedInt32Keys(byPartition) {
		holders := byPartition[p]
		for _, i := range sortedInts(holders) {
			if len(holders) <= sharing {
				break
			}
			if removePartition(result[i], t, p) {
				delete(holders, i)
				delete(byMember[i], p)
			}
		}
	}
	for _, p := range targets {
		if byPartition[p] == nil {
			byPartition[p] = map[int]bool{}
		}
	}
	unfilled := map[int]bool{}
	for _, i := range subscribers {
		if len(byMember[i]) < desired[i] {
			unfilled[i] = true
		}
	}
	ps := sortedInt32Keys(byPartition)
	order := make([]shareTP, len(ps))
	holders := make([]map[int]bool, len(ps))
	for k, p := range ps {
		order[k] = shareTP{t, p}
		holders[k] = byPartition[p]
	}
	fillRemaining(order, holders, unfilled, sharing, func(i int) int { return len(byMember[i]) }, desired,
		func(i int, tp shareTP) {
			result[i].add(t, tp.p)
			if byMember[i] == nil {
				byMember[i] = map[int32]bool{}
			}
			byMember[i][tp.p] = true
		})
}

// removePartition removes p of t from a and reports whether it was there.
func removePartition(a assignment, t TopicID, p int32) bool {
	ps := a[t]
	for k, q := range ps {
		if q == p {
			a[t] = append(ps[:k:k], ps[k+1:]...)
			return true
		}
	}
	return false
}

func sortedTopicSet(s map[TopicID]bool) []TopicID {
	out := make([]TopicID, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	sortTopicIDs(out)
	return out
}

func sortedInts(s map[int]bool) []int {
	out := make([]int, 0, len(s))
	for i := range s {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

func sortedIntKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

func sortedInt32s(s map[int32]bool) []int32 { return sortedInt32Keys(s) }

func sortedInt32Keys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sortedTPs(s map[shareTP]bool) []shareTP { return sortedTPKeys(s) }

func sortedTPKeys[V any](m map[shareTP]V) []shareTP {
	out := make([]shareTP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return lessTP(out[i], out[j]) })
	return out
}

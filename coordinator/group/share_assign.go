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
// Kafka makes its choices in the iteration order of Java's HashMap and
// HashSet; the builders here iterate in the same emulated order
// (share_javaorder.go), with members put into the group spec in the order
// of their ids, so that they choose as Kafka 4.4 does; compat-tests/sharegroup
// checks them against Kafka's SimpleAssignor on random groups
// (fixtures/share-assign.txt).

import "math"

// simpleMember is one member as the SimpleAssignor sees it: its subscribed
// topic ids in the order Kafka's TopicIds iterates them (the member's
// subscribed names, a HashSet<String>, resolved to ids) and its current
// target.
type simpleMember struct {
	id      string
	topics  []TopicID
	current assignment
}

// simpleAssignorInput is the share group as the SimpleAssignor sees it:
// members sorted by id, each topic's partition count, the assignable
// (initialized) partitions, and whether every member subscribes to the
// same topic names (Kafka's SubscriptionType).
type simpleAssignorInput struct {
	members     []simpleMember
	partitions  map[TopicID]int32
	assignable  map[TopicID]map[int32]bool
	homogeneous bool
	// specOrder is the order members are put into Kafka's group spec (the
	// members' TimelineHashMap, then a joining member); nil: by id.
	specOrder []string
}

// topicOrder is the order Kafka iterates a member's subscribed topics:
// names in a new HashSet<>(list) of the names, resolved to ids, unknown
// names skipped.
func topicOrder(names []string, topics Topics) []TopicID {
	set := newJavaMap(javaStringHash, javaHashSetCopyCapacity(len(names)))
	for _, n := range names {
		set.put(n)
	}
	var out []TopicID
	for _, n := range set.keys() {
		if t, ok := topics[n]; ok {
			out = append(out, t.ID)
		}
	}
	return out
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

// simpleSpec is Kafka's GroupSpec for the builders: the member ids in the
// group spec's order (a HashMap<String, ...> filled in id order) and each
// member's data by index.
type simpleSpec struct {
	ids     []string
	members []simpleMember
}

func newSimpleSpec(in simpleAssignorInput) simpleSpec {
	byID := map[string]simpleMember{}
	for _, m := range in.members {
		byID[m.id] = m
	}
	specs := newJavaMap(javaStringHash, 0)
	if in.specOrder != nil {
		for _, id := range in.specOrder {
			if _, ok := byID[id]; ok {
				specs.put(id)
			}
		}
	}
	for _, m := range in.members {
		specs.put(m.id) // members not in specOrder, by id
	}
	s := simpleSpec{ids: specs.keys()}
	for _, id := range s.ids {
		s.members = append(s.members, byID[id])
	}
	return s
}

// assignSimple is SimpleAssignor.assign: a new target for every member,
// empty when it holds nothing.
func assignSimple(in simpleAssignorInput) map[string]assignment {
	out := map[string]assignment{}
	if len(in.members) == 0 {
		return out
	}
	spec := newSimpleSpec(in)
	var result []assignment
	if in.homogeneous {
		result = assignSimpleHomogeneous(in, spec)
	} else {
		result = assignSimpleHeterogeneous(in, spec)
	}
	for i, id := range spec.ids {
		a := assignment{}
		if result != nil {
			for t, ps := range result[i] {
				if len(ps) > 0 {
					a[t] = ps
				}
			}
		}
		out[id] = a
	}
	return out
}

// desiredCounts is each of n members' share of sharing*partitions
// assignments, computed with doubles as Kafka does.
func desiredCounts(n, sharing, partitions int) []int {
	out := make([]int, n)
	if n == 0 {
		return out
	}
	precise := float64(sharing*partitions) / float64(n)
	for i := range out {
		out[i] = int(math.Ceil(precise*float64(i+1))) - int(math.Ceil(precise*float64(i)))
	}
	return out
}

func sharingFor(members, partitions int) int {
	if partitions == 0 {
		return 0
	}
	return (members + partitions - 1) / partitions
}

// shareTP is one topic-partition (Kafka's TopicIdPartition).
type shareTP struct {
	t TopicID
	p int32
}

// currentOrder is the iteration of a member's current assignment: topics
// in a HashMap<Uuid, ...>, partitions in a HashSet<Integer>, both filled
// in ascending order.
func currentOrder(a assignment) []shareTP {
	topics := newJavaMap(javaUUIDHash, 0)
	for _, t := range a.sortedTopics() {
		topics.put(t)
	}
	var out []shareTP
	for _, t := range topics.keys() {
		ps := newJavaMap(javaInt32Hash, 0)
		for _, p := range a[t] {
			ps.put(p)
		}
		for _, p := range ps.keys() {
			out = append(out, shareTP{t, p})
		}
	}
	return out
}

// copyOnWrite is the builders' newGroupAssignment: a member's assignment
// copied from the old one the first time it changes.
type copyOnWrite struct {
	old, updated []assignment
}

func (c *copyOnWrite) get(i int) assignment {
	if c.updated[i] == nil {
		c.updated[i] = c.old[i].clone()
	}
	return c.updated[i]
}

func (c *copyOnWrite) result() []assignment {
	out := make([]assignment, len(c.old))
	for i := range out {
		out[i] = c.updated[i]
		if out[i] == nil {
			out[i] = c.old[i]
		}
	}
	return out
}

func newCopyOnWrite(spec simpleSpec) *copyOnWrite {
	c := &copyOnWrite{old: make([]assignment, len(spec.ids)), updated: make([]assignment, len(spec.ids))}
	for i, m := range spec.members {
		c.old[i] = m.current
		if c.old[i] == nil {
			c.old[i] = assignment{}
		}
	}
	return c
}

// assignSimpleHomogeneous is SimpleHomogeneousAssignmentBuilder: every
// member subscribes to the same topics.
func assignSimpleHomogeneous(in simpleAssignorInput, spec simpleSpec) []assignment {
	n := len(spec.ids)
	subscribedList := spec.members[0].topics
	if len(subscribedList) == 0 {
		return nil // Kafka's empty GroupAssignment: every member gets nothing
	}
	subscribed := map[TopicID]bool{}
	var targets []shareTP
	for _, t := range subscribedList {
		subscribed[t] = true
		for _, p := range in.targetPartitions(t) {
			targets = append(targets, shareTP{t, p})
		}
	}
	sharing := sharingFor(n, len(targets))
	desired := desiredCounts(n, sharing, len(targets))
	asg := newCopyOnWrite(spec)
	byPartition := newJavaMap(javaTPHash, javaNewHashMapFor(len(targets)))
	holders := map[shareTP]*javaMap[int]{}
	byMember := map[int]*javaMap[shareTP]{}
	unfilled := newJavaMap(javaIntHash, javaNewHashMapFor(n))
	overfilled := newJavaMap(javaIntHash, javaNewHashMapFor(n))
	memberSet := func(i int) *javaMap[shareTP] {
		if byMember[i] == nil {
			byMember[i] = newJavaMap(javaTPHash, 0)
		}
		return byMember[i]
	}
	addHolder := func(tp shareTP) *javaMap[int] {
		if !byPartition.has(tp) {
			byPartition.putFirst(tp) // computeIfAbsent
			holders[tp] = newJavaMap(javaIntHash, 0)
		}
		return holders[tp]
	}

	// revokeUnassignablePartitions
	for i := 0; i < n; i++ {
		held := 0
		for _, tp := range currentOrder(asg.old[i]) {
			if !subscribed[tp.t] {
				delete(asg.get(i), tp.t)
				continue
			}
			held++
			addHolder(tp).put(i)
			memberSet(i).put(tp)
			if held >= desired[i] {
				asg.get(i)
			}
		}
		switch {
		case held < desired[i]:
			unfilled.put(i)
		case held > desired[i]:
			overfilled.put(i)
		}
	}
	// revokeOverfilledMembers
	for _, i := range overfilled.keys() {
		mine := byMember[i]
		if mine.size() <= desired[i] {
			continue
		}
		for _, tp := range mine.keys() {
			removePartition(asg.get(i), tp.t, tp.p)
			holders[tp].remove(i)
			mine.remove(tp)
			if mine.size() == desired[i] {
				break
			}
		}
	}
	// revokeOversharedPartitions
	for _, tp := range byPartition.keys() {
		hs := holders[tp]
		if hs.size() <= sharing {
			continue
		}
		for _, i := range hs.keys() {
			if removePartition(asg.get(i), tp.t, tp.p) {
				hs.remove(i)
				byMember[i].remove(tp)
				unfilled.put(i)
			}
			if hs.size() <= sharing {
				break
			}
		}
	}
	for _, tp := range targets {
		addHolder(tp)
	}
	order := byPartition.keys()
	hs := make([]*javaMap[int], len(order))
	for k, tp := range order {
		hs[k] = holders[tp]
	}
	fillRemaining(order, hs, unfilled, sharing, desired, func(i int, tp shareTP) int {
		asg.get(i).add(tp.t, tp.p)
		memberSet(i).put(tp)
		return byMember[i].size()
	})
	return asg.result()
}

// fillRemaining is assignRemainingPartitions of both builders: one pass
// over the partitions; one that wants more members takes the next unfilled
// members in turn (skipping those that hold it), the turn starting over
// when it ran out, until a whole turn assigned nothing. As in Kafka, a
// member given the partition is not added to its holders, and a member is
// dropped from the unfilled set once it has its desired count. give
// assigns and returns the member's new count.
func fillRemaining(order []shareTP, holders []*javaMap[int], unfilled *javaMap[int], sharing int, desired []int,
	give func(int, shareTP) int) {
	if unfilled.size() == 0 {
		return
	}
	turn, pos := unfilled.keys(), 0
	assignedThisTurn := false
	for k, tp := range order {
		held := holders[k]
		for toMake := sharing - held.size(); toMake > 0; {
			for pos < len(turn) && !unfilled.has(turn[pos]) {
				pos++ // removed behind the iterator
			}
			if pos >= len(turn) {
				if !assignedThisTurn {
					break
				}
				turn, pos, assignedThisTurn = unfilled.keys(), 0, false
				if len(turn) == 0 {
					break // Kafka's iterator would throw here; nothing is left to give
				}
			}
			i := turn[pos]
			pos++
			if held.has(i) {
				continue
			}
			toMake--
			assignedThisTurn = true
			if give(i, tp) >= desired[i] {
				unfilled.remove(i)
			}
		}
		if unfilled.size() == 0 {
			return
		}
	}
}

// assignSimpleHeterogeneous is SimpleHeterogeneousAssignmentBuilder: each
// topic is balanced among the members subscribed to it. A topic that no
// member subscribes to any more stays in the targets of members that hold
// it, as in Kafka (the member's current assignment leaves it out).
func assignSimpleHeterogeneous(in simpleAssignorInput, spec simpleSpec) []assignment {
	n := len(spec.ids)
	all := newJavaMap(javaUUIDHash, 0)
	subscribers := map[TopicID][]int{}
	for i, m := range spec.members {
		for _, t := range m.topics {
			all.put(t)
			subscribers[t] = append(subscribers[t], i)
		}
	}
	if all.size() == 0 {
		return nil
	}
	asg := newCopyOnWrite(spec)
	for _, t := range all.keys() {
		assignTopicShared(t, in.targetPartitions(t), subscribers[t], n, asg)
	}
	return asg.result()
}

// assignTopicShared is TopicAssignmentPartialBuilder.build for one topic.
func assignTopicShared(t TopicID, targets []int32, subscribers []int, n int, asg *copyOnWrite) {
	sharing := sharingFor(len(subscribers), len(targets))
	desired := make([]int, n)
	for k, c := range desiredCounts(len(subscribers), sharing, len(targets)) {
		desired[subscribers[k]] = c
	}
	byPartition := newJavaMap(javaInt32Hash, javaNewHashMapFor(len(targets)))
	holders := map[int32]*javaMap[int]{}
	byMember := newJavaMap(javaIntHash, javaNewHashMapFor(len(subscribers)))
	held := map[int]*javaMap[int32]{}
	memberSet := func(i int) *javaMap[int32] {
		if !byMember.has(i) {
			byMember.putFirst(i) // computeIfAbsent
			held[i] = newJavaMap(javaInt32Hash, 0)
		}
		return held[i]
	}
	// revokeUnassignablePartitions: record who holds what of the topic.
	for i := 0; i < n; i++ {
		old := asg.old[i]
		if len(old) == 0 || old[t] == nil {
			continue
		}
		ps := newJavaMap(javaInt32Hash, 0)
		for _, p := range old[t] {
			ps.put(p)
		}
		for _, p := range ps.keys() {
			if !byPartition.has(p) {
				byPartition.putFirst(p) // computeIfAbsent
				holders[p] = newJavaMap(javaIntHash, 0)
			}
			holders[p].put(i)
			memberSet(i).put(p)
		}
	}
	// revokeOverfilledMembers
	for _, i := range byMember.keys() {
		mine := held[i]
		for _, p := range mine.keys() {
			if mine.size() <= desired[i] {
				break
			}
			holders[p].remove(i)
			mine.remove(p)
			removePartition(asg.get(i), t, p)
		}
	}
	// revokeOversharedPartitions
	for _, p := range byPartition.keys() {
		hs := holders[p]
		if hs.size() <= sharing {
			continue
		}
		for _, i := range hs.keys() {
			if removePartition(asg.get(i), t, p) {
				hs.remove(i)
				held[i].remove(p)
			}
			if hs.size() <= sharing {
				break
			}
		}
	}
	for _, p := range targets {
		if !byPartition.has(p) {
			byPartition.putFirst(p) // computeIfAbsent
			holders[p] = newJavaMap(javaIntHash, javaNewHashMapFor(len(subscribers)))
		}
	}
	unfilled := newJavaMap(javaIntHash, javaNewHashMapFor(n))
	for _, i := range subscribers {
		count := 0
		if byMember.has(i) {
			count = held[i].size()
		}
		if count < desired[i] {
			unfilled.put(i)
		}
	}
	ps := byPartition.keys()
	order := make([]shareTP, len(ps))
	hs := make([]*javaMap[int], len(ps))
	for k, p := range ps {
		order[k] = shareTP{t, p}
		hs[k] = holders[p]
	}
	fillRemaining(order, hs, unfilled, sharing, desired, func(i int, tp shareTP) int {
		asg.get(i).add(t, tp.p)
		return memberSet(i).putSize(tp.p)
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

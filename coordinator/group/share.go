package group

// KIP-932 share groups: membership and assignment driven by
// ShareGroupHeartbeat, after Kafka 4.4's GroupMetadataManager
// (shareGroupHeartbeat, shareGroupLeave, shareGroupFenceMember,
// maybeUpdateTargetAssignment, maybeReconcile,
// maybeCreateInitializeShareGroupStateRequest, initializeShareGroupState),
// ShareGroup, ShareGroupMember and ShareGroupAssignmentBuilder.
//
// A share group is a consumer group's sibling without revocation: a member
// moves straight to its target assignment, and several members may hold the
// same partition (the SimpleAssignor, share_assign.go). Only partitions
// whose share-group state the share coordinator has initialized are
// assignable: when a member subscribes to a topic, the heartbeat writes the
// topic's partitions as "initializing" (ShareGroupStatePartitionMetadata)
// and asks, through Effects.ShareStateInits, that the driver send
// InitializeShareGroupState to the share coordinator; once it answered, the
// driver calls InitializeShareGroupState, the partitions become
// "initialized", and the next heartbeat computes a target that includes
// them. Until then members are answered with an empty assignment, as Kafka
// answers them.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareProtocolType is the type ListGroups reports for a share group (also
// its protocol type, as Kafka's ShareGroup.protocolType).
const ShareProtocolType = "share"

// SimpleAssignorName is the name of the only share group assignor, as
// ShareGroupDescribe reports it (group.share.assignors, default "simple").
const SimpleAssignorName = "simple"

// shareMember is one member of a share group (Kafka's ShareGroupMember).
// Its state is always STABLE: a share member never revokes.
type shareMember struct {
	id                   string
	rackID               *string
	clientID, clientHost string
	subscribedTopicNames []string // sorted, unique
	epoch, previousEpoch int32
	assigned             assignment
	sessionDeadline      int64
}

// shareTopicInit is one topic of a share group's state-partition metadata:
// its name and partitions, and when their initialization was asked
// (Kafka's ShareGroup.InitMapValue).
type shareTopicInit struct {
	name       string
	partitions []int32 // sorted
	timestamp  int64
}

// shareGroup is the KIP-932 part of a group of type "share" (Kafka's
// ShareGroup and its ShareGroupStatePartitionMetadataInfo).
type shareGroup struct {
	epoch               int32
	metadataHash        int64
	assignmentEpoch     int32
	assignmentTimestamp int64
	members             map[string]*shareMember
	target              map[string]assignment

	// The share-group state partitions: initializing (asked of the share
	// coordinator), initialized (assignable) and deleting, by topic id.
	initializing map[TopicID]shareTopicInit
	initialized  map[TopicID]shareTopicInit
	deleting     map[TopicID]string
	// hasStateMetadata tells whether a ShareGroupStatePartitionMetadata
	// record exists for the group (Kafka's containsKey on the map).
	hasStateMetadata bool
	// order is the order Kafka's TimelineHashMap of members iterates in,
	// which fixes the order of the assignor's group spec.
	order timelineOrder
	// hashTopics is the subscribed topics as the last heartbeat's image
	// showed them, so that a member fenced by its session timer (which
	// has no image) changes the metadata hash as Kafka's does.
	hashTopics Topics
}

// newShareGroup is a new share group; its epoch starts at 1, as Kafka
// 4.4's ModernGroup constructor sets it, so the first member joins at 2.
func newShareGroup() *shareGroup {
	return &shareGroup{epoch: 1, members: map[string]*shareMember{}, target: map[string]assignment{},
		initializing: map[TopicID]shareTopicInit{}, initialized: map[TopicID]shareTopicInit{}, deleting: map[TopicID]string{}}
}

// state is Kafka's ShareGroup.ShareGroupState name: Empty or Stable.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (sg *shareGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ShareHeartbeatRequest is a ShareGroupHeartbeat. A nil RackID or
// SubscribedTopicNames means "unchanged", as on the wire. ClientHost is
// what Kafka writes: the client address as Java's InetAddress.toString
// ("/127.0.0.1").
type ShareHeartbeatRequest struct {
	GroupID              string
	MemberID             string
	MemberEpoch          int32
	RackID               *string
	SubscribedTopicNames []string
	ClientID, ClientHost string
}

// ShareHeartbeatResult is the answer to a ShareGroupHeartbeat. Assignment
// is nil when the response carries none.
type ShareHeartbeatResult struct {
	ErrorCode           int16
	ErrorMessage        *string
	MemberID            *string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	Assignment          []OwnedTopic
}

// ShareStateInit asks the driver to initialize share-group state for the
// listed partitions with the share coordinator (InitializeShareGroupState,
// state epoch StateEpoch, start offset -1), then to report success with
// Coordinator.InitializeShareGroupState.
type ShareStateInit struct {
	GroupID    string
	StateEpoch int32
	Topics     []OwnedTopic // sorted by topic id
}

func shareError(e *kerr.Error, format string, args ...any) *ShareHeartbeatResult {
	msg := fmt.Sprintf(format, args...)
	return &ShareHeartbeatResult{ErrorCode: e.Code, ErrorMessage: &msg}
}

// ShareGroupHeartbeat handles one ShareGroupHeartbeat; the answer is
// immediate. topics is the cluster's topics now.
func (c *Coordinator) ShareGroupHeartbeat(now int64, id ReplyID, req ShareHeartbeatRequest, topics Topics) {
	c.fireDueTimers(req.GroupID, now, topics)
	c.reply(id, c.shareHeartbeat(now, req, topics))
}

// validateShareHeartbeat is Kafka's GroupCoordinatorService
// throwIfShareGroupHeartbeatRequestIsInvalid: an id that is only blanks
// counts as empty (Utils.throwIfEmptyString trims); a null member id is
// not checked here (the wire's member id is not nullable).
func validateShareHeartbeat(req ShareHeartbeatRequest) *ShareHeartbeatResult {
	invalid := func(msg string) *ShareHeartbeatResult { return shareError(kerr.InvalidRequest, "%s", msg) }
	switch {
	case javaTrim(req.MemberID) == "":
		return invalid("MemberId can't be empty.")
	case javaTrim(req.GroupID) == "":
		return invalid("GroupId can't be empty.")
	case req.RackID != nil && javaTrim(*req.RackID) == "":
		return invalid("RackId can't be empty.")
	case req.MemberEpoch == joinEpoch && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < leaveEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	return nil
}

// javaTrim is Java's String.trim: it strips every character up to U+0020.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func (c *Coordinator) shareHeartbeat(now int64, req ShareHeartbeatRequest, topics Topics) *ShareHeartbeatResult {
	if res := validateShareHeartbeat(req); res != nil {
		return res
	}
	if req.MemberEpoch == leaveEpoch {
		return c.shareLeave(req, topics)
	}
	create := req.MemberEpoch == joinEpoch
	g, res := c.shareGroupFor(now, req.GroupID, create)
	if res != nil {
		return res
	}
	sg := g.sg
	if len(sg.members) >= c.cfg.ShareMaxSize && sg.members[req.MemberID] == nil {
		c.dropIfEmptyNewShare(g)
		return shareError(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", c.cfg.ShareMaxSize)
	}
	member := sg.members[req.MemberID]
	isNew := member == nil
	if isNew {
		if !create {
			return shareError(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
		}
		member = &shareMember{id: req.MemberID, assigned: assignment{}}
	} else if res := checkShareMemberEpoch(member, req.MemberEpoch); res != nil {
		return res
	}

	// 1. The updated member; a changed member is written, a changed
	// subscription bumps the group epoch (hasMemberSubscriptionChanged).
	updated := *member
	if req.RackID != nil {
		updated.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribedTopicNames = sortedUnique(req.SubscribedTopicNames)
	}
	updated.clientID, updated.clientHost = req.ClientID, req.ClientHost
	m := &updated
	subscriptionChanged := false
	if isNew || !sameShareMemberMetadata(member, m) {
		c.record(g.id, shareMemberKey(g.id, m.id), shareMemberValue(m))
		subscriptionChanged = isNew || !equalStrings(member.subscribedTopicNames, m.subscribedTopicNames)
	}
	sg.members[m.id] = m
	if sg.assignmentEpoch >= sg.epoch && c.initializedAssignmentPending(sg) {
		subscriptionChanged = true
	}
	// Kafka recomputes the metadata hash when the subscription changed or
	// the topic metadata was refreshed; Gregor sees the topic image at
	// every heartbeat, so it recomputes it every time.
	bump := subscriptionChanged
	if hash := sg.subscriptionHash(topics); hash != sg.metadataHash {
		sg.metadataHash = hash
		bump = true
	}
	if bump {
		sg.epoch++
		c.record(g.id, shareGroupKey(g.id), shareGroupValue(sg))
	}

	// 2. A new target assignment when the group epoch moved on and
	// group.share.assignment.interval.ms allows.
	newID := ""
	if isNew {
		newID = m.id // in Kafka's spec after the members already in the group
	}
	c.maybeComputeShareTarget(g, now, topics, newID)
	if isNew {
		sg.order.add(m.id) // Kafka's replay of its first record adds it
	}

	// 3. The member takes its target at once: no revocation phase.
	before := member.assigned
	c.reconcileShareMember(g, m, subscriptionChanged, topics)
	m.sessionDeadline = now + int64(c.cfg.ShareSessionTimeoutMs)

	out := &ShareHeartbeatResult{MemberID: strp(m.id), MemberEpoch: m.epoch, HeartbeatIntervalMs: c.cfg.ShareHeartbeatIntervalMs}
	if req.MemberEpoch == joinEpoch || req.SubscribedTopicNames != nil || isNew || !before.equal(m.assigned) {
		out.Assignment = toOwned(m.assigned)
	}
	c.maybeInitializeShareState(g, now, topics)
	return out
}

// shareGroupFor returns the share group, creating it for a joining member
// (Kafka's getOrMaybeCreateShareGroup). A group of another type is
// GROUP_ID_NOT_FOUND, whatever its state: share groups are never converted.
func (c *Coordinator) shareGroupFor(now int64, groupID string, create bool) (*group, *ShareHeartbeatResult) {
	g := c.groups[groupID]
	if g == nil {
		if !create {
			return nil, shareError(kerr.GroupIDNotFound, "Share group %s not found.", groupID)
		}
		g = newGroup(groupID, now)
		g.sg = newShareGroup()
		g.protocolType = ShareProtocolType
		c.groups[groupID] = g
		return g, nil
	}
	if g.sg == nil {
		return nil, shareError(kerr.GroupIDNotFound, "Group %s is not a share group.", groupID)
	}
	return g, nil
}

// dropIfEmptyNewShare forgets a share group created by a heartbeat that was
// then refused, so a refused join leaves no group behind.
func (c *Coordinator) dropIfEmptyNewShare(g *group) {
	if g.sg != nil && len(g.sg.members) == 0 && g.sg.epoch == 1 && !g.sg.hasStateMetadata {
		delete(c.groups, g.id)
	}
}

// checkShareMemberEpoch is Kafka's throwIfShareGroupMemberEpochIsInvalid:
// epoch 0 (a rejoin under the same id) is always accepted; otherwise the
// epoch must be the member's, or its previous one (a lost response).
func checkShareMemberEpoch(m *shareMember, epoch int32) *ShareHeartbeatResult {
	if epoch == joinEpoch {
		return nil
	}
	if epoch > m.epoch {
		return shareError(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
			epoch, m.epoch)
	}
	if epoch < m.epoch && epoch != m.previousEpoch {
		return shareError(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.",
			epoch, m.epoch, m.previousEpoch)
	}
	return nil
}

// sameShareMemberMetadata compares what ShareGroupMemberMetadataValue
// holds.
func sameShareMemberMetadata(a, b *shareMember) bool {
	return equalStrPtr(a.rackID, b.rackID) && a.clientID == b.clientID && a.clientHost == b.clientHost &&
		equalStrings(a.subscribedTopicNames, b.subscribedTopicNames)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// subscribedTopicNames is every topic name some member subscribes to, with
// its number of subscribers (Kafka's ShareGroup.subscribedTopicNames).
func (sg *shareGroup) subscribedTopicNames() map[string]int {
	out := map[string]int{}
	for _, m := range sg.members {
		for _, n := range m.subscribedTopicNames {
			out[n]++
		}
	}
	return out
}

// homogeneous reports whether every member subscribes to the same topics
// (Kafka's ModernGroup.subscriptionType: each subscribed name counted by
// every member).
func (sg *shareGroup) homogeneous() bool {
	for _, n := range sg.subscribedTopicNames() {
		if n != len(sg.members) {
			return false
		}
	}
	return true
}

// subscriptionHash hashes the id and partition count of every existing
// topic a member subscribes to; only its changes matter (Kafka's
// computeMetadataHash, whose value differs). A nil topics uses the image
// of the last heartbeat.
func (sg *shareGroup) subscriptionHash(topics Topics) int64 {
	if topics == nil && sg.hashTopics == nil {
		return sg.metadataHash // no image yet since load: refreshed at the next heartbeat
	}
	if topics == nil {
		topics = sg.hashTopics
	} else {
		sg.hashTopics = Topics{}
		for _, m := range sg.members {
			for _, n := range m.subscribedTopicNames {
				if t, ok := topics[n]; ok {
					sg.hashTopics[n] = t
				}
			}
		}
	}
	cg := consumerGroup{members: map[string]*consumerMember{}}
	for id, m := range sg.members {
		cg.members[id] = &consumerMember{subscribedTopicNames: m.subscribedTopicNames}
	}
	return cg.subscriptionHash(topics)
}

// initializedAssignmentPending is Kafka's method of that name: the group
// has members, a subscribed initialized topic has partitions that no
// target assignment holds yet, so a new target must be computed.
func (c *Coordinator) initializedAssignmentPending(sg *shareGroup) bool {
	if len(sg.members) == 0 || len(sg.initialized) == 0 {
		return false
	}
	subscribed := sg.subscribedTopicNames()
	if len(subscribed) == 0 {
		return false
	}
	inTarget := map[TopicID]map[int32]bool{}
	for _, a := range sg.target {
		for t, ps := range a {
			if inTarget[t] == nil {
				inTarget[t] = map[int32]bool{}
			}
			for _, p := range ps {
				inTarget[t][p] = true
			}
		}
	}
	for t, ti := range sg.initialized {
		if subscribed[ti.name] == 0 {
			continue
		}
		held := inTarget[t]
		if held == nil || len(held) != len(ti.partitions) {
			return true
		}
		for _, p := range ti.partitions {
			if !held[p] {
				return true
			}
		}
	}
	return false
}

// maybeComputeShareTarget is Kafka's maybeUpdateTargetAssignment for share
// groups: when the group epoch is ahead of the target epoch and
// group.share.assignment.interval.ms has passed since the last
// computation, the SimpleAssignor computes a new target over the
// initialized partitions; otherwise members keep the last target.
func (c *Coordinator) maybeComputeShareTarget(g *group, now int64, topics Topics, newID string) {
	sg := g.sg
	if sg.assignmentEpoch >= sg.epoch {
		return
	}
	if sg.assignmentTimestamp != 0 && now < sg.assignmentTimestamp+c.cfg.ShareAssignmentIntervalMs {
		return
	}
	in := simpleAssignorInput{partitions: map[TopicID]int32{}, assignable: map[TopicID]map[int32]bool{}}
	for t, ti := range sg.initialized {
		in.assignable[t] = map[int32]bool{}
		for _, p := range ti.partitions {
			in.assignable[t][p] = true
		}
	}
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		sm := simpleMember{id: id, topics: topicOrder(m.subscribedTopicNames, topics), current: sg.target[id]}
		for _, n := range m.subscribedTopicNames {
			if t, ok := topics[n]; ok {
				in.partitions[t.ID] = t.Partitions
			}
		}
		in.members = append(in.members, sm)
	}
	in.homogeneous = sg.homogeneous()
	in.specOrder = sg.order.ids(newID)
	if newID != "" {
		in.specOrder = append(in.specOrder, newID)
	}
	target := assignSimple(in)
	// Kafka writes the changed targets in the order of its member-spec
	// HashMap, the group spec's order.
	for _, id := range newSimpleSpec(in).ids {
		a := target[id]
		if old, ok := sg.target[id]; !ok || !old.equal(a) {
			c.record(g.id, shareTargetMemberKey(g.id, id), shareTargetMemberValue(a))
		}
	}
	sg.target = target
	sg.assignmentEpoch = sg.epoch
	sg.assignmentTimestamp = now
	c.record(g.id, shareTargetMetadataKey(g.id), shareTargetMetadataValue(sg.assignmentEpoch, now))
}

// reconcileShareMember is Kafka's maybeReconcile with
// ShareGroupAssignmentBuilder: a member behind the target epoch takes the
// target (restricted to the topics it subscribes to) and the target epoch;
// a member whose subscription changed takes it in its own epoch.
func (c *Coordinator) reconcileShareMember(g *group, m *shareMember, subscriptionChanged bool, topics Topics) {
	sg := g.sg
	if !subscriptionChanged && m.epoch == sg.assignmentEpoch {
		return
	}
	target := filterBySubscription(sg.target[m.id], m.subscribedTopicNames, topics)
	next := *m
	switch {
	case sg.assignmentEpoch != m.epoch:
		next.assigned = target
		if next.epoch != sg.assignmentEpoch {
			next.previousEpoch = next.epoch
		}
		next.epoch = sg.assignmentEpoch
	case subscriptionChanged:
		next.assigned = target
	}
	if next.epoch == m.epoch && next.previousEpoch == m.previousEpoch && next.assigned.equal(m.assigned) {
		return
	}
	*m = next
	c.record(g.id, shareCurrentAssignmentKey(g.id, m.id), shareCurrentAssignmentValue(m))
}

// filterBySubscription keeps the topics of a that exist under a name the
// member subscribes to (ShareGroupAssignmentBuilder.filterAssignedPartitions).
func filterBySubscription(a assignment, names []string, topics Topics) assignment {
	ids := map[TopicID]bool{}
	for _, n := range names {
		if t, ok := topics[n]; ok {
			ids[t.ID] = true
		}
	}
	out := assignment{}
	for t, ps := range a {
		if ids[t] {
			out[t] = append([]int32(nil), ps...)
		}
	}
	return out
}

// shareLeave handles epoch -1 (Kafka's shareGroupLeave).
func (c *Coordinator) shareLeave(req ShareHeartbeatRequest, topics Topics) *ShareHeartbeatResult {
	g := c.groups[req.GroupID]
	if g == nil {
		// shareGroupLeave looks the group up with shareGroup(groupId),
		// whose message is not the heartbeat's.
		return shareError(kerr.GroupIDNotFound, "Group %s not found.", req.GroupID)
	}
	if g.sg == nil {
		return shareError(kerr.GroupIDNotFound, "Group %s is not a share group.", req.GroupID)
	}
	m := g.sg.members[req.MemberID]
	if m == nil {
		return shareError(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
	}
	c.fenceShareMember(g, m, topics)
	return &ShareHeartbeatResult{MemberID: strp(req.MemberID), MemberEpoch: leaveEpoch}
}

// fenceShareMember removes a member: tombstones of its records, then the
// next group epoch; the last member leaving also writes the target epoch
// (Kafka's shareGroupFenceMember). topics is nil when the removal comes
// from a timer; the hash then uses the last heartbeat's image.
func (c *Coordinator) fenceShareMember(g *group, m *shareMember, topics Topics) {
	sg := g.sg
	c.record(g.id, shareCurrentAssignmentKey(g.id, m.id), nil)
	c.record(g.id, shareTargetMemberKey(g.id, m.id), nil)
	c.record(g.id, shareMemberKey(g.id, m.id), nil)
	last := len(sg.members) == 1
	delete(sg.members, m.id)
	sg.order.remove(m.id)
	delete(sg.target, m.id)
	sg.metadataHash = sg.subscriptionHash(topics)
	sg.epoch++
	c.record(g.id, shareGroupKey(g.id), shareGroupValue(sg))
	if last {
		// Kafka writes this record with timestamp 0.
		sg.assignmentEpoch, sg.assignmentTimestamp = sg.epoch, 0
		c.record(g.id, shareTargetMetadataKey(g.id), shareTargetMetadataValue(sg.assignmentEpoch, 0))
	}
}

// tickShareGroup fences members whose session expired
// (group.share.session.timeout.ms).
func (c *Coordinator) tickShareGroup(g *group, now int64, topics Topics) {
	for _, id := range g.sg.sortedMemberIDs() {
		if m := g.sg.members[id]; now >= m.sessionDeadline {
			c.fenceShareMember(g, m, topics)
		}
	}
}

// maybeInitializeShareState is Kafka's
// maybeCreateInitializeShareGroupStateRequest: the partitions of
// subscribed topics that are neither initialized nor being initialized
// (or whose initialization was asked longer than
// group.share.initialize.retry.interval.ms ago) are written as
// initializing and handed to the driver to initialize.
func (c *Coordinator) maybeInitializeShareState(g *group, now int64, topics Topics) {
	sg := g.sg
	names := sg.subscribedTopicNames()
	if len(names) == 0 || len(topics) == 0 {
		return
	}
	changed := map[TopicID]shareTopicInit{}
	for n := range names {
		t, ok := topics[n]
		if !ok {
			continue
		}
		want := map[int32]bool{}
		for p := int32(0); p < t.Partitions; p++ {
			want[p] = true
		}
		for _, p := range sg.initialized[t.ID].partitions {
			delete(want, p)
		}
		if ti, ok := sg.initializing[t.ID]; ok && now-ti.timestamp < c.cfg.ShareInitializeRetryIntervalMs {
			for _, p := range ti.partitions {
				delete(want, p)
			}
		}
		if len(want) == 0 {
			continue
		}
		ps := make([]int32, 0, len(want))
		for p := range want {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		changed[t.ID] = shareTopicInit{name: n, partitions: ps, timestamp: now}
	}
	if len(changed) == 0 {
		return
	}
	for t, ti := range changed {
		old := sg.initializing[t]
		ti.partitions = unionSorted(old.partitions, ti.partitions)
		sg.initializing[t] = ti
		delete(sg.deleting, t)
	}
	c.writeShareStatePartitions(g, now)
	init := ShareStateInit{GroupID: g.id, StateEpoch: sg.epoch}
	ids := make([]TopicID, 0, len(changed))
	for t := range changed {
		ids = append(ids, t)
	}
	sortTopicIDs(ids)
	for _, t := range ids {
		init.Topics = append(init.Topics, OwnedTopic{TopicID: t, Partitions: append([]int32(nil), changed[t].partitions...)})
	}
	c.pending.ShareStateInits = append(c.pending.ShareStateInits, init)
}

// InitializeShareGroupState records that the share coordinator initialized
// the state of these partitions of groupID (Kafka's
// initializeShareGroupState, run once InitializeShareGroupState
// succeeded): every reported partition becomes initialized and leaves the
// initializing set, and the next heartbeat assigns it. Kafka names a topic
// from its metadata image; Gregor from the group's own state-partition
// metadata, so a topic the group never asked for is ignored.
func (c *Coordinator) InitializeShareGroupState(now int64, groupID string, done []OwnedTopic) {
	c.fireDueTimers(groupID, now, nil)
	g := c.groups[groupID]
	if g == nil || g.sg == nil || len(done) == 0 {
		return
	}
	sg := g.sg
	for _, o := range done {
		ti, asked := sg.initializing[o.TopicID]
		prev, had := sg.initialized[o.TopicID]
		if !asked && !had {
			continue
		}
		name := ti.name
		if !asked {
			name = prev.name
		}
		sg.initialized[o.TopicID] = shareTopicInit{name: name, partitions: unionSorted(prev.partitions, o.Partitions), timestamp: now}
		if asked {
			ti.partitions = subtractSorted(ti.partitions, o.Partitions)
			if len(ti.partitions) == 0 {
				delete(sg.initializing, o.TopicID)
			} else {
				sg.initializing[o.TopicID] = ti
			}
		}
	}
	c.writeShareStatePartitions(g, now)
}

func sortTopicIDs(ids []TopicID) {
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
}

func unionSorted(a, b []int32) []int32 {
	set := map[int32]bool{}
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		set[p] = true
	}
	out := make([]int32, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func subtractSorted(a, b []int32) []int32 {
	drop := map[int32]bool{}
	for _, p := range b {
		drop[p] = true
	}
	var out []int32
	for _, p := range a {
		if !drop[p] {
			out = append(out, p)
		}
	}
	return out
}

// shareGroupTombstones records the deletion of a share group's state in
// Kafka's order (ShareGroup.createGroupTombstoneRecords): every member's
// current assignment, every member's target, the target epoch, every
// member's metadata, the state-partition metadata and the group epoch.
// Kafka's DeleteGroups also has the share coordinator delete the group's
// share state first; the driver does that (ShareGroupStatePartitions).
func (c *Coordinator) shareGroupTombstones(g *group) {
	ids := g.sg.sortedMemberIDs()
	for _, id := range ids {
		c.record(g.id, shareCurrentAssignmentKey(g.id, id), nil)
	}
	for _, id := range ids {
		c.record(g.id, shareTargetMemberKey(g.id, id), nil)
	}
	c.record(g.id, shareTargetMetadataKey(g.id), nil)
	for _, id := range ids {
		c.record(g.id, shareMemberKey(g.id, id), nil)
	}
	c.record(g.id, shareStatePartitionKey(g.id), nil)
	c.record(g.id, shareGroupKey(g.id), nil)
}

// writeShareStatePartitions records the group's state-partition metadata.
// Kafka's in-memory copy is what replaying that record builds, which dates
// every initializing topic at the time of the replay; so does Gregor's.
func (c *Coordinator) writeShareStatePartitions(g *group, now int64) {
	sg := g.sg
	for t, ti := range sg.initializing {
		ti.timestamp = now
		sg.initializing[t] = ti
	}
	sg.hasStateMetadata = true
	c.record(g.id, shareStatePartitionKey(g.id), shareStatePartitionValue(sg))
}

// ShareGroupStatePartitions returns the partitions whose share-group state
// the share coordinator holds or is asked to hold (initialized or
// initializing) for groupID, when it is a share group without members:
// those a DeleteGroups must have the share coordinator delete before it
// deletes the group, as Kafka's GroupCoordinatorService.deleteGroups does
// (sharePartitionsEligibleForDeletion). ok is false for a missing group,
// a group of another type, or one with members, which DeleteGroups
// answers itself. Timers due by now fire first, as for DeleteGroups.
func (c *Coordinator) ShareGroupStatePartitions(now int64, groupID string) (parts []OwnedTopic, ok bool) {
	c.fireDueTimers(groupID, now, nil)
	g := c.groups[groupID]
	if g == nil || g.sg == nil || len(g.sg.members) > 0 {
		return nil, false
	}
	byTopic := map[TopicID][]int32{}
	for t, ti := range g.sg.initialized {
		byTopic[t] = unionSorted(byTopic[t], ti.partitions)
	}
	for t, ti := range g.sg.initializing {
		byTopic[t] = unionSorted(byTopic[t], ti.partitions)
	}
	ids := make([]TopicID, 0, len(byTopic))
	for t := range byTopic {
		ids = append(ids, t)
	}
	sortTopicIDs(ids)
	parts = make([]OwnedTopic, 0, len(ids))
	for _, t := range ids {
		parts = append(parts, OwnedTopic{TopicID: t, Partitions: byTopic[t]})
	}
	return parts, true
}

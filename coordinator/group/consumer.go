package group

// KIP-848 consumer groups: the server-side protocol driven by
// ConsumerGroupHeartbeat. Each decision follows Kafka's
// GroupMetadataManager.consumerGroupHeartbeat and its helpers, ConsumerGroup,
// ConsumerGroupMember and CurrentAssignmentBuilder.
//
// In short: every change of a member's subscription, every member joining or
// leaving and every change of the subscribed topics' partitions bumps the
// group epoch. When the group epoch is ahead of the target assignment epoch,
// a new target assignment is computed with the group's server assignor, at
// once or once group.consumer.assignment.interval.ms allows
// (consumer_assign.go). Each member then moves towards its target on its own
// heartbeats: it first revokes what it must give up (staying in its epoch,
// state UNREVOKED_PARTITIONS), then takes the target epoch and the partitions
// that are free; partitions still held by another member come later
// (UNRELEASED_PARTITIONS).

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Member epochs with a meaning of their own in a ConsumerGroupHeartbeat.
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// memberState is a consumer group member's reconciliation state, as
// Kafka's MemberState with its record encoding (the State byte of
// ConsumerGroupCurrentMemberAssignmentValue; 127 is Kafka's UNKNOWN).
type memberState int8

const (
	memberStable               memberState = 0
	memberUnrevokedPartitions  memberState = 1
	memberUnreleasedPartitions memberState = 2
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "stable"
	case memberUnrevokedPartitions:
		return "unrevoked_partitions"
	case memberUnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// consumerMember is one member of a consumer group (Kafka's
// ConsumerGroupMember).
type consumerMember struct {
	id                   string
	instanceID, rackID   *string
	clientID, clientHost string
	subscribedTopicNames []string
	subscribedTopicRegex string         // "" for none
	re                   *regexp.Regexp // subscribedTopicRegex compiled (anchoredRegex)
	rebalanceTimeoutMs   int32
	serverAssignor       string // "" for none

	epoch, previousEpoch int32
	state                memberState
	assigned             assignment
	pendingRevocation    assignment
	// assignmentEpochs is the epoch at which each partition of assigned
	// and pendingRevocation was assigned to the member (Kafka 4.4's
	// ConsumerGroupMember keeps them with the partitions and writes them
	// as AssignmentEpochs). A missing partition counts as epoch 0.
	assignmentEpochs map[tp]int32

	sessionDeadline int64
	// rebalanceDeadline fences the member if it is still in
	// rebalanceEpoch then (0: no deadline).
	rebalanceDeadline int64
	rebalanceEpoch    int32
}

// consumerGroup is the KIP-848 part of a group of type "consumer" (Kafka's
// ConsumerGroup). Offsets stay in the group.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	// assignmentTimestamp is when the target of assignmentEpoch was
	// computed (Kafka 4.4's AssignmentTimestamp, 0 when never).
	assignmentTimestamp int64
	metadataHash        int64
	members             map[string]*consumerMember
	static              map[string]string // instance id -> member id
	target              map[string]assignment
	// partitionEpoch is the epoch of the member that holds each partition
	// (assigned or pending revocation): Kafka's currentPartitionEpoch.
	partitionEpoch map[tp]int32
	// resolvedRegex holds the subscription regexes in use that have been
	// resolved. A regex is resolved at the group's next heartbeat after the
	// one that brought it, as Kafka resolves regexes asynchronously: the
	// heartbeat that subscribes to a regex gets the literal topics, a later
	// one the topics the regex matches.
	resolvedRegex map[string]bool

	// computed tells whether this coordinator computed a target for the
	// group, and computedAt when it last did; computeAt, when not 0, is
	// when the next computation is due, with the topic image
	// computeTopics (consumer_assign.go).
	computed      bool
	computedAt    int64
	computeAt     int64
	computeTopics Topics
}

// newConsumerGroup is a new consumer group; its epoch starts at 1, as
// Kafka 4.4's ModernGroup constructor sets it, so the first member joins
// at epoch 2.
func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		epoch:   1,
		members: map[string]*consumerMember{}, static: map[string]string{},
		target: map[string]assignment{}, partitionEpoch: map[tp]int32{}, resolvedRegex: map[string]bool{},
	}
}

// consumerState is a consumer group's state name, as Kafka's
// ConsumerGroup.ConsumerGroupState reports it.
func (cg *consumerGroup) state() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	if cg.epoch > cg.assignmentEpoch {
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// updatePartitionEpochs moves the partition ownership of old to m (either
// may be nil), as Kafka's ConsumerGroup.maybeUpdatePartitionEpoch.
func (cg *consumerGroup) updatePartitionEpochs(old, m *consumerMember) {
	if old != nil {
		for _, a := range []assignment{old.assigned, old.pendingRevocation} {
			for t, ps := range a {
				for _, p := range ps {
					if e, ok := cg.partitionEpoch[tp{t, p}]; ok && e == old.epoch {
						delete(cg.partitionEpoch, tp{t, p})
					}
				}
			}
		}
	}
	if m != nil {
		for _, a := range []assignment{m.assigned, m.pendingRevocation} {
			for t, ps := range a {
				for _, p := range ps {
					cg.partitionEpoch[tp{t, p}] = m.epoch
				}
			}
		}
	}
}

// OwnedTopic is a topic's partitions a member says it owns.
type OwnedTopic struct {
	TopicID    TopicID
	Partitions []int32
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat. A nil field means
// "unchanged since the last heartbeat", as on the wire; RebalanceTimeoutMs
// -1 likewise.
type ConsumerHeartbeatRequest struct {
	Version              int16
	GroupID              string
	MemberID             string
	MemberEpoch          int32
	InstanceID           *string
	RackID               *string
	RebalanceTimeoutMs   int32
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	TopicPartitions      []OwnedTopic // nil: not sent
	ClientID, ClientHost string
}

// ConsumerHeartbeatResult is the answer to a ConsumerGroupHeartbeat.
// Assignment is nil when the response carries none.
type ConsumerHeartbeatResult struct {
	ErrorCode           int16
	ErrorMessage        *string
	MemberID            *string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	Assignment          []OwnedTopic
}

func heartbeatError(e *kerr.Error, format string, args ...any) *ConsumerHeartbeatResult {
	msg := fmt.Sprintf(format, args...)
	return &ConsumerHeartbeatResult{ErrorCode: e.Code, ErrorMessage: &msg}
}

// ConsumerGroupHeartbeat handles one ConsumerGroupHeartbeat; the answer is
// immediate. topics is the cluster's topics now.
func (c *Coordinator) ConsumerGroupHeartbeat(now int64, id ReplyID, req ConsumerHeartbeatRequest, topics Topics) {
	c.fireDueTimers(req.GroupID, now, topics)
	c.reply(id, c.consumerHeartbeat(now, req, topics))
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateHeartbeat(req ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	invalid := func(msg string) *ConsumerHeartbeatResult { return heartbeatError(kerr.InvalidRequest, "%s", msg) }
	switch {
	case req.GroupID == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	}
	if req.Version >= 1 && req.MemberID == "" {
		// KIP-1082: from v1 the client chooses its member id.
		return invalid("MemberId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	case e == joinEpoch:
		if req.RebalanceTimeoutMs == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.TopicPartitions == nil || len(req.TopicPartitions) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == staticLeaveEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	// An empty regex is no regex: librdkafka sends "" beside topic names,
	// and Kafka accepts it.
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return heartbeatError(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.",
				*req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil && !contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return heartbeatError(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, joinComma(c.cfg.ConsumerAssignors))
	}
	return nil
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

func (c *Coordinator) consumerHeartbeat(now int64, req ConsumerHeartbeatRequest, topics Topics) *ConsumerHeartbeatResult {
	if res := c.validateHeartbeat(req); res != nil {
		return res
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.consumerLeave(now, req, topics)
	}
	g, res := c.consumerGroupFor(now, req.GroupID, req.MemberEpoch == joinEpoch)
	if res != nil {
		return res
	}
	cg := g.cg
	cg.resolveRegexes()
	if req.MemberID == "" {
		req.MemberID = c.cfg.NewMemberID(req.ClientID) // v0: the coordinator names new members
	}
	if len(cg.members) >= c.cfg.ConsumerMaxSize && cg.members[req.MemberID] == nil {
		c.dropIfEmptyNew(g)
		return heartbeatError(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", c.cfg.ConsumerMaxSize)
	}

	// The member, new or existing, and the epoch checks.
	var member *consumerMember
	var replaced *consumerMember // a static member this one replaces
	if req.InstanceID == nil {
		member = cg.members[req.MemberID]
		if member == nil {
			if req.MemberEpoch != joinEpoch {
				return heartbeatError(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
			}
			member = &consumerMember{id: req.MemberID, state: memberStable, assigned: assignment{}, pendingRevocation: assignment{}}
		} else if res := checkMemberEpoch(member, req); res != nil {
			return res
		}
	} else {
		existing := cg.members[cg.static[*req.InstanceID]]
		if req.MemberEpoch == joinEpoch {
			switch {
			case existing == nil:
				member = cg.members[req.MemberID]
				if member == nil {
					member = &consumerMember{id: req.MemberID, state: memberStable, assigned: assignment{}, pendingRevocation: assignment{}}
				}
			case existing.epoch != staticLeaveEpoch:
				return heartbeatError(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					req.MemberID, *req.InstanceID, existing.id)
			default:
				// The new instance takes over the old one's assignment,
				// starting at epoch 0.
				cp := *existing
				cp.id = req.MemberID
				cp.epoch, cp.previousEpoch = 0, 0
				cp.assigned, cp.pendingRevocation = existing.assigned.clone(), assignment{}
				cp.assignmentEpochs = existing.assigned.epochsOf(existing.assignmentEpochs)
				member, replaced = &cp, existing
			}
		} else {
			if existing == nil {
				return heartbeatError(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
			}
			if existing.id != req.MemberID {
				return heartbeatError(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.",
					req.MemberID, *req.InstanceID, existing.id)
			}
			if res := checkMemberEpoch(existing, req); res != nil {
				return res
			}
			member = existing
		}
	}
	isNew := cg.members[member.id] == nil

	// 1. Update the member; a changed subscription bumps the group epoch.
	updated := *member
	if req.InstanceID != nil {
		updated.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		updated.rackID = req.RackID
	}
	if req.RebalanceTimeoutMs != -1 {
		updated.rebalanceTimeoutMs = req.RebalanceTimeoutMs
	}
	if req.ServerAssignor != nil {
		updated.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribedTopicNames = sortedUnique(req.SubscribedTopicNames)
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != updated.subscribedTopicRegex {
		updated.subscribedTopicRegex = *req.SubscribedTopicRegex
		updated.re, _ = anchoredRegex(updated.subscribedTopicRegex) // validated above
	}
	updated.clientID, updated.clientHost = req.ClientID, req.ClientHost
	m := &updated

	if replaced != nil {
		c.replaceConsumerMember(g, replaced, m)
	}
	bump := false
	if isNew || !sameSubscription(member, m) || !equalStrPtr(member.instanceID, m.instanceID) ||
		!equalStrPtr(member.rackID, m.rackID) || member.rebalanceTimeoutMs != m.rebalanceTimeoutMs ||
		member.clientID != m.clientID || member.clientHost != m.clientHost || replaced != nil {
		c.record(g.id, consumerMemberKey(g.id, m.id), consumerMemberValue(m))
		bump = isNew && replaced == nil || !sameSubscription(member, m)
	}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if isNew {
		cg.updatePartitionEpochs(nil, m)
	}
	hash := cg.subscriptionHash(topics)
	if hash != cg.metadataHash {
		cg.metadataHash = hash
		bump = true
	}
	if bump {
		cg.epoch++
		c.record(g.id, consumerGroupKey(g.id), consumerGroupValue(cg))
	}

	// 2. A new target assignment when the group epoch moved on, now or
	// once group.consumer.assignment.interval.ms allows (consumer_assign.go).
	c.maybeComputeTarget(g, now, topics)

	// 3. Reconcile the member with its target.
	before := member.assigned
	if isNew {
		before = nil
	}
	c.reconcile(g, m, req.TopicPartitions, now)
	m.sessionDeadline = now + int64(c.cfg.ConsumerSessionTimeoutMs)

	out := &ConsumerHeartbeatResult{MemberID: strp(m.id), MemberEpoch: m.epoch, HeartbeatIntervalMs: c.cfg.ConsumerHeartbeatIntervalMs}
	full := req.MemberEpoch == joinEpoch || (req.RebalanceTimeoutMs != -1 && req.SubscribedTopicNames != nil && req.TopicPartitions != nil)
	if full || before == nil || !before.equal(m.assigned) {
		out.Assignment = toOwned(m.assigned)
	}
	return out
}

// consumerGroupFor returns the consumer group, creating it for a joining
// member (Kafka's getOrMaybeCreateConsumerGroup). An empty classic group is
// replaced by a consumer group, as Kafka's online upgrade of an empty
// group does; a classic group with members is not converted.
func (c *Coordinator) consumerGroupFor(now int64, groupID string, create bool) (*group, *ConsumerHeartbeatResult) {
	g := c.groups[groupID]
	if g == nil && !create {
		return nil, heartbeatError(kerr.GroupIDNotFound, "Consumer group %s not found.", groupID)
	}
	if g == nil {
		g = newGroup(groupID, now)
		g.cg = newConsumerGroup()
		g.protocolType = ConsumerProtocolType
		c.groups[groupID] = g
		return g, nil
	}
	if g.cg != nil {
		return g, nil
	}
	if create && g.sg == nil && g.state == Empty && len(g.members) == 0 && len(g.pendingMembers) == 0 {
		if g.protocolType != "" {
			// The classic group's metadata goes; its offsets stay.
			c.record(g.id, groupKey(g.id), nil)
		}
		g.cg = newConsumerGroup()
		g.protocolType = ConsumerProtocolType
		g.generation, g.protocol, g.leader = 0, "", ""
		return g, nil
	}
	return nil, heartbeatError(kerr.GroupIDNotFound, "Group %s is not a consumer group.", groupID)
}

// ConsumerProtocolType is the protocol type ListGroups and DescribeGroups
// report for a consumer group.
const ConsumerProtocolType = "consumer"

// dropIfEmptyNew forgets a consumer group created by a heartbeat that was
// then refused, so a refused join leaves no group behind.
func (c *Coordinator) dropIfEmptyNew(g *group) {
	if g.cg != nil && len(g.cg.members) == 0 && g.cg.epoch == 1 && len(g.offsets) == 0 {
		delete(c.groups, g.id)
	}
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a
// member may be one epoch behind only if the response that bumped it was
// lost, which it shows by owning a subset of its current assignment.
func checkMemberEpoch(m *consumerMember, req ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	if req.MemberEpoch > m.epoch {
		return heartbeatError(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
			req.MemberEpoch, m.epoch)
	}
	if req.MemberEpoch < m.epoch && (req.MemberEpoch != m.previousEpoch || !ownedSubset(req.TopicPartitions, m.assigned)) {
		return heartbeatError(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
			req.MemberEpoch, m.epoch)
	}
	return nil
}

func ownedSubset(owned []OwnedTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

func sameSubscription(a, b *consumerMember) bool {
	if a.subscribedTopicRegex != b.subscribedTopicRegex || a.serverAssignor != b.serverAssignor ||
		len(a.subscribedTopicNames) != len(b.subscribedTopicNames) {
		return false
	}
	for i := range a.subscribedTopicNames {
		if a.subscribedTopicNames[i] != b.subscribedTopicNames[i] {
			return false
		}
	}
	return true
}

func equalStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sortedUnique(ss []string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}

func toOwned(a assignment) []OwnedTopic {
	out := []OwnedTopic{}
	for _, t := range a.sortedTopics() {
		out = append(out, OwnedTopic{TopicID: t, Partitions: append([]int32(nil), a[t]...)})
	}
	return out
}

// resolveRegexes resolves every regex a member subscribes to and forgets
// the resolutions no member uses any more (Kafka's
// maybeUpdateRegularExpressions and its asynchronous resolution, which
// Gregor completes at the group's next heartbeat).
func (cg *consumerGroup) resolveRegexes() {
	inUse := map[string]bool{}
	for _, m := range cg.members {
		if m.subscribedTopicRegex != "" {
			inUse[m.subscribedTopicRegex] = true
		}
	}
	cg.resolvedRegex = inUse
}

// subscribedTopics returns the names of the existing topics m subscribes
// to, by name or by a resolved regex. Go's regexp (RE2 syntax) stands in
// for Kafka's RE2/J; the two accept the same syntax for everything but
// rare constructs. A regex must match the whole topic name, as in Kafka.
func (cg *consumerGroup) subscribedTopics(m *consumerMember, topics Topics) []string {
	var out []string
	for _, n := range m.subscribedTopicNames {
		if _, ok := topics[n]; ok {
			out = append(out, n)
		}
	}
	if m.re != nil && cg.resolvedRegex[m.subscribedTopicRegex] {
		for n := range topics {
			if m.re.MatchString(n) {
				out = append(out, n)
			}
		}
	}
	return sortedUnique(out)
}

// subscriptionHash hashes the id and partition count of every topic some
// member subscribes to. A change (partitions added, a topic created that a
// subscription names or matches, a topic deleted or recreated) bumps the
// group epoch, as Kafka's metadata hash does. The value differs from
// Kafka's Murmur3 hash; only its changes matter.
func (cg *consumerGroup) subscriptionHash(topics Topics) int64 {
	names := map[string]bool{}
	for _, m := range cg.members {
		for _, n := range cg.subscribedTopics(m, topics) {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, n := range sortedKeys(names) {
		t := topics[n]
		h.Write([]byte(n))
		h.Write(t.ID[:])
		h.Write([]byte{byte(t.Partitions >> 24), byte(t.Partitions >> 16), byte(t.Partitions >> 8), byte(t.Partitions)})
	}
	return int64(h.Sum64())
}

// preferredAssignor is Kafka's computePreferredServerAssignor: the assignor
// most members ask for, else the first of group.consumer.assignors. Ties go
// to the assignor listed first in the configuration.
func (c *Coordinator) preferredAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := c.cfg.ConsumerAssignors[0]
	for _, a := range c.cfg.ConsumerAssignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// computeTargetAssignment runs the group's assignor and records the members
// whose target changed, then the new assignment epoch (Kafka's
// TargetAssignmentBuilder).
func (c *Coordinator) computeTargetAssignment(g *group, now int64, topics Topics) {
	cg := g.cg
	in := assignorInput{partitions: map[TopicID]int32{}, names: map[TopicID]string{}}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		am := assignorMember{id: id, topics: map[TopicID]bool{}, current: cg.target[id]}
		for _, n := range cg.subscribedTopics(m, topics) {
			t := topics[n]
			am.topics[t.ID] = true
			in.partitions[t.ID] = t.Partitions
			in.names[t.ID] = n
		}
		in.members = append(in.members, am)
	}
	target := assignors[c.preferredAssignor(cg)](in)
	for _, id := range cg.sortedMemberIDs() {
		a := target[id]
		if old, ok := cg.target[id]; !ok || !old.equal(a) {
			c.record(g.id, targetMemberKey(g.id, id), targetMemberValue(a))
		}
	}
	cg.target = target
	cg.assignmentEpoch, cg.assignmentTimestamp = cg.epoch, now
	c.record(g.id, targetMetadataKey(g.id), targetMetadataValue(cg.assignmentEpoch, cg.assignmentTimestamp))
}

// reconcile moves m towards its target assignment (Kafka's
// CurrentAssignmentBuilder) and records its new current assignment when it
// changed. owned is what the member says it owns (nil: not sent).
func (c *Coordinator) reconcile(g *group, m *consumerMember, owned []OwnedTopic, now int64) {
	cg := g.cg
	if m.epoch == cg.assignmentEpoch && m.state == memberStable {
		return
	}
	next := c.nextAssignment(cg, m, owned)
	if next.epoch == m.epoch && next.previousEpoch == m.previousEpoch && next.state == m.state &&
		next.assigned.equal(m.assigned) && next.pendingRevocation.equal(m.pendingRevocation) {
		return
	}
	old := *m
	*m = next
	cg.updatePartitionEpochs(&old, m)
	c.record(g.id, currentAssignmentKey(g.id, m.id), currentAssignmentValue(m))
	if m.state == memberUnrevokedPartitions {
		m.rebalanceDeadline, m.rebalanceEpoch = now+int64(m.rebalanceTimeoutMs), m.epoch
	} else {
		m.rebalanceDeadline = 0
	}
}

// ownsAny reports whether owned (nil: unknown, so assumed yes) still holds
// a partition of a.
func ownsAny(owned []OwnedTopic, a assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

func (c *Coordinator) nextAssignment(cg *consumerGroup, m *consumerMember, owned []OwnedTopic) consumerMember {
	switch m.state {
	case memberUnrevokedPartitions:
		if ownsAny(owned, m.pendingRevocation) {
			return *m
		}
		return c.computeNext(cg, m, m.epoch+1, owned)
	default: // stable (at an older epoch) or unreleased partitions
		return c.computeNext(cg, m, m.epoch, owned)
	}
}

// computeNext is CurrentAssignmentBuilder.computeNextAssignment.
func (c *Coordinator) computeNext(cg *consumerGroup, m *consumerMember, epoch int32, owned []OwnedTopic) consumerMember {
	target := cg.target[m.id]
	if target == nil {
		target = assignment{}
	}
	kept, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	for _, t := range m.assigned.sortedTopics() {
		for _, p := range m.assigned[t] {
			if target.has(t, p) {
				kept.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
	}
	for _, t := range target.sortedTopics() {
		for _, p := range target[t] {
			if m.assigned.has(t, p) {
				continue
			}
			// A partition the member itself still has pending revocation
			// is not unreleased: only one member holds a partition at a
			// time (Kafka 4's CurrentAssignmentBuilder).
			if _, held := cg.partitionEpoch[tp{t, p}]; held && !m.pendingRevocation.has(t, p) {
				unreleased = true
				continue
			}
			add.add(t, p)
		}
	}
	next := *m
	next.pendingRevocation = assignment{}
	// Kept and revoked partitions keep the epoch they were assigned at;
	// added ones take the target's epoch (Kafka 4.4's
	// CurrentAssignmentBuilder.computeNextAssignment).
	next.assignmentEpochs = map[tp]int32{}
	keepEpochs := func(a assignment) {
		for t, ps := range a {
			for _, p := range ps {
				next.assignmentEpochs[tp{t, p}] = m.assignmentEpochs[tp{t, p}]
			}
		}
	}
	keepEpochs(kept)
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		// Revoke first, in the current epoch.
		next.state = memberUnrevokedPartitions
		next.setEpoch(epoch)
		next.assigned, next.pendingRevocation = kept, revoke
		keepEpochs(revoke)
	default:
		for t, ps := range add {
			for _, p := range ps {
				kept.add(t, p)
				next.assignmentEpochs[tp{t, p}] = cg.assignmentEpoch
			}
		}
		next.state = memberStable
		if unreleased {
			next.state = memberUnreleasedPartitions
		}
		next.setEpoch(cg.assignmentEpoch)
		next.assigned = kept
	}
	return next
}

// epochsOf is the assignment epochs of a's partitions in from (0 for a
// partition from does not have), in a new map.
func (a assignment) epochsOf(from map[tp]int32) map[tp]int32 {
	out := make(map[tp]int32, a.size())
	for t, ps := range a {
		for _, p := range ps {
			out[tp{t, p}] = from[tp{t, p}]
		}
	}
	return out
}

// setEpoch is ConsumerGroupMember.Builder.updateMemberEpoch: the previous
// epoch becomes the old one even when the epoch does not change (so a
// member reconciled within its epoch no longer accepts the epoch before),
// as Kafka 4.2 to 4.4 do; the lost-response check reads it.
func (m *consumerMember) setEpoch(e int32) {
	m.previousEpoch, m.epoch = m.epoch, e
}

// replaceConsumerMember hands a static member's place to its new instance
// (Kafka's replaceMember): the old member's records become tombstones and
// its target assignment moves to the new member id.
func (c *Coordinator) replaceConsumerMember(g *group, old, m *consumerMember) {
	cg := g.cg
	c.removeConsumerMemberRecords(g, old.id)
	cg.updatePartitionEpochs(old, nil)
	delete(cg.members, old.id)
	if a, ok := cg.target[old.id]; ok {
		cg.target[m.id] = a
		delete(cg.target, old.id)
		c.record(g.id, targetMemberKey(g.id, m.id), targetMemberValue(a))
	}
	cg.updatePartitionEpochs(nil, m)
	c.record(g.id, currentAssignmentKey(g.id, m.id), currentAssignmentValue(m))
}

func (c *Coordinator) removeConsumerMemberRecords(g *group, memberID string) {
	c.record(g.id, currentAssignmentKey(g.id, memberID), nil)
	c.record(g.id, targetMemberKey(g.id, memberID), nil)
	c.record(g.id, consumerMemberKey(g.id, memberID), nil)
}

// consumerLeave handles epochs -1 (leave) and -2 (a static member leaves
// for now and keeps its place), as Kafka's consumerGroupLeave.
func (c *Coordinator) consumerLeave(now int64, req ConsumerHeartbeatRequest, topics Topics) *ConsumerHeartbeatResult {
	g := c.groups[req.GroupID]
	if g == nil || g.cg == nil {
		return heartbeatError(kerr.GroupIDNotFound, "Consumer group %s not found.", req.GroupID)
	}
	cg := g.cg
	res := &ConsumerHeartbeatResult{MemberID: strp(req.MemberID), MemberEpoch: req.MemberEpoch}
	var m *consumerMember
	if req.InstanceID == nil {
		m = cg.members[req.MemberID]
		if m == nil {
			return heartbeatError(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
		}
	} else {
		m = cg.members[cg.static[*req.InstanceID]]
		if m == nil {
			return heartbeatError(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if m.id != req.MemberID {
			return heartbeatError(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.",
				req.MemberID, *req.InstanceID, m.id)
		}
		if req.MemberEpoch == staticLeaveEpoch {
			old := *m
			m.epoch = staticLeaveEpoch
			m.pendingRevocation = assignment{}
			// Kafka 4.4 resets the kept partitions' assignment epochs to 0
			// (ConsumerGroupMember.Builder.resetAssignedPartitionsEpochsToZero).
			m.assignmentEpochs = m.assigned.epochsOf(nil)
			m.rebalanceDeadline = 0
			cg.updatePartitionEpochs(&old, m)
			c.record(g.id, currentAssignmentKey(g.id, m.id), currentAssignmentValue(m))
			return res
		}
	}
	c.fenceConsumerMember(g, m, topics)
	return res
}

// fenceConsumerMember removes a member and bumps the group epoch (Kafka's
// consumerGroupFenceMember). topics may be nil when the removal comes from
// a timer; the subscription hash is then refreshed at the next heartbeat.
func (c *Coordinator) fenceConsumerMember(g *group, m *consumerMember, topics Topics) {
	cg := g.cg
	c.removeConsumerMemberRecords(g, m.id)
	cg.updatePartitionEpochs(m, nil)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	if topics != nil {
		cg.metadataHash = cg.subscriptionHash(topics)
	}
	cg.epoch++
	c.record(g.id, consumerGroupKey(g.id), consumerGroupValue(cg))
}

// tickConsumerGroup fences members whose session expired and members that
// did not revoke their partitions within their rebalance timeout, then
// runs a target computation that is due and may run at a request
// (fromTick: at the driver's Tick, which runs any due computation).
func (c *Coordinator) tickConsumerGroup(g *group, now int64, topics Topics, fromTick bool) {
	cg := g.cg
	if fromTick || !c.cfg.ConsumerAssignorOffload {
		defer c.fireTargetComputation(g, now, topics)
	}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		switch {
		case now >= m.sessionDeadline:
			c.fenceConsumerMember(g, m, topics)
		case m.rebalanceDeadline > 0 && now >= m.rebalanceDeadline && m.epoch == m.rebalanceEpoch:
			c.fenceConsumerMember(g, m, topics)
		}
	}
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: an
// empty group takes commits from outside (member epoch -1); otherwise the
// member must exist, commit with v9+, and carry its current epoch.
func (g *group) validateConsumerCommit(req CommitRequest) *kerr.Error {
	cg := g.cg
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if req.Version < 9 {
		return kerr.UnsupportedVersion
	}
	if req.Generation != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// validateConsumerFetch is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+ carrying a member id and epoch.
func (g *group) validateConsumerFetch(memberID *string, memberEpoch int32) *kerr.Error {
	if memberID == nil || (memberEpoch < 0 && *memberID == "") {
		return nil
	}
	m := g.cg.members[*memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if memberEpoch != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// consumerGroupTombstones records the deletion of a consumer group's
// state (Kafka's ConsumerGroup.createGroupTombstoneRecords): each member's
// records, then the target assignment epoch, the partition metadata and the
// group epoch.
func (c *Coordinator) consumerGroupTombstones(g *group) {
	for _, id := range g.cg.sortedMemberIDs() {
		c.removeConsumerMemberRecords(g, id)
	}
	c.record(g.id, targetMetadataKey(g.id), nil)
	c.record(g.id, partitionMetadataKey(g.id), nil)
	c.record(g.id, consumerGroupKey(g.id), nil)
}

// subscribesTo reports whether a member subscribes to the topic by name
// (Kafka's isSubscribedToTopic; a regex subscription is not resolved
// here).
func (cg *consumerGroup) subscribesTo(topic string) bool {
	for _, m := range cg.members {
		for _, n := range m.subscribedTopicNames {
			if n == topic {
				return true
			}
		}
	}
	return false
}

// anchoredRegex compiles a subscription regex to match whole topic names,
// as Kafka matches it; "" is no regex (nil).
func anchoredRegex(src string) (*regexp.Regexp, error) {
	if src == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + src + ")$")
}

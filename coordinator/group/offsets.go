package group

import (
	"encoding/binary"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitPartition is one partition's offset to commit.
type CommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 for none
	Metadata    *string
}

// CommitTopic is one topic's partitions to commit.
type CommitTopic struct {
	Topic      string
	Partitions []CommitPartition
}

// CommitRequest is an OffsetCommit. Generation -1 with no member id is a
// "simple" commit from outside group management.
type CommitRequest struct {
	GroupID    string
	Generation int32
	MemberID   string
	InstanceID *string
	Topics     []CommitTopic
	// Version is the OffsetCommit version: the error for a generation in
	// a group that does not exist depends on it.
	Version int16
}

// PartitionResult is one partition's error code.
type PartitionResult struct {
	Partition int32
	ErrorCode int16
}

// TopicResult is one topic's partition results.
type TopicResult struct {
	Topic      string
	Partitions []PartitionResult
}

// CommitResult is the answer to an OffsetCommit.
type CommitResult struct{ Topics []TopicResult }

// FetchTopic names the partitions of one topic to fetch.
type FetchTopic struct {
	Topic      string
	Partitions []int32
}

// FetchRequest is an OffsetFetch for one group. Topics nil means every
// committed partition.
type FetchRequest struct {
	GroupID       string
	Topics        []FetchTopic
	RequireStable bool
	// MemberID and MemberEpoch are OffsetFetch v9+'s; a consumer group
	// checks them (nil member id: not sent).
	MemberID    *string
	MemberEpoch int32
}

// FetchedPartition is one partition's committed offset (-1 for none).
type FetchedPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	ErrorCode   int16
}

// FetchedTopic is one topic's committed offsets.
type FetchedTopic struct {
	Topic      string
	Partitions []FetchedPartition
}

// FetchResult is the answer to an OffsetFetch for one group.
type FetchResult struct {
	ErrorCode int16
	Topics    []FetchedTopic
}

// OffsetDeleteRequest is an OffsetDelete.
type OffsetDeleteRequest struct {
	GroupID string
	Topics  []FetchTopic
}

// OffsetDeleteResult is the answer to an OffsetDelete.
type OffsetDeleteResult struct {
	ErrorCode int16
	Topics    []TopicResult
}

// CommitOffsets handles an OffsetCommit (Kafka's
// OffsetMetadataManager.commitOffset and ClassicGroup.validateOffsetCommit).
func (c *Coordinator) CommitOffsets(now int64, id ReplyID, req CommitRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	e := c.validateCommit(now, req)
	g := c.groups[req.GroupID]
	c.reply(id, c.commitEach(now, e, req.Topics, func(tp topicPartition, co committedOffset) {
		g.offsets[tp] = co
		c.record(g.id, offsetKey(g.id, tp.topic, tp.partition), offsetValue(co))
	}))
}

// commitEach answers a commit of topics: every partition fails with e when e is not nil, one whose
// metadata is too long fails with OFFSET_METADATA_TOO_LARGE, and each other is passed to store as
// the offset committed now.
func (c *Coordinator) commitEach(now int64, e *kerr.Error, topics []CommitTopic, store func(topicPartition, committedOffset)) *CommitResult {
	res := &CommitResult{}
	for _, t := range topics {
		tr := TopicResult{Topic: t.Topic}
		for _, p := range t.Partitions {
			pr := PartitionResult{Partition: p.Partition, ErrorCode: errCode(e)}
			switch {
			case e != nil:
			case p.Metadata != nil && len(*p.Metadata) > c.cfg.MaxMetadataBytes:
				pr.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				co := committedOffset{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTimestamp: now, seq: c.nextSeq()}
				if p.Metadata != nil {
					co.metadata = *p.Metadata
				}
				store(topicPartition{t.Topic, p.Partition}, co)
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		res.Topics = append(res.Topics, tr)
	}
	return res
}

func (c *Coordinator) validateCommit(now int64, req CommitRequest) *kerr.Error {
	if req.GroupID == "" {
		return kerr.InvalidGroupID
	}
	g := c.groups[req.GroupID]
	if g == nil {
		if req.Generation < 0 {
			// A simple group, created by its first manual commit.
			g = newGroup(req.GroupID, now)
			c.groups[req.GroupID] = g
			return nil
		}
		if req.Version >= 9 {
			return kerr.GroupIDNotFound
		}
		return kerr.IllegalGeneration
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if g.sg != nil {
		// Kafka's ShareGroup.validateOffsetCommit: "Group %s is not a
		// consumer group." (share groups keep no offsets here).
		return kerr.GroupIDNotFound
	}
	if g.cg != nil {
		return g.validateConsumerCommit(req)
	}
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
			return e
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration
		}
	} else if g.state != Empty {
		return kerr.UnknownMemberID
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress
	}
	if m := g.members[req.MemberID]; m != nil {
		// A commit is as good as a heartbeat (Kafka reschedules it).
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
	}
	return nil
}

// FetchOffsets handles an OffsetFetch for one group (Kafka's
// OffsetMetadataManager.fetchOffsets and fetchAllOffsets). A group without
// offsets answers -1 for each partition asked for, without error. With
// RequireStable, a partition with a transactional offset waiting for its
// marker is UNSTABLE_OFFSET_COMMIT (offset -1), so that the consumer
// retries until the transaction ends; without it, the committed offset is
// answered as if the transaction did not exist.
func (c *Coordinator) FetchOffsets(now int64, id ReplyID, req FetchRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	c.reply(id, c.fetchOffsets(req))
}

func (c *Coordinator) fetchOffsets(req FetchRequest) *FetchResult {
	res := &FetchResult{}
	g := c.groups[req.GroupID]
	if g != nil && (g.state == Dead || g.sg != nil) {
		// A share group's validateOffsetFetch is GROUP_ID_NOT_FOUND.
		res.ErrorCode = kerr.GroupIDNotFound.Code
		return res
	}
	if g != nil && g.cg != nil {
		if e := g.validateConsumerFetch(req.MemberID, req.MemberEpoch); e != nil {
			res.ErrorCode = e.Code
			return res
		}
	}
	if req.Topics == nil {
		if g == nil {
			return res
		}
		byTopic := map[string][]int32{}
		for tp := range g.offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		for _, t := range sortedKeys(byTopic) {
			ps := byTopic[t]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			req.Topics = append(req.Topics, FetchTopic{Topic: t, Partitions: ps})
		}
	}
	for _, t := range req.Topics {
		ft := FetchedTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			fp := FetchedPartition{Partition: p, Offset: -1, LeaderEpoch: -1}
			switch {
			case req.RequireStable && c.hasPending(req.GroupID, topicPartition{t.Topic, p}):
				fp.ErrorCode = kerr.UnstableOffsetCommit.Code
			case g != nil:
				if co, ok := g.offsets[topicPartition{t.Topic, p}]; ok {
					fp.Offset, fp.LeaderEpoch, fp.Metadata = co.offset, co.leaderEpoch, co.metadata
				}
			}
			ft.Partitions = append(ft.Partitions, fp)
		}
		res.Topics = append(res.Topics, ft)
	}
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DeleteOffsets handles an OffsetDelete (Kafka's
// OffsetMetadataManager.deleteOffsets and the groups' validateOffsetDelete):
// an unknown or dead group is GROUP_ID_NOT_FOUND; a classic group with
// members is NON_EMPTY_GROUP unless its protocol type is "consumer"; then
// each partition of a topic the group subscribes to is
// GROUP_SUBSCRIBED_TO_TOPIC and the offsets of the others are deleted.
func (c *Coordinator) DeleteOffsets(now int64, id ReplyID, req OffsetDeleteRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	res := &OffsetDeleteResult{}
	g := c.groups[req.GroupID]
	switch {
	case g == nil || g.state == Dead || g.sg != nil:
		// A share group's validateOffsetDelete is GROUP_ID_NOT_FOUND.
		res.ErrorCode = kerr.GroupIDNotFound.Code
	case g.cg != nil:
		// Kafka's ConsumerGroup.validateOffsetDelete accepts any state.
	case g.state != Empty && g.protocolType != ConsumerProtocolType:
		res.ErrorCode = kerr.NonEmptyGroup.Code
	}
	if res.ErrorCode != 0 {
		c.reply(id, res)
		return
	}
	for _, t := range req.Topics {
		tr := TopicResult{Topic: t.Topic}
		subscribed := g.subscribesTo(t.Topic)
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p}
			if subscribed {
				tr.Partitions = append(tr.Partitions, PartitionResult{Partition: p, ErrorCode: kerr.GroupSubscribedToTopic.Code})
				continue
			}
			if _, ok := g.offsets[tp]; ok || c.hasPending(g.id, tp) {
				c.tombstoneOffset(g.id, tp)
			}
			tr.Partitions = append(tr.Partitions, PartitionResult{Partition: p})
		}
		res.Topics = append(res.Topics, tr)
	}
	c.reply(id, res)
}

// subscribesTo is Kafka's Group.isSubscribedToTopic. A classic group whose
// members' subscriptions are unknown counts as subscribed to everything
// if its protocol type is "consumer", as in Kafka.
func (g *group) subscribesTo(topic string) bool {
	if g.cg != nil {
		return g.cg.subscribesTo(topic)
	}
	if g.subscribedTopics == nil {
		return g.protocolType == ConsumerProtocolType
	}
	return g.subscribedTopics[topic]
}

// computeSubscribedTopics is Kafka's ClassicGroup.computeSubscribedTopics:
// for protocol type "consumer", the union of the topics in the members'
// metadata for the chosen protocol, each read as the version 0 prefix of
// ConsumerProtocolSubscription; nil if the type is another, no protocol is
// chosen yet, or a member's metadata does not parse.
func (g *group) computeSubscribedTopics() map[string]bool {
	if g.protocolType != ConsumerProtocolType {
		return nil
	}
	out := map[string]bool{}
	if len(g.members) == 0 {
		return out
	}
	if g.protocol == "" {
		return nil
	}
	for _, m := range g.members {
		topics, ok := subscriptionTopics(m.metadata(g.protocol))
		if !ok {
			return nil
		}
		for _, t := range topics {
			out[t] = true
		}
	}
	return out
}

// subscriptionTopics reads the topics of a ConsumerProtocolSubscription:
// a version (at least 0), a topic array and nullable user data, the
// prefix every version starts with.
func subscriptionTopics(b []byte) ([]string, bool) {
	if len(b) < 6 || int16(binary.BigEndian.Uint16(b)) < 0 {
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	if n < 0 || int64(n)*2 > int64(len(b)) {
		return nil, false
	}
	topics := make([]string, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int16(binary.BigEndian.Uint16(b))
		if l < 0 || int(l) > len(b)-2 {
			return nil, false
		}
		topics = append(topics, string(b[2:2+int(l)]))
		b = b[2+int(l):]
	}
	if len(b) < 4 {
		return nil, false
	}
	if l := int32(binary.BigEndian.Uint32(b)); l < -1 || int64(l) > int64(len(b)-4) {
		return nil, false
	}
	return topics, true
}

// expireOffsets removes offsets past retention (Kafka's
// OffsetMetadataManager.cleanupExpiredOffsets): for an Empty group counted
// from when it became Empty, for a simple group from each commit. An Empty
// group left without offsets is deleted, with a tombstone.
func (c *Coordinator) expireOffsets(now int64) {
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		if g.state != Empty || (g.cg != nil && len(g.cg.members) > 0) || g.sg != nil {
			continue // a share group never expires (ShareGroup.shouldExpire)
		}
		for _, tp := range g.sortedOffsets() {
			co := g.offsets[tp]
			base := co.commitTimestamp
			if g.protocolType != "" && g.cg == nil {
				base = g.stateTimestamp
			}
			// An offset with a transactional one pending stays until the
			// transaction ends, as in Kafka.
			if now-base >= c.cfg.OffsetsRetentionMs && !c.hasPending(g.id, tp) {
				c.tombstoneOffset(g.id, tp)
			}
		}
		if len(g.offsets) == 0 && len(g.members) == 0 && len(g.pendingMembers) == 0 && !c.hasOpenTxns(g.id) {
			c.deleteGroup(g)
		}
	}
}

// deleteGroup deletes g with tombstones for its offsets, committed or
// pending in an open transaction (Kafka's deleteAllOffsets), and for its
// metadata.
func (c *Coordinator) deleteGroup(g *group) {
	for _, tp := range g.sortedOffsets() {
		c.tombstoneOffset(g.id, tp)
	}
	for _, tp := range c.pendingPartitions(g.id) {
		c.tombstoneOffset(g.id, tp)
	}
	switch {
	case g.cg != nil:
		c.consumerGroupTombstones(g)
	case g.sg != nil:
		c.shareGroupTombstones(g)
	default:
		c.record(g.id, groupKey(g.id), nil)
	}
	g.state = Dead
	delete(c.groups, g.id)
}

func (g *group) sortedOffsets() []topicPartition {
	out := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}

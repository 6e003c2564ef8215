package group

// The __consumer_offsets records of share groups, in Kafka 4.4's schemas
// (group-coordinator/src/main/resources/common/message/ShareGroup*.json;
// key versions are CoordinatorRecordType ids, every value is version 0 in
// the flexible encoding):
//
//	type  key                                           value
//	10    ShareGroupMemberMetadataKey{group, member}    {RackId nullable; ClientId; ClientHost; SubscribedTopicNames []string}
//	11    ShareGroupMetadataKey{group}                  {Epoch int32; MetadataHash int64}
//	12    ShareGroupTargetAssignmentMetadataKey{group}  {AssignmentEpoch int32; tag 0: AssignmentTimestamp int64}
//	13    ShareGroupTargetAssignmentMemberKey{group, member} {TopicPartitions []{TopicId uuid; Partitions []int32}}
//	14    ShareGroupCurrentMemberAssignmentKey{group, member}
//	      {MemberEpoch, PreviousMemberEpoch int32; State int8 (0, stable); AssignedPartitions []{TopicId; Partitions}}
//	15    ShareGroupStatePartitionMetadataKey{group}
//	      {InitializingTopics, InitializedTopics []{TopicId; TopicName; Partitions []int32};
//	       DeletingTopics []{TopicId; TopicName}}
//
// Topics and partitions inside a value come in the order Kafka's HashMap
// and HashSet iterate them (share_javaorder.go). compat-tests/sharegroup
// checks these bytes against Kafka 4.4.0's own generated classes
// (coordinator/group/fixtures/share-records.txt) and against the records
// of heartbeats run on Kafka's GroupCoordinatorShard
// (fixtures/share-heartbeats.txt).

import (
	"encoding/binary"
	"errors"
)

// Record types (the key's version field) of share group records.
const (
	shareMemberMetadataType          = 10
	shareGroupMetadataType           = 11
	shareTargetMetadataType          = 12
	shareTargetMemberType            = 13
	shareCurrentAssignmentType       = 14
	shareStatePartitionMetaType      = 15
	shareTargetTimestampTag          = 0
	shareMemberStateStable      int8 = 0
)

func shareMemberKey(groupID, memberID string) []byte {
	return appendKey(shareMemberMetadataType, groupID, memberID)
}

func shareMemberValue(m *shareMember) []byte {
	w := newValue()
	w.nullable(m.rackID)
	w.string(m.clientID)
	w.string(m.clientHost)
	w.strings(m.subscribedTopicNames)
	w.uvarint(0)
	return w.b
}

func shareGroupKey(groupID string) []byte { return appendKey(shareGroupMetadataType, groupID) }

func shareGroupValue(sg *shareGroup) []byte {
	w := newValue()
	w.int32(sg.epoch)
	w.int64(sg.metadataHash)
	w.uvarint(0)
	return w.b
}

func shareTargetMetadataKey(groupID string) []byte {
	return appendKey(shareTargetMetadataType, groupID)
}

// shareTargetMetadataValue writes the timestamp as a tagged field, left out
// when 0 (its default), as Kafka's generated writer does.
func shareTargetMetadataValue(epoch int32, timestamp int64) []byte {
	w := newValue()
	w.int32(epoch)
	if timestamp != 0 {
		w.uvarint(1)
		w.uvarint(shareTargetTimestampTag)
		w.uvarint(8)
		w.int64(timestamp)
	} else {
		w.uvarint(0)
	}
	return w.b
}

func shareTargetMemberKey(groupID, memberID string) []byte {
	return appendKey(shareTargetMemberType, groupID, memberID)
}

func shareTargetMemberValue(a assignment) []byte {
	w := newValue()
	writeJavaTopicPartitions(w, a)
	w.uvarint(0)
	return w.b
}

// writeJavaTopicPartitions writes a TopicPartitions array in Kafka's
// serialization order.
func writeJavaTopicPartitions(w *flexWriter, a assignment) {
	ids := make([]TopicID, 0, len(a))
	for t := range a {
		ids = append(ids, t)
	}
	topics := javaTopicOrder(ids)
	w.uvarint(uint64(len(topics)) + 1)
	for _, t := range topics {
		w.b = append(w.b, t[:]...)
		ps := javaPartitionOrder(a[t])
		w.uvarint(uint64(len(ps)) + 1)
		for _, p := range ps {
			w.int32(p)
		}
		w.uvarint(0)
	}
}

func shareCurrentAssignmentKey(groupID, memberID string) []byte {
	return appendKey(shareCurrentAssignmentType, groupID, memberID)
}

func shareCurrentAssignmentValue(m *shareMember) []byte {
	w := newValue()
	w.int32(m.epoch)
	w.int32(m.previousEpoch)
	w.int8(shareMemberStateStable)
	writeJavaTopicPartitions(w, m.assigned)
	w.uvarint(0)
	return w.b
}

func shareStatePartitionKey(groupID string) []byte {
	return appendKey(shareStatePartitionMetaType, groupID)
}

func shareStatePartitionValue(sg *shareGroup) []byte {
	w := newValue()
	writeTopicInits(w, sg.initializing)
	writeTopicInits(w, sg.initialized)
	ids := make([]TopicID, 0, len(sg.deleting))
	for t := range sg.deleting {
		ids = append(ids, t)
	}
	ids = javaTopicOrder(ids)
	w.uvarint(uint64(len(ids)) + 1)
	for _, t := range ids {
		w.b = append(w.b, t[:]...)
		w.string(sg.deleting[t])
		w.uvarint(0)
	}
	w.uvarint(0)
	return w.b
}

func writeTopicInits(w *flexWriter, m map[TopicID]shareTopicInit) {
	ids := make([]TopicID, 0, len(m))
	for t := range m {
		ids = append(ids, t)
	}
	ids = javaTopicOrder(ids)
	w.uvarint(uint64(len(ids)) + 1)
	for _, t := range ids {
		ti := m[t]
		w.b = append(w.b, t[:]...)
		w.string(ti.name)
		w.uvarint(uint64(len(ti.partitions)) + 1)
		for _, p := range javaPartitionOrder(ti.partitions) {
			w.int32(p)
		}
		w.uvarint(0)
	}
}

func (r *flexReader) topicInits(now int64) map[TopicID]shareTopicInit {
	out := map[TopicID]shareTopicInit{}
	n, null := r.length(19) // uuid, name, partitions, tags
	if null {
		return out
	}
	for i := 0; i < n && r.err == nil; i++ {
		var t TopicID
		copy(t[:], r.take(16))
		ti := shareTopicInit{name: r.string(), timestamp: now}
		np, _ := r.length(4)
		for j := 0; j < np && r.err == nil; j++ {
			ti.partitions = append(ti.partitions, r.int32())
		}
		r.tags()
		ti.partitions = unionSorted(nil, ti.partitions)
		out[t] = ti
	}
	return out
}

// shareGroupOf returns the share group a replayed record belongs to,
// creating it. A group of another type under the same id is replaced, as
// the log can only hold one group type per id at a time.
func (c *Coordinator) shareGroupOf(now int64, groupID string) *group {
	g := c.groups[groupID]
	if g == nil || g.sg == nil {
		g = newGroup(groupID, now)
		g.sg = newShareGroup()
		g.protocolType = ShareProtocolType
		c.groups[groupID] = g
	}
	return g
}

func (sg *shareGroup) memberOf(id string) *shareMember {
	m := sg.members[id]
	if m == nil {
		m = &shareMember{id: id, assigned: assignment{}}
		sg.members[id] = m
		sg.order.add(id)
	}
	return m
}

// loadShareRecord replays one share group record (Kafka's
// GroupMetadataManager.replay for these types).
func (c *Coordinator) loadShareRecord(now int64, recordType int16, key, value []byte) error {
	nfields := 1
	switch recordType {
	case shareMemberMetadataType, shareTargetMemberType, shareCurrentAssignmentType:
		nfields = 2
	}
	fields, err := keyFields(key, nfields)
	if err != nil {
		return err
	}
	groupID := fields[0]
	if value == nil {
		g := c.groups[groupID]
		if g == nil || g.sg == nil {
			return nil
		}
		sg := g.sg
		switch recordType {
		case shareGroupMetadataType:
			delete(c.groups, groupID) // the group's last record
		case shareMemberMetadataType:
			delete(sg.members, fields[1])
			sg.order.remove(fields[1])
		case shareTargetMemberType:
			delete(sg.target, fields[1])
		case shareCurrentAssignmentType:
			if m := sg.members[fields[1]]; m != nil {
				m.epoch, m.previousEpoch, m.assigned = 0, 0, assignment{}
			}
		case shareStatePartitionMetaType:
			sg.initializing, sg.initialized, sg.deleting = map[TopicID]shareTopicInit{}, map[TopicID]shareTopicInit{}, map[TopicID]string{}
			sg.hasStateMetadata = false
		}
		return nil
	}
	r, err := valueReader(value)
	if err != nil {
		return err
	}
	g := c.shareGroupOf(now, groupID)
	sg := g.sg
	switch recordType {
	case shareGroupMetadataType:
		sg.epoch = r.int32()
		b := r.take(8)
		if b != nil {
			sg.metadataHash = int64(binary.BigEndian.Uint64(b))
		}
		r.tags()
	case shareMemberMetadataType:
		m := sg.memberOf(fields[1])
		m.rackID = r.nullable()
		m.clientID = r.string()
		m.clientHost = r.string()
		m.subscribedTopicNames = sortedUnique(r.strings())
		r.tags()
		m.sessionDeadline = now + int64(c.cfg.ShareSessionTimeoutMs)
	case shareTargetMetadataType:
		sg.assignmentEpoch = r.int32()
		sg.assignmentTimestamp = 0
		if t := r.tags(); len(t) == 8 {
			sg.assignmentTimestamp = int64(binary.BigEndian.Uint64(t))
		}
	case shareTargetMemberType:
		a := r.topicPartitions()
		r.tags()
		sg.target[fields[1]] = a
	case shareCurrentAssignmentType:
		m := sg.memberOf(fields[1])
		m.epoch = r.int32()
		m.previousEpoch = r.int32()
		if st := r.int8(); r.err == nil && st != shareMemberStateStable {
			return errors.New("share member state is not stable")
		}
		m.assigned = r.topicPartitions()
		r.tags()
	case shareStatePartitionMetaType:
		sg.initializing = r.topicInits(now)
		sg.initialized = r.topicInits(now)
		sg.deleting = map[TopicID]string{}
		n, null := r.length(18)
		for i := 0; !null && i < n && r.err == nil; i++ {
			var t TopicID
			copy(t[:], r.take(16))
			sg.deleting[t] = r.string()
			r.tags()
		}
		r.tags()
		sg.hasStateMetadata = true
	}
	return r.err
}

// finishShareLoad drops members that have a current assignment but no
// metadata (never written so).
func (c *Coordinator) finishShareLoad() {
	for _, g := range c.groups {
		if g.sg == nil {
			continue
		}
		for id, m := range g.sg.members {
			if m.sessionDeadline == 0 {
				delete(g.sg.members, id)
				g.sg.order.remove(id)
			}
		}
	}
}

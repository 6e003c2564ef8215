package group

// The __consumer_offsets records of consumer groups, in Kafka's schemas
// (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json,
// as Kafka 4.4 writes them). kmsg has no types for them, so they are
// encoded here. A key is the record type as an int16 "version" followed by
// the key fields in the non-flexible encoding; a value is an int16 version
// (0) followed by the fields in the flexible encoding (compact strings and
// arrays, a tagged-field section at the end).
//
//	type  key                                      value
//	3     ConsumerGroupMetadataKey{group}          {Epoch int32; tag 0: MetadataHash int64}
//	4     ConsumerGroupPartitionMetadataKey{group} written by Gregor only as a tombstone
//	5     ConsumerGroupMemberMetadataKey{group, member}
//	      {InstanceId, RackId: nullable; ClientId, ClientHost; SubscribedTopicNames []string;
//	       SubscribedTopicRegex nullable ("" for none); RebalanceTimeoutMs int32; ServerAssignor nullable}
//	6     ConsumerGroupTargetAssignmentMetadataKey{group}  {AssignmentEpoch int32; tag 0: AssignmentTimestamp int64}
//	7     ConsumerGroupTargetAssignmentMemberKey{group, member} {TopicPartitions []{TopicId uuid; Partitions []int32}}
//	8     ConsumerGroupCurrentMemberAssignmentKey{group, member}
//	      {MemberEpoch, PreviousMemberEpoch int32; State int8 (0 stable, 1 unrevoked
//	       partitions, 2 unreleased partitions); AssignedPartitions,
//	       PartitionsPendingRevocation []{TopicId uuid; Partitions []int32;
//	       tag 0: AssignmentEpochs []int32, the epoch each partition was assigned at}}
//
// The tagged fields are Kafka 4.4's (older readers skip them); a group's
// epoch starts at 1, so its first member joins at epoch 2 (Kafka 4.2 and
// 4.3 start at 0).
//
// Checked against Kafka 4.2.2: its DumpLogSegments --offsets-decoder reads
// what Gregor writes, and a Java consumer with group.protocol=consumer makes
// Kafka write the same record sequence (types 5, 3, 7, 6, 8, then offsets,
// then on leaving tombstones 8, 7, 5 and type 3 with the next epoch). The
// Kafka 4.4 encoding is checked byte for byte against Kafka 4.4.0's own
// serializer and GroupCoordinatorShard (fixtures/consumer-records.txt and
// fixtures/consumer-heartbeats.txt, TestConsumerRecordsMatchKafka and
// TestConsumerHeartbeatsMatchKafka).
//	16    ConsumerGroupRegularExpressionKey{group, regex}: not written; Gregor
//	      resolves regexes at each heartbeat instead of caching them.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Record types (the key's version field) of consumer group records.
const (
	consumerGroupMetadataType      = 3
	consumerGroupPartitionMetaType = 4
	consumerMemberMetadataType     = 5
	targetAssignmentMetadataType   = 6
	targetAssignmentMemberType     = 7
	currentMemberAssignmentType    = 8
	regularExpressionType          = 16
)

// --- encoding ---

func appendKey(recordType int16, fields ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(recordType))
	for _, f := range fields {
		b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
		b = append(b, f...)
	}
	return b
}

type flexWriter struct{ b []byte }

func (w *flexWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *flexWriter) int8(v int8)      { w.b = append(w.b, byte(v)) }
func (w *flexWriter) int32(v int32)    { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *flexWriter) int64(v int64)    { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *flexWriter) string(s string)  { w.uvarint(uint64(len(s)) + 1); w.b = append(w.b, s...) }
func (w *flexWriter) nullable(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.string(*s)
}
func (w *flexWriter) strings(ss []string) {
	w.uvarint(uint64(len(ss)) + 1)
	for _, s := range ss {
		w.string(s)
	}
}
func (w *flexWriter) topicPartitions(a assignment) {
	topics := a.sortedTopics()
	w.uvarint(uint64(len(topics)) + 1)
	for _, t := range topics {
		w.b = append(w.b, t[:]...)
		w.uvarint(uint64(len(a[t])) + 1)
		for _, p := range a[t] {
			w.int32(p)
		}
		w.uvarint(0) // tagged fields of the entry
	}
}

func newValue() *flexWriter { return &flexWriter{b: []byte{0, 0}} } // value version 0

func consumerGroupKey(groupID string) []byte {
	return appendKey(consumerGroupMetadataType, groupID)
}

func consumerGroupValue(cg *consumerGroup) []byte {
	w := newValue()
	w.int32(cg.epoch)
	if cg.metadataHash != 0 {
		w.uvarint(1) // one tagged field: tag 0, 8 bytes
		w.uvarint(0)
		w.uvarint(8)
		w.int64(cg.metadataHash)
	} else {
		w.uvarint(0)
	}
	return w.b
}

func partitionMetadataKey(groupID string) []byte {
	return appendKey(consumerGroupPartitionMetaType, groupID)
}

func consumerMemberKey(groupID, memberID string) []byte {
	return appendKey(consumerMemberMetadataType, groupID, memberID)
}

func consumerMemberValue(m *consumerMember) []byte {
	w := newValue()
	w.nullable(m.instanceID)
	w.nullable(m.rackID)
	w.string(m.clientID)
	w.string(m.clientHost)
	w.strings(m.subscribedTopicNames)
	w.string(m.subscribedTopicRegex) // "" for none, as Kafka 4.2 writes it
	w.int32(m.rebalanceTimeoutMs)
	if m.serverAssignor == "" {
		w.nullable(nil)
	} else {
		w.string(m.serverAssignor)
	}
	w.uvarint(0)
	return w.b
}

func targetMetadataKey(groupID string) []byte {
	return appendKey(targetAssignmentMetadataType, groupID)
}

// targetMetadataValue writes the timestamp as tagged field 0, left out when
// 0 (its default), as Kafka 4.4's generated writer does.
func targetMetadataValue(epoch int32, timestamp int64) []byte {
	w := newValue()
	w.int32(epoch)
	if timestamp != 0 {
		w.uvarint(1)
		w.uvarint(0)
		w.uvarint(8)
		w.int64(timestamp)
	} else {
		w.uvarint(0)
	}
	return w.b
}

func targetMemberKey(groupID, memberID string) []byte {
	return appendKey(targetAssignmentMemberType, groupID, memberID)
}

func targetMemberValue(a assignment) []byte {
	w := newValue()
	w.topicPartitions(a)
	w.uvarint(0)
	return w.b
}

func currentAssignmentKey(groupID, memberID string) []byte {
	return appendKey(currentMemberAssignmentType, groupID, memberID)
}

func currentAssignmentValue(m *consumerMember) []byte {
	w := newValue()
	w.int32(m.epoch)
	w.int32(m.previousEpoch)
	w.int8(int8(m.state))
	w.topicPartitionsWithEpochs(m.assigned, m.assignmentEpochs)
	w.topicPartitionsWithEpochs(m.pendingRevocation, m.assignmentEpochs)
	w.uvarint(0)
	return w.b
}

// topicPartitionsWithEpochs writes a's topics as Kafka 4.4's
// ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions: each with
// tagged field 0, AssignmentEpochs, one epoch per partition, which Kafka's
// GroupCoordinatorRecordHelpers always sets.
func (w *flexWriter) topicPartitionsWithEpochs(a assignment, epochs map[tp]int32) {
	topics := a.sortedTopics()
	w.uvarint(uint64(len(topics)) + 1)
	for _, t := range topics {
		ps := a[t]
		w.b = append(w.b, t[:]...)
		w.uvarint(uint64(len(ps)) + 1)
		for _, p := range ps {
			w.int32(p)
		}
		n := uint64(len(ps)) + 1
		w.uvarint(1) // one tagged field: tag 0, the epochs as a compact array
		w.uvarint(0)
		w.uvarint(uint64(uvarintLen(n)) + 4*uint64(len(ps)))
		w.uvarint(n)
		for _, p := range ps {
			w.int32(epochs[tp{t, p}])
		}
	}
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// --- decoding ---

var errShort = errors.New("truncated")

type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *flexReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail(errShort)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *flexReader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *flexReader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *flexReader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// length reads a compact length (n+1, 0 for null) and checks that n items
// of at least minSize bytes each can be in what remains, so a peer's claim
// never sizes an allocation.
func (r *flexReader) length(minSize int) (n int, null bool) {
	v := r.uvarint()
	if r.err != nil {
		return 0, false
	}
	if v == 0 {
		return 0, true
	}
	v--
	if v > math.MaxInt32 || int(v)*minSize > len(r.b) {
		r.fail(errShort)
		return 0, false
	}
	return int(v), false
}

func (r *flexReader) nullable() *string {
	n, null := r.length(1)
	if null || r.err != nil {
		return nil
	}
	s := string(r.take(n))
	return &s
}

func (r *flexReader) string() string {
	s := r.nullable()
	if s == nil {
		r.fail(errors.New("null string"))
		return ""
	}
	return *s
}

func (r *flexReader) strings() []string {
	n, null := r.length(1)
	if null || r.err != nil {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.string())
	}
	return out
}

// tags reads a tagged-field section and returns tag 0's bytes, if any.
func (r *flexReader) tags() []byte {
	n := r.uvarint()
	var tag0 []byte
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.fail(errShort)
			return nil
		}
		data := r.take(int(size))
		if tag == 0 {
			tag0 = data
		}
	}
	return tag0
}

func (r *flexReader) topicPartitions() assignment {
	n, null := r.length(17)
	a := assignment{}
	if null {
		return a
	}
	for i := 0; i < n && r.err == nil; i++ {
		var t TopicID
		copy(t[:], r.take(16))
		np, _ := r.length(4)
		for j := 0; j < np && r.err == nil; j++ {
			a.add(t, r.int32())
		}
		r.tags()
	}
	return a
}

// topicPartitionsWithEpochs reads what the writer of that name writes into
// a and epochs. A topic without AssignmentEpochs (a record of Kafka before
// 4.4) or with as many epochs as partitions gets defaultEpoch for all its
// partitions, as Kafka's Utils.assignmentFromTopicPartitions does.
func (r *flexReader) topicPartitionsWithEpochs(defaultEpoch int32, epochs map[tp]int32) assignment {
	n, null := r.length(17)
	a := assignment{}
	if null {
		return a
	}
	for i := 0; i < n && r.err == nil; i++ {
		var t TopicID
		copy(t[:], r.take(16))
		np, _ := r.length(4)
		ps := make([]int32, 0, np)
		for j := 0; j < np && r.err == nil; j++ {
			ps = append(ps, r.int32())
		}
		got := decodeEpochs(r.tags())
		for j, p := range ps {
			a.add(t, p)
			if len(got) == len(ps) {
				epochs[tp{t, p}] = got[j]
			} else {
				epochs[tp{t, p}] = defaultEpoch
			}
		}
	}
	return a
}

// decodeEpochs reads a tagged AssignmentEpochs (a compact int32 array);
// nil when absent, null or malformed.
func decodeEpochs(b []byte) []int32 {
	if b == nil {
		return nil
	}
	r := &flexReader{b: b}
	n, null := r.length(4)
	if null || r.err != nil {
		return nil
	}
	out := make([]int32, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, r.int32())
	}
	if r.err != nil {
		return nil
	}
	return out
}

// keyFields decodes a non-flexible key of want string fields.
func keyFields(key []byte, want int) ([]string, error) {
	r := &flexReader{b: key[2:]}
	out := make([]string, 0, want)
	for i := 0; i < want; i++ {
		n := int(r.int16())
		if n < 0 {
			r.fail(errors.New("null key field"))
		}
		out = append(out, string(r.take(n)))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

func valueReader(value []byte) (*flexReader, error) {
	r := &flexReader{b: value}
	if v := r.int16(); r.err == nil && v != 0 {
		return nil, fmt.Errorf("value version %d", v)
	}
	return r, r.err
}

// consumerGroupOf returns the consumer group a replayed record belongs to,
// creating it (or turning a loaded classic group's offsets holder into it).
func (c *Coordinator) consumerGroupOf(now int64, groupID string) *group {
	g := c.groups[groupID]
	if g == nil {
		g = newGroup(groupID, now)
		c.groups[groupID] = g
	}
	if g.cg == nil {
		g.cg = newConsumerGroup()
		g.protocolType = ConsumerProtocolType
	}
	return g
}

func (cg *consumerGroup) memberOf(id string) *consumerMember {
	m := cg.members[id]
	if m == nil {
		m = &consumerMember{id: id, state: memberStable, assigned: assignment{}, pendingRevocation: assignment{}}
		cg.members[id] = m
	}
	return m
}

// loadConsumerRecord replays one consumer group record (Kafka's
// GroupCoordinatorShard.replay for these types).
func (c *Coordinator) loadConsumerRecord(now int64, recordType int16, key, value []byte) error {
	nfields := 1
	switch recordType {
	case consumerMemberMetadataType, targetAssignmentMemberType, currentMemberAssignmentType, regularExpressionType:
		nfields = 2
	}
	fields, err := keyFields(key, nfields)
	if err != nil {
		return err
	}
	groupID := fields[0]
	if recordType == regularExpressionType || recordType == consumerGroupPartitionMetaType {
		return nil // caches Gregor recomputes; nothing to restore
	}
	if value == nil {
		g := c.groups[groupID]
		if g == nil || g.cg == nil {
			return nil
		}
		cg := g.cg
		switch recordType {
		case consumerGroupMetadataType:
			// The group's last record: it is deleted (offsets, if any,
			// were tombstoned before).
			if len(g.offsets) == 0 {
				delete(c.groups, groupID)
			} else {
				g.cg, g.protocolType = nil, ""
			}
		case consumerMemberMetadataType:
			if m := cg.members[fields[1]]; m != nil && m.instanceID != nil && cg.static[*m.instanceID] == m.id {
				delete(cg.static, *m.instanceID)
			}
			delete(cg.members, fields[1])
		case targetAssignmentMemberType:
			delete(cg.target, fields[1])
		case currentMemberAssignmentType:
			if m := cg.members[fields[1]]; m != nil {
				m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
				m.assigned, m.pendingRevocation, m.assignmentEpochs = assignment{}, assignment{}, nil
			}
		}
		return nil
	}
	r, err := valueReader(value)
	if err != nil {
		return err
	}
	g := c.consumerGroupOf(now, groupID)
	cg := g.cg
	switch recordType {
	case consumerGroupMetadataType:
		cg.epoch = r.int32()
		if t := r.tags(); len(t) == 8 {
			cg.metadataHash = int64(binary.BigEndian.Uint64(t))
		}
	case consumerMemberMetadataType:
		m := cg.memberOf(fields[1])
		m.instanceID = r.nullable()
		m.rackID = r.nullable()
		m.clientID = r.string()
		m.clientHost = r.string()
		m.subscribedTopicNames = r.strings()
		m.subscribedTopicRegex, m.re = "", nil
		if re := r.nullable(); re != nil {
			m.subscribedTopicRegex = *re
			m.re, _ = anchoredRegex(*re) // an invalid one matches nothing
		}
		m.serverAssignor = ""
		m.rebalanceTimeoutMs = r.int32()
		if a := r.nullable(); a != nil {
			m.serverAssignor = *a
		}
		r.tags()
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
		m.sessionDeadline = now + int64(c.cfg.ConsumerSessionTimeoutMs)
	case targetAssignmentMetadataType:
		cg.assignmentEpoch = r.int32()
		cg.assignmentTimestamp = 0
		if t := r.tags(); len(t) == 8 {
			cg.assignmentTimestamp = int64(binary.BigEndian.Uint64(t))
		}
	case targetAssignmentMemberType:
		a := r.topicPartitions()
		r.tags()
		cg.target[fields[1]] = a
	case currentMemberAssignmentType:
		m := cg.memberOf(fields[1])
		m.epoch = r.int32()
		m.previousEpoch = r.int32()
		m.state = memberState(r.int8())
		m.assignmentEpochs = map[tp]int32{}
		m.assigned = r.topicPartitionsWithEpochs(max(m.epoch, 0), m.assignmentEpochs)
		m.pendingRevocation = r.topicPartitionsWithEpochs(max(m.epoch, 0), m.assignmentEpochs)
		r.tags()
		m.sessionDeadline = now + int64(c.cfg.ConsumerSessionTimeoutMs)
	}
	return r.err
}

// finishConsumerLoad rebuilds what the records do not carry: partition
// ownership and rebalance deadlines of members still revoking. Members that
// have a current assignment but no metadata (never written so) are dropped.
func (c *Coordinator) finishConsumerLoad(now int64) {
	for _, g := range c.groups {
		if g.cg == nil {
			continue
		}
		cg := g.cg
		cg.partitionEpoch = map[tp]int32{}
		// The regexes of loaded members were resolved before they were
		// written (Kafka replays their resolution records).
		cg.resolveRegexes()
		for id, m := range cg.members {
			if m.sessionDeadline == 0 {
				delete(cg.members, id)
				continue
			}
			cg.updatePartitionEpochs(nil, m)
			if m.state == memberUnrevokedPartitions {
				m.rebalanceDeadline, m.rebalanceEpoch = now+int64(m.rebalanceTimeoutMs), m.epoch
			}
		}
	}
}

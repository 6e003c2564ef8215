package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// collator gathers one answer per topic and partition, as Kafka's service
// keys its futures by topic id and partition in java.util.HashMaps: a
// partition named twice is answered once, with the answer of its last
// operation, and the answers come in those maps' iteration order
// (javaHashOrder).
type collator[P any] struct {
	topics []collTopic[P]
	byID   map[[16]byte]int
}

type collTopic[P any] struct {
	id     [16]byte
	parts  []P
	nums   []int32 // the partition of each of parts
	byPart map[int32]int
}

func (c *collator[P]) put(id [16]byte, part int32, p P) {
	if c.byID == nil {
		c.byID = map[[16]byte]int{}
	}
	i, ok := c.byID[id]
	if !ok {
		i = len(c.topics)
		c.byID[id] = i
		c.topics = append(c.topics, collTopic[P]{id: id, byPart: map[int32]int{}})
	}
	t := &c.topics[i]
	if j, ok := t.byPart[part]; ok {
		t.parts[j] = p
		return
	}
	t.byPart[part] = len(t.parts)
	t.parts = append(t.parts, p)
	t.nums = append(t.nums, part)
}

// ordered lists the topics, and each topic's partitions, in Kafka's
// HashMap order.
func (c *collator[P]) ordered() []collTopic[P] {
	hashes := make([]int32, len(c.topics))
	for i, t := range c.topics {
		hashes[i] = javaUUIDHash(t.id)
	}
	order, _ := javaHashOrder(hashes)
	out := make([]collTopic[P], 0, len(c.topics))
	for _, i := range order {
		t := c.topics[i]
		porder, _ := javaHashOrder(t.nums)
		parts := make([]P, 0, len(t.parts))
		for _, j := range porder {
			parts = append(parts, t.parts[j])
		}
		t.parts = parts
		out = append(out, t)
	}
	return out
}

// Each handler first makes the ShareCoordinatorService's checks, in its
// order for that RPC: a request with no topics, a topic with no partitions
// (not checked by InitializeShareGroupState, where such a topic just has
// no answer), or an empty group id is answered with no results at all; an
// inactive coordinator answers COORDINATOR_NOT_AVAILABLE for every
// partition, topic by topic as the request lists them (checked first by
// Initialize, Delete and ReadSummary, after the others by Read and Write).
// Then each partition is one operation of Kafka's ShareCoordinatorShard,
// refused first if the runtime does not serve its key (Inputs.Serving).

// emptyTopic reports whether a request lists a topic without partitions.
func emptyTopic[T any](topics []T, parts func(T) int) bool {
	for _, t := range topics {
		if parts(t) == 0 {
			return true
		}
	}
	return false
}

// InitializeShareGroupState is Kafka's initializeState (API 83): each
// partition's state starts anew at the request's state epoch and start
// offset (-1: not known yet) with no batches, as a ShareSnapshot record
// whose snapshot epoch follows the previous one. A state epoch below the
// one recorded is FENCED_STATE_EPOCH.
func (c *Coordinator) InitializeShareGroupState(now int64, req *kmsg.InitializeShareGroupStateRequest, in Inputs) *kmsg.InitializeShareGroupStateResponse {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	resp.Version = req.Version
	if in.Inactive {
		for _, t := range req.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				r := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, kerr.CoordinatorNotAvailable.Code, str(msgNotAvailable)
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if req.GroupID == "" || len(req.Topics) == 0 {
		return resp
	}
	var col collator[kmsg.InitializeShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			f := c.initializeOne(now, Key{req.GroupID, t.TopicID, p.Partition}, p, in)
			r := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, f.code, f.msg
			col.put(t.TopicID, p.Partition, r)
		}
	}
	for _, t := range col.ordered() {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.id, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) initializeOne(now int64, k Key, p kmsg.InitializeShareGroupStateRequestTopicPartition, in Inputs) failure {
	if code := in.serving(k); code != 0 {
		return refused(opInitialize, code)
	}
	switch {
	case p.Partition < 0:
		return failWith(kerr.InvalidRequest, msgNegativePartition)
	case p.StateEpoch < 0:
		return failWith(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	if se, ok := c.stateEpochs[k]; ok && se > p.StateEpoch {
		return fail(kerr.FencedStateEpoch)
	}
	if !in.topicKnown(k) {
		return fail(kerr.UnknownTopicOrPartition)
	}
	epoch := int32(0)
	if cur := c.states[k]; cur != nil {
		epoch = cur.SnapshotEpoch + 1
	}
	dcc := int32(0)
	if p.StartOffset == -1 {
		dcc = -1
	}
	o := &Offset{SnapshotEpoch: epoch, StateEpoch: p.StateEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: dcc,
		Batches: []Batch{}, CreateTimestamp: now, WriteTimestamp: now}
	if err := c.emit(SnapshotRecord(k, o), SnapshotType, o); err != nil {
		return crashed(opInitialize, err)
	}
	return failure{}
}

// ReadShareGroupState is Kafka's readStateAndMaybeUpdateLeaderEpoch (API
// 84): each partition's start offset, state epoch and batches. A leader
// epoch below the one recorded is FENCED_LEADER_EPOCH; a higher one is
// recorded, with a ShareUpdate (or ShareSnapshot) record, as the reader is
// the partition's new leader.
func (c *Coordinator) ReadShareGroupState(now int64, req *kmsg.ReadShareGroupStateRequest, in Inputs) *kmsg.ReadShareGroupStateResponse {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	resp.Version = req.Version
	if len(req.Topics) == 0 || req.GroupID == "" ||
		emptyTopic(req.Topics, func(t kmsg.ReadShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	if in.Inactive {
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				r := kmsg.NewReadShareGroupStateResponseTopicPartition()
				r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, kerr.CoordinatorNotAvailable.Code, str(msgNotAvailable)
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var col collator[kmsg.ReadShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			col.put(t.TopicID, p.Partition, c.readOne(now, Key{req.GroupID, t.TopicID, p.Partition}, p, in))
		}
	}
	for _, t := range col.ordered() {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.id, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) readOne(now int64, k Key, p kmsg.ReadShareGroupStateRequestTopicPartition, in Inputs) kmsg.ReadShareGroupStateResponseTopicPartition {
	r := kmsg.NewReadShareGroupStateResponseTopicPartition()
	r.Partition = p.Partition
	failed := func(f failure) kmsg.ReadShareGroupStateResponseTopicPartition {
		r.ErrorCode, r.ErrorMessage = f.code, f.msg
		return r
	}
	if code := in.serving(k); code != 0 {
		return failed(refused(opRead, code))
	}
	switch {
	case p.Partition < 0:
		return failed(failWith(kerr.InvalidRequest, msgNegativePartition))
	case p.LeaderEpoch < 0:
		return failed(failWith(kerr.InvalidRequest, msgNegativeLeaderEpoch))
	}
	cur := c.states[k]
	if cur == nil {
		return failed(failWith(kerr.InvalidRequest, msgReadUninitialized))
	}
	le, ok := c.leaderEpochs[k]
	if ok && le > p.LeaderEpoch {
		return failed(fail(kerr.FencedLeaderEpoch))
	}
	if !in.topicKnown(k) {
		return failed(fail(kerr.UnknownTopicOrPartition))
	}
	r.StartOffset, r.StateEpoch = cur.StartOffset, cur.StateEpoch
	r.StateBatches = make([]kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch, 0, len(cur.Batches))
	for _, b := range cur.Batches {
		sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		r.StateBatches = append(r.StateBatches, sb)
	}
	if ok && le == p.LeaderEpoch {
		return r
	}
	w := partitionWrite{stateEpoch: cur.StateEpoch, leaderEpoch: p.LeaderEpoch, startOffset: cur.StartOffset,
		deliveryCompleteCount: cur.DeliveryCompleteCount, batches: []Batch{}}
	rec, typ, o, err := c.stateRecord(now, k, cur, w, true)
	if err == nil {
		err = c.emit(rec, typ, o)
	}
	if err != nil {
		return failed(crashed(opRead, err))
	}
	return r
}

// WriteShareGroupState is Kafka's writeState (API 85): the share-partition
// leader's new start offset, delivery complete count and state batches,
// combined with those so far (Combine) into a ShareUpdate record, or a
// ShareSnapshot every UpdatesPerSnapshot writes. The state must have been
// initialized; a leader or state epoch below the one recorded is
// FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH.
func (c *Coordinator) WriteShareGroupState(now int64, req *kmsg.WriteShareGroupStateRequest, in Inputs) *kmsg.WriteShareGroupStateResponse {
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	resp.Version = req.Version
	if len(req.Topics) == 0 || req.GroupID == "" ||
		emptyTopic(req.Topics, func(t kmsg.WriteShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	if in.Inactive {
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				r := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, kerr.CoordinatorNotAvailable.Code, str(msgNotAvailable)
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var col collator[kmsg.WriteShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if req.Version < 1 {
				p.DeliveryCompleteCount = -1 // not in v0: its default
			}
			f := c.writeOne(now, Key{req.GroupID, t.TopicID, p.Partition}, p, in)
			r := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, f.code, f.msg
			col.put(t.TopicID, p.Partition, r)
		}
	}
	for _, t := range col.ordered() {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.id, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) writeOne(now int64, k Key, p kmsg.WriteShareGroupStateRequestTopicPartition, in Inputs) failure {
	if code := in.serving(k); code != 0 {
		return refused(opWrite, code)
	}
	switch {
	case p.Partition < 0:
		return failWith(kerr.InvalidRequest, msgNegativePartition)
	case p.LeaderEpoch < 0:
		return failWith(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case p.StateEpoch < 0:
		return failWith(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	cur := c.states[k]
	if cur == nil {
		return failWith(kerr.InvalidRequest, msgWriteUninitialized)
	}
	if le, ok := c.leaderEpochs[k]; ok && le > p.LeaderEpoch {
		return fail(kerr.FencedLeaderEpoch)
	}
	if se, ok := c.stateEpochs[k]; ok && se > p.StateEpoch {
		return fail(kerr.FencedStateEpoch)
	}
	if !in.topicKnown(k) {
		return fail(kerr.UnknownTopicOrPartition)
	}
	w := partitionWrite{stateEpoch: p.StateEpoch, leaderEpoch: p.LeaderEpoch, startOffset: p.StartOffset,
		deliveryCompleteCount: p.DeliveryCompleteCount, batches: make([]Batch, 0, len(p.StateBatches))}
	for _, b := range p.StateBatches {
		w.batches = append(w.batches, Batch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	rec, typ, o, err := c.stateRecord(now, k, cur, w, false)
	if err == nil {
		err = c.emit(rec, typ, o)
	}
	if err != nil {
		return crashed(opWrite, err)
	}
	return failure{}
}

// DeleteShareGroupState is Kafka's deleteState (API 86): each
// share-partition's state is removed with a tombstone; one without a
// state succeeds with no record.
func (c *Coordinator) DeleteShareGroupState(now int64, req *kmsg.DeleteShareGroupStateRequest, in Inputs) *kmsg.DeleteShareGroupStateResponse {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	resp.Version = req.Version
	if in.Inactive {
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				r := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, kerr.CoordinatorNotAvailable.Code, str(msgNotAvailable)
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if req.GroupID == "" || len(req.Topics) == 0 ||
		emptyTopic(req.Topics, func(t kmsg.DeleteShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var col collator[kmsg.DeleteShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			f := c.deleteOne(Key{req.GroupID, t.TopicID, p.Partition}, in)
			r := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, f.code, f.msg
			col.put(t.TopicID, p.Partition, r)
		}
	}
	for _, t := range col.ordered() {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.id, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) deleteOne(k Key, in Inputs) failure {
	if code := in.serving(k); code != 0 {
		return refused(opDelete, code)
	}
	if k.Partition < 0 {
		return failWith(kerr.InvalidRequest, msgNegativePartition)
	}
	if !in.topicKnown(k) {
		return fail(kerr.UnknownTopicOrPartition)
	}
	if c.states[k] == nil {
		return failure{}
	}
	if err := c.emit(TombstoneRecord(k), SnapshotType, nil); err != nil {
		return crashed(opDelete, err)
	}
	return failure{}
}

// ReadShareGroupStateSummary is Kafka's readStateSummary (API 87): each
// share-partition's start offset, delivery complete count (v1), leader
// and state epochs, without the batches and without fencing; a
// share-partition with no state answers start offset -1 and epochs 0.
func (c *Coordinator) ReadShareGroupStateSummary(now int64, req *kmsg.ReadShareGroupStateSummaryRequest, in Inputs) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	resp.Version = req.Version
	if in.Inactive {
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				r := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				r.Partition, r.ErrorCode, r.ErrorMessage = p.Partition, kerr.CoordinatorNotAvailable.Code, str(msgNotAvailable)
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if req.GroupID == "" || len(req.Topics) == 0 ||
		emptyTopic(req.Topics, func(t kmsg.ReadShareGroupStateSummaryRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var col collator[kmsg.ReadShareGroupStateSummaryResponseTopicPartition]
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			r := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			r.Partition = p.Partition
			var f failure
			k := Key{req.GroupID, t.TopicID, p.Partition}
			switch code := in.serving(k); {
			case code != 0:
				f = refused(opSummary, code)
			case p.Partition < 0:
				f = failWith(kerr.InvalidRequest, msgNegativePartition)
			case !in.topicKnown(k):
				f = fail(kerr.UnknownTopicOrPartition)
			default:
				if o := c.states[k]; o == nil {
					r.StartOffset, r.DeliveryCompleteCount, r.LeaderEpoch, r.StateEpoch = -1, -1, 0, 0
				} else {
					r.StartOffset, r.DeliveryCompleteCount, r.LeaderEpoch, r.StateEpoch = o.StartOffset, o.DeliveryCompleteCount, o.LeaderEpoch, o.StateEpoch
				}
			}
			r.ErrorCode, r.ErrorMessage = f.code, f.msg
			col.put(t.TopicID, p.Partition, r)
		}
	}
	for _, t := range col.ordered() {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID, rt.Partitions = t.id, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

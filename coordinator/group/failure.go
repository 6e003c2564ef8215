package group

// When the records of an event cannot be written to __consumer_offsets,
// the decisions that produced them must not stand: Kafka's CoordinatorRuntime
// reverts the shard's in-memory state to the last committed offset and
// fails the requests. Gregor's driver does the same in two steps: it
// answers every request of the failed batch, and every request still parked,
// with the error (Fail, AbortParked), then replaces the coordinator with one
// rebuilt from the log (Load), which holds exactly what was written.

import "github.com/twmb/franz-go/pkg/kerr"

// Fail returns result, an answer the coordinator produced, turned into a
// failure with code: the top-level error where the response has one,
// every partition's or group's error otherwise. Anything the answer
// granted (an assignment, a generation, offsets) is withdrawn.
func Fail(result any, code int16) any {
	switch r := result.(type) {
	case *JoinResult:
		return &JoinResult{ErrorCode: code, Generation: -1, MemberID: r.MemberID}
	case *SyncResult:
		return &SyncResult{ErrorCode: code}
	case *HeartbeatResult:
		return &HeartbeatResult{ErrorCode: code}
	case *LeaveResult:
		out := &LeaveResult{ErrorCode: code}
		return out
	case *CommitResult:
		out := &CommitResult{}
		for _, t := range r.Topics {
			tr := TopicResult{Topic: t.Topic}
			for _, p := range t.Partitions {
				tr.Partitions = append(tr.Partitions, PartitionResult{Partition: p.Partition, ErrorCode: code})
			}
			out.Topics = append(out.Topics, tr)
		}
		return out
	case *FetchResult:
		return &FetchResult{ErrorCode: code}
	case *DeleteGroupsResult:
		out := &DeleteGroupsResult{}
		for _, g := range r.Groups {
			out.Groups = append(out.Groups, DeleteGroupResult{GroupID: g.GroupID, ErrorCode: code})
		}
		return out
	case *OffsetDeleteResult:
		return &OffsetDeleteResult{ErrorCode: code}
	case *ConsumerHeartbeatResult:
		msg := kerr.ErrorForCode(code).Error()
		return &ConsumerHeartbeatResult{ErrorCode: code, ErrorMessage: &msg}
	}
	return result
}

// AbortParked answers every parked JoinGroup and SyncGroup with code. The
// coordinator must not be used afterwards: the driver replaces it.
func (c *Coordinator) AbortParked(code int16) {
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, mid := range g.order {
			m := g.members[mid]
			if m.parkedJoin {
				m.parkedJoin = false
				c.reply(m.joinReply, &JoinResult{ErrorCode: code, Generation: -1, MemberID: m.id})
			}
			if m.parkedSync {
				m.parkedSync = false
				c.reply(m.syncReply, &SyncResult{ErrorCode: code})
			}
		}
	}
}

package broker

// OffsetCommit (key 8), v2-v10, the range Kafka 4 serves.
//
// Behavior:
//   - coordinator/group checks the generation and member
//     (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
//     REBALANCE_IN_PROGRESS while CompletingRebalance) and appends each
//     offset to __consumer_offsets before the answer;
//   - a simple commit (generation -1, no member id) is accepted for an
//     Empty or unknown group, creating the latter;
//   - UNKNOWN_TOPIC_OR_PARTITION for a missing topic (v10:
//     UNKNOWN_TOPIC_ID); OFFSET_METADATA_TOO_LARGE above
//     offset.metadata.max.bytes (4096).
//
// Version notes:
//   - v2-v4's retention time is ignored, as Kafka 4 does; v6+ carry the
//     leader epoch, v7+ group.instance.id; v8 is flexible;
//   - a generation for a missing group is ILLEGAL_GENERATION below v9,
//     GROUP_ID_NOT_FOUND from v9; v10 names topics by id.
//
// docs/apis.md#offsetcommit has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(8, 2, 10, handleOffsetCommit) }

func handleOffsetCommit(b *Broker, r *request, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.OffsetCommitResponse](req)
	cr := group.CommitRequest{GroupID: req.Group, Generation: req.Generation, MemberID: req.MemberID,
		InstanceID: req.InstanceID, Version: req.Version}
	// Topics the broker refuses itself are answered here; the others keep
	// their place in the response, filled from the coordinator's answer.
	type slot struct{ topic, resp int }
	var slots []slot
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.lookupTopicRef(req.Version >= 10, rt.Topic, rt.TopicID)
		unknown := kerr.UnknownTopicOrPartition
		if req.Version >= 10 {
			unknown = kerr.UnknownTopicID
		}
		if t == nil {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, unknown.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		ct := group.CommitTopic{Topic: t.name}
		for _, rp := range rt.Partitions {
			leaderEpoch := int32(-1)
			if req.Version >= 6 {
				leaderEpoch = rp.LeaderEpoch
			}
			ct.Partitions = append(ct.Partitions, group.CommitPartition{Partition: rp.Partition, Offset: rp.Offset,
				LeaderEpoch: leaderEpoch, Metadata: rp.Metadata})
		}
		slots = append(slots, slot{topic: len(cr.Topics), resp: len(resp.Topics)})
		cr.Topics = append(cr.Topics, ct)
		resp.Topics = append(resp.Topics, st)
	}
	if len(slots) == 0 {
		return resp, nil
	}
	var res *group.CommitResult
	if b.groupElsewhere(req.Group) {
		// Cluster mode: another broker coordinates the group.
		res = &group.CommitResult{}
		for _, ct := range cr.Topics {
			tr := group.TopicResult{Topic: ct.Topic}
			for _, p := range ct.Partitions {
				tr.Partitions = append(tr.Partitions, group.PartitionResult{Partition: p.Partition, ErrorCode: kerr.NotCoordinator.Code})
			}
			res.Topics = append(res.Topics, tr)
		}
	} else {
		out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.CommitOffsets(now, id, cr) })
		if err != nil {
			return nil, err
		}
		res = out.(*group.CommitResult)
	}
	for _, s := range slots {
		st := &resp.Topics[s.resp]
		for _, p := range res.Topics[s.topic].Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p.Partition, p.ErrorCode
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return resp, nil
}

package broker

// OffsetFetch (key 9), v1-v10.
//
// Behavior:
//   - answers a group's committed offsets (coordinator/group): -1 for a
//     partition without one, and for every partition of a missing group,
//     without error, as Kafka;
//   - in cluster mode NOT_COORDINATOR from a broker that does not lead the
//     group's __consumer_offsets partition.
//
// Version notes:
//   - v1 has no top-level error code; v2+ may ask for every committed
//     partition (null topic list); v5+ return the leader epoch; v6 is
//     flexible;
//   - v7+ require_stable: a partition with a transactional offset waiting
//     for its marker is UNSTABLE_OFFSET_COMMIT (offset -1); without it the
//     last committed offset is answered;
//   - v8+ ask for several groups; v9+ carry a member id and epoch, checked
//     for KIP-848 consumer groups only; v10 names topics by id
//     (UNKNOWN_TOPIC_ID; a null list leaves out topics gone, which have no
//     id).
//
// docs/apis.md#offsetfetch has the details.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(9, 1, 10, handleOffsetFetch) }

func handleOffsetFetch(b *Broker, r *request, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.OffsetFetchResponse](req)
	if req.Version < 8 {
		fr := group.FetchRequest{GroupID: req.Group, RequireStable: req.RequireStable}
		if req.Topics != nil || req.Version < 2 {
			fr.Topics = []group.FetchTopic{}
			for _, t := range req.Topics {
				fr.Topics = append(fr.Topics, group.FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		res, err := b.fetchOffsets(r, fr)
		if err != nil {
			return nil, err
		}
		if req.Version >= 2 {
			resp.ErrorCode = res.ErrorCode
		}
		for _, t := range res.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
				rp.ErrorCode = p.ErrorCode
				if req.Version < 2 && res.ErrorCode != 0 {
					rp.ErrorCode = res.ErrorCode
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, rg := range req.Groups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		fr := group.FetchRequest{GroupID: rg.Group, RequireStable: req.RequireStable}
		if req.Version >= 9 {
			fr.MemberID, fr.MemberEpoch = rg.MemberID, rg.MemberEpoch
		}
		// For v10 topics are named by id: resolve them, and answer
		// unknown ids here.
		var unknownIDs []kmsg.OffsetFetchResponseGroupTopic
		if rg.Topics != nil {
			fr.Topics = []group.FetchTopic{}
			for _, t := range rg.Topics {
				name := t.Topic
				if req.Version >= 10 {
					tt := b.lookupTopicID(t.TopicID)
					if tt == nil {
						gt := kmsg.NewOffsetFetchResponseGroupTopic()
						gt.TopicID = t.TopicID
						for _, p := range t.Partitions {
							gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
							gp.Partition, gp.Offset, gp.LeaderEpoch, gp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
							gp.Metadata = kmsg.StringPtr("")
							gt.Partitions = append(gt.Partitions, gp)
						}
						unknownIDs = append(unknownIDs, gt)
						continue
					}
					name = tt.name
				}
				fr.Topics = append(fr.Topics, group.FetchTopic{Topic: name, Partitions: t.Partitions})
			}
		}
		res, err := b.fetchOffsets(r, fr)
		if err != nil {
			return nil, err
		}
		g.ErrorCode = res.ErrorCode
		for _, t := range res.Topics {
			gt := kmsg.NewOffsetFetchResponseGroupTopic()
			gt.Topic = t.Topic
			if req.Version >= 10 {
				tt := b.lookupTopic(t.Topic)
				if tt == nil {
					continue
				}
				gt.TopicID = tt.id
			}
			for _, p := range t.Partitions {
				gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
				gp.ErrorCode = p.ErrorCode
				gt.Partitions = append(gt.Partitions, gp)
			}
			g.Topics = append(g.Topics, gt)
		}
		g.Topics = append(g.Topics, unknownIDs...)
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func (b *Broker) fetchOffsets(r *request, fr group.FetchRequest) (*group.FetchResult, error) {
	if b.isCluster() && !b.cluster.coordinates(fr.GroupID) {
		// Cluster mode: another broker coordinates the group; answer every
		// partition asked for with NOT_COORDINATOR, as Kafka does.
		res := &group.FetchResult{ErrorCode: kerr.NotCoordinator.Code}
		for _, t := range fr.Topics {
			ft := group.FetchedTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				ft.Partitions = append(ft.Partitions, group.FetchedPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.NotCoordinator.Code})
			}
			res.Topics = append(res.Topics, ft)
		}
		return res, nil
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.FetchOffsets(now, id, fr) })
	if err != nil {
		return nil, err
	}
	return out.(*group.FetchResult), nil
}

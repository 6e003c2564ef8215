package broker

// OffsetDelete (key 47), v0.
//
// Behavior:
//   - deletes a group's committed offsets (KIP-496), with tombstones in
//     __consumer_offsets;
//   - GROUP_ID_NOT_FOUND for a missing group; NON_EMPTY_GROUP for a classic
//     group with members whose protocol type is not "consumer" (Kafka's
//     ClassicGroup.validateOffsetDelete);
//   - per partition, GROUP_SUBSCRIBED_TO_TOPIC for a topic the members
//     subscribe to (a classic group's from their protocol metadata, a
//     KIP-848 group's by name), UNKNOWN_TOPIC_OR_PARTITION for a missing
//     topic, as KafkaApis.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(b *Broker, r *request, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.OffsetDeleteResponse](req)
	dr := group.OffsetDeleteRequest{GroupID: req.Group}
	var unknown []kmsg.OffsetDeleteResponseTopic
	for _, t := range req.Topics {
		if b.lookupTopic(t.Topic) == nil {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			unknown = append(unknown, rt)
			continue
		}
		ft := group.FetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			ft.Partitions = append(ft.Partitions, p.Partition)
		}
		dr.Topics = append(dr.Topics, ft)
	}
	out, err := b.groups.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) { c.DeleteOffsets(now, id, dr) })
	if err != nil {
		return nil, err
	}
	res := out.(*group.OffsetDeleteResult)
	resp.ErrorCode = res.ErrorCode
	if res.ErrorCode != 0 {
		return resp, nil
	}
	for _, t := range res.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	resp.Topics = append(resp.Topics, unknown...)
	return resp, nil
}

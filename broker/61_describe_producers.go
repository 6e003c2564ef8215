package broker

// DescribeProducers (key 61), v0 (flexible), the range Kafka 4 serves.
//
// Behavior:
//   - for each named partition, the producers of its producer state, as
//     Kafka's UnifiedLog.activeProducers lists them: id, epoch, last
//     sequence (-1 when the last entry is a marker), the timestamp of the
//     last batch or marker, the coordinator epoch of the last marker (-1:
//     none) and the first offset of the open transaction (-1: none),
//     ordered by producer id;
//   - expired producers are dropped first, as an append would;
//   - INVALID_TOPIC_EXCEPTION with Kafka's message for an invalid name,
//     UNKNOWN_TOPIC_OR_PARTITION (KafkaApis.handleDescribeProducersRequest).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(b *Broker, _ *request, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeProducersResponse](req)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicErr *kerr.Error
		var topicMsg *string
		var t *topic
		if err := validateTopicName(rt.Topic); err != nil {
			topicErr, topicMsg = kerr.InvalidTopicException, kmsg.StringPtr(err.Error())
		} else if t = b.lookupTopic(rt.Topic); t == nil {
			topicErr, topicMsg = kerr.UnknownTopicOrPartition, &kerr.UnknownTopicOrPartition.Description
		}
		for _, index := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = index
			var p *partition.Partition
			if topicErr == nil {
				p = b.partition(t, index)
			}
			switch {
			case topicErr != nil:
				sp.ErrorCode, sp.ErrorMessage = topicErr.Code, topicMsg
			case p == nil:
				// Kafka's replica manager answers without a message
				// (its metadata check, for a topic it does not know,
				// with the code's description).
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.NotLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				sp.ActiveProducers = p.ActiveProducers(time.Now().UnixMilli())
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

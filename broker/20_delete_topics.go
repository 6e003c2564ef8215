package broker

// DeleteTopics (key 20), v0-v6.
//
// Behavior:
//   - closes the partition logs, wakes fetches waiting on them and removes
//     the data before answering;
//   - UNKNOWN_TOPIC_OR_PARTITION for an unknown name, UNKNOWN_TOPIC_ID for
//     an unknown id, INVALID_REQUEST for an entry with both.
//
// Version notes:
//   - Kafka 4 serves v1+; v0 is the same request;
//   - v0-v5 name topics; v6 names them or gives topic ids.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(b *Broker, r *request, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DeleteTopicsResponse](req)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for i := range req.TopicNames {
			targets = append(targets, target{name: &req.TopicNames[i]})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		if b.isCluster() {
			var id [16]byte
			st.ErrorCode, st.ErrorMessage, id = b.cluster.deleteTopic(tg.name, tg.id, forwarded(r))
			if req.Version >= 6 {
				st.TopicID = id
			}
		} else {
			e := b.deleteTopic(tg.name, tg.id)
			st.ErrorCode = errCode(e)
			if e == kerr.UnknownTopicOrPartition || e == kerr.UnknownTopicID {
				// Kafka's ApiError without a message of its own
				// answers the code's description.
				st.ErrorMessage = &e.Description
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) deleteTopic(name *string, id [16]byte) *kerr.Error {
	hasID := id != [16]byte{}
	if name != nil && hasID {
		return kerr.InvalidRequest
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var t *topic
	switch {
	case hasID:
		if t = b.catalog.byID[id]; t == nil {
			return kerr.UnknownTopicID
		}
	case name != nil:
		if t = b.catalog.byName[*name]; t == nil {
			return kerr.UnknownTopicOrPartition
		}
	default:
		return kerr.InvalidRequest
	}
	if err := b.catalog.remove(t); err != nil {
		b.log.Error("deleting topic failed", "topic", t.name, "err", err)
		return kerr.UnknownServerError
	}
	b.log.Info("deleted topic", "topic", t.name)
	return nil
}

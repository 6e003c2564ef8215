package broker

// CreatePartitions (key 37), v0-v3.
//
// Behavior:
//   - grows a topic to Count partitions; ValidateOnly checks without
//     changing;
//   - UNKNOWN_TOPIC_OR_PARTITION for an unknown topic, INVALID_PARTITIONS
//     for a count not above the current one, INVALID_REQUEST for a topic
//     named twice; manual assignments cover exactly the new partitions,
//     each on this broker alone (INVALID_REPLICA_ASSIGNMENT);
//   - the whole request is POLICY_VIOLATION, before anything grows, when
//     its topics would gain more than 10000 partitions (request_bounds.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(b *Broker, r *request, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.CreatePartitionsResponse](req)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	tooMany := b.additionalPartitions(req, count) > maxRecordsPerRequest
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var kErr *kerr.Error
		var msg string
		switch {
		case count[rt.Topic] > 1:
			kErr, msg = kerr.InvalidRequest, "Duplicate topic in request."
		case tooMany:
			// Kafka's controller refuses the request whole, before
			// anything grows (request_bounds.go).
			kErr, msg = kerr.PolicyViolation, msgTooManyAdditionalPartitions
		default:
			kErr, msg = b.growTopic(rt, req.ValidateOnly, forwarded(r))
		}
		if kErr != nil {
			st.ErrorCode = kErr.Code
			if msg != "" {
				st.ErrorMessage = &msg
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// additionalPartitions is ReplicationControlManager's sum for
// CreatePartitions: the partitions the topics named once would gain (a
// topic unknown, or a count not above its current one, adds nothing).
func (b *Broker) additionalPartitions(req *kmsg.CreatePartitionsRequest, count map[string]int) int64 {
	var n int64
	for _, rt := range req.Topics {
		if count[rt.Topic] != 1 || rt.Count < 0 {
			continue
		}
		if t := b.lookupTopic(rt.Topic); t != nil {
			if grow := int64(rt.Count) - int64(len(b.partitions(t))); grow > 0 {
				n += grow
			}
		}
	}
	return n
}

func (b *Broker) growTopic(rt kmsg.CreatePartitionsRequestTopic, validateOnly, forwarded bool) (*kerr.Error, string) {
	if b.isCluster() {
		return b.cluster.createPartitions(rt, validateOnly, forwarded)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.catalog.byName[rt.Topic]
	if t == nil {
		return kerr.UnknownTopicOrPartition, "" // Kafka's answer has no message
	}
	current := int32(len(t.partitions))
	switch {
	case rt.Count < current:
		return kerr.InvalidPartitions, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, current, rt.Count)
	case rt.Count == current:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partition(s).", current)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-current {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
				rt.Count-current, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.NodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment %v is not valid: this cluster has only broker %d and replication factor 1.", a.Replicas, b.cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.catalog.addPartitions(t, rt.Count); err != nil {
		b.log.Error("adding partitions failed", "topic", t.name, "err", err)
		return kerr.UnknownServerError, err.Error()
	}
	b.log.Info("added partitions", "topic", t.name, "partitions", rt.Count)
	return nil, ""
}

package broker

// ListPartitionReassignments (key 46), v0, cluster mode only.
//
// Behavior:
//   - lists ongoing reassignments (KIP-455): all for null topics, else the
//     named partitions', leaving out unknown ones and those not being
//     reassigned, as Kafka's controller;
//   - each with its current replicas (the target, then those being
//     removed), the adding and the removing ones;
//   - the active controller answers, forwarded to from other nodes; a
//     failure of the whole request (NOT_CONTROLLER, REQUEST_TIMED_OUT) is
//     the top-level error, the named partitions listed bare (Kafka's
//     getErrorResponse);
//   - a single node does not serve the key (nothing is reassigned there).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
)

func init() { registerScoped(clusterOnly, 46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(b *Broker, r *request, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ListPartitionReassignmentsResponse](req)
	var topics []controller.ElectionTopic
	if req.Topics != nil {
		topics = make([]controller.ElectionTopic, 0, len(req.Topics))
		for _, rt := range req.Topics {
			topics = append(topics, controller.ElectionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
		}
	}
	var ongoing []controller.TopicReassignments
	fwd, err := b.cluster.controllerCall(r, req, func(ctx context.Context) error {
		var err error
		ongoing, err = b.cluster.ctrl.ListPartitionReassignments(ctx, topics)
		return err
	})
	if fwd != nil {
		return fwd, nil
	}
	if err != nil {
		ke, msg := kerrOf(err)
		resp.ErrorCode, resp.ErrorMessage = ke.Code, &msg
		for _, rt := range req.Topics {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				sp.Partition = p
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	for _, tr := range ongoing {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = tr.Topic
		for _, o := range tr.Partitions {
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition, sp.Replicas, sp.AddingReplicas, sp.RemovingReplicas = o.Partition, o.Replicas, o.Adding, o.Removing
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

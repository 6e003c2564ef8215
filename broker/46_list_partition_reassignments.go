package broker

// ListPartitionReassignments (key 46), v0, cluster mode only.
//
// Lists ongoing partition reassignments (KIP-455): every one for null
// topics, else those of the named partitions; unknown topics and
// partitions and partitions not being reassigned are left out, as Kafka's
// controller does. Each lists the current replicas (the target followed by
// the replicas being removed), the adding and the removing replicas. The
// active controller answers; another node forwards the request to it. A
// failure of the whole request (NOT_CONTROLLER, REQUEST_TIMED_OUT) is the
// top-level error, with the named partitions listed bare, as Kafka's
// ListPartitionReassignmentsRequest.getErrorResponse.
//
// A single node does not serve the key (nothing is ever reassigned there).

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

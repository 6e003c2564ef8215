package broker

// AlterPartitionReassignments (key 45), v0-v1, cluster mode only.
//
// Behavior:
//   - starts, changes or cancels (null replicas) reassignments (KIP-455)
//     through the active controller, forwarded to its node from the
//     others; the controller validates each partition as Kafka, with its
//     codes and messages (UNKNOWN_TOPIC_OR_PARTITION,
//     INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR,
//     NO_REASSIGNMENT_IN_PROGRESS);
//   - answered once the reassignment is written, not when it completes;
//   - a failure of the whole request (NOT_CONTROLLER, REQUEST_TIMED_OUT) is
//     the top-level code and every partition's;
//   - a single node does not serve the key (ApiVersions says so).
//
// Version notes:
//   - v1 adds allow_replication_factor_change (KIP-860; false:
//     INVALID_REPLICATION_FACTOR for a change).
//
// docs/apis.md#alterpartitionreassignments has the details.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
)

func init() { registerScoped(clusterOnly, 45, 0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(b *Broker, r *request, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterPartitionAssignmentsResponse](req)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowRF := req.AllowReplicationFactorChange || req.Version < 1
	var items []controller.Reassignment
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			items = append(items, controller.Reassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	var results []error
	fwd, err := b.cluster.controllerCall(r, req, func(ctx context.Context) error {
		var err error
		results, err = b.cluster.ctrl.AlterPartitionReassignments(ctx, items, allowRF)
		return err
	})
	if fwd != nil {
		return fwd, nil
	}
	// A failure of the whole request is also every partition's, as
	// Kafka's AlterPartitionReassignmentsRequest.getErrorResponse.
	var whole error
	if err != nil {
		ke, msg := kerrOf(err)
		resp.ErrorCode, resp.ErrorMessage = ke.Code, &msg
		whole = err
	}
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			perr := whole
			if perr == nil {
				perr = results[i]
			}
			if perr != nil {
				ke, msg := kerrOf(perr)
				sp.ErrorCode, sp.ErrorMessage = ke.Code, &msg
			}
			i++
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

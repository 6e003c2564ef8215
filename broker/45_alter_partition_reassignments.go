package broker

// AlterPartitionReassignments (key 45), v0-v1, cluster mode only.
//
// Starts, changes or cancels (null replicas) partition reassignments
// (KIP-455) through the active controller: this node's when it is active,
// else the request is forwarded to the active controller's node, as a
// KRaft broker forwards it to the controller quorum. The controller
// (coordinator/controller, AlterPartitionReassignments) validates each
// partition as Kafka does and answers per partition with Kafka's error
// codes and messages: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
// INVALID_REPLICATION_FACTOR (v1 with allow_replication_factor_change
// false, KIP-860), NO_REASSIGNMENT_IN_PROGRESS. The answer comes once the
// reassignment is written, not when it completes: the new replicas copy
// the partition from its leader, and the reassignment completes when they
// are all in the ISR (ListPartitionReassignments shows it until then). A
// failure of the whole request (no controller reachable: NOT_CONTROLLER;
// no majority: REQUEST_TIMED_OUT) is the top-level error code and every
// partition's.
//
// A single node has one broker, so nothing can be reassigned: it does not
// serve the key, and clients are told so by ApiVersions.
// v1: allow_replication_factor_change (KIP-860).

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

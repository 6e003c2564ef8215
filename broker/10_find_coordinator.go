package broker

// FindCoordinator (key 10), v0-v6.
//
// A single node coordinates every group and transactional id, so the answer
// is always itself. In cluster mode the coordinator of a key is the leader
// of its partition of __consumer_offsets or __transaction_state (Kafka's
// partitionFor: the key's Java hash modulo the partition count), the topic
// being created through the controller on first use; a partition without
// a leader is COORDINATOR_NOT_AVAILABLE. v4+ batches keys (CoordinatorKeys) and answers per key;
// v0-v3 carry one key. Key type 0 is a group, 1 a transactional id, 2 a
// share group (v6+); any other type is INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(10, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(b *Broker, r *request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.FindCoordinatorResponse](req)
	validType := req.CoordinatorType == 0 || req.CoordinatorType == 1 || (req.CoordinatorType == 2 && req.Version >= 6)
	if req.Version < 4 {
		if !validType {
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.NodeID, resp.Port = -1, -1
			return resp, nil
		}
		resp.NodeID, resp.Host, resp.Port = b.cfg.NodeID, b.advertised.host, b.advertised.port
		if b.isCluster() {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = b.cluster.coordinator(req.CoordinatorType, req.CoordinatorKey)
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		if !validType {
			c.ErrorCode = kerr.InvalidRequest.Code
			c.NodeID, c.Port = -1, -1
		} else {
			c.NodeID, c.Host, c.Port = b.cfg.NodeID, b.advertised.host, b.advertised.port
			if b.isCluster() {
				c.ErrorCode, c.NodeID, c.Host, c.Port = b.cluster.coordinator(req.CoordinatorType, key)
			}
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

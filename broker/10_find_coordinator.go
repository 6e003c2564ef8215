package broker

// FindCoordinator (key 10), v0-v6.
//
// Behavior:
//   - a single node coordinates every group and transactional id: the
//     answer is itself;
//   - in cluster mode the coordinator is the leader of the key's partition
//     of __consumer_offsets or __transaction_state (Kafka's partitionFor:
//     the key's Java hash modulo the partition count), the topic created
//     through the controller on first use; COORDINATOR_NOT_AVAILABLE for a
//     partition without a leader;
//   - key type 0 is a group, 1 a transactional id, 2 a share group (v6+);
//     any other is INVALID_REQUEST.
//
// Version notes:
//   - v0-v3 carry one key; v4+ batch keys (CoordinatorKeys), answered per
//     key.

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
		resp.NodeID, resp.Host, resp.Port = b.cfg.NodeID, r.conn.l.host, r.conn.l.port
		if b.isCluster() {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = b.cluster.coordinator(req.CoordinatorType, req.CoordinatorKey, r.conn.l)
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
			c.NodeID, c.Host, c.Port = b.cfg.NodeID, r.conn.l.host, r.conn.l.port
			if b.isCluster() {
				c.ErrorCode, c.NodeID, c.Host, c.Port = b.cluster.coordinator(req.CoordinatorType, key, r.conn.l)
			}
		}
		// As Kafka's: an empty message for a coordinator found, the
		// code's description for an error.
		msg := ""
		if e := kerr.ErrorForCode(c.ErrorCode); e != nil {
			msg = e.(*kerr.Error).Description
		}
		c.ErrorMessage = &msg
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

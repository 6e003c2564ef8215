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
//   - key type 0 is a group, 1 a transactional id, 2 a share-partition
//     (v6+, only while share groups are served: share_groups.go), whose
//     key is Kafka's "groupId:topicId:partition" and whose coordinator is
//     the leader of its __share_group_state partition; any other type, or
//     a malformed share-partition key, is INVALID_REQUEST, as Kafka's
//     KafkaApis.getCoordinator (SharePartitionKey.validate).
//
// Version notes:
//   - v0-v3 carry one key; v4+ batch keys (CoordinatorKeys), answered per
//     key.

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/share"
)

func init() { register(10, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(b *Broker, r *request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.FindCoordinatorResponse](req)
	validType := req.CoordinatorType == 0 || req.CoordinatorType == 1 ||
		(req.CoordinatorType == 2 && req.Version >= 6 && b.shareGroupsServed())
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
		_, badShareKey := parseShareCoordinatorKey(key)
		if !validType || (req.CoordinatorType == 2 && badShareKey != nil) {
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

// parseShareCoordinatorKey parses a FindCoordinator key of type SHARE,
// "groupId:topicId:partition" (Kafka's SharePartitionKey.validate): a
// non-empty group id, a topic id in Kafka's URL-safe base64, and a
// partition that is a non-negative int32.
func parseShareCoordinatorKey(key string) (share.Key, error) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 {
		return share.Key{}, fmt.Errorf("broker: share coordinator key %q is not groupId:topicId:partition", key)
	}
	var k share.Key
	k.GroupID = parts[0]
	if strings.TrimSpace(k.GroupID) == "" {
		return share.Key{}, fmt.Errorf("broker: share coordinator key %q has no group id", key)
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != len(k.TopicID) {
		return share.Key{}, fmt.Errorf("broker: share coordinator key %q has no valid topic id", key)
	}
	copy(k.TopicID[:], id)
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return share.Key{}, fmt.Errorf("broker: share coordinator key %q has no valid partition", key)
	}
	k.Partition = int32(p)
	return k, nil
}

package broker

// Metadata (key 3), v0-v13.
//
// A single node is the only broker, the controller, and the leader of
// every partition at leader epoch 0, with itself as the sole replica and
// ISR. In cluster mode (cluster.go) the brokers are the registered,
// unfenced ones, the controller is the active controller's node, and each
// partition's leader, leader epoch, replicas and ISR come from the applied
// metadata image; its offline replicas are those on fenced or unknown
// brokers, and a partition without a leader is LEADER_NOT_AVAILABLE.
//
// Topic selection: v0 empty list or v1+ null list means every topic; v1+
// empty list means none. v10-v11 must name topics; v12+ may ask by topic id
// instead, and an unknown id is UNKNOWN_TOPIC_ID.
// Auto-creation (v4+ AllowAutoTopicCreation, always on below v4) happens
// when the broker allows it and the request names topics. Kafka creates the
// topic asynchronously and answers LEADER_NOT_AVAILABLE once; Gregor creates
// it before answering and returns its metadata at once, which clients take
// without the retry. An invalid name is INVALID_TOPIC_EXCEPTION; a missing
// topic that may not be created is UNKNOWN_TOPIC_OR_PARTITION.
// Authorized operations (v8+) are reported as everything, since the broker
// has no authorizer yet.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(3, 0, 13, handleMetadata) }

// Authorized-operation bit sets reported without an authorizer: every
// operation Kafka supports on the resource type (AclEntry.supportedOperations),
// bit n standing for the operation with code n.
const (
	// topic: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
	allTopicOperations = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	// cluster: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
	allClusterOperations = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
)

func handleMetadata(b *Broker, r *request, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.MetadataResponse](req)
	clusterID := b.ClusterID()
	resp.ClusterID = &clusterID
	if b.isCluster() {
		for _, mb := range b.cluster.liveBrokers(false) {
			broker := kmsg.NewMetadataResponseBroker()
			broker.NodeID = mb.ID
			broker.Host, broker.Port = brokerEndpoint(mb)
			if mb.Rack != "" {
				rack := mb.Rack
				broker.Rack = &rack
			}
			resp.Brokers = append(resp.Brokers, broker)
		}
		resp.ControllerID = b.cluster.ctrl.Leader()
	} else {
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID = b.cfg.NodeID
		broker.Host = b.advertised.host
		broker.Port = b.advertised.port
		if b.cfg.BrokerRack != "" {
			broker.Rack = &b.cfg.BrokerRack
		}
		resp.Brokers = []kmsg.MetadataResponseBroker{broker}
		resp.ControllerID = b.cfg.NodeID
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = allClusterOperations
	}

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		b.mu.RLock()
		topics := b.catalog.sortedTopics()
		b.mu.RUnlock()
		for _, t := range topics {
			resp.Topics = append(resp.Topics, b.topicMetadata(req, t))
		}
		return resp, nil
	}

	autoCreate := *b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	seen := make(map[string]bool, len(req.Topics))
	for _, rt := range req.Topics {
		if rt.Topic == nil && req.Version < 12 {
			return nil, fmt.Errorf("metadata v%d request with a null topic name", req.Version)
		}
		if rt.TopicID != ([16]byte{}) && req.Version < 12 {
			return nil, fmt.Errorf("metadata v%d request with a topic id", req.Version)
		}
		var t *topic
		switch {
		case rt.TopicID != ([16]byte{}):
			if t = b.lookupTopicID(rt.TopicID); t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.ErrorCode = kerr.UnknownTopicID.Code
				mt.TopicID = rt.TopicID
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		case rt.Topic != nil:
			name := *rt.Topic
			if seen[name] {
				continue
			}
			seen[name] = true
			if t = b.lookupTopic(name); t == nil {
				var kErr *kerr.Error = kerr.UnknownTopicOrPartition
				if autoCreate {
					t, kErr = b.autoCreateTopic(name)
				}
				if t == nil {
					mt := kmsg.NewMetadataResponseTopic()
					mt.ErrorCode = kErr.Code
					mt.Topic = &name
					mt.IsInternal = isInternalTopic(name)
					if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
						// Kafka reports them for every topic asked for by
						// name, existing or not (clients decode the bits).
						mt.AuthorizedOperations = allTopicOperations
					}
					resp.Topics = append(resp.Topics, mt)
					continue
				}
			}
		default:
			return nil, errors.New("metadata request topic with neither name nor id")
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(req, t))
	}
	return resp, nil
}

func (b *Broker) topicMetadata(req *kmsg.MetadataRequest, t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = isInternalTopic(t.name)
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = allTopicOperations
	}
	for _, p := range b.partitions(t) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		if st := p.cluster.Load(); st != nil {
			mp.Leader, mp.LeaderEpoch = st.leader, st.leaderEpoch
			mp.Replicas, mp.ISR = st.replicas, st.isr
			mp.OfflineReplicas = b.cluster.offline(st.replicas)
			if st.leader < 0 {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			mt.Partitions = append(mt.Partitions, mp)
			continue
		}
		mp.Leader = b.cfg.NodeID
		mp.LeaderEpoch = p.leaderEpoch.Load()
		mp.Replicas = []int32{b.cfg.NodeID}
		mp.ISR = []int32{b.cfg.NodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

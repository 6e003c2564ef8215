package broker

// Metadata (key 3), v0-v13.
//
// Behavior:
//   - a single node is the only broker, the controller and every
//     partition's leader at epoch 0; on a cluster the brokers, controller,
//     leaders, epochs, replicas and ISR come from the applied image
//     (cluster.go), with LEADER_NOT_AVAILABLE for a leaderless partition;
//   - auto-creation creates the topic before answering (Kafka answers
//     LEADER_NOT_AVAILABLE once first); INVALID_TOPIC_EXCEPTION for a bad
//     name, UNKNOWN_TOPIC_OR_PARTITION when it may not be created;
//   - authorized operations (v8+) are everything: no authorizer yet.
//
// Version notes:
//   - v0's empty list or v1+'s null list is every topic, v1+'s empty list
//     none; v4+ carries AllowAutoTopicCreation (always on below);
//   - v10-v11 must name topics; v12+ may ask by id (UNKNOWN_TOPIC_ID).
//
// docs/apis.md#metadata has the details.

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
	listener := r.conn.l
	if b.isCluster() {
		// Only the brokers with the client's listener are listed, as
		// Kafka's getAliveBrokerNodes(listenerName).
		for _, mb := range b.cluster.liveBrokers(false) {
			broker := kmsg.NewMetadataResponseBroker()
			broker.NodeID = mb.ID
			var ok bool
			if broker.Host, broker.Port, ok = brokerEndpoint(mb, listener.cfg.Name); !ok {
				continue
			}
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
		broker.Host = listener.host
		broker.Port = listener.port
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
			resp.Topics = append(resp.Topics, b.topicMetadata(req, t, listener.cfg.Name))
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
		resp.Topics = append(resp.Topics, b.topicMetadata(req, t, listener.cfg.Name))
	}
	return resp, nil
}

// topicMetadata is t's answer to a client of the named listener.
func (b *Broker) topicMetadata(req *kmsg.MetadataRequest, t *topic, listener string) kmsg.MetadataResponseTopic {
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
		mp.Partition = p.Index()
		if st := p.State(); st != nil {
			mp.Leader, mp.LeaderEpoch = st.Leader, st.LeaderEpoch
			mp.Replicas, mp.ISR = st.Replicas, st.ISR
			mp.OfflineReplicas = b.cluster.offline(st.Replicas)
			switch {
			case st.Leader < 0:
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			case !b.cluster.leaderHasListener(st.Leader, listener):
				// As Kafka's KRaftMetadataCache: a leader registered
				// without the client's listener is no leader to it,
				// LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE
				// before (and when the leader is not registered).
				mp.Leader = -1
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
				if req.Version >= 6 && b.brokerRegistered(st.Leader) {
					mp.ErrorCode = kerr.ListenerNotFound.Code
				}
			}
			mt.Partitions = append(mt.Partitions, mp)
			continue
		}
		mp.Leader = b.cfg.NodeID
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = []int32{b.cfg.NodeID}
		mp.ISR = []int32{b.cfg.NodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

package broker

// CreateTopics (key 19), v0-v7.
//
// Behavior:
//   - per topic, in Kafka's order: INVALID_REQUEST for a name repeated in
//     the request (answered once for all its copies), INVALID_TOPIC_EXCEPTION
//     for a bad name, TOPIC_ALREADY_EXISTS;
//   - partitions and replication factor positive or -1 (the broker
//     default); INVALID_REPLICATION_FACTOR above the brokers (one on a
//     single node, the unfenced ones on a cluster);
//   - a manual assignment is consecutive partitions from 0, each on this
//     broker alone (INVALID_REPLICA_ASSIGNMENT); INVALID_CONFIG for unknown
//     or invalid configs;
//   - the whole request is POLICY_VIOLATION, before anything is created,
//     when it asks for more than 10000 partitions or would make more than
//     10000 metadata records (request_bounds.go).
//
// Version notes:
//   - Kafka 4 serves v2+; v0-v1 differ only in fields the handler fills or
//     ignores, so old pinned clients keep working;
//   - v1+ ValidateOnly checks without creating; v4+ allow -1 defaults;
//     v5+ answer the partition count, replication factor and every config;
//     v7+ the topic id.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
)

func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(b *Broker, r *request, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.CreateTopicsResponse](req)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	var dups []string
	for name, n := range count {
		if n > 1 {
			dups = append(dups, name)
		}
	}
	sort.Strings(dups)
	if msg := b.createTopicsOverBound(r, req, count); msg != "" {
		// Refused whole, before anything is created; the names given
		// twice keep their own answer.
		answered := map[string]bool{}
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			switch {
			case count[rt.Topic] == 1:
				setCreateError(&st, kerr.PolicyViolation, msg)
			case answered[rt.Topic]:
				continue
			default:
				answered[rt.Topic] = true
				setCreateError(&st, kerr.InvalidRequest, fmt.Sprintf(
					"Create topics request from client `%s` contains multiple entries for the following topics: %s",
					clientID(r), strings.Join(dups, ",")))
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	answered := map[string]bool{}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		if count[rt.Topic] > 1 {
			if answered[rt.Topic] {
				continue
			}
			answered[rt.Topic] = true
			setCreateError(&st, kerr.InvalidRequest, fmt.Sprintf(
				"Create topics request from client `%s` contains multiple entries for the following topics: %s",
				clientID(r), strings.Join(dups, ",")))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, kErr, msg := b.createFromRequest(r, req, rt)
		if kErr != nil {
			setCreateError(&st, kErr, msg)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if t != nil {
			st.TopicID = t.id
			parts := b.partitions(t)
			st.NumPartitions = int32(len(parts))
			st.ReplicationFactor = createdReplicationFactor(parts)
			if req.Version >= 5 {
				st.Configs = describeTopicConfigs(b.topicConfigs(t), b.cfg.TopicDefaults)
			}
		} else { // validate only: report what would have been created
			st.NumPartitions = rt.NumPartitions
			if st.NumPartitions == -1 {
				st.NumPartitions = b.cfg.NumPartitions
			}
			if len(rt.ReplicaAssignment) > 0 {
				st.NumPartitions = int32(len(rt.ReplicaAssignment))
			}
			st.ReplicationFactor = rt.ReplicationFactor
			if st.ReplicationFactor == -1 {
				st.ReplicationFactor = int16(max(b.cfg.DefaultReplicationFactor, 1))
			}
			if len(rt.ReplicaAssignment) > 0 {
				st.ReplicationFactor = int16(len(rt.ReplicaAssignment[0].Replicas))
			}
			if req.Version >= 5 {
				configs, _ := createConfigs(rt)
				st.Configs = describeTopicConfigs(configs, b.cfg.TopicDefaults)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createTopicsOverBound is Kafka's controller refusing a CreateTopics
// request whole (the names given once, count says which): more than
// maxRecordsPerRequest partitions asked for, or more metadata records
// than that for the topics that would be created. The second needs to
// know which topics would be, so when the bound could be passed every
// topic is first validated without being created. It returns the
// refusal's message, or "".
func (b *Broker) createTopicsOverBound(r *request, req *kmsg.CreateTopicsRequest, count map[string]int) string {
	var partitions, records int64
	for _, rt := range req.Topics {
		if count[rt.Topic] == 1 {
			partitions += requestedPartitions(rt, b.cfg.NumPartitions)
			records += createTopicRecords(rt, b.cfg.NumPartitions)
		}
	}
	if partitions > maxRecordsPerRequest {
		return msgTooManyPartitions
	}
	if records <= maxRecordsPerRequest {
		return ""
	}
	check := *req
	check.ValidateOnly = true
	records = 0
	for _, rt := range req.Topics {
		if count[rt.Topic] != 1 {
			continue
		}
		if _, kErr, _ := b.createFromRequest(r, &check, rt); kErr == nil {
			records += createTopicRecords(rt, b.cfg.NumPartitions)
		}
	}
	if records > maxRecordsPerRequest {
		return msgBatchTooLarge
	}
	return ""
}

// createdReplicationFactor is the replication factor of a topic just
// created: the number of replicas of its first partition in the metadata
// image in cluster mode, 1 on a single node.
func createdReplicationFactor(parts []*partition.Partition) int16 {
	if len(parts) > 0 {
		if st := parts[0].State(); st != nil {
			return int16(len(st.Replicas))
		}
	}
	return 1
}

func setCreateError(st *kmsg.CreateTopicsResponseTopic, e *kerr.Error, msg string) {
	st.ErrorCode = e.Code
	if msg != "" {
		st.ErrorMessage = &msg
	}
	st.NumPartitions, st.ReplicationFactor = -1, -1
	// Kafka answers an empty list of configs, not null (v5+).
	st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
}

func createConfigs(rt kmsg.CreateTopicsRequestTopic) (topicconfig.Configs, error) {
	in := make(map[string]*string, len(rt.Configs))
	for _, c := range rt.Configs {
		in[c.Name] = c.Value
	}
	return topicconfig.Validate(in)
}

func (b *Broker) createFromRequest(r *request, req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic) (*topic, *kerr.Error, string) {
	if err := validateTopicName(rt.Topic); err != nil {
		return nil, kerr.InvalidTopicException, err.Error()
	}
	if b.lookupTopic(rt.Topic) != nil {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", rt.Topic)
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	var assignments map[int32][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return nil, kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
		}
		if msg := b.checkAssignment(rt.ReplicaAssignment, 0); msg != "" {
			return nil, kerr.InvalidReplicaAssignment, msg
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), int16(len(rt.ReplicaAssignment[0].Replicas))
		assignments = make(map[int32][]int32, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			assignments[a.Partition] = a.Replicas
		}
	} else {
		if req.Version >= 4 && partitions == -1 {
			partitions = b.cfg.NumPartitions
		}
		if req.Version >= 4 && rf == -1 {
			rf = b.cfg.DefaultReplicationFactor
		}
		if partitions <= 0 {
			return nil, kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."
		}
		if rf <= 0 {
			return nil, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."
		}
	}
	configs, err := createConfigs(rt)
	if err != nil {
		return nil, kerr.InvalidConfig, err.Error()
	}
	return b.createTopic(topicCreation{
		name:              rt.Topic,
		partitions:        partitions,
		replicationFactor: rf,
		configs:           configs,
		validateOnly:      req.ValidateOnly,
		assignments:       assignments,
		forwarded:         forwarded(r),
	})
}

// checkAssignment validates manual replica assignments for partitions
// first, first+1, ...: consecutive, each with the same non-empty set of
// distinct, existing brokers. It returns a message, or "" when valid.
func (b *Broker) checkAssignment(assignments []kmsg.CreateTopicsRequestTopicReplicaAssignment, first int32) string {
	sorted := append([]kmsg.CreateTopicsRequestTopicReplicaAssignment(nil), assignments...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Partition < sorted[j].Partition })
	for i, a := range sorted {
		if a.Partition != first+int32(i) {
			return "Partitions should be a consecutive 0-based integer sequence"
		}
		if len(a.Replicas) == 0 {
			return fmt.Sprintf("The manual partition assignment includes an empty replica list for partition %d.", a.Partition)
		}
		if len(a.Replicas) != len(sorted[0].Replicas) {
			return "All partitions should have the same number of replicas"
		}
		for j, id := range a.Replicas {
			for _, other := range a.Replicas[:j] {
				if other == id {
					return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
				}
			}
			if !b.brokerRegistered(id) {
				return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
			}
		}
	}
	return ""
}

// describeTopicConfigs lists every topic config as CreateTopics v5+ reports it.
func describeTopicConfigs(c topicconfig.Configs, brokerDefaults map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	resolved := c.Resolve(brokerDefaults)
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(resolved))
	for _, rc := range resolved {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name = rc.Def.Name
		value := rc.Value
		cfg.Value = &value
		cfg.Source = rc.Source
		out = append(out, cfg)
	}
	return out
}

func clientID(r *request) string {
	if r.hdr.ClientID == nil {
		return ""
	}
	return *r.hdr.ClientID
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// CreateTopic is one topic of a CreateTopics request.
type CreateTopic struct {
	Name string
	// NumPartitions and ReplicationFactor of -1 take the defaults; both
	// must be -1 when Assignments are given.
	NumPartitions     int32
	ReplicationFactor int16
	// Assignments are manual replica lists by partition (0..n-1).
	Assignments map[int32][]int32
	Configs     map[string]*string
}

// TopicResult is the outcome for one topic: Err is nil or a *kerr.Error.
type TopicResult struct {
	Name              string
	TopicID           metadata.UUID
	NumPartitions     int32
	ReplicationFactor int16
	Err               error
}

// CreateTopics creates topics, as Kafka's ReplicationControlManager: a bad
// name is INVALID_TOPIC_EXCEPTION, a name twice in the request
// INVALID_REQUEST, an existing topic TOPIC_ALREADY_EXISTS, bad counts
// INVALID_PARTITIONS or INVALID_REPLICATION_FACTOR (also when fewer
// unfenced brokers are registered than the factor), a bad manual
// assignment INVALID_REPLICA_ASSIGNMENT. Replicas are placed on unfenced
// brokers (Place); each partition's ISR is its replicas and its leader the
// first. The topics that pass are written in one entry; with validateOnly
// nothing is written. A Go error (NotControllerError, REQUEST_TIMED_OUT)
// means the request as a whole failed.
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) ([]TopicResult, error) {
	var results []TopicResult
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = make([]TopicResult, len(topics))
		count := map[string]int{}
		for _, t := range topics {
			count[t.Name]++
		}
		live := liveBrokers(im)
		var recs []metadata.Record
		for i, t := range topics {
			r := &results[i]
			r.Name = t.Name
			if count[t.Name] > 1 {
				r.Err = fmt.Errorf("controller: duplicate topic name %q: %w", t.Name, kerr.InvalidRequest)
				continue
			}
			if err := validTopicName(t.Name); err != nil {
				r.Err = err
				continue
			}
			if im.TopicByName(t.Name) != nil {
				r.Err = fmt.Errorf("controller: topic %q already exists: %w", t.Name, kerr.TopicAlreadyExists)
				continue
			}
			assign, err := c.assignment(im, live, t)
			if err != nil {
				r.Err = err
				continue
			}
			id := c.topicID(im)
			r.TopicID, r.NumPartitions, r.ReplicationFactor = id, int32(len(assign)), int16(len(assign[0]))
			recs = append(recs, &metadata.TopicRecord{Name: t.Name, TopicID: id})
			for pid, replicas := range assign {
				isr := activeOf(im, replicas)
				leader := metadata.NoLeader
				if len(isr) > 0 {
					leader = isr[0]
				}
				recs = append(recs, &metadata.PartitionRecord{PartitionID: int32(pid), TopicID: id,
					Replicas: replicas, ISR: isr, Leader: leader})
			}
			for _, k := range sortedConfigKeys(t.Configs) {
				if v := t.Configs[k]; v != nil {
					recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: t.Name, Name: k, Value: v})
				}
			}
		}
		if validateOnly {
			return nil, nil
		}
		return recs, nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// assignment returns the replicas of each partition of a new topic.
func (c *Controller) assignment(im *metadata.Image, live []PlacementBroker, t CreateTopic) ([][]int32, error) {
	if len(t.Assignments) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, fmt.Errorf("controller: both manual assignments and a partition count or replication factor were given: %w", kerr.InvalidRequest)
		}
		out := make([][]int32, len(t.Assignments))
		for pid, replicas := range t.Assignments {
			if pid < 0 || int(pid) >= len(out) {
				return nil, fmt.Errorf("controller: manual assignments must be for partitions 0 to %d: %w", len(out)-1, kerr.InvalidReplicaAssignment)
			}
			out[pid] = replicas
		}
		if err := c.validAssignment(im, out, len(out[0])); err != nil {
			return nil, err
		}
		return out, nil
	}
	n, rf := t.NumPartitions, t.ReplicationFactor
	if n == -1 {
		n = c.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	if n <= 0 {
		return nil, fmt.Errorf("controller: number of partitions was set to an invalid non-positive value: %w", kerr.InvalidPartitions)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("controller: replication factor must be larger than 0, or -1 to use the default value: %w", kerr.InvalidReplicationFactor)
	}
	return Place(live, int(n), int(rf), 0, c.cfg.Rand)
}

// validAssignment checks manual replica lists: each non-empty, of length
// rf, without repeats, on registered brokers, at least one unfenced.
func (c *Controller) validAssignment(im *metadata.Image, assign [][]int32, rf int) error {
	for pid, replicas := range assign {
		if len(replicas) == 0 {
			return fmt.Errorf("controller: partition %d has no replicas: %w", pid, kerr.InvalidReplicaAssignment)
		}
		if len(replicas) != rf {
			return fmt.Errorf("controller: all partitions in the manual partition assignment must have the same number of replicas: %w", kerr.InvalidReplicaAssignment)
		}
		for i, b := range replicas {
			if slices.Contains(replicas[:i], b) {
				return fmt.Errorf("controller: partition %d lists broker %d twice: %w", pid, b, kerr.InvalidReplicaAssignment)
			}
			if im.Brokers[b] == nil {
				return fmt.Errorf("controller: partition %d assigned to non-existent broker %d: %w", pid, b, kerr.InvalidReplicaAssignment)
			}
		}
		if len(activeOf(im, replicas)) == 0 {
			return fmt.Errorf("controller: all brokers specified in the partition assignment for partition %d are fenced: %w", pid, kerr.InvalidReplicaAssignment)
		}
	}
	return nil
}

// activeOf returns the unfenced brokers of replicas, in order.
func activeOf(im *metadata.Image, replicas []int32) []int32 {
	var out []int32
	for _, r := range replicas {
		if b := im.Brokers[r]; b != nil && !b.Fenced {
			out = append(out, r)
		}
	}
	return out
}

// liveBrokers are the unfenced brokers, for placement.
func liveBrokers(im *metadata.Image) []PlacementBroker {
	var out []PlacementBroker
	for _, id := range sortedBrokerIDs(im) {
		if b := im.Brokers[id]; !b.Fenced {
			out = append(out, PlacementBroker{ID: id, Rack: b.Rack})
		}
	}
	return out
}

// topicID draws a new topic id, neither zero nor in use.
func (c *Controller) topicID(im *metadata.Image) metadata.UUID {
	for {
		var id metadata.UUID
		for i := 0; i < 16; i += 8 {
			v := c.cfg.Rand.Uint64()
			for j := 0; j < 8; j++ {
				id[i+j] = byte(v >> (8 * j))
			}
		}
		if _, taken := im.Topics[id]; !taken && !id.IsZero() {
			return id
		}
	}
}

// validTopicName is Kafka's Topic.validate.
func validTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("controller: topic name is illegal, it can't be empty: %w", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("controller: topic name cannot be \".\" or \"..\": %w", kerr.InvalidTopicException)
	case len(name) > 249:
		return fmt.Errorf("controller: topic name is illegal, it can't be longer than 249 characters: %w", kerr.InvalidTopicException)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("controller: topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-': %w", name, kerr.InvalidTopicException)
		}
	}
	return nil
}

func sortedConfigKeys(m map[string]*string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TopicRef names a topic by name or, when ID is not zero, by id.
type TopicRef struct {
	Name string
	ID   metadata.UUID
}

// DeleteTopics deletes topics: an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID. The deletions
// that pass are written in one entry.
func (c *Controller) DeleteTopics(ctx context.Context, refs []TopicRef) ([]TopicResult, error) {
	var results []TopicResult
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = make([]TopicResult, len(refs))
		var recs []metadata.Record
		seen := map[metadata.UUID]bool{}
		for i, ref := range refs {
			r := &results[i]
			r.Name, r.TopicID = ref.Name, ref.ID
			var t *metadata.Topic
			if !ref.ID.IsZero() {
				if t = im.Topics[ref.ID]; t == nil {
					r.Err = fmt.Errorf("controller: topic id %s: %w", ref.ID, kerr.UnknownTopicID)
					continue
				}
			} else if t = im.TopicByName(ref.Name); t == nil {
				r.Err = fmt.Errorf("controller: topic %q: %w", ref.Name, kerr.UnknownTopicOrPartition)
				continue
			}
			r.Name, r.TopicID = t.Name, t.ID
			if !seen[t.ID] {
				seen[t.ID] = true
				recs = append(recs, &metadata.RemoveTopicRecord{TopicID: t.ID})
			}
		}
		return recs, nil
	})
	return results, err
}

// CreatePartitions is one topic of a CreatePartitions request: the new
// total Count, and optionally the replicas of each new partition.
type CreatePartitions struct {
	Name        string
	Count       int32
	Assignments [][]int32
}

// CreatePartitions adds partitions to topics, as Kafka's: an unknown topic
// is UNKNOWN_TOPIC_OR_PARTITION, a count not above the current one
// INVALID_PARTITIONS, assignments of the wrong number or shape
// INVALID_REPLICA_ASSIGNMENT. New partitions have the replication factor
// of partition 0.
func (c *Controller) CreatePartitions(ctx context.Context, reqs []CreatePartitions, validateOnly bool) ([]TopicResult, error) {
	var results []TopicResult
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		results = make([]TopicResult, len(reqs))
		live := liveBrokers(im)
		var recs []metadata.Record
		for i, req := range reqs {
			r := &results[i]
			r.Name = req.Name
			t := im.TopicByName(req.Name)
			if t == nil {
				r.Err = fmt.Errorf("controller: topic %q: %w", req.Name, kerr.UnknownTopicOrPartition)
				continue
			}
			cur := int32(len(t.Partitions))
			switch {
			case req.Count < cur:
				r.Err = fmt.Errorf("controller: topic currently has %d partitions, which is higher than the requested %d: %w", cur, req.Count, kerr.InvalidPartitions)
				continue
			case req.Count == cur:
				r.Err = fmt.Errorf("controller: topic already has %d partition(s): %w", cur, kerr.InvalidPartitions)
				continue
			}
			rf := len(t.Partitions[0].Replicas)
			add := int(req.Count - cur)
			var assign [][]int32
			var err error
			if req.Assignments != nil {
				if len(req.Assignments) != add {
					err = fmt.Errorf("controller: attempted to add %d additional partition(s), but only %d assignment(s) were specified: %w", add, len(req.Assignments), kerr.InvalidReplicaAssignment)
				} else {
					assign = req.Assignments
					err = c.validAssignment(im, assign, rf)
				}
			} else {
				assign, err = Place(live, add, rf, int(cur), c.cfg.Rand)
			}
			if err != nil {
				r.Err = err
				continue
			}
			r.TopicID, r.NumPartitions, r.ReplicationFactor = t.ID, req.Count, int16(rf)
			for j, replicas := range assign {
				isr := activeOf(im, replicas)
				leader := metadata.NoLeader
				if len(isr) > 0 {
					leader = isr[0]
				}
				recs = append(recs, &metadata.PartitionRecord{PartitionID: cur + int32(j), TopicID: t.ID,
					Replicas: slices.Clone(replicas), ISR: isr, Leader: leader})
			}
		}
		if validateOnly {
			return nil, nil
		}
		return recs, nil
	})
	return results, err
}

// ConfigChange sets (Value non-nil) or deletes one config of a topic
// (ResourceTopic, by name) or of a broker (ResourceBroker, by id, or ""
// for the cluster default).
type ConfigChange struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// AlterConfigs writes config changes in one entry. A change for an unknown
// topic is UNKNOWN_TOPIC_OR_PARTITION and writes nothing; checking names
// and values is the broker's part (it knows the config definitions).
func (c *Controller) AlterConfigs(ctx context.Context, changes []ConfigChange) error {
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
		for _, ch := range changes {
			switch ch.ResourceType {
			case metadata.ResourceTopic:
				if im.TopicByName(ch.ResourceName) == nil {
					return nil, fmt.Errorf("controller: topic %q: %w", ch.ResourceName, kerr.UnknownTopicOrPartition)
				}
			case metadata.ResourceBroker:
			default:
				return nil, fmt.Errorf("controller: config resource type %d: %w", ch.ResourceType, kerr.InvalidRequest)
			}
			recs = append(recs, &metadata.ConfigRecord{ResourceType: ch.ResourceType, ResourceName: ch.ResourceName, Name: ch.Name, Value: ch.Value})
		}
		return recs, nil
	})
	return err
}

// ErrorCode is the Kafka error code of a result's error: 0 for nil, the
// code of the *kerr.Error it wraps, or UNKNOWN_SERVER_ERROR (-1).
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

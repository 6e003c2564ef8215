package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/topicconfig"
)

// topicCreation is one topic to create, already defaulted.
type topicCreation struct {
	name              string
	partitions        int32
	replicationFactor int16
	configs           topicconfig.Configs
	// assignments are manual replica lists by partition, honoured in
	// cluster mode (a single node is every partition's only replica).
	assignments map[int32][]int32
	// forwarded marks a creation another broker forwarded to this node
	// as the active controller's: it is not forwarded again.
	forwarded    bool
	validateOnly bool
}

// createTopic creates a topic, or only checks that it could be created, and
// returns the Kafka error code and message on failure.
func (b *Broker) createTopic(tc topicCreation) (*topic, *kerr.Error, string) {
	if err := validateTopicName(tc.name); err != nil {
		return nil, kerr.InvalidTopicException, err.Error()
	}
	if tc.partitions <= 0 {
		return nil, kerr.InvalidPartitions, "Number of partitions must be larger than 0."
	}
	if tc.replicationFactor <= 0 {
		return nil, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."
	}
	if b.isCluster() {
		return b.cluster.createTopic(tc)
	}
	if tc.replicationFactor > 1 {
		return nil, kerr.InvalidReplicationFactor, fmt.Sprintf(
			"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.",
			tc.replicationFactor, tc.replicationFactor)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, exists := b.catalog.byName[tc.name]; exists {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", tc.name)
	}
	if other := b.collidingTopic(tc.name); other != "" {
		return nil, kerr.InvalidTopicException, fmt.Sprintf("Topic '%s' collides with existing topic: %s", tc.name, other)
	}
	if tc.validateOnly {
		return nil, nil, ""
	}
	t, err := b.catalog.create(tc.name, tc.partitions, tc.configs)
	if err != nil {
		b.log.Error("creating topic failed", "topic", tc.name, "err", err)
		return nil, kerr.UnknownServerError, err.Error()
	}
	b.log.Info("created topic", "topic", tc.name, "partitions", tc.partitions)
	return t, nil, ""
}

// collidingTopic returns an existing topic whose name equals name once '.'
// and '_' are treated alike (their metric names would collide), or "".
// b.mu must be held.
func (b *Broker) collidingTopic(name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	norm := strings.ReplaceAll(name, ".", "_")
	for existing := range b.catalog.byName {
		if strings.ReplaceAll(existing, ".", "_") == norm {
			return existing
		}
	}
	return ""
}

// autoCreateTopic creates a topic with the broker defaults, as
// auto.create.topics.enable allows, and returns it or the error code for it.
func (b *Broker) autoCreateTopic(name string) (*topic, *kerr.Error) {
	if isInternalTopic(name) {
		return nil, kerr.UnknownTopicOrPartition
	}
	t, kErr, _ := b.createTopic(topicCreation{
		name:              name,
		partitions:        b.cfg.NumPartitions,
		replicationFactor: b.cfg.DefaultReplicationFactor,
		configs:           topicconfig.Configs{},
	})
	if errors.Is(kErr, kerr.TopicAlreadyExists) { // created concurrently
		if t := b.lookupTopic(name); t != nil {
			return t, nil
		}
	}
	return t, kErr
}

// errCode is the wire code of a possibly nil kerr error.
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

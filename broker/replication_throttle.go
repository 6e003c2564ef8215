package broker

// Replication throttles (Kafka's replication quotas, KIP-73) are not
// served: Gregor's followers fetch as fast as the leader answers. Kafka's
// kafka-reassign-partitions.sh removes the broker-level throttle rates
// when a reassignment completes (--verify) or is cancelled (--cancel),
// whether or not it set any, by IncrementalAlterConfigs DELETE of the
// keys below on every broker. A rate is never set here, so deleting it
// changes nothing and succeeds, as in Kafka; setting one is INVALID_CONFIG
// (--execute --throttle), since no throttle would apply. The topic-level
// lists (leader/follower.replication.throttled.replicas) are topic configs
// stored without effect (topicconfig.go).

import "github.com/twmb/franz-go/pkg/kerr"

// replicationThrottleRates are Kafka's dynamic broker configs of
// replication quotas.
var replicationThrottleRates = map[string]bool{
	"leader.replication.throttled.rate":              true,
	"follower.replication.throttled.rate":            true,
	"replica.alter.log.dirs.io.max.bytes.per.second": true,
}

// throttleRateChanges takes the changes of replication throttle rates out
// of an incremental broker config alteration: deletions are no-ops; any
// other operation refuses the resource.
func throttleRateChanges(changes []configChange) (rest []configChange, refused *alterResult) {
	for _, c := range changes {
		if !replicationThrottleRates[c.name] {
			rest = append(rest, c)
			continue
		}
		if c.op != opDelete {
			return nil, &alterResult{kerr.InvalidConfig, "Gregor does not throttle replication, so " + c.name + " cannot be set"}
		}
	}
	return rest, nil
}

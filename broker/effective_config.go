package broker

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/storage"
)

// effectiveTopicConfig is the subset of a topic's configs that the data path
// consults on every request, parsed once.
type effectiveTopicConfig struct {
	maxMessageBytes      int32
	logAppendTime        bool
	timestampBeforeMaxMs int64
	timestampAfterMaxMs  int64
	compact              bool // cleanup.policy includes compact
	segmentBytes         int64
	segmentIndexBytes    int
	indexIntervalBytes   int
	segmentMs            int64
	segmentJitterMs      int64

	// Retention and compaction (logmanager.go).
	deletePolicy       bool // cleanup.policy includes delete
	retentionMs        int64
	retentionBytes     int64
	fileDeleteDelayMs  int64
	deleteRetentionMs  int64
	minCleanableRatio  float64
	minCompactionLagMs int64
	maxCompactionLagMs int64
	flush              storage.FlushPolicy // flush.messages and flush.ms
	minInsyncReplicas  int                 // min.insync.replicas (cluster mode, acks=all)

	// The throttled-replica lists (replication_throttle.go); nil when
	// empty.
	leaderThrottled, followerThrottled *topicconfig.ThrottledReplicas
}

// effectiveConfig parses the data path's subset of a topic's configs c,
// with brokerDefaults the broker-wide defaults.
func effectiveConfig(c topicconfig.Configs, brokerDefaults map[string]string) effectiveTopicConfig {
	get := func(name string) string { return c.Value(name, brokerDefaults) }
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(get(name), 10, 64) // validated on the way in
		return n
	}
	ratio, _ := strconv.ParseFloat(get("min.cleanable.dirty.ratio"), 64) // validated on the way in
	return effectiveTopicConfig{
		maxMessageBytes:      int32(num("max.message.bytes")),
		logAppendTime:        get("message.timestamp.type") == "LogAppendTime",
		timestampBeforeMaxMs: num("message.timestamp.before.max.ms"),
		timestampAfterMaxMs:  num("message.timestamp.after.max.ms"),
		compact:              slices.Contains(strings.Split(get("cleanup.policy"), ","), "compact"),
		segmentBytes:         num("segment.bytes"),
		segmentIndexBytes:    int(num("segment.index.bytes")),
		indexIntervalBytes:   int(num("index.interval.bytes")),
		segmentMs:            num("segment.ms"),
		segmentJitterMs:      num("segment.jitter.ms"),
		deletePolicy:         slices.Contains(strings.Split(get("cleanup.policy"), ","), "delete"),
		retentionMs:          num("retention.ms"),
		retentionBytes:       num("retention.bytes"),
		fileDeleteDelayMs:    num("file.delete.delay.ms"),
		deleteRetentionMs:    num("delete.retention.ms"),
		minCleanableRatio:    ratio,
		minCompactionLagMs:   num("min.compaction.lag.ms"),
		maxCompactionLagMs:   num("max.compaction.lag.ms"),
		flush:                storage.FlushPolicy{Messages: num("flush.messages"), Ms: num("flush.ms")},
		minInsyncReplicas:    int(num("min.insync.replicas")),
		leaderThrottled:      topicconfig.ParseThrottledReplicas(get(topicconfig.LeaderThrottledReplicas)),
		followerThrottled:    topicconfig.ParseThrottledReplicas(get(topicconfig.FollowerThrottledReplicas)),
	}
}

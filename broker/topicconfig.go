package broker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/storage"
)

// configKind is the type of a topic config's value, as Kafka's ConfigDef
// declares it (DescribeConfigs v3+ reports it to clients).
type configKind int8

// The values are Kafka's DescribeConfigs config types.
const (
	kindBoolean configKind = 1
	kindString  configKind = 2
	kindInt     configKind = 3
	kindShort   configKind = 4
	kindLong    configKind = 5
	kindDouble  configKind = 6
	kindList    configKind = 7
	kindClass   configKind = 8
)

// topicConfigDef describes one topic config: its Kafka name, the default a
// broker ships with, its type and its lower bound or allowed values.
type topicConfigDef struct {
	name    string
	def     string
	kind    configKind
	min     int64    // for int and long kinds; math.MinInt64 when unbounded
	allowed []string // for string and list kinds; nil when any value is allowed
}

const unbounded = math.MinInt64

// topicConfigDefs are the topic configs of Apache Kafka 4.x with their
// defaults. Every one is accepted and stored; which ones the broker already
// acts on is listed in docs/configuration.md.
var topicConfigDefs = []topicConfigDef{
	{"cleanup.policy", "delete", kindList, 0, []string{"delete", "compact"}},
	{"compression.gzip.level", "-1", kindInt, -1, nil},
	{"compression.lz4.level", "9", kindInt, 1, nil},
	{"compression.type", "producer", kindString, 0, []string{"producer"}},
	{"compression.zstd.level", "3", kindInt, -131072, nil},
	{"delete.retention.ms", "86400000", kindLong, 0, nil},
	{"file.delete.delay.ms", "60000", kindLong, 0, nil},
	{"flush.messages", "9223372036854775807", kindLong, 1, nil},
	{"flush.ms", "9223372036854775807", kindLong, 0, nil},
	{"follower.replication.throttled.replicas", "", kindList, 0, nil},
	{"index.interval.bytes", "4096", kindInt, 0, nil},
	{"leader.replication.throttled.replicas", "", kindList, 0, nil},
	{"local.retention.bytes", "-2", kindLong, -2, nil},
	{"local.retention.ms", "-2", kindLong, -2, nil},
	{"max.compaction.lag.ms", "9223372036854775807", kindLong, 1, nil},
	{"max.message.bytes", "1048588", kindInt, 0, nil},
	{"message.timestamp.after.max.ms", "3600000", kindLong, 0, nil},
	{"message.timestamp.before.max.ms", "9223372036854775807", kindLong, 0, nil},
	{"message.timestamp.type", "CreateTime", kindString, 0, []string{"CreateTime", "LogAppendTime"}},
	{"min.cleanable.dirty.ratio", "0.5", kindDouble, 0, nil},
	{"min.compaction.lag.ms", "0", kindLong, 0, nil},
	{"min.insync.replicas", "1", kindInt, 1, nil},
	{"preallocate", "false", kindBoolean, 0, nil},
	{"remote.log.copy.disable", "false", kindBoolean, 0, nil},
	{"remote.log.delete.on.disable", "false", kindBoolean, 0, nil},
	{"remote.storage.enable", "false", kindBoolean, 0, []string{"false"}},
	{"retention.bytes", "-1", kindLong, unbounded, nil},
	{"retention.ms", "604800000", kindLong, -1, nil},
	{"segment.bytes", "1073741824", kindInt, 1024 * 1024, nil},
	{"segment.index.bytes", "10485760", kindInt, 4, nil},
	{"segment.jitter.ms", "0", kindLong, 0, nil},
	{"segment.ms", "604800000", kindLong, 1, nil},
	{"unclean.leader.election.enable", "false", kindBoolean, 0, nil},
}

var topicConfigByName = func() map[string]*topicConfigDef {
	m := make(map[string]*topicConfigDef, len(topicConfigDefs))
	for i := range topicConfigDefs {
		m[topicConfigDefs[i].name] = &topicConfigDefs[i]
	}
	return m
}()

// validate checks value against the definition and returns it normalized
// (trimmed), or an error whose text is fit for a client.
func (d *topicConfigDef) validate(value string) (string, error) {
	value = strings.TrimSpace(value)
	if isThrottledReplicaList(d.name) {
		if err := validateThrottledReplicas(d.name, value); err != nil {
			return "", err
		}
	}
	switch d.kind {
	case kindBoolean:
		switch strings.ToLower(value) {
		case "true", "false":
			value = strings.ToLower(value)
		default:
			return "", fmt.Errorf("invalid value %s for configuration %s: expected a boolean", value, d.name)
		}
	case kindInt, kindLong:
		bits := 64
		if d.kind == kindInt {
			bits = 32
		}
		n, err := strconv.ParseInt(value, 10, bits)
		if err != nil {
			return "", fmt.Errorf("invalid value %s for configuration %s: not a number", value, d.name)
		}
		if n < d.min {
			return "", fmt.Errorf("invalid value %s for configuration %s: value must be at least %d", value, d.name, d.min)
		}
	case kindDouble:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f < 0 || f > 1 {
			return "", fmt.Errorf("invalid value %s for configuration %s: expected a number between 0 and 1", value, d.name)
		}
	}
	if d.allowed != nil {
		items := []string{value}
		if d.kind == kindList {
			items = strings.Split(value, ",")
		}
		for _, item := range items {
			if !contains(d.allowed, strings.TrimSpace(item)) {
				return "", fmt.Errorf("invalid value %s for configuration %s: Gregor supports %s", value, d.name, strings.Join(d.allowed, ", "))
			}
		}
	}
	return value, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// topicConfigs is a topic's explicitly set configs; anything absent takes
// the broker default.
type topicConfigs map[string]string

// validateTopicConfigs checks a set of configs as CreateTopics receives them
// and returns the normalized set.
func validateTopicConfigs(in map[string]*string) (topicConfigs, error) {
	out := make(topicConfigs, len(in))
	for name, value := range in {
		def, ok := topicConfigByName[name]
		if !ok {
			return nil, fmt.Errorf("Unknown topic config name: %s", name)
		}
		if value == nil {
			return nil, fmt.Errorf("Null value not supported for topic configs: %s", name)
		}
		v, err := def.validate(*value)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// resolvedConfig is one config's effective value and where it came from.
type resolvedConfig struct {
	def    *topicConfigDef
	value  string
	source int8 // Kafka's DescribeConfigs source: 1 topic, 4 static broker, 5 default
}

// Kafka's config sources, as DescribeConfigs v1+ reports them.
const (
	sourceDynamicTopic int8 = 1
	sourceStaticBroker int8 = 4
	sourceDefault      int8 = 5
)

// resolve returns every topic config with its effective value, sorted by
// name, taking explicit topic values over broker overrides over defaults.
func (c topicConfigs) resolve(brokerDefaults map[string]string) []resolvedConfig {
	out := make([]resolvedConfig, 0, len(topicConfigDefs))
	for i := range topicConfigDefs {
		def := &topicConfigDefs[i]
		rc := resolvedConfig{def: def, value: def.def, source: sourceDefault}
		if v, ok := brokerDefaults[def.name]; ok {
			rc.value, rc.source = v, sourceStaticBroker
		}
		if v, ok := c[def.name]; ok {
			rc.value, rc.source = v, sourceDynamicTopic
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].def.name < out[j].def.name })
	return out
}

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
	leaderThrottled, followerThrottled *throttledReplicas
}

func (c topicConfigs) effective(brokerDefaults map[string]string) effectiveTopicConfig {
	get := func(name string) string {
		if v, ok := c[name]; ok {
			return v
		}
		if v, ok := brokerDefaults[name]; ok {
			return v
		}
		return topicConfigByName[name].def
	}
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
		leaderThrottled:      parseThrottledReplicas(get(leaderThrottledReplicas)),
		followerThrottled:    parseThrottledReplicas(get(followerThrottledReplica)),
	}
}

// brokerSynonyms maps a topic config to the broker config that sets its
// default cluster-wide (Kafka's ServerTopicConfigSynonyms), the name under
// which DescribeConfigs reports broker-level and default synonyms. Configs
// absent here have no broker-level synonym.
var brokerSynonyms = map[string]string{
	"cleanup.policy":                  "log.cleanup.policy",
	"compression.gzip.level":          "compression.gzip.level",
	"compression.lz4.level":           "compression.lz4.level",
	"compression.type":                "compression.type",
	"compression.zstd.level":          "compression.zstd.level",
	"delete.retention.ms":             "log.cleaner.delete.retention.ms",
	"file.delete.delay.ms":            "log.segment.delete.delay.ms",
	"flush.messages":                  "log.flush.interval.messages",
	"flush.ms":                        "log.flush.interval.ms",
	"index.interval.bytes":            "log.index.interval.bytes",
	"local.retention.bytes":           "log.local.retention.bytes",
	"local.retention.ms":              "log.local.retention.ms",
	"max.compaction.lag.ms":           "log.cleaner.max.compaction.lag.ms",
	"max.message.bytes":               "message.max.bytes",
	"message.timestamp.after.max.ms":  "log.message.timestamp.after.max.ms",
	"message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
	"message.timestamp.type":          "log.message.timestamp.type",
	"min.cleanable.dirty.ratio":       "log.cleaner.min.cleanable.ratio",
	"min.compaction.lag.ms":           "log.cleaner.min.compaction.lag.ms",
	"min.insync.replicas":             "min.insync.replicas",
	"preallocate":                     "log.preallocate",
	"retention.bytes":                 "log.retention.bytes",
	"retention.ms":                    "log.retention.ms",
	"segment.bytes":                   "log.segment.bytes",
	"segment.index.bytes":             "log.index.size.max.bytes",
	"segment.jitter.ms":               "log.roll.jitter.ms",
	"segment.ms":                      "log.roll.ms",
	"unclean.leader.election.enable":  "unclean.leader.election.enable",
}

// TopicConfigSynonyms returns, for each Kafka broker config that sets a
// topic config's broker-wide default (log.segment.bytes, message.max.bytes,
// ...), the name of that topic config: the table Config.TopicDefaults is
// keyed by once a server.properties file is read. The map is the caller's.
func TopicConfigSynonyms() map[string]string {
	out := make(map[string]string, len(brokerSynonyms))
	for topicName, brokerName := range brokerSynonyms {
		out[brokerName] = topicName
	}
	return out
}

// brokerConfigWithoutDefault names the broker synonyms whose own default is
// null in Kafka (the topic default comes from another setting, such as
// log.retention.hours): Kafka reports no DEFAULT_CONFIG synonym for them.
var brokerConfigWithoutDefault = map[string]bool{
	"log.retention.ms":      true,
	"log.roll.ms":           true,
	"log.roll.jitter.ms":    true,
	"log.flush.interval.ms": true,
}

// topicConfigDocs are Gregor's one-line descriptions of the topic configs,
// reported by DescribeConfigs v3+ when documentation is asked for. They say
// what Gregor does with each value.
var topicConfigDocs = map[string]string{
	"cleanup.policy":                          "How old log segments are removed: delete by retention, compact by key, or both.",
	"compression.gzip.level":                  "Gzip level used when the broker recompresses batches (stored only).",
	"compression.lz4.level":                   "LZ4 level used when the broker recompresses batches (stored only).",
	"compression.type":                        "Codec of stored batches; Gregor keeps the producer's codec.",
	"compression.zstd.level":                  "Zstandard level used when the broker recompresses batches (stored only).",
	"delete.retention.ms":                     "How long compaction keeps tombstones after the cleaning that first saw them.",
	"file.delete.delay.ms":                    "Delay before a deleted segment's files (renamed .deleted) are removed.",
	"flush.messages":                          "Fsync the partition once this many records are unflushed; 1 fsyncs every append before it is acknowledged (concurrent appends share one fsync). The default leaves flushing to the OS.",
	"flush.ms":                                "Fsync, in the background, every record at most this many ms after its append; the producer is not made to wait. The default leaves flushing to the OS.",
	"follower.replication.throttled.replicas": "Replicas (partition:broker, or *) whose fetching as followers follower.replication.throttled.rate bounds.",
	"index.interval.bytes":                    "Bytes of log between two offset index entries.",
	"leader.replication.throttled.replicas":   "Replicas (partition:broker, or *) whose serving as leaders leader.replication.throttled.rate bounds.",
	"local.retention.bytes":                   "Local size limit when tiered storage is on (stored only).",
	"local.retention.ms":                      "Local time limit when tiered storage is on (stored only).",
	"max.compaction.lag.ms":                   "Longest a record may stay uncompacted.",
	"max.message.bytes":                       "Largest record batch a produce request may carry for this topic.",
	"message.timestamp.after.max.ms":          "How far a CreateTime timestamp may lie ahead of the broker clock.",
	"message.timestamp.before.max.ms":         "How far a CreateTime timestamp may lie behind the broker clock.",
	"message.timestamp.type":                  "Whether records keep the producer's CreateTime or get the broker's LogAppendTime.",
	"min.cleanable.dirty.ratio":               "Share of uncompacted log that triggers compaction.",
	"min.compaction.lag.ms":                   "Shortest a record stays uncompacted.",
	"min.insync.replicas":                     "Replicas that must hold a record before an acks=all produce succeeds.",
	"preallocate":                             "Whether segment files are preallocated (stored only).",
	"remote.log.copy.disable":                 "Stop copying segments to tiered storage (stored only).",
	"remote.log.delete.on.disable":            "Delete tiered data when tiered storage is turned off (stored only).",
	"remote.storage.enable":                   "Tiered storage for this topic; Gregor has none, so only false is accepted.",
	"retention.bytes":                         "Size limit per partition before old segments are deleted.",
	"retention.ms":                            "Age limit before old segments are deleted.",
	"segment.bytes":                           "Size at which a new log segment is rolled; no batch may be larger.",
	"segment.index.bytes":                     "Size of each new segment's offset and time indexes; a full index rolls the segment.",
	"segment.jitter.ms":                       "Largest random jitter subtracted from segment.ms, drawn per segment.",
	"segment.ms":                              "Age, from its first record's timestamp, at which the active segment is rolled on the next append.",
	"unclean.leader.election.enable":          "Whether an out-of-sync replica may become leader when no in-sync replica is left (may lose acknowledged records).",
}

// clone returns a copy of c, for building a changed config set without
// touching the published one.
func (c topicConfigs) clone() topicConfigs {
	out := make(topicConfigs, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// validateAll checks every value of a complete set, returning it normalized.
func (c topicConfigs) validateAll() (topicConfigs, error) {
	in := make(map[string]*string, len(c))
	for k, v := range c {
		in[k] = &v
	}
	return validateTopicConfigs(in)
}

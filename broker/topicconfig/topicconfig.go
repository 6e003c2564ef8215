package topicconfig

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kind is the type of a config's value, as Kafka's ConfigDef declares it
// (DescribeConfigs v3+ reports it to clients).
type Kind int8

// The values are Kafka's DescribeConfigs config types.
const (
	KindBoolean Kind = 1
	KindString  Kind = 2
	KindInt     Kind = 3
	KindShort   Kind = 4
	KindLong    Kind = 5
	KindDouble  Kind = 6
	KindList    Kind = 7
	KindClass   Kind = 8
)

// Def describes one topic config: its Kafka name, the default a broker
// ships with, its type and its lower bound or allowed values.
type Def struct {
	Name    string
	Default string
	Kind    Kind
	Min     int64    // for int and long kinds; math.MinInt64 when unbounded
	Allowed []string // for string and list kinds; nil when any value is allowed
}

const unbounded = math.MinInt64

// defs are the topic configs of Apache Kafka 4.x with their defaults.
// Every one is accepted and stored; which ones the broker already acts on
// is listed in docs/configuration.md.
var defs = []Def{
	{"cleanup.policy", "delete", KindList, 0, []string{"delete", "compact"}},
	{"compression.gzip.level", "-1", KindInt, -1, nil},
	{"compression.lz4.level", "9", KindInt, 1, nil},
	{"compression.type", "producer", KindString, 0, []string{"producer"}},
	{"compression.zstd.level", "3", KindInt, -131072, nil},
	{"delete.retention.ms", "86400000", KindLong, 0, nil},
	{"file.delete.delay.ms", "60000", KindLong, 0, nil},
	{"flush.messages", "9223372036854775807", KindLong, 1, nil},
	{"flush.ms", "9223372036854775807", KindLong, 0, nil},
	{"follower.replication.throttled.replicas", "", KindList, 0, nil},
	{"index.interval.bytes", "4096", KindInt, 0, nil},
	{"leader.replication.throttled.replicas", "", KindList, 0, nil},
	{"local.retention.bytes", "-2", KindLong, -2, nil},
	{"local.retention.ms", "-2", KindLong, -2, nil},
	{"max.compaction.lag.ms", "9223372036854775807", KindLong, 1, nil},
	{"max.message.bytes", "1048588", KindInt, 0, nil},
	{"message.timestamp.after.max.ms", "3600000", KindLong, 0, nil},
	{"message.timestamp.before.max.ms", "9223372036854775807", KindLong, 0, nil},
	{"message.timestamp.type", "CreateTime", KindString, 0, []string{"CreateTime", "LogAppendTime"}},
	{"min.cleanable.dirty.ratio", "0.5", KindDouble, 0, nil},
	{"min.compaction.lag.ms", "0", KindLong, 0, nil},
	{"min.insync.replicas", "1", KindInt, 1, nil},
	{"preallocate", "false", KindBoolean, 0, nil},
	{"remote.log.copy.disable", "false", KindBoolean, 0, nil},
	{"remote.log.delete.on.disable", "false", KindBoolean, 0, nil},
	{"remote.storage.enable", "false", KindBoolean, 0, []string{"false"}},
	{"retention.bytes", "-1", KindLong, unbounded, nil},
	{"retention.ms", "604800000", KindLong, -1, nil},
	{"segment.bytes", "1073741824", KindInt, 1024 * 1024, nil},
	{"segment.index.bytes", "10485760", KindInt, 4, nil},
	{"segment.jitter.ms", "0", KindLong, 0, nil},
	{"segment.ms", "604800000", KindLong, 1, nil},
	{"unclean.leader.election.enable", "false", KindBoolean, 0, nil},
}

var byName = func() map[string]*Def {
	m := make(map[string]*Def, len(defs))
	for i := range defs {
		m[defs[i].Name] = &defs[i]
	}
	return m
}()

// Defs returns every topic config's definition, sorted by name. The
// slice is the package's: callers must not change it.
func Defs() []Def { return defs }

// Lookup returns the definition of the topic config name, nil when there
// is no such config.
func Lookup(name string) *Def { return byName[name] }

// Validate checks value against the definition and returns it normalized
// (trimmed), or an error whose text is fit for a client.
func (d *Def) Validate(value string) (string, error) {
	value = strings.TrimSpace(value)
	if isThrottledReplicaList(d.Name) {
		if err := validateThrottledReplicas(d.Name, value); err != nil {
			return "", err
		}
	}
	switch d.Kind {
	case KindBoolean:
		switch strings.ToLower(value) {
		case "true", "false":
			value = strings.ToLower(value)
		default:
			return "", fmt.Errorf("invalid value %s for configuration %s: expected a boolean", value, d.Name)
		}
	case KindInt, KindLong:
		bits := 64
		if d.Kind == KindInt {
			bits = 32
		}
		n, err := strconv.ParseInt(value, 10, bits)
		if err != nil {
			return "", fmt.Errorf("invalid value %s for configuration %s: not a number", value, d.Name)
		}
		if n < d.Min {
			return "", fmt.Errorf("invalid value %s for configuration %s: value must be at least %d", value, d.Name, d.Min)
		}
	case KindDouble:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f < 0 || f > 1 {
			return "", fmt.Errorf("invalid value %s for configuration %s: expected a number between 0 and 1", value, d.Name)
		}
	}
	if d.Allowed != nil {
		items := []string{value}
		if d.Kind == KindList {
			items = strings.Split(value, ",")
		}
		for _, item := range items {
			if !slices.Contains(d.Allowed, strings.TrimSpace(item)) {
				return "", fmt.Errorf("invalid value %s for configuration %s: Gregor supports %s", value, d.Name, strings.Join(d.Allowed, ", "))
			}
		}
	}
	return value, nil
}

// Configs is a topic's explicitly set configs; anything absent takes the
// broker default.
type Configs map[string]string

// Validate checks a set of configs as CreateTopics receives them and
// returns the normalized set.
func Validate(in map[string]*string) (Configs, error) {
	out := make(Configs, len(in))
	for name, value := range in {
		def, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("Unknown topic config name: %s", name)
		}
		if value == nil {
			return nil, fmt.Errorf("Null value not supported for topic configs: %s", name)
		}
		v, err := def.Validate(*value)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// Resolved is one config's effective value and where it came from.
type Resolved struct {
	Def    *Def
	Value  string
	Source int8 // Kafka's DescribeConfigs source: 1 topic, 4 static broker, 5 default
}

// Kafka's config sources a topic config's value comes from, as
// DescribeConfigs v1+ reports them (the broker's own configs use the same
// codes).
const (
	SourceDynamicTopic int8 = 1
	SourceStaticBroker int8 = 4
	SourceDefault      int8 = 5
)

// Resolve returns every topic config with its effective value, sorted by
// name, taking explicit topic values over broker overrides over defaults.
func (c Configs) Resolve(brokerDefaults map[string]string) []Resolved {
	out := make([]Resolved, 0, len(defs))
	for i := range defs {
		def := &defs[i]
		rc := Resolved{Def: def, Value: def.Default, Source: SourceDefault}
		if v, ok := brokerDefaults[def.Name]; ok {
			rc.Value, rc.Source = v, SourceStaticBroker
		}
		if v, ok := c[def.Name]; ok {
			rc.Value, rc.Source = v, SourceDynamicTopic
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Def.Name < out[j].Def.Name })
	return out
}

// Value is the effective value of the topic config name: the topic's own,
// else the broker-wide default of brokerDefaults, else the config's
// default. name must be a topic config.
func (c Configs) Value(name string, brokerDefaults map[string]string) string {
	if v, ok := c[name]; ok {
		return v
	}
	if v, ok := brokerDefaults[name]; ok {
		return v
	}
	return byName[name].Default
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

// BrokerSynonym returns the broker config that sets the topic config
// topicConfig's broker-wide default, ok false when it has none.
func BrokerSynonym(topicConfig string) (name string, ok bool) {
	name, ok = brokerSynonyms[topicConfig]
	return name, ok
}

// TopicConfigsBySynonym returns, for each Kafka broker config that sets a
// topic config's broker-wide default (log.segment.bytes,
// message.max.bytes, ...), the name of that topic config: the table the
// broker's Config.TopicDefaults is keyed by once a server.properties file
// is read. The map is the caller's.
func TopicConfigsBySynonym() map[string]string {
	out := make(map[string]string, len(brokerSynonyms))
	for topicName, brokerName := range brokerSynonyms {
		out[brokerName] = topicName
	}
	return out
}

// HasBrokerDefault reports whether Kafka gives the broker synonym name a
// default of its own, which DescribeConfigs reports as a DEFAULT_CONFIG
// synonym.
func HasBrokerDefault(name string) bool { return !brokerConfigWithoutDefault[name] }

// brokerConfigWithoutDefault names the broker synonyms whose own default is
// null in Kafka (the topic default comes from another setting, such as
// log.retention.hours): Kafka reports no DEFAULT_CONFIG synonym for them.
var brokerConfigWithoutDefault = map[string]bool{
	"log.retention.ms":      true,
	"log.roll.ms":           true,
	"log.roll.jitter.ms":    true,
	"log.flush.interval.ms": true,
}

// Doc is Gregor's one-line description of the topic config name.
func Doc(name string) string { return docs[name] }

// docs are Gregor's one-line descriptions of the topic configs, reported by
// DescribeConfigs v3+ when documentation is asked for. They say what
// Gregor does with each value.
var docs = map[string]string{
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

// Clone returns a copy of c, for building a changed config set without
// touching the published one.
func (c Configs) Clone() Configs {
	out := make(Configs, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// ValidateAll checks every value of a complete set, returning it
// normalized.
func (c Configs) ValidateAll() (Configs, error) {
	in := make(map[string]*string, len(c))
	for k, v := range c {
		in[k] = &v
	}
	return Validate(in)
}

package broker

// DescribeConfigs (key 32), v1-v4, the range Kafka 4 serves.
//
// BROKER resources also list the dynamic broker configs set, the
// replication throttle rates: source DYNAMIC_BROKER_CONFIG (2) when set
// for the node, DYNAMIC_DEFAULT_BROKER_CONFIG (3) when only as the cluster
// default (then the only ones "" lists); read-only, as Kafka reports them.
//
// Resource types: TOPIC (2) lists every topic config with its effective
// value and source: DYNAMIC_TOPIC_CONFIG (1) when set on the topic,
// STATIC_BROKER_CONFIG (4) when Config.TopicDefaults sets it, else
// DEFAULT_CONFIG (5). BROKER (4), named by this node's id or "" (the
// cluster-wide defaults, which Gregor has none of, so the list is empty),
// lists the broker settings Gregor has, in Kafka's vocabulary, all read-only
// and STATIC_BROKER_CONFIG or DEFAULT_CONFIG; broker.rack, whose default is
// null, is listed unset with a null value and no synonym, as Kafka does.
// ConfigNames, when non-empty, filters the list. IncludeSynonyms adds, in
// Kafka's order, the topic value, the broker synonym (log.segment.bytes for
// segment.bytes) when set statically, and the default under the synonym's
// name. v3+ adds each config's type and, with IncludeDocumentation, a
// one-line description of Gregor's own.
//
// Errors, as Kafka's ConfigHelper: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; an invalid topic name INVALID_TOPIC_EXCEPTION;
// a broker name that is not a number, or another node's id, INVALID_REQUEST.
// A resource type Kafka does not know fails the whole request: every
// resource gets INVALID_REQUEST. BROKER_LOGGER (8), CLIENT_METRICS (16) and
// GROUP (32), which Kafka serves, are INVALID_REQUEST ("Unsupported resource
// type") for that resource alone until Gregor has them.
//
// v0 is not served (Kafka 4 dropped it): it has IsDefault instead of Source.

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(32, 1, 4, handleDescribeConfigs) }

// Kafka's config resource types.
const (
	resourceTopic         int8 = 2
	resourceBroker        int8 = 4
	resourceBrokerLogger  int8 = 8
	resourceClientMetrics int8 = 16
	resourceGroup         int8 = 32
)

func resourceTypeName(t int8) string {
	switch t {
	case resourceTopic:
		return "TOPIC"
	case resourceBroker:
		return "BROKER"
	case resourceBrokerLogger:
		return "BROKER_LOGGER"
	case resourceClientMetrics:
		return "CLIENT_METRICS"
	case resourceGroup:
		return "GROUP"
	}
	return "UNKNOWN"
}

func handleDescribeConfigs(b *Broker, r *request, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeConfigsResponse](req)
	for _, rr := range req.Resources {
		if resourceTypeName(int8(rr.ResourceType)) == "UNKNOWN" {
			// Kafka throws while authorizing, failing the whole request.
			msg := fmt.Sprintf("Unexpected resource type UNKNOWN for resource %s", rr.ResourceName)
			resp.Resources = resp.Resources[:0]
			for _, rr := range req.Resources {
				res := kmsg.NewDescribeConfigsResponseResource()
				res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
				res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, &msg
				resp.Resources = append(resp.Resources, res)
			}
			return resp, nil
		}
	}
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var configs []describedConfig
		var kErr *kerr.Error
		var msg string
		switch int8(rr.ResourceType) {
		case resourceTopic:
			configs, kErr, msg = b.describeTopic(rr.ResourceName)
		case resourceBroker:
			configs, kErr, msg = b.describeBroker(rr.ResourceName)
		default:
			kErr, msg = kerr.InvalidRequest, "Unsupported resource type: "+resourceTypeName(int8(rr.ResourceType))
		}
		if kErr != nil {
			res.ErrorCode = kErr.Code
			if msg != "" {
				res.ErrorMessage = &msg
			}
			resp.Resources = append(resp.Resources, res)
			continue
		}
		for _, c := range configs {
			if len(rr.ConfigNames) > 0 && !contains(rr.ConfigNames, c.name) {
				continue
			}
			res.Configs = append(res.Configs, c.wire(req))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// describedConfig is one config as DescribeConfigs reports it.
type describedConfig struct {
	name     string
	value    string
	null     bool // the value is null: a config without a default, unset
	source   int8
	readOnly bool
	kind     configKind
	doc      string
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func (c describedConfig) wire(req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	out := kmsg.NewDescribeConfigsResponseResourceConfig()
	out.Name = c.name
	if !c.null {
		value := c.value
		out.Value = &value
	}
	out.ReadOnly = c.readOnly
	out.Source = kmsg.ConfigSource(c.source)
	out.IsDefault = c.source == sourceDefault
	if req.IncludeSynonyms {
		out.ConfigSynonyms = c.synonyms
	} else {
		out.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
	}
	if req.Version >= 3 {
		out.ConfigType = kmsg.ConfigType(c.kind)
		if req.IncludeDocumentation {
			doc := c.doc
			out.Documentation = &doc
		}
	}
	return out
}

func synonym(name, value string, source int8) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, &value, kmsg.ConfigSource(source)
	return s
}

// topicConfigs returns t's current config set; the map is never mutated.
func (b *Broker) topicConfigs(t *topic) topicConfigs {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.configs
}

func (b *Broker) describeTopic(name string) ([]describedConfig, *kerr.Error, string) {
	if err := validateTopicName(name); err != nil {
		return nil, kerr.InvalidTopicException, err.Error()
	}
	t := b.lookupTopic(name)
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition, ""
	}
	configs := b.topicConfigs(t)
	var out []describedConfig
	for _, rc := range configs.resolve(b.cfg.TopicDefaults) {
		dc := describedConfig{name: rc.def.name, value: rc.value, source: rc.source, kind: rc.def.kind, doc: topicConfigDocs[rc.def.name]}
		if v, ok := configs[rc.def.name]; ok {
			dc.synonyms = append(dc.synonyms, synonym(rc.def.name, v, sourceDynamicTopic))
		}
		// A config without a broker synonym (the throttled-replica lists,
		// remote.*) has no broker-level entries, as in Kafka.
		if brokerName, ok := brokerSynonyms[rc.def.name]; ok {
			if v, ok := b.cfg.TopicDefaults[rc.def.name]; ok {
				dc.synonyms = append(dc.synonyms, synonym(brokerName, v, sourceStaticBroker))
			}
			if !brokerConfigWithoutDefault[brokerName] {
				dc.synonyms = append(dc.synonyms, synonym(brokerName, rc.def.def, sourceDefault))
			}
		}
		out = append(out, dc)
	}
	return out, nil, ""
}

// describeBroker lists this node's broker configs, its static settings
// (read-only) and the dynamic configs set for it or as cluster defaults
// (replication_throttle.go); "" lists the cluster defaults alone.
func (b *Broker) describeBroker(name string) ([]describedConfig, *kerr.Error, string) {
	if name == "" {
		return b.describeThrottleRates(false), nil, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || int32(id) != b.cfg.NodeID {
		return nil, kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, name)
	}
	out := append(b.brokerConfigs(), b.describeThrottleRates(true)...)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil, ""
}

// brokerConfig is one broker setting Gregor reports.
type brokerConfig struct {
	name  string
	kind  configKind
	doc   string
	value func(b *Broker) (value string, explicit bool)
}

// nullDefaultBrokerConfigs are the broker configs whose default is null
// (Kafka's broker.rack): unset, one is listed with a null value, source
// DEFAULT_CONFIG and no synonym, as Kafka's ConfigHelper lists it.
var nullDefaultBrokerConfigs = map[string]bool{"broker.rack": true}

// topicDefault reports the broker-level value of a topic config.
func topicDefault(topicConfig string) func(*Broker) (string, bool) {
	return func(b *Broker) (string, bool) {
		if v, ok := b.cfg.TopicDefaults[topicConfig]; ok {
			return v, true
		}
		return topicConfigByName[topicConfig].def, false
	}
}

var brokerConfigDefs = []brokerConfig{
	{"add.partitions.to.txn.retry.backoff.max.ms", kindInt, "How long a transactions V2 produce keeps asking the transaction coordinator to add its partition after CONCURRENT_TRANSACTIONS.", func(b *Broker) (string, bool) {
		v := *b.cfg.AddPartitionsToTxnRetryBackoffMaxMs
		return strconv.FormatInt(v, 10), v != 100
	}},
	{"add.partitions.to.txn.retry.backoff.ms", kindInt, "How long a transactions V2 produce waits before asking again.", func(b *Broker) (string, bool) {
		v := b.cfg.AddPartitionsToTxnRetryBackoffMs
		return strconv.FormatInt(v, 10), v != 20
	}},
	{"advertised.listeners", kindList, "Address clients are told to connect to.", func(b *Broker) (string, bool) {
		return fmt.Sprintf("PLAINTEXT://%s:%d", b.advertised.host, b.advertised.port), b.cfg.Advertise != ""
	}},
	{"auto.create.topics.enable", kindBoolean, "Whether Metadata and Produce create missing topics.", func(b *Broker) (string, bool) {
		return strconv.FormatBool(*b.cfg.AutoCreateTopics), !*b.cfg.AutoCreateTopics
	}},
	{"broker.rack", kindString, "Rack of this broker, for rack-aware replica placement and fetching from the closest replica.", func(b *Broker) (string, bool) {
		return b.cfg.BrokerRack, b.cfg.BrokerRack != ""
	}},
	{"broker.id", kindInt, "This node's id (the same as node.id).", func(b *Broker) (string, bool) {
		return strconv.Itoa(int(b.cfg.NodeID)), true
	}},
	{"compression.type", kindString, "Codec of stored batches; Gregor keeps the producer's.", topicDefault("compression.type")},
	{"default.replication.factor", kindInt, "Replication factor of topics created with the default.", func(b *Broker) (string, bool) {
		return strconv.Itoa(int(b.cfg.DefaultReplicationFactor)), b.cfg.DefaultReplicationFactor != 1
	}},
	{"listeners", kindList, "Address the broker listens on.", func(b *Broker) (string, bool) {
		return "PLAINTEXT://" + b.Addr(), true
	}},
	{"log.dirs", kindList, "Directory holding the partition logs and topic catalogue.", func(b *Broker) (string, bool) {
		return b.logDir(), true
	}},
	{"log.index.interval.bytes", kindInt, "Default bytes between offset index entries.", topicDefault("index.interval.bytes")},
	{"log.index.size.max.bytes", kindInt, "Default size of a segment's offset index.", topicDefault("segment.index.bytes")},
	{"log.message.timestamp.type", kindString, "Default timestamp type of topics.", topicDefault("message.timestamp.type")},
	{"log.retention.bytes", kindLong, "Default size limit per partition (not enforced yet).", topicDefault("retention.bytes")},
	{"log.retention.hours", kindInt, "Default age limit in hours (not enforced yet).", func(b *Broker) (string, bool) {
		v, explicit := topicDefault("retention.ms")(b)
		ms, _ := strconv.ParseInt(v, 10, 64)
		if ms < 0 {
			return "-1", explicit
		}
		return strconv.FormatInt(ms/3600000, 10), explicit
	}},
	{"log.retention.ms", kindLong, "Default age limit in milliseconds (not enforced yet).", topicDefault("retention.ms")},
	{"log.segment.bytes", kindInt, "Default segment roll size.", topicDefault("segment.bytes")},
	{"message.max.bytes", kindInt, "Default largest record batch a topic accepts.", topicDefault("max.message.bytes")},
	{"min.insync.replicas", kindInt, "Default replicas needed for an acks=all produce.", topicDefault("min.insync.replicas")},
	{"node.id", kindInt, "This node's id.", func(b *Broker) (string, bool) {
		return strconv.Itoa(int(b.cfg.NodeID)), true
	}},
	{"num.partitions", kindInt, "Partition count of topics created with the default.", func(b *Broker) (string, bool) {
		return strconv.Itoa(int(b.cfg.NumPartitions)), b.cfg.NumPartitions != 1
	}},
	{"process.roles", kindList, "Roles this node plays: broker and controller at once, or broker only (an observer of the controller quorum).", func(b *Broker) (string, bool) {
		if b.isCluster() && b.cluster.raftAddr != "" {
			return "broker", true
		}
		return "broker,controller", false
	}},
	{"socket.request.max.bytes", kindInt, "Largest request frame; a larger one closes the connection.", func(b *Broker) (string, bool) {
		return strconv.Itoa(int(b.cfg.MaxFrameBytes)), true
	}},
}

var brokerConfigByName = func() map[string]*brokerConfig {
	m := make(map[string]*brokerConfig, len(brokerConfigDefs))
	for i := range brokerConfigDefs {
		m[brokerConfigDefs[i].name] = &brokerConfigDefs[i]
	}
	return m
}()

func (b *Broker) brokerConfigs() []describedConfig {
	out := make([]describedConfig, 0, len(brokerConfigDefs))
	for _, c := range brokerConfigDefs {
		v, explicit := c.value(b)
		if nullDefaultBrokerConfigs[c.name] && !explicit {
			out = append(out, describedConfig{name: c.name, null: true, source: sourceDefault, readOnly: true, kind: c.kind, doc: c.doc,
				synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}})
			continue
		}
		source := sourceDefault
		if explicit {
			source = sourceStaticBroker
		}
		out = append(out, describedConfig{
			name: c.name, value: v, source: source, readOnly: true, kind: c.kind, doc: c.doc,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(c.name, v, source)},
		})
	}
	return out
}

// logDir is the one log directory: the data dir, or "memory" for an
// in-memory broker.
func (b *Broker) logDir() string {
	if b.cfg.DataDir == "" {
		return "memory"
	}
	return b.cfg.DataDir
}

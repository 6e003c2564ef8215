package broker

// DescribeConfigs (key 32), v1-v4, the range Kafka 4 serves.
//
// Behavior:
//   - TOPIC lists every topic config with its value and source: set on the
//     topic, set broker-wide (Config.TopicDefaults), or the default;
//   - BROKER, by this node's id, lists every config of the broker config
//     table (broker_configs.go) read-only, STATIC_BROKER_CONFIG when set
//     and DEFAULT_CONFIG when not (null while unset when Kafka's default is
//     null), and the replication throttle rates, Gregor's dynamic broker
//     configs; "" lists only the cluster-wide throttle rates;
//   - ConfigNames filters; IncludeSynonyms adds Kafka's synonym chain;
//   - errors as Kafka's ConfigHelper: UNKNOWN_TOPIC_OR_PARTITION,
//     INVALID_TOPIC_EXCEPTION, INVALID_REQUEST for another node's id or a
//     resource type Gregor does not serve (BROKER_LOGGER, CLIENT_METRICS,
//     GROUP); an unknown resource type fails the whole request.
//
// Version notes:
//   - v0 is not served (Kafka 4 dropped it);
//   - v3+ adds each config's type and, with IncludeDocumentation, its doc.
//
// docs/apis.md#describeconfigs has the details.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
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
		// Kafka's answer always carries a message, empty unless its
		// error has one of its own.
		res.ErrorMessage = &msg
		if kErr != nil {
			res.ErrorCode = kErr.Code
			resp.Resources = append(resp.Resources, res)
			continue
		}
		for _, c := range configs {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, c.name) {
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
	// sensitive hides the value (a password or key): null, isSensitive.
	sensitive bool
	kind      topicconfig.Kind
	doc       string
	synonyms  []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func (c describedConfig) wire(req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	out := kmsg.NewDescribeConfigsResponseResourceConfig()
	out.Name = c.name
	if !c.null {
		value := c.value
		out.Value = &value
	}
	out.ReadOnly = c.readOnly
	out.IsSensitive = c.sensitive
	out.Source = kmsg.ConfigSource(c.source)
	out.IsDefault = c.source == topicconfig.SourceDefault
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

// topicconfig.Configs returns t's current config set; the map is never mutated.
func (b *Broker) topicConfigs(t *topic) topicconfig.Configs {
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
	for _, rc := range configs.Resolve(b.cfg.TopicDefaults) {
		dc := describedConfig{name: rc.Def.Name, value: rc.Value, source: rc.Source, kind: rc.Def.Kind, doc: topicconfig.Doc(rc.Def.Name)}
		if v, ok := configs[rc.Def.Name]; ok {
			dc.synonyms = append(dc.synonyms, synonym(rc.Def.Name, v, topicconfig.SourceDynamicTopic))
		}
		// A config without a broker synonym (the throttled-replica lists,
		// remote.*) has no broker-level entries, as in Kafka.
		if brokerName, ok := topicconfig.BrokerSynonym(rc.Def.Name); ok {
			if v, ok := b.cfg.TopicDefaults[rc.Def.Name]; ok {
				dc.synonyms = append(dc.synonyms, synonym(brokerName, v, topicconfig.SourceStaticBroker))
			}
			if topicconfig.HasBrokerDefault(brokerName) {
				dc.synonyms = append(dc.synonyms, synonym(brokerName, rc.Def.Default, topicconfig.SourceDefault))
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
	out = append(out, b.describeListenerSSL()...)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil, ""
}

// logDir is the one log directory: the data dir, or "memory" for an
// in-memory broker.
func (b *Broker) logDir() string {
	if b.cfg.DataDir == "" {
		return "memory"
	}
	return b.cfg.DataDir
}

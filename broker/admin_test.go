package broker

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// The raw-request tests of the admin APIs: configs, DeleteRecords,
// DescribeCluster, DescribeTopicPartitions, DescribeLogDirs and the ACLs.

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != errCode(want) {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func describeConfigsReq(version int16, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(version)
	req.Resources = resources
	return req
}

func configResource(typ int8, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceType(typ), name, keys
	return r
}

func findConfig(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range res.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("config %s not described", name)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func TestDescribeConfigsErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 3})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	tests := []struct {
		name string
		typ  int8
		res  string
		want *kerr.Error
	}{
		{"unknown topic", resourceTopic, "nope", kerr.UnknownTopicOrPartition},
		{"invalid topic name", resourceTopic, "a/b", kerr.InvalidTopicException},
		{"another broker", resourceBroker, "4", kerr.InvalidRequest},
		{"broker name not a number", resourceBroker, "x", kerr.InvalidRequest},
		{"broker logger", resourceBrokerLogger, "3", kerr.InvalidRequest},
		{"client metrics", resourceClientMetrics, "m", kerr.InvalidRequest},
		{"group", resourceGroup, "g", kerr.InvalidRequest},
		{"existing topic", resourceTopic, "t", nil},
		{"this broker", resourceBroker, "3", nil},
		{"cluster-wide broker defaults", resourceBroker, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.do(describeConfigsReq(4, configResource(tt.typ, tt.res))).(*kmsg.DescribeConfigsResponse)
			wantCode(t, tt.name, resp.Resources[0].ErrorCode, tt.want)
		})
	}
	t.Run("an unknown resource type fails every resource", func(t *testing.T) {
		resp := c.do(describeConfigsReq(4, configResource(resourceTopic, "t"), configResource(99, "x"))).(*kmsg.DescribeConfigsResponse)
		for _, r := range resp.Resources {
			wantCode(t, r.ResourceName, r.ErrorCode, kerr.InvalidRequest)
		}
	})
}

func TestDescribeConfigsTopicSourcesAndSynonyms(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{TopicDefaults: map[string]string{"retention.ms": "1000"}})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, map[string]string{"segment.bytes": "2097152"})
	for _, v := range []int16{1, 2, 3, 4} {
		req := describeConfigsReq(v, configResource(resourceTopic, "t"))
		req.IncludeSynonyms = true
		res := c.do(req).(*kmsg.DescribeConfigsResponse).Resources[0]
		if len(res.Configs) != len(topicconfig.Defs()) {
			t.Fatalf("v%d: %d configs, want %d", v, len(res.Configs), len(topicconfig.Defs()))
		}
		seg := findConfig(t, res, "segment.bytes")
		if *seg.Value != "2097152" || seg.Source != kmsg.ConfigSource(topicconfig.SourceDynamicTopic) || seg.ReadOnly || seg.IsSensitive {
			t.Fatalf("v%d segment.bytes: %+v", v, seg)
		}
		if got := synonymNames(seg); got != "segment.bytes/1 log.segment.bytes/5" {
			t.Fatalf("v%d segment.bytes synonyms %s", v, got)
		}
		ret := findConfig(t, res, "retention.ms")
		if *ret.Value != "1000" || ret.Source != kmsg.ConfigSource(topicconfig.SourceStaticBroker) {
			t.Fatalf("v%d retention.ms: %+v", v, ret)
		}
		if got := synonymNames(ret); got != "log.retention.ms/4" { // log.retention.ms has no default of its own
			t.Fatalf("v%d retention.ms synonyms %s", v, got)
		}
		if def := findConfig(t, res, "max.message.bytes"); *def.Value != "1048588" || def.Source != kmsg.ConfigSource(topicconfig.SourceDefault) {
			t.Fatalf("v%d max.message.bytes: %+v", v, def)
		}
		wantType := kmsg.ConfigType(0)
		if v >= 3 {
			wantType = kmsg.ConfigType(topicconfig.KindInt)
		}
		if seg.ConfigType != wantType || seg.Documentation != nil {
			t.Fatalf("v%d: type %v documentation %v", v, seg.ConfigType, seg.Documentation)
		}
	}

	req := describeConfigsReq(4, configResource(resourceTopic, "t", "cleanup.policy", "nope"))
	req.IncludeDocumentation = true
	res := c.do(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	if len(res.Configs) != 1 || res.Configs[0].Documentation == nil || *res.Configs[0].Documentation == "" ||
		res.Configs[0].ConfigType != kmsg.ConfigType(topicconfig.KindList) || len(res.Configs[0].ConfigSynonyms) != 0 {
		t.Fatalf("filtered, documented describe: %+v", res.Configs)
	}
}

func synonymNames(c kmsg.DescribeConfigsResponseResourceConfig) string {
	var parts []string
	for _, s := range c.ConfigSynonyms {
		parts = append(parts, s.Name+"/"+string(rune('0'+s.Source)))
	}
	return strings.Join(parts, " ")
}

func TestDescribeConfigsBroker(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 2, NumPartitions: 3})
	c := dialRaw(t, b.Addr())
	res := c.do(describeConfigsReq(4, configResource(resourceBroker, "2"))).(*kmsg.DescribeConfigsResponse).Resources[0]
	want := map[string]string{
		"node.id": "2", "broker.id": "2", "log.dirs": "memory", "num.partitions": "3",
		"default.replication.factor": "1", "auto.create.topics.enable": "true",
		"message.max.bytes": "1048588", "log.segment.bytes": "1073741824",
		"log.retention.hours": "168", "listeners": "PLAINTEXT://" + b.Addr(),
		"socket.request.max.bytes": "104857600", "min.insync.replicas": "1", "compression.type": "producer",
	}
	for name, value := range want {
		got := findConfig(t, res, name)
		if *got.Value != value || !got.ReadOnly {
			t.Errorf("%s = %q read-only %v, want %q read-only", name, *got.Value, got.ReadOnly, value)
		}
	}
	if got := findConfig(t, res, "num.partitions"); got.Source != kmsg.ConfigSource(topicconfig.SourceStaticBroker) {
		t.Errorf("num.partitions source %v, want static broker", got.Source)
	}
	// Unset, a config whose default is null is listed with a null value,
	// as Kafka lists it, even where Gregor derives what is in effect
	// (log.retention.ms from log.retention.hours, advertised.listeners
	// from the listener).
	for _, name := range []string{"broker.rack", "log.retention.ms", "advertised.listeners"} {
		if got := findConfig(t, res, name); got.Value != nil || got.Source != kmsg.ConfigSource(topicconfig.SourceDefault) || !got.ReadOnly {
			t.Errorf("unset %s: %+v", name, got)
		}
	}
}

// TestDescribeConfigsBrokerRack: a broker with broker.rack set lists it,
// read-only, STATIC_BROKER_CONFIG, with itself as the one synonym; the
// name filter finds it.
func TestDescribeConfigsBrokerRack(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 1, BrokerRack: "rack-a"})
	c := dialRaw(t, b.Addr())
	req := describeConfigsReq(4, configResource(resourceBroker, "1", "broker.rack"))
	req.IncludeSynonyms = true
	res := c.do(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	if len(res.Configs) != 1 {
		t.Fatalf("configs %+v", res.Configs)
	}
	got := res.Configs[0]
	if got.Value == nil || *got.Value != "rack-a" || got.Source != kmsg.ConfigSource(topicconfig.SourceStaticBroker) || !got.ReadOnly ||
		got.ConfigType != kmsg.ConfigType(topicconfig.KindString) || synonymNames(got) != "broker.rack/4" {
		t.Fatalf("broker.rack: %+v (synonyms %s)", got, synonymNames(got))
	}
}

func incrementalReq(validateOnly bool, resources ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	req.ValidateOnly = validateOnly
	req.Resources = resources
	return req
}

// incResource builds a resource from "op name=value" strings ("set
// max.message.bytes=100", "delete retention.ms", "set x" for a null value).
func incResource(typ int8, name string, ops ...string) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(typ), name
	for _, o := range ops {
		op, kv, _ := strings.Cut(o, " ")
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op = map[string]kmsg.IncrementalAlterConfigOp{"set": 0, "delete": 1, "append": 2, "subtract": 3, "bogus": 9}[op]
		var value string
		var hasValue bool
		c.Name, value, hasValue = strings.Cut(kv, "=")
		if hasValue {
			c.Value = &value
		}
		r.Configs = append(r.Configs, c)
	}
	return r
}

func describeTopicConfig(t *testing.T, c *rawConn, topic, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	res := c.do(describeConfigsReq(4, configResource(resourceTopic, topic, name))).(*kmsg.DescribeConfigsResponse).Resources[0]
	wantCode(t, "describe", res.ErrorCode, nil)
	cfg := findConfig(t, res, name)
	return *cfg.Value, cfg.Source
}

func TestIncrementalAlterConfigsErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 1})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	tests := []struct {
		name    string
		res     kmsg.IncrementalAlterConfigsRequestResource
		want    *kerr.Error
		message string
	}{
		{"unknown topic", incResource(resourceTopic, "nope", "set retention.ms=1"), kerr.UnknownTopicOrPartition, ""},
		{"default topic resource", incResource(resourceTopic, "", "set retention.ms=1"), kerr.InvalidRequest, "Default topic resources are not allowed."},
		{"invalid topic name", incResource(resourceTopic, "a b", "set retention.ms=1"), kerr.InvalidTopicException, ""},
		{"unknown config", incResource(resourceTopic, "t", "set nope=1"), kerr.InvalidConfig, "Unknown topic config name: nope"},
		{"bad value", incResource(resourceTopic, "t", "set retention.ms=soon"), kerr.InvalidConfig, ""},
		{"below the minimum", incResource(resourceTopic, "t", "set segment.bytes=10"), kerr.InvalidConfig, ""},
		{"append to a non-list", incResource(resourceTopic, "t", "append max.message.bytes=1"), kerr.InvalidConfig, "Can't APPEND to key max.message.bytes because its type is not LIST."},
		{"subtract from a non-list", incResource(resourceTopic, "t", "subtract retention.ms=1"), kerr.InvalidConfig, "Can't SUBTRACT to key retention.ms because its type is not LIST."},
		{"null value", incResource(resourceTopic, "t", "set retention.ms"), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"duplicate key", incResource(resourceTopic, "t", "set retention.ms=1", "delete retention.ms"), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"unknown operation", incResource(resourceTopic, "t", "bogus retention.ms=1"), kerr.InvalidRequest, "Unknown operations type 9"},
		{"read-only broker config", incResource(resourceBroker, "1", "set num.partitions=4"), kerr.InvalidRequest, "Cannot update these configs dynamically: Set(num.partitions)"},
		{"cluster-wide broker config", incResource(resourceBroker, "", "set log.retention.ms=4"), kerr.InvalidRequest, ""},
		{"unknown broker config", incResource(resourceBroker, "1", "set no.such.thing=4"), kerr.InvalidConfig, "Unknown config name: no.such.thing"},
		{"another broker", incResource(resourceBroker, "2", "set num.partitions=4"), kerr.InvalidRequest, "Unexpected broker id, expected 1, but received 2"},
		{"broker name not a number", incResource(resourceBroker, "b", "set num.partitions=4"), kerr.InvalidRequest, ""},
		{"group", incResource(resourceGroup, "g", "set consumer.session.timeout.ms=45000"), kerr.InvalidRequest, ""},
		{"broker logger", incResource(resourceBrokerLogger, "1", "set root=DEBUG"), kerr.InvalidRequest, ""},
		{"unknown resource type", incResource(77, "x", "set a=b"), kerr.InvalidRequest, "Unknown resource type 77"},
		{"nothing to change on a broker", incResource(resourceBroker, "1"), nil, ""},
		// kafka-reassign-partitions.sh --verify and --cancel delete the
		// replication throttles on every broker; none is ever set.
		{"delete the replication throttles", incResource(resourceBroker, "1", "delete leader.replication.throttled.rate",
			"delete follower.replication.throttled.rate", "delete replica.alter.log.dirs.io.max.bytes.per.second"), nil, ""},
		{"a throttle rate that is not a number", incResource(resourceBroker, "1", "set leader.replication.throttled.rate=fast"), kerr.InvalidRequest,
			"Invalid value fast for configuration leader.replication.throttled.rate: Not a number of type LONG"},
		{"a negative throttle rate", incResource(resourceBroker, "", "set follower.replication.throttled.rate=-1"), kerr.InvalidRequest,
			"Invalid value -1 for configuration follower.replication.throttled.rate: Value must be at least 0"},
		{"append to a throttle rate", incResource(resourceBroker, "1", "append leader.replication.throttled.rate=1"), kerr.UnknownServerError, ""},
		{"the log-dir throttle, with one log dir", incResource(resourceBroker, "1", "set replica.alter.log.dirs.io.max.bytes.per.second=1000"), kerr.InvalidConfig, ""},
		{"a throttle set with a read-only config", incResource(resourceBroker, "1", "set leader.replication.throttled.rate=1000", "set num.partitions=4"),
			kerr.InvalidRequest, "Cannot update these configs dynamically: Set(num.partitions)"},
		{"a throttle deleted with a read-only config", incResource(resourceBroker, "1", "delete leader.replication.throttled.rate", "set num.partitions=4"),
			kerr.InvalidRequest, "Cannot update these configs dynamically: Set(num.partitions)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.do(incrementalReq(false, tt.res)).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
			wantCode(t, tt.name, got.ErrorCode, tt.want)
			if tt.message != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tt.message) {
				t.Fatalf("message %q, want %q", deref(got.ErrorMessage), tt.message)
			}
		})
	}
	t.Run("a resource named twice fails both", func(t *testing.T) {
		resp := c.do(incrementalReq(false, incResource(resourceTopic, "t", "set retention.ms=5"), incResource(resourceTopic, "t", "set retention.ms=6"))).(*kmsg.IncrementalAlterConfigsResponse)
		for _, r := range resp.Resources {
			wantCode(t, "duplicate", r.ErrorCode, kerr.InvalidRequest)
		}
	})
	if v, source := describeTopicConfig(t, c, "t", "retention.ms"); v != "604800000" || source != kmsg.ConfigSource(topicconfig.SourceDefault) {
		t.Fatalf("a failed alteration changed retention.ms to %s (source %v)", v, source)
	}
	if got := b.replQuotas.Leader.Bound(); got != math.MaxInt64 {
		t.Fatalf("a failed alteration set the leader throttle to %d", got)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestIncrementalAlterConfigsNothingHalfApplied(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	got := c.do(incrementalReq(false, incResource(resourceTopic, "t", "set retention.ms=5", "set max.message.bytes=-3"))).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, "alter", got.ErrorCode, kerr.InvalidConfig)
	if v, _ := describeTopicConfig(t, c, "t", "retention.ms"); v != "604800000" {
		t.Fatalf("retention.ms is %s after a failed alteration", v)
	}
}

func TestIncrementalAlterConfigsOperations(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	steps := []struct {
		op, config, want string
		source           int8
		validateOnly     bool
	}{
		{"set retention.ms=1000", "retention.ms", "1000", topicconfig.SourceDynamicTopic, false},
		{"set retention.ms=2000", "retention.ms", "1000", topicconfig.SourceDynamicTopic, true},
		{"delete retention.ms", "retention.ms", "604800000", topicconfig.SourceDefault, false},
		{"delete retention.ms", "retention.ms", "604800000", topicconfig.SourceDefault, false}, // deleting an unset config is fine
		{"append cleanup.policy=compact", "cleanup.policy", "delete,compact", topicconfig.SourceDynamicTopic, false},
		{"append cleanup.policy=compact", "cleanup.policy", "delete,compact", topicconfig.SourceDynamicTopic, false},
		{"subtract cleanup.policy=delete", "cleanup.policy", "compact", topicconfig.SourceDynamicTopic, false},
		{"append leader.replication.throttled.replicas=0:1", "leader.replication.throttled.replicas", "0:1", topicconfig.SourceDynamicTopic, false},
	}
	for _, s := range steps {
		got := c.do(incrementalReq(s.validateOnly, incResource(resourceTopic, "t", s.op))).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		wantCode(t, s.op, got.ErrorCode, nil)
		if v, source := describeTopicConfig(t, c, "t", s.config); v != s.want || source != kmsg.ConfigSource(s.source) {
			t.Fatalf("after %q (validate only %v): %s = %q source %v, want %q source %d", s.op, s.validateOnly, s.config, v, source, s.want, s.source)
		}
	}
}

func TestAlterConfigsTakeEffectOnTheNextProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	now := time.Now().UnixMilli()
	big := func() []byte { return makeBatch(t, batch.None, 20, now) }
	wantCode(t, "before", produceRaw(c, 9, 1, "t", 0, big()).ErrorCode, nil)
	got := c.do(incrementalReq(false, incResource(resourceTopic, "t", "set max.message.bytes=200"))).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, "alter", got.ErrorCode, nil)
	wantCode(t, "after", produceRaw(c, 9, 1, "t", 0, big()).ErrorCode, kerr.MessageTooLarge)
}

func legacyAlterReq(validateOnly bool, typ int8, name string, configs map[string]*string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(2)
	req.ValidateOnly = validateOnly
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(typ), name
	for k, v := range configs {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, v
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return req
}

func TestAlterConfigsReplacesTheWholeSet(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 0})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, map[string]string{"retention.ms": "1000"})
	tests := []struct {
		name         string
		typ          int8
		res          string
		configs      map[string]*string
		validateOnly bool
		want         *kerr.Error
	}{
		{"unknown topic", resourceTopic, "nope", map[string]*string{"retention.ms": kmsg.StringPtr("1")}, false, kerr.UnknownTopicOrPartition},
		{"unknown config", resourceTopic, "t", map[string]*string{"nope": kmsg.StringPtr("1")}, false, kerr.InvalidConfig},
		{"null value", resourceTopic, "t", map[string]*string{"retention.ms": nil}, false, kerr.InvalidRequest},
		{"broker config", resourceBroker, "0", map[string]*string{"num.partitions": kmsg.StringPtr("2")}, false, kerr.InvalidRequest},
		{"broker logger is not served by the legacy API", resourceBrokerLogger, "0", map[string]*string{"root": kmsg.StringPtr("INFO")}, false, kerr.InvalidRequest},
		{"validate only", resourceTopic, "t", map[string]*string{"max.message.bytes": kmsg.StringPtr("5000")}, true, nil},
		{"replace", resourceTopic, "t", map[string]*string{"max.message.bytes": kmsg.StringPtr("5000")}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.do(legacyAlterReq(tt.validateOnly, tt.typ, tt.res, tt.configs)).(*kmsg.AlterConfigsResponse).Resources[0]
			wantCode(t, tt.name, got.ErrorCode, tt.want)
		})
	}
	if v, source := describeTopicConfig(t, c, "t", "retention.ms"); v != "604800000" || source != kmsg.ConfigSource(topicconfig.SourceDefault) {
		t.Fatalf("retention.ms %s source %v: not reset by the replacing AlterConfigs", v, source)
	}
	if v, _ := describeTopicConfig(t, c, "t", "max.message.bytes"); v != "5000" {
		t.Fatalf("max.message.bytes %s, want 5000", v)
	}
}

func deleteRecordsReq(version int16, topic string, partition int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	createTopic(t, c, "compacted", 1, map[string]string{"cleanup.policy": "compact"})
	createTopic(t, c, "__consumer_offsets", 1, nil)
	now := time.Now().UnixMilli()
	for i := 0; i < 3; i++ { // offsets 0-8
		wantCode(t, "produce", produceRaw(c, 9, 1, "t", 0, makeBatch(t, batch.None, 3, now)).ErrorCode, nil)
	}
	tests := []struct {
		name      string
		version   int16
		topic     string
		partition int32
		offset    int64
		want      *kerr.Error
		low       int64
	}{
		{"unknown topic", 2, "nope", 0, 1, kerr.UnknownTopicOrPartition, -1},
		{"unknown partition", 2, "t", 4, 1, kerr.UnknownTopicOrPartition, -1},
		{"internal topic", 2, "__consumer_offsets", 0, 0, kerr.InvalidTopicException, -1},
		{"compact only", 2, "compacted", 0, 0, kerr.PolicyViolation, -1},
		{"past the high watermark", 2, "t", 0, 10, kerr.OffsetOutOfRange, -1},
		{"negative", 1, "t", 0, -2, kerr.OffsetOutOfRange, -1},
		{"mid batch", 0, "t", 0, 4, nil, 4},
		{"below the start is a no-op", 1, "t", 0, 2, nil, 4},
		{"the high watermark", 2, "t", 0, -1, nil, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.do(deleteRecordsReq(tt.version, tt.topic, tt.partition, tt.offset)).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			wantCode(t, tt.name, got.ErrorCode, tt.want)
			if got.LowWatermark != tt.low {
				t.Fatalf("low watermark %d, want %d", got.LowWatermark, tt.low)
			}
		})
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = earliestTimestamp, -1
	rt.Partitions = append(rt.Partitions, rp)
	lo.Topics = append(lo.Topics, rt)
	if got := c.do(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.Offset != 9 {
		t.Fatalf("earliest offset %d after deleting to 9", got.Offset)
	}
	fetched := c.do(fetchRequest(12, "t", 0, 0, 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	wantCode(t, "fetch below the start", fetched.ErrorCode, kerr.OffsetOutOfRange)
	fetched = c.do(fetchRequest(12, "t", 9, 0, 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fetched.ErrorCode != 0 || fetched.LogStartOffset != 9 {
		t.Fatalf("fetch at the start: %v, log start offset %d", kerr.ErrorForCode(fetched.ErrorCode), fetched.LogStartOffset)
	}
}

func TestDescribeCluster(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 5})
	c := dialRaw(t, b.Addr())
	tests := []struct {
		name     string
		version  int16
		endpoint int8
		authOps  bool
		want     *kerr.Error
	}{
		{"v0", 0, 0, false, nil},
		{"v1 brokers", 1, 1, true, nil},
		{"v2 brokers", 2, 1, false, nil},
		{"controllers", 1, 2, false, kerr.MismatchedEndpointType},
		{"unknown endpoint type", 2, 9, false, kerr.UnsupportedEndpointType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.SetVersion(tt.version)
			req.EndpointType = tt.endpoint
			req.IncludeClusterAuthorizedOperations = tt.authOps
			resp := c.do(req).(*kmsg.DescribeClusterResponse)
			wantCode(t, tt.name, resp.ErrorCode, tt.want)
			if tt.want != nil {
				if resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
					t.Fatalf("error response %+v", resp)
				}
				return
			}
			if resp.ClusterID != b.ClusterID() || resp.ControllerID != 5 || len(resp.Brokers) != 1 ||
				resp.Brokers[0].NodeID != 5 || "127.0.0.1:"+itoa(resp.Brokers[0].Port) != b.Addr() {
				t.Fatalf("response %+v", resp)
			}
			wantOps := int32(-2147483648)
			if tt.authOps {
				wantOps = allClusterOperations
			}
			if resp.ClusterAuthorizedOperations != wantOps {
				t.Fatalf("authorized operations %d, want %d", resp.ClusterAuthorizedOperations, wantOps)
			}
		})
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func describeTopicPartitionsReq(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	req.Cursor = cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// summarize renders a DescribeTopicPartitions answer as "a:0,1,2 b:0 >b/1".
func summarize(resp *kmsg.DescribeTopicPartitionsResponse) string {
	var parts []string
	for _, t := range resp.Topics {
		s := *t.Topic + ":"
		if t.ErrorCode != 0 {
			s += kerr.ErrorForCode(t.ErrorCode).(*kerr.Error).Message
		}
		var ps []string
		for _, p := range t.Partitions {
			ps = append(ps, itoa(p.Partition))
		}
		parts = append(parts, s+strings.Join(ps, ","))
	}
	if resp.NextCursor != nil {
		parts = append(parts, ">"+resp.NextCursor.Topic+"/"+itoa(resp.NextCursor.Partition))
	}
	return strings.Join(parts, " ")
}

func TestDescribeTopicPartitionsPaginates(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "a", 3, nil)
	createTopic(t, c, "b", 2, nil)
	createTopic(t, c, "c", 1, nil)
	cursor := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	tests := []struct {
		name string
		req  *kmsg.DescribeTopicPartitionsRequest
		want string
	}{
		{"every topic", describeTopicPartitionsReq(2000, nil), "a:0,1,2 b:0,1 c:0"},
		{"limit inside a topic", describeTopicPartitionsReq(4, nil), "a:0,1,2 b:0 >b/1"},
		{"from the cursor", describeTopicPartitionsReq(4, cursor("b", 1)), "b:1 c:0"},
		{"limit at a topic boundary", describeTopicPartitionsReq(3, nil), "a:0,1,2 >b/0"},
		{"a limit below 1 is 1", describeTopicPartitionsReq(0, nil), "a:0 >a/1"},
		{"named topics in name order", describeTopicPartitionsReq(10, nil, "c", "a", "c"), "a:0,1,2 c:0"},
		{"unknown topic", describeTopicPartitionsReq(10, nil, "nope", "b"), "b:0,1 nope:" + kerr.UnknownTopicOrPartition.Message},
		{"invalid topic", describeTopicPartitionsReq(10, nil, "a b"), "a b:" + kerr.InvalidTopicException.Message},
		{"cursor topic not requested", describeTopicPartitionsReq(10, cursor("b", 0), "a", "c"), "a:" + kerr.InvalidRequest.Message + " c:" + kerr.InvalidRequest.Message},
		{"negative cursor partition", describeTopicPartitionsReq(10, cursor("a", -1), "a"), "a:" + kerr.InvalidRequest.Message},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.do(tt.req).(*kmsg.DescribeTopicPartitionsResponse)
			if got := summarize(resp); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	resp := c.do(describeTopicPartitionsReq(1, nil, "a")).(*kmsg.DescribeTopicPartitionsResponse)
	p := resp.Topics[0].Partitions[0]
	if resp.Topics[0].TopicID == ([16]byte{}) || resp.Topics[0].AuthorizedOperations != allTopicOperations ||
		p.LeaderID != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
		t.Fatalf("topic %+v", resp.Topics[0])
	}
}

func describeLogDirsReq(version int16, topics map[string][]int32) *kmsg.DescribeLogDirsRequest {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(version)
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	}
	for name, parts := range topics {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = name, parts
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	for _, dataDir := range []string{"", t.TempDir()} {
		b := startBroker(t, Config{DataDir: dataDir})
		c := dialRaw(t, b.Addr())
		createTopic(t, c, "t", 2, nil)
		createTopic(t, c, "u", 1, nil)
		one := makeBatch(t, batch.None, 3, time.Now().UnixMilli())
		wantCode(t, "produce", produceRaw(c, 9, 1, "t", 1, one).ErrorCode, nil)
		wantDir := dataDir
		if dataDir == "" {
			wantDir = "memory"
		}
		for _, v := range []int16{1, 2, 3, 4} {
			dir := c.do(describeLogDirsReq(v, nil)).(*kmsg.DescribeLogDirsResponse).Dirs[0]
			if dir.Dir != wantDir || dir.ErrorCode != 0 || len(dir.Topics) != 2 || len(dir.Topics[0].Partitions) != 2 {
				t.Fatalf("v%d: %+v", v, dir)
			}
			if size := dir.Topics[0].Partitions[1].Size; size != int64(len(one)) {
				t.Fatalf("v%d: t-1 size %d, want %d", v, size, len(one))
			}
			switch {
			case v < 4:
			case dataDir == "" && (dir.TotalBytes != -1 || dir.UsableBytes != -1):
				t.Fatalf("in memory: total %d usable %d, want -1", dir.TotalBytes, dir.UsableBytes)
			case dataDir != "" && (dir.TotalBytes <= 0 || dir.UsableBytes <= 0 || dir.UsableBytes > dir.TotalBytes):
				t.Fatalf("on disk: total %d usable %d", dir.TotalBytes, dir.UsableBytes)
			}
		}
		dir := c.do(describeLogDirsReq(4, map[string][]int32{"t": {1, 9}, "nope": {0}, "u": {}})).(*kmsg.DescribeLogDirsResponse).Dirs[0]
		if len(dir.Topics) != 1 || dir.Topics[0].Topic != "t" || len(dir.Topics[0].Partitions) != 1 || dir.Topics[0].Partitions[0].Partition != 1 {
			t.Fatalf("filtered: %+v", dir.Topics)
		}
	}
}

func TestACLAPIsAnswerSecurityDisabled(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	for v := int16(1); v <= 3; v++ {
		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.SetVersion(v)
		describe.ResourceType, describe.ResourcePatternType, describe.Operation, describe.PermissionType = 1, 1, 1, 1
		dr := c.do(describe).(*kmsg.DescribeACLsResponse)
		wantCode(t, "describe", dr.ErrorCode, kerr.SecurityDisabled)
		if deref(dr.ErrorMessage) != "No Authorizer is configured on the broker" {
			t.Fatalf("describe message %q", deref(dr.ErrorMessage))
		}

		create := kmsg.NewPtrCreateACLsRequest()
		create.SetVersion(v)
		for i := 0; i < 2; i++ {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = 2, "t", 3
			cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:a", "*", 3, 3
			create.Creations = append(create.Creations, cr)
		}
		crs := c.do(create).(*kmsg.CreateACLsResponse)
		if len(crs.Results) != 2 {
			t.Fatalf("create: %d results for 2 creations", len(crs.Results))
		}
		for _, r := range crs.Results {
			wantCode(t, "create", r.ErrorCode, kerr.SecurityDisabled)
			if deref(r.ErrorMessage) != noAuthorizer {
				t.Fatalf("create message %q", deref(r.ErrorMessage))
			}
		}

		del := kmsg.NewPtrDeleteACLsRequest()
		del.SetVersion(v)
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
		del.Filters = append(del.Filters, f)
		drs := c.do(del).(*kmsg.DeleteACLsResponse)
		if len(drs.Results) != 1 {
			t.Fatalf("delete: %d results for 1 filter", len(drs.Results))
		}
		wantCode(t, "delete", drs.Results[0].ErrorCode, kerr.SecurityDisabled)
	}
}

// Kafka 4.2.2 reports a DEFAULT_CONFIG synonym for a topic config only when
// its broker synonym has a default of its own: none for retention.ms
// (log.retention.ms is null; the default comes from log.retention.hours),
// one for segment.bytes (observed on the reference broker).
func TestDescribeConfigsDefaultSynonymsAreKafkas(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "syn", 1, map[string]string{"flush.ms": "1000"})
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = 2, "syn"
	req.Resources = append(req.Resources, r)
	got := map[string][]string{}
	for _, cfg := range c.do(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		for _, s := range cfg.ConfigSynonyms {
			got[cfg.Name] = append(got[cfg.Name], fmt.Sprintf("%d:%s=%s", s.Source, s.Name, *s.Value))
		}
	}
	want := map[string][]string{
		"retention.ms":  nil,
		"segment.ms":    nil,
		"flush.ms":      {"1:flush.ms=1000"},
		"segment.bytes": {"5:log.segment.bytes=1073741824"},
	}
	for name, w := range want {
		if fmt.Sprint(got[name]) != fmt.Sprint(w) {
			t.Errorf("%s synonyms %v, Kafka reports %v", name, got[name], w)
		}
	}
}

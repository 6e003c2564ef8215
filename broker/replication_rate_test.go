package broker

import (
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
)

func TestParseThrottleRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  int64
		err   string
	}{
		{"0", 0, ""},
		{"100000", 100000, ""},
		{" 42 ", 42, ""},
		{"+7", 7, ""},
		{"9223372036854775807", math.MaxInt64, ""},
		{"-1", 0, "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
		{"1.5", 0, "Invalid value 1.5 for configuration leader.replication.throttled.rate: Not a number of type LONG"},
		{"9223372036854775808", 0, "Invalid value 9223372036854775808 for configuration leader.replication.throttled.rate: Not a number of type LONG"},
		{"", 0, "Invalid value  for configuration leader.replication.throttled.rate: Not a number of type LONG"},
	}
	for _, tt := range tests {
		got, err := parseThrottleRate(leaderThrottledRate, tt.value)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %d, %v; want %d", tt.value, got, err, tt.want)
		}
	}
}

// TestThrottleRatesAreDynamicBrokerConfigs sets, describes, persists and
// deletes the rates on a single node, per broker and as cluster defaults.
func TestThrottleRatesAreDynamicBrokerConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBroker(t, Config{NodeID: 1, DataDir: dir})
	c := dialRaw(t, b.Addr())
	alter := func(validateOnly bool, res kmsg.IncrementalAlterConfigsRequestResource) {
		t.Helper()
		got := c.do(incrementalReq(validateOnly, res)).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		wantCode(t, "alter", got.ErrorCode, nil)
	}
	alter(true, incResource(resourceBroker, "1", "set leader.replication.throttled.rate=100"))
	if got := b.replQuotas.Leader.Bound(); got != math.MaxInt64 {
		t.Fatalf("validate-only set the leader bound to %d", got)
	}
	alter(false, incResource(resourceBroker, "1", "set leader.replication.throttled.rate=100000"))
	alter(false, incResource(resourceBroker, "", "set follower.replication.throttled.rate=2000", "set leader.replication.throttled.rate=5"))
	if l, f := b.replQuotas.Leader.Bound(), b.replQuotas.Follower.Bound(); l != 100000 || f != 2000 {
		t.Fatalf("bounds leader %d follower %d, want 100000 (the node's) and 2000 (the default)", l, f)
	}
	describe := func(c *rawConn, name string) kmsg.DescribeConfigsResponseResource {
		t.Helper()
		req := describeConfigsReq(4, configResource(resourceBroker, name))
		req.IncludeSynonyms = true
		res := c.do(req).(*kmsg.DescribeConfigsResponse).Resources[0]
		wantCode(t, "describe", res.ErrorCode, nil)
		return res
	}
	check := func(c *rawConn) {
		t.Helper()
		res := describe(c, "1")
		l := findConfig(t, res, leaderThrottledRate)
		if *l.Value != "100000" || l.Source != kmsg.ConfigSource(sourceDynamicBroker) || !l.ReadOnly || l.ConfigType != kmsg.ConfigType(topicconfig.KindLong) ||
			synonymNames(l) != "leader.replication.throttled.rate/2 leader.replication.throttled.rate/3" {
			t.Fatalf("leader rate described as %s source %v read-only %v type %v synonyms %s", *l.Value, l.Source, l.ReadOnly, l.ConfigType, synonymNames(l))
		}
		f := findConfig(t, res, followerThrottledRate)
		if *f.Value != "2000" || f.Source != kmsg.ConfigSource(sourceDynamicDefaultBroker) {
			t.Fatalf("follower rate described as %s source %v", *f.Value, f.Source)
		}
		def := describe(c, "")
		if len(def.Configs) != 2 {
			t.Fatalf("the cluster default lists %d configs, want the 2 rates", len(def.Configs))
		}
		if l := findConfig(t, def, leaderThrottledRate); *l.Value != "5" || l.Source != kmsg.ConfigSource(sourceDynamicDefaultBroker) || len(l.ConfigSynonyms) != 1 {
			t.Fatalf("the default leader rate described as %s source %v synonyms %d", *l.Value, l.Source, len(l.ConfigSynonyms))
		}
	}
	check(c)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, Config{NodeID: 1, DataDir: dir})
	if l, f := b.replQuotas.Leader.Bound(), b.replQuotas.Follower.Bound(); l != 100000 || f != 2000 {
		t.Fatalf("after a restart: bounds leader %d follower %d, want 100000 and 2000", l, f)
	}
	c = dialRaw(t, b.Addr())
	check(c)
	// What kafka-reassign-partitions.sh --verify sends to every broker.
	alter(false, incResource(resourceBroker, "1", "delete leader.replication.throttled.rate", "delete follower.replication.throttled.rate",
		"delete replica.alter.log.dirs.io.max.bytes.per.second"))
	if l, f := b.replQuotas.Leader.Bound(), b.replQuotas.Follower.Bound(); l != 5 || f != 2000 {
		t.Fatalf("with the node's rates deleted: bounds %d and %d, want the defaults 5 and 2000", l, f)
	}
	// Legacy AlterConfigs replaces the resource's whole set.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = leaderThrottledRate, kmsg.StringPtr("700")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	wantCode(t, "legacy alter", c.do(legacy).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, nil)
	if l, f := b.replQuotas.Leader.Bound(), b.replQuotas.Follower.Bound(); l != 700 || f != math.MaxInt64 {
		t.Fatalf("after a legacy alteration: bounds %d and %d, want 700 and unbounded", l, f)
	}
	res := describe(c, "1")
	for _, cfg := range res.Configs {
		if cfg.Name == followerThrottledRate {
			t.Fatal("a deleted rate is still described")
		}
	}
}

// TestThrottledReplicaListsAreValidated checks the topic lists through
// IncrementalAlterConfigs, and that a valid one is put in force.
func TestThrottledReplicaListsAreValidated(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NodeID: 1})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 2, nil)
	got := c.do(incrementalReq(false, incResource(resourceTopic, "t", "set follower.replication.throttled.replicas=0:1,oops"))).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, "a malformed list", got.ErrorCode, kerr.InvalidConfig)
	if got.ErrorMessage == nil || !strings.HasPrefix(*got.ErrorMessage, "Invalid value [0:1, oops] for configuration follower.replication.throttled.replicas: ") {
		t.Fatalf("message %q", deref(got.ErrorMessage))
	}
	got = c.do(incrementalReq(false, incResource(resourceTopic, "t", "set leader.replication.throttled.replicas=1:1,0:2"))).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, "a valid list", got.ErrorCode, nil)
	b.mu.RLock()
	eff := b.catalog.byName["t"].effective.Load()
	b.mu.RUnlock()
	if !eff.leaderThrottled.Has(1, 1) || eff.leaderThrottled.Has(0, 1) || eff.followerThrottled != nil {
		t.Fatalf("lists in force: leader %+v follower %+v", eff.leaderThrottled, eff.followerThrottled)
	}
}

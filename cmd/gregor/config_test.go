package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/urfave/cli/v2"

	"github.com/gregor-broker/gregor/broker"
)

func TestParsePropertiesFollowsJavaRules(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
	}{
		{"equals", "a=1\nb = 2\n", map[string]string{"a": "1", "b": "2"}},
		{"colon", "a:1\nb : 2", map[string]string{"a": "1", "b": "2"}},
		{"whitespace separator", "a 1\n\tb\t\t2", map[string]string{"a": "1", "b": "2"}},
		{"comments and blank lines", "# c\n! c\n\n   \n  # indented\na=1", map[string]string{"a": "1"}},
		{"leading whitespace", "   a=1", map[string]string{"a": "1"}},
		{"value keeps trailing space and later separators", "a=b=c: d  ", map[string]string{"a": "b=c: d  "}},
		{"empty value", "a=\nb", map[string]string{"a": "", "b": ""}},
		{"continuation", "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}},
		{"continuation over three lines", "a=1\\\n 2\\\n 3\nb=4", map[string]string{"a": "123", "b": "4"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"continuation at end of file", "a=1\\", map[string]string{"a": "1"}},
		{"escapes", `a=\t\n\\\=\:\u00e9\x`, map[string]string{"a": "\t\n\\=:éx"}},
		{"escaped separators in key", `a\=b\:c\ d=1`, map[string]string{"a=b:c d": "1"}},
		{"later line wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"CRLF line ends", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props, err := parseProperties(strings.NewReader(tc.in), "f")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range props {
				got[p.key] = p.value
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParsePropertiesNamesTheLineOfABadEscape(t *testing.T) {
	for _, in := range []string{"a=1\nb=\\u12", "a=1\nb=\\uzzzz"} {
		_, err := parseProperties(strings.NewReader(in), "server.properties")
		if err == nil || !strings.Contains(err.Error(), "server.properties:2") {
			t.Fatalf("%q: error %v, want one naming server.properties:2", in, err)
		}
	}
}

func TestEnvPropertiesMapsAsTheKafkaImage(t *testing.T) {
	got := map[string]string{}
	for _, p := range envProperties([]string{
		"KAFKA_LOG_DIRS=/var/lib/kafka",
		"KAFKA_NUM_PARTITIONS=3",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=A:PLAINTEXT",
		"KAFKA_SOME__UNDER___DASH=x",
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_OPTS=-Dx",
		"KAFKA_JVM_PERFORMANCE_OPTS=-server",
		"KAFKA_LOG4J_OPTS=-Dlog4j",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://h:9092=odd",
		"KAFKA_=empty",
		"HOME=/root",
		"NOT_KAFKA_X=1",
	}) {
		got[p.key] = p.value
	}
	want := map[string]string{
		"log.dirs":                       "/var/lib/kafka",
		"num.partitions":                 "3",
		"listener.security.protocol.map": "A:PLAINTEXT",
		"some_under-dash":                "x",
		"advertised.listeners":           "PLAINTEXT://h:9092=odd",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestOverrideWithoutEqualsIsRefused(t *testing.T) {
	for _, arg := range []string{"num.partitions", "=3", ""} {
		if _, err := overrideProperties([]string{arg}); err == nil || !strings.Contains(err.Error(), "key=value") {
			t.Fatalf("--override %q: error %v", arg, err)
		}
	}
	props, err := overrideProperties([]string{"a=b=c", "e="})
	if err != nil || props[0].value != "b=c" || props[1].value != "" {
		t.Fatalf("got %v, %v", props, err)
	}
}

func props(kv ...string) map[string]setting {
	m := map[string]setting{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = setting{value: kv[i+1], origin: "test"}
	}
	return m
}

func TestApplyPropertiesSetsTheBrokerConfig(t *testing.T) {
	var cfg broker.Config
	err := applyProperties(&cfg, props(
		"process.roles", "broker,controller",
		"listeners", "CONTROLLER://:9093, PLAINTEXT://0.0.0.0:19092",
		"controller.listener.names", "CONTROLLER",
		"advertised.listeners", "PLAINTEXT://kafka.example:9092,CONTROLLER://kafka.example:9093",
		"log.dirs", " /data ",
		"node.id", "7",
		"broker.id", "7",
		"num.partitions", "3",
		"default.replication.factor", "1",
		"auto.create.topics.enable", "FALSE",
		"socket.request.max.bytes", "1048576",
		"offsets.topic.num.partitions", "5",
		"group.initial.rebalance.delay.ms", "0",
		"group.min.session.timeout.ms", "100",
		"group.max.session.timeout.ms", "60000",
		"group.max.size", "10",
		"offsets.retention.minutes", "60",
		"group.consumer.session.timeout.ms", "30000",
		"group.consumer.heartbeat.interval.ms", "2000",
		"group.consumer.max.size", "20",
		"group.consumer.assignors", "range, org.apache.kafka.coordinator.group.assignor.UniformAssignor",
		"group.consumer.assignment.interval.ms", "0",
		"group.consumer.assignor.offload.enable", "false",
		"log.segment.bytes", "2097152",
		"message.max.bytes", "100000",
		"log.message.timestamp.type", "LogAppendTime",
		"min.insync.replicas", "1",
		"log.cleanup.policy", "compact",
		"log.retention.hours", "1",
		"log.roll.hours", "2",
		"log.retention.check.interval.ms", "1000",
		"log.cleaner.enable", "false",
		"log.cleaner.threads", "2",
		"log.cleaner.backoff.ms", "500",
		"log.cleaner.dedupe.buffer.size", "1048576",
		"log.segment.delete.delay.ms", "0",
		"quota.window.num", "5",
		"quota.window.size.seconds", "2",
		"broker.rack", "eu-west-1a",
		"replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector",
	), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	no, zero := false, int64(0)
	want := broker.Config{
		Listen: "0.0.0.0:19092", Advertise: "kafka.example:9092", DataDir: "/data", NodeID: 7,
		ListenerName: "PLAINTEXT", SecurityProtocol: "PLAINTEXT",
		NumPartitions: 3, DefaultReplicationFactor: 1, AutoCreateTopics: &no, MaxFrameBytes: 1048576,
		OffsetsTopicPartitions: 5, GroupInitialRebalanceDelayMs: &zero,
		GroupMinSessionTimeoutMs: 100, GroupMaxSessionTimeoutMs: 60000, GroupMaxSize: 10,
		OffsetsRetentionMinutes:       60,
		GroupConsumerSessionTimeoutMs: 30000, GroupConsumerHeartbeatIntervalMs: 2000, GroupConsumerMaxSize: 20,
		GroupConsumerAssignors:            []string{"range", "uniform"},
		GroupConsumerAssignmentIntervalMs: &zero, GroupConsumerAssignorOffloadEnable: &no,
		LogRetentionCheckIntervalMs: 1000, LogCleanerEnable: &no, LogCleanerThreads: 2, LogCleanerBackoffMs: 500,
		QuotaWindowNum: 5, QuotaWindowSizeSeconds: 2,
		LogCleanerDedupeBufferSize: 1048576,
		BrokerRack:                 "eu-west-1a", ReplicaSelectorClass: broker.RackAwareReplicaSelector,
		TopicDefaults: map[string]string{
			"file.delete.delay.ms": "0",
			"segment.bytes":        "2097152", "max.message.bytes": "100000",
			"message.timestamp.type": "LogAppendTime", "min.insync.replicas": "1",
			"cleanup.policy": "compact", "retention.ms": "3600000", "segment.ms": "7200000",
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestApplyPropertiesDerivesMillisecondsAsKafka(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want map[string]string
	}{
		{[]string{"log.retention.hours", "168"}, map[string]string{"retention.ms": "604800000"}},
		{[]string{"log.retention.hours", "1", "log.retention.minutes", "2"}, map[string]string{"retention.ms": "120000"}},
		{[]string{"log.retention.minutes", "2", "log.retention.ms", "5"}, map[string]string{"retention.ms": "5"}},
		{[]string{"log.retention.hours", "-1"}, map[string]string{"retention.ms": "-1"}},
		{[]string{"log.roll.hours", "1", "log.roll.jitter.hours", "1"}, map[string]string{"segment.ms": "3600000", "segment.jitter.ms": "3600000"}},
		{[]string{"log.roll.hours", "1", "log.roll.ms", "9"}, map[string]string{"segment.ms": "9"}},
		{[]string{"log.flush.interval.messages", "1"}, map[string]string{"flush.messages": "1"}},
		{[]string{"log.flush.scheduler.interval.ms", "500"}, map[string]string{"flush.ms": "500"}},
		{[]string{"log.flush.scheduler.interval.ms", "500", "log.flush.interval.ms", "20"}, map[string]string{"flush.ms": "20"}},
	} {
		var cfg broker.Config
		if err := applyProperties(&cfg, props(tc.kv...), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.TopicDefaults, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.kv, cfg.TopicDefaults, tc.want)
		}
	}
}

func TestApplyPropertiesRefusesInvalidValuesAndAppliesNothing(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want string // in the error
	}{
		{[]string{"num.partitions", "three"}, `num.partitions="three" (test): not a number`},
		{[]string{"num.partitions", "0"}, `num.partitions="0" (test): out of range`},
		{[]string{"default.replication.factor", "40000"}, "default.replication.factor"},
		{[]string{"node.id", "-1"}, "node.id"},
		{[]string{"broker.id", "2147483648"}, "broker.id"},
		{[]string{"node.id", "1", "broker.id", "2"}, "differs from node.id"},
		{[]string{"auto.create.topics.enable", "yes"}, `auto.create.topics.enable="yes" (test): expected true or false`},
		{[]string{"socket.request.max.bytes", "-5"}, "socket.request.max.bytes"},
		{[]string{"offsets.topic.num.partitions", "0"}, "offsets.topic.num.partitions"},
		{[]string{"group.initial.rebalance.delay.ms", "-1"}, "group.initial.rebalance.delay.ms"},
		{[]string{"group.min.session.timeout.ms", "x"}, "group.min.session.timeout.ms"},
		{[]string{"group.max.session.timeout.ms", "0"}, "group.max.session.timeout.ms"},
		{[]string{"group.max.size", "0"}, "group.max.size"},
		{[]string{"offsets.retention.minutes", "1.5"}, "offsets.retention.minutes"},
		{[]string{"group.consumer.session.timeout.ms", "0"}, "group.consumer.session.timeout.ms"},
		{[]string{"group.consumer.assignors", "uniform,sticky"}, `unknown assignor "sticky"`},
		{[]string{"group.consumer.assignment.interval.ms", "20000"}, "group.consumer.max.assignment.interval.ms (15000)"},
		{[]string{"group.consumer.assignment.interval.ms", "100", "group.consumer.min.assignment.interval.ms", "500"}, "group.consumer.min.assignment.interval.ms (500)"},
		{[]string{"group.consumer.assignor.offload.enable", "maybe"}, "group.consumer.assignor.offload.enable"},
		{[]string{"log.retention.check.interval.ms", "0"}, "log.retention.check.interval.ms"},
		{[]string{"quota.window.num", "0"}, "quota.window.num"},
		{[]string{"quota.window.size.seconds", "0"}, "quota.window.size.seconds"},
		{[]string{"log.cleaner.enable", "yes"}, "log.cleaner.enable"},
		{[]string{"log.cleaner.threads", "-1"}, "log.cleaner.threads"},
		{[]string{"log.retention.hours", "a week"}, "log.retention.hours"},
		{[]string{"log.dirs", "/a,/b"}, "one directory"},
		{[]string{"log.dirs", " "}, `log.dirs=" " (test): empty`},
		{[]string{"listeners", "SSL://:9093", "ssl.enabled.protocols", "TLSv1.9"}, "listener SSL: Invalid value TLSv1.9 for configuration ssl.enabled.protocols: unsupported protocol TLSv1.9"},
		{[]string{"listeners", "EXTERNAL://:9092", "listener.security.protocol.map", "EXTERNAL:SASL_SSL", "listener.name.external.ssl.allow.dn.changes", "maybe"}, "Invalid value maybe for configuration ssl.allow.dn.changes"},
		{[]string{"listeners", "CONTROLLER://:9093"}, "no security protocol"},
		{[]string{"listeners", "CONTROLLER://:9093", "controller.listener.names", "CONTROLLER"}, "no PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL listener"},
		{[]string{"listeners", "localhost:9092"}, "NAME://HOST:PORT"},
		{[]string{"listeners", "PLAINTEXT://localhost"}, "missing port"},
		{[]string{"advertised.listeners", "SSL://h"}, "advertised.listeners"},
		{[]string{"listeners", "PLAINTEXT://:1", "advertised.listeners", "nope"}, "advertised.listeners"},
		{[]string{"controller.quorum.voters", "1@h"}, "controller.quorum.voters"},
		{[]string{"controller.quorum.voters", "1@h:1", "process.roles", "controller"}, "controller-only nodes are not"},
		{[]string{"controller.quorum.voters", "1@h:1", "process.roles", "broker,fishmonger"}, "process.roles"},
		{[]string{"controlled.shutdown.enable", "perhaps"}, "controlled.shutdown.enable"},
		{[]string{"broker.session.timeout.ms", "0"}, "broker.session.timeout.ms"},
		{[]string{"broker.heartbeat.interval.ms", "x"}, "broker.heartbeat.interval.ms"},
		{[]string{"replica.selector.class", "com.example.MySelector"}, "the only replica selector is org.apache.kafka.common.replica.RackAwareReplicaSelector"},
	} {
		// Valid settings alongside must not be applied either.
		kv := append([]string{"log.segment.bytes", "2097152", "log.dirs", "/x"}, tc.kv...)
		cfg := broker.Config{Listen: "keep"}
		err := applyProperties(&cfg, props(kv...), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.kv, err, tc.want)
		}
		if !reflect.DeepEqual(cfg, broker.Config{Listen: "keep"}) {
			t.Errorf("%q: config half-applied: %+v", tc.kv, cfg)
		}
	}
}

// TestApplyPropertiesSASLPlaintextListener: a SASL_PLAINTEXT listener is
// served with its mechanisms, its PLAIN JAAS config (by Kafka's
// listener.name.<lower-case name>.plain.sasl.jaas.config key) and the
// re-authentication and delay settings; an unprefixed sasl.jaas.config is
// ignored with Kafka's warning.
func TestApplyPropertiesSASLPlaintextListener(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
	const oauthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`
	const oauthHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
	var logs strings.Builder
	var cfg broker.Config
	err := applyProperties(&cfg, props(
		"listeners", "CLIENTS://:9095,PLAIN://:9092",
		"listener.security.protocol.map", "CLIENTS:SASL_PLAINTEXT,PLAIN:PLAINTEXT",
		"sasl.enabled.mechanisms", " PLAIN , ",
		"listener.name.clients.plain.sasl.jaas.config", jaas,
		"listener.name.clients.oauthbearer.sasl.jaas.config", oauthJAAS,
		"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", oauthHandler,
		"sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/plain",
		"listener.name.clients.sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/listener",
		"listener.name.clients.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/jwks",
		"listener.name.clients.sasl.oauthbearer.expected.audience", " kafka, , other ",
		"sasl.oauthbearer.expected.issuer", "https://idp.example",
		"sasl.oauthbearer.scope.claim.name", "scp",
		"sasl.oauthbearer.sub.claim.name", "client_id",
		"sasl.oauthbearer.jwks.endpoint.refresh.ms", "60000",
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "50",
		"listener.name.clients.oauthbearer.sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "500",
		"sasl.oauthbearer.clock.skew.seconds", "5",
		"org.apache.kafka.sasl.oauthbearer.allowed.urls", "https://idp.example/jwks, file:///etc/jwks.json",
		"sasl.jaas.config", "ignored required;",
		"connections.max.reauth.ms", "60000",
		"connection.failed.authentication.delay.ms", "0",
		"sasl.server.max.receive.size", "4096",
	), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":9095" || cfg.ListenerName != "CLIENTS" || cfg.SecurityProtocol != "SASL_PLAINTEXT" {
		t.Errorf("listener %q %q %q, want :9095 CLIENTS SASL_PLAINTEXT", cfg.Listen, cfg.ListenerName, cfg.SecurityProtocol)
	}
	if !reflect.DeepEqual(cfg.SASLEnabledMechanisms, []string{"PLAIN"}) || cfg.SASLPlainJAASConfig != jaas {
		t.Errorf("mechanisms %q, jaas %q", cfg.SASLEnabledMechanisms, cfg.SASLPlainJAASConfig)
	}
	i64 := func(n int64) *int64 { return &n }
	want := broker.OAuthBearerConfig{JAASConfig: oauthJAAS, ServerCallbackHandlerClass: oauthHandler,
		JWKSEndpointURL: "https://idp.example/jwks", ExpectedAudience: []string{"kafka", "other"},
		ExpectedIssuer: "https://idp.example", ScopeClaimName: "scp", SubClaimName: "client_id",
		JWKSEndpointRefreshMs: i64(60000), JWKSEndpointRetryBackoffMs: i64(50), JWKSEndpointRetryBackoffMaxMs: i64(500),
		ClockSkewSeconds: i64(5), AllowedURLs: []string{"https://idp.example/jwks", "file:///etc/jwks.json"}}
	if !reflect.DeepEqual(cfg.OAuthBearer, want) {
		t.Errorf("oauthbearer %+v, want %+v", cfg.OAuthBearer, want)
	}
	if cfg.ConnectionsMaxReauthMs != 60000 || cfg.FailedAuthenticationDelayMs == nil || *cfg.FailedAuthenticationDelayMs != 0 || cfg.SASLServerMaxReceiveSize != 4096 {
		t.Errorf("reauth %d, delay %v, max receive %d", cfg.ConnectionsMaxReauthMs, cfg.FailedAuthenticationDelayMs, cfg.SASLServerMaxReceiveSize)
	}
	if !strings.Contains(logs.String(), "Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring config") {
		t.Errorf("no warning about sasl.jaas.config in %s", logs.String())
	}
	if strings.Contains(logs.String(), "alice-secret") || strings.Contains(logs.String(), "unknown config") {
		t.Errorf("logs name a secret or an unknown key: %s", logs.String())
	}
}

// TestApplyPropertiesSSLListener: an SSL or SASL_SSL listener is served
// with its ssl.* keys, listener.name.<lower-case name>.ssl.* winning over
// ssl.*, as Kafka reads them; the keys read are not warned about, and no
// password reaches the log.
func TestApplyPropertiesSSLListener(t *testing.T) {
	for _, tc := range []struct {
		name, listeners, protocolMap string
		wantName, wantProtocol       string
	}{
		{"ssl", "SSL://:9093", "", "SSL", "SSL"},
		{"sasl_ssl mapped", "CONTROLLER://:9094,CLIENTS://:9093", "CLIENTS:SASL_SSL,CONTROLLER:PLAINTEXT", "CLIENTS", "SASL_SSL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			prefix := "listener.name." + strings.ToLower(tc.wantName) + "."
			kv := []string{
				"listeners", tc.listeners,
				"controller.listener.names", "CONTROLLER",
				"ssl.keystore.type", "PKCS12",
				"ssl.keystore.location", "/etc/kafka/ignored.p12",
				prefix + "ssl.keystore.location", "/etc/kafka/server.p12",
				prefix + "ssl.keystore.password", "keystore-secret",
				"ssl.truststore.location", "/etc/kafka/trust.jks",
				"ssl.truststore.password", "truststore-secret",
				"ssl.client.auth", "required",
				prefix + "ssl.client.auth", "requested",
				"ssl.principal.mapping.rules", "DEFAULT",
				prefix + "ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
				"listener.name.other.ssl.client.auth", "none",
			}
			if tc.protocolMap != "" {
				kv = append(kv, "listener.security.protocol.map", tc.protocolMap)
			}
			var cfg broker.Config
			if err := applyProperties(&cfg, props(kv...), slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			if cfg.ListenerName != tc.wantName || cfg.SecurityProtocol != tc.wantProtocol || cfg.Listen != ":9093" {
				t.Fatalf("listener %q %q %q", cfg.ListenerName, cfg.SecurityProtocol, cfg.Listen)
			}
			s := cfg.SSL
			if s == nil {
				t.Fatal("no SSL settings")
			}
			if s.KeystoreType != "PKCS12" || s.KeystoreLocation != "/etc/kafka/server.p12" || s.KeystorePassword.Value() != "keystore-secret" ||
				s.TruststoreType != "JKS" || s.TruststoreLocation != "/etc/kafka/trust.jks" || s.TruststorePassword.Value() != "truststore-secret" ||
				s.ClientAuth != "requested" {
				t.Errorf("settings %+v", *s)
			}
			if cfg.SSLPrincipalMappingRules != "RULE:^CN=(.*?),.*$/$1/,DEFAULT" {
				t.Errorf("mapping rules %q", cfg.SSLPrincipalMappingRules)
			}
			out := logs.String()
			if strings.Contains(out, "secret") {
				t.Errorf("the log names a password: %s", out)
			}
			// Only the other listener's key is not Gregor's.
			if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "key=listener.name.other.ssl.client.auth") {
				t.Errorf("want one warning, for listener.name.other.ssl.client.auth:\n%s", out)
			}
		})
	}
}

// TestApplyPropertiesSASLSSLClientAuth: on a SASL_SSL listener only the
// listener-prefixed ssl.client.auth asks for client certificates, as in
// Kafka's ChannelBuilders, which warns about the broker-wide one.
func TestApplyPropertiesSASLSSLClientAuth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kv    []string
		want  string
		warns bool
	}{
		{"broker-wide ignored", []string{"ssl.client.auth", "required"}, "none", true},
		{"broker-wide none", []string{"ssl.client.auth", "NONE"}, "none", false},
		{"prefixed", []string{"listener.name.sasl_ssl.ssl.client.auth", "requested"}, "requested", false},
		{"prefixed over broker-wide", []string{"ssl.client.auth", "none", "listener.name.sasl_ssl.ssl.client.auth", "required"}, "required", false},
		{"unset", nil, "none", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			var cfg broker.Config
			kv := append([]string{"listeners", "SASL_SSL://:9094", "ssl.keystore.location", "/k.jks", "ssl.keystore.password", "pw"}, tc.kv...)
			if err := applyProperties(&cfg, props(kv...), slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			if cfg.SSL == nil || cfg.SSL.ClientAuth != tc.want {
				t.Fatalf("settings %+v, want ssl.client.auth %s", cfg.SSL, tc.want)
			}
			if warned := strings.Contains(logs.String(), "is applied only to SSL listeners"); warned != tc.warns {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warns, logs.String())
			}
		})
	}
}

func TestApplyPropertiesWarnsOncePerIgnoredOrUnknownKey(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var cfg broker.Config
	err := applyProperties(&cfg, props(
		"num.network.threads", "3",
		"transaction.state.log.segment.bytes", "1048576",
		"share.coordinator.state.topic.replication.factor", "1",
		"controller.listener.names", "CONTROLLER",
		"log.segment.bytes", "2097152",
		"no.such.thing", "1",
	), logger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 WARN lines, got:\n%s", buf.String())
	}
	for _, want := range []string{
		`level=WARN msg="gregor: unknown config" key=no.such.thing`,
		`level=WARN msg="gregor: config ignored: Gregor does not use it" key=num.network.threads`,
		`key=share.coordinator.state.topic.replication.factor`,
		`key=transaction.state.log.segment.bytes`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestApplyPropertiesInternalTopicReplication reads the internal topics'
// replication keys, which cluster mode honours.
func TestApplyPropertiesInternalTopicReplication(t *testing.T) {
	var cfg broker.Config
	err := applyProperties(&cfg, props(
		"offsets.topic.replication.factor", "2",
		"transaction.state.log.replication.factor", "5",
		"transaction.state.log.min.isr", "3",
	), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OffsetsTopicReplicationFactor != 2 || cfg.TransactionStateLogReplicationFactor != 5 || cfg.TransactionStateLogMinISR != 3 {
		t.Fatalf("got offsets factor %d, transaction log factor %d and min isr %d; want 2, 5, 3",
			cfg.OffsetsTopicReplicationFactor, cfg.TransactionStateLogReplicationFactor, cfg.TransactionStateLogMinISR)
	}
	if err := applyProperties(&cfg, props("transaction.state.log.min.isr", "0"), slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("transaction.state.log.min.isr=0 was accepted")
	}
}

// TestApplyPropertiesAddPartitionsRetry reads the two settings of a
// transactions V2 produce's retries, whose max may be 0 and whose backoff
// may not.
func TestApplyPropertiesAddPartitionsRetry(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var cfg broker.Config
	if err := applyProperties(&cfg, props(
		"add.partitions.to.txn.retry.backoff.ms", "5",
		"add.partitions.to.txn.retry.backoff.max.ms", "0",
	), quiet); err != nil {
		t.Fatal(err)
	}
	if cfg.AddPartitionsToTxnRetryBackoffMs != 5 || cfg.AddPartitionsToTxnRetryBackoffMaxMs == nil || *cfg.AddPartitionsToTxnRetryBackoffMaxMs != 0 {
		t.Fatalf("got backoff %d, max %v; want 5, 0", cfg.AddPartitionsToTxnRetryBackoffMs, cfg.AddPartitionsToTxnRetryBackoffMaxMs)
	}
	if err := applyProperties(&cfg, props("add.partitions.to.txn.retry.backoff.ms", "0"), quiet); err == nil {
		t.Fatal("add.partitions.to.txn.retry.backoff.ms=0 was accepted")
	}
}

// runServeConfig runs the CLI with args and environ and returns the
// configuration serve would start the broker with.
func runServeConfig(t *testing.T, environ []string, args ...string) (broker.Config, error) {
	t.Helper()
	app := newApp()
	var cfg broker.Config
	var cfgErr error
	app.Commands[0].Action = func(c *cli.Context) error {
		cfg, _, cfgErr = serveConfig(c, environ, slog.New(slog.NewTextHandler(io.Discard, nil)))
		return nil
	}
	if err := app.Run(append([]string{"gregor", "serve"}, args...)); err != nil {
		t.Fatal(err)
	}
	return cfg, cfgErr
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigPrecedenceDefaultsFileEnvOverrideFlags(t *testing.T) {
	file := writeFile(t, "listeners=PLAINTEXT://file:1\nnum.partitions=2\nlog.dirs=/file\nnode.id=2\nlog.segment.bytes=2097152\n")
	env := []string{"KAFKA_LISTENERS=PLAINTEXT://env:1", "KAFKA_NUM_PARTITIONS=4", "KAFKA_NODE_ID=4"}
	for _, tc := range []struct {
		name    string
		environ []string
		args    []string
		listen  string
		parts   int32
		dataDir string
		nodeID  int32
	}{
		{"defaults", nil, nil, "127.0.0.1:9092", 0, "./data", 1},
		{"file over defaults", nil, []string{"--config", file}, "file:1", 2, "/file", 2},
		{"env over file", env, []string{"--config", file}, "env:1", 4, "/file", 4},
		{"override over env", env, []string{"--config", file, "--override", "listeners=PLAINTEXT://ovr:1,CONTROLLER://c:2", "--override", "num.partitions=5", "--override", "controller.listener.names=CONTROLLER"}, "ovr:1", 5, "/file", 4},
		{"flags over everything", env, []string{"--config", file, "--override", "listeners=PLAINTEXT://ovr:1", "--listen", "flag:1", "--data-dir", "/flag", "--node-id", "9"}, "flag:1", 4, "/flag", 9},
		{"flag at its default value still wins", env, []string{"--config", file, "--listen", "127.0.0.1:9092", "--node-id", "1"}, "127.0.0.1:9092", 4, "/file", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := runServeConfig(t, tc.environ, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Listen != tc.listen || cfg.NumPartitions != tc.parts || cfg.DataDir != tc.dataDir || cfg.NodeID != tc.nodeID {
				t.Fatalf("got listen %q partitions %d data %q node %d, want %q %d %q %d",
					cfg.Listen, cfg.NumPartitions, cfg.DataDir, cfg.NodeID, tc.listen, tc.parts, tc.dataDir, tc.nodeID)
			}
		})
	}
}

// --http-listen's default gives way to a free port when taken; the same
// address given explicitly does not.
func TestHTTPListenDefaultIsMarked(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		listen    string
		isDefault bool
	}{
		{nil, "127.0.0.1:9644", true},
		{[]string{"--http-listen", "127.0.0.1:9644"}, "127.0.0.1:9644", false},
		{[]string{"--http-listen", "127.0.0.1:7000"}, "127.0.0.1:7000", false},
	} {
		cfg, err := runServeConfig(t, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HTTPListen != tc.listen || cfg.HTTPListenIsDefault != tc.isDefault {
			t.Errorf("%v: HTTPListen %q default %v, want %q %v", tc.args, cfg.HTTPListen, cfg.HTTPListenIsDefault, tc.listen, tc.isDefault)
		}
	}
}

func TestServeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		args    []string
		want    string
	}{
		{"missing file", nil, []string{"--config", "/nonexistent/server.properties"}, "--config"},
		{"bad escape in file", nil, []string{"--config", writeFile(t, "a=\\uXYZ1")}, "server.properties:1"},
		{"override without equals", nil, []string{"--override", "num.partitions"}, "key=value"},
		{"bad file value", nil, []string{"--config", writeFile(t, "num.partitions=x")}, `num.partitions="x"`},
		{"bad env value", []string{"KAFKA_NUM_PARTITIONS=x"}, nil, "KAFKA_NUM_PARTITIONS"},
		{"bad override value", nil, []string{"--override", "auto.create.topics.enable=maybe"}, "--override"},
		{"node id out of range", nil, []string{"--node-id", "-1"}, "--node-id"},
		{"bad quorum", nil, []string{"--controller-quorum", "one@h:1"}, "--controller-quorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runServeConfig(t, tc.environ, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTopicSynonymsMatchTheBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Configs whose broker synonym has no default are reported only when set.
	b, err := broker.Start(ctx, broker.Config{TopicDefaults: map[string]string{
		"retention.ms": "1", "segment.ms": "1", "segment.jitter.ms": "1", "flush.ms": "1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("t", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		for _, s := range c.Synonyms {
			if s.Key != c.Key || s.Source != 1 { // not the topic's own entry
				got[s.Key] = c.Key
			}
		}
	}
	if !maps.Equal(got, topicSynonyms) {
		t.Fatalf("broker synonyms %v\ndiffer from topicSynonyms %v", got, topicSynonyms)
	}
}

func TestServeReadsServerPropertiesEndToEnd(t *testing.T) {
	addr := freePort(t)
	dir := t.TempDir()
	path := writeFile(t, strings.Join([]string{
		"# a Kafka-style file",
		"process.roles=broker,controller",
		"listeners=PLAINTEXT://" + addr + ",CONTROLLER://127.0.0.1:0",
		"controller.listener.names=CONTROLLER",
		"log.dirs=" + dir,
		"num.partitions: 3",
		"log.segment.bytes = 2097152",
		"group.initial.rebalance.delay.ms=0",
	}, "\n"))
	startGregor(t, "serve --config "+path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics["auto"].Partitions); n != 3 {
		t.Fatalf("auto-created topic has %d partitions, want 3", n)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("auto", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "segment.bytes" {
			found = true
			if c.Value == nil || *c.Value != "2097152" {
				t.Fatalf("segment.bytes is %v, want 2097152", c.MaybeValue())
			}
		}
	}
	if !found {
		t.Fatal("DescribeConfigs did not report segment.bytes")
	}
	if _, err := os.Stat(filepath.Join(dir, "auto-0")); err != nil {
		t.Fatalf("log.dirs not used: %v", err)
	}
}

func TestServeRefusesInvalidPropertiesWithTheKeyAndValue(t *testing.T) {
	for _, tc := range []struct{ file, args, want string }{
		{"num.partitions=lots\n", "", `num.partitions="lots" (`},
		{"log.segment.bytes=1\n", "", `log.segment.bytes="1" (`},
		{"", "--override log.retention.hours=-2 --override log.retention.ms=-5", `log.retention.ms="-5" (--override)`},
		{"", "--override num.partitions", "expected key=value"},
	} {
		path := writeFile(t, tc.file)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "GREGOR_RUN_MAIN=serve --config "+path+" --listen "+freePort(t)+" --data-dir "+t.TempDir()+" "+tc.args)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("gregor started with %q %q: %s", tc.file, tc.args, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Fatalf("output does not contain %q:\n%s", tc.want, out)
		}
	}
}

func TestTopLevelFlagsReachTheDefaultServeCommand(t *testing.T) {
	app := newApp()
	var cfg broker.Config
	var cfgErr error
	app.Commands[0].Action = func(c *cli.Context) error {
		cfg, _, cfgErr = serveConfig(c, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		return nil
	}
	if err := app.Run([]string{"gregor", "--override", "num.partitions=4", "--listen", "h:1"}); err != nil || cfgErr != nil {
		t.Fatal(err, cfgErr)
	}
	if cfg.NumPartitions != 4 || cfg.Listen != "h:1" {
		t.Fatalf("got partitions %d listen %q", cfg.NumPartitions, cfg.Listen)
	}
}

func TestKafkaStyleExampleFileLoads(t *testing.T) {
	file, err := readPropertiesFile("testdata/server.properties")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var cfg broker.Config
	if err := applyProperties(&cfg, layerProperties(file), slog.New(slog.NewTextHandler(&buf, nil))); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":9092" || cfg.Advertise != "localhost:9092" || cfg.DataDir != "/var/lib/gregor" || cfg.NodeID != 1 || cfg.NumPartitions != 3 {
		t.Fatalf("got %+v", cfg)
	}
	want := map[string]string{"retention.ms": "604800000", "segment.bytes": "1073741824", "max.message.bytes": "2097152"}
	if !maps.Equal(cfg.TopicDefaults, want) {
		t.Fatalf("topic defaults %v, want %v", cfg.TopicDefaults, want)
	}
	if strings.Contains(buf.String(), "unknown config") {
		t.Fatalf("the example file has keys Gregor does not know:\n%s", buf.String())
	}
}

func TestLogDirIsUsedWithoutLogDirs(t *testing.T) {
	var cfg broker.Config
	if err := applyProperties(&cfg, props("log.dir", "/d"), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil || cfg.DataDir != "/d" {
		t.Fatalf("DataDir %q, err %v", cfg.DataDir, err)
	}
}

func TestLogCleanerThreadsZeroDisablesTheCleaner(t *testing.T) {
	var cfg broker.Config
	if err := applyProperties(&cfg, props("log.cleaner.enable", "true", "log.cleaner.threads", "0"),
		slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if cfg.LogCleanerEnable == nil || *cfg.LogCleanerEnable {
		t.Fatalf("log.cleaner.threads=0 left the cleaner enabled: %+v", cfg.LogCleanerEnable)
	}
}

func TestApplyPropertiesClusterMode(t *testing.T) {
	for _, tc := range []struct {
		name         string
		kv           []string
		voters, ctrl string
		session      int64
		roles        string
	}{
		{"no voters: a single node, process.roles ignored", []string{"process.roles", "broker,controller",
			"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names", "CONTROLLER"}, "", "", 0, ""},
		{"voters and the controller listener", []string{"process.roles", "controller, broker",
			"controller.quorum.voters", "1@a:9093,2@b:9093", "listeners", "PLAINTEXT://:9092,CONTROLLER://a:9093",
			"controller.listener.names", "CONTROLLER", "broker.session.timeout.ms", "4000"}, "1@a:9093,2@b:9093", "a:9093", 4000, "broker,controller"},
		{"voters without process.roles", []string{"controller.quorum.voters", "1@a:9093"}, "1@a:9093", "", 0, ""},
		{"a broker-only node", []string{"process.roles", "broker", "node.id", "4", "controller.quorum.voters", "1@a:9093",
			"listeners", "PLAINTEXT://:9092,CONTROLLER://d:9093", "controller.listener.names", "CONTROLLER"}, "1@a:9093", "d:9093", 0, "broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg broker.Config
			if err := applyProperties(&cfg, props(tc.kv...), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
				t.Fatal(err)
			}
			if cfg.ControllerQuorumVoters != tc.voters || cfg.ControllerListen != tc.ctrl || cfg.BrokerSessionTimeoutMs != tc.session ||
				cfg.ProcessRoles != tc.roles {
				t.Fatalf("voters %q, controller listen %q, session %d, roles %q; want %q, %q, %d, %q",
					cfg.ControllerQuorumVoters, cfg.ControllerListen, cfg.BrokerSessionTimeoutMs, cfg.ProcessRoles, tc.voters, tc.ctrl, tc.session, tc.roles)
			}
		})
	}
}

func TestControllerQuorumFlagsWinOverTheKeys(t *testing.T) {
	cfg, err := runServeConfig(t, []string{"KAFKA_CONTROLLER_QUORUM_VOTERS=1@env:1"},
		"--controller-quorum", "1@127.0.0.1:9192,2@127.0.0.1:9193", "--controller-listen", "0.0.0.0:9192")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ControllerQuorumVoters != "1@127.0.0.1:9192,2@127.0.0.1:9193" || cfg.ControllerListen != "0.0.0.0:9192" {
		t.Fatalf("voters %q, controller listen %q", cfg.ControllerQuorumVoters, cfg.ControllerListen)
	}
	cfg, err = runServeConfig(t, nil, "--controller-quorum", "1@127.0.0.1:9192", "--process-roles", "broker",
		"--node-id", "4", "--controller-listen", "127.0.0.1:9195")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProcessRoles != "broker" || cfg.NodeID != 4 {
		t.Fatalf("--process-roles broker: roles %q, node %d", cfg.ProcessRoles, cfg.NodeID)
	}
}

func TestApplyPropertiesReplicationKeys(t *testing.T) {
	var cfg broker.Config
	kv := props("replica.lag.time.max.ms", "10000", "replica.fetch.wait.max.ms", "250", "replica.fetch.min.bytes", "10",
		"replica.fetch.max.bytes", "2097152", "replica.fetch.response.max.bytes", "20971520", "replica.fetch.backoff.ms", "500",
		"replica.high.watermark.checkpoint.interval.ms", "1000", "unclean.leader.election.enable", "true")
	if err := applyProperties(&cfg, kv, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	var want broker.Config
	want.ReplicaLagTimeMaxMs, want.ReplicaFetchWaitMaxMs, want.ReplicaFetchMinBytes = 10000, 250, 10
	want.ReplicaFetchMaxBytes, want.ReplicaFetchResponseMaxBytes, want.ReplicaFetchBackoffMs = 2<<20, 20<<20, 500
	want.ReplicaHighWatermarkCheckpointIntervalMs = 1000
	got := cfg.Settings
	if !reflect.DeepEqual(got, want.Settings) {
		t.Fatalf("replication keys: %+v, want %+v", got, want.Settings)
	}
	if cfg.TopicDefaults["unclean.leader.election.enable"] != "true" {
		t.Fatalf("unclean.leader.election.enable: topic defaults %v", cfg.TopicDefaults)
	}
}

// TestServeSASLPlaintextFromServerProperties: docs/security.md's example
// file, as written there, serves SASL_PLAINTEXT with PLAIN; the readiness
// line names the protocol and mechanisms; a wrong password is refused.
func TestServeSASLPlaintextFromServerProperties(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```properties\n")
	example, _, _ := strings.Cut(rest, "```")
	if !strings.Contains(example, "listeners=SASL_PLAINTEXT://:9092") {
		t.Fatalf("docs/security.md's first example changed:\n%s", example)
	}
	addr := freePort(t)
	example = strings.ReplaceAll(example, "SASL_PLAINTEXT://:9092", "SASL_PLAINTEXT://"+addr)
	example = strings.ReplaceAll(example, "SASL_PLAINTEXT://localhost:9092", "SASL_PLAINTEXT://"+addr)
	example = strings.ReplaceAll(example, "log.dirs=./data", "log.dirs="+t.TempDir())
	lines := startGregorLogging(t, "serve --http-listen 127.0.0.1:0 --config "+writeFile(t, example))
	ready := lines[len(lines)-1]
	if !strings.Contains(ready, "security_protocol=SASL_PLAINTEXT") || !strings.Contains(ready, "sasl_mechanisms=PLAIN") {
		t.Fatalf("readiness line %q does not name the protocol and mechanisms", ready)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("sasl"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as alice: %v", err)
	}
	bad := newTestClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestServeSCRAMFromServerProperties: docs/security.md's SCRAM example, as
// written there, with its --add-scram flags, serves SCRAM-SHA-512: the
// users log in, a wrong password is refused, and a malformed --add-scram
// refuses to start with Kafka's message.
func TestServeSCRAMFromServerProperties(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "## SASL_PLAINTEXT with SCRAM")
	_, rest, _ = strings.Cut(rest, "```properties\n")
	example, _, _ := strings.Cut(rest, "```")
	if !strings.Contains(example, "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256") {
		t.Fatalf("docs/security.md's SCRAM example changed:\n%s", example)
	}
	for _, flag := range []string{"--add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]'",
		"--add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]'"} {
		if !strings.Contains(string(doc), flag) {
			t.Fatalf("docs/security.md no longer shows %s", flag)
		}
	}
	addr := freePort(t)
	example = strings.ReplaceAll(example, "SASL_PLAINTEXT://:9092", "SASL_PLAINTEXT://"+addr)
	example = strings.ReplaceAll(example, "SASL_PLAINTEXT://localhost:9092", "SASL_PLAINTEXT://"+addr)
	example = strings.ReplaceAll(example, "log.dirs=./data", "log.dirs="+t.TempDir())
	file := writeFile(t, example)
	lines := startGregorLogging(t, "serve --http-listen 127.0.0.1:0 --config "+file+
		" --add-scram SCRAM-SHA-512=[name=admin,password=admin-secret]"+
		" --add-scram SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]")
	for _, line := range lines {
		if strings.Contains(line, "unknown config") {
			t.Errorf("the example's keys are not all known: %s", line)
		}
		if strings.Contains(line, "secret") {
			t.Errorf("a password is logged: %s", line)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, user := range []string{"admin", "alice"} {
		cl := newTestClient(t, addr, kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()), kgo.RequestRetries(0))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Errorf("%s logs in: %v", user, err)
		}
	}
	described, err := kadm.NewClient(newTestClient(t, addr, kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()))).
		DescribeUserSCRAMs(ctx, "alice")
	if err != nil || described["alice"].Err != nil || len(described["alice"].CredInfos) != 1 || described["alice"].CredInfos[0].Iterations != 8192 {
		t.Errorf("describe alice: %+v, %v", described, err)
	}
	bad := newTestClient(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism()), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestAddScramFlagReachesTheConfig: --add-scram is repeatable, keeps its
// commas, and a malformed one refuses to start with Kafka's message.
func TestAddScramFlagReachesTheConfig(t *testing.T) {
	cfg, err := runServeConfig(t, nil, "--add-scram", "SCRAM-SHA-512=[name=a,password=b]", "--add-scram", "SCRAM-SHA-256=[name=c,password=d]")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SCRAM-SHA-512=[name=a,password=b]", "SCRAM-SHA-256=[name=c,password=d]"}; !reflect.DeepEqual(cfg.AddScram, want) {
		t.Fatalf("AddScram %q, want %q", cfg.AddScram, want)
	}
	_, err = broker.Start(context.Background(), broker.Config{AddScram: []string{"SCRAM-SHA-512=[password=b]"}})
	if err == nil || !strings.Contains(err.Error(), "You must supply 'name' to add-scram") {
		t.Fatalf("a malformed --add-scram: %v", err)
	}
}

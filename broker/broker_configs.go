package broker

// The Kafka broker configs Gregor reads: one table, from which the
// properties loader (cmd/gregor) sets Config, setDefaults fills what is
// unset, DescribeConfigs lists BROKER resources, and docs/configuration.md's
// key table is generated (TestConfigurationDocMatchesTheTable). Names,
// types and defaults are Kafka's (compat-tests/rawdiff compares them with
// the reference broker's DescribeConfigs).

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// BrokerConfig is one Kafka broker config.
type BrokerConfig struct {
	// Name is Kafka's key.
	Name string
	// Field is the Config field the key sets, "" when none does directly
	// (the loader derives it, as log.retention.hours sets a topic default).
	Field string
	// Default is Kafka's default as DescribeConfigs reports it; "" with
	// NullDefault when Kafka's default is null.
	Default     string
	NullDefault bool
	// Doc says what Gregor does with the value, in markdown (backquotes and
	// links, which DescribeConfigs strips).
	Doc string
	// Type is Kafka's type name of the value: INT, LONG, SHORT, BOOLEAN,
	// STRING or LIST.
	Type string

	kind   topicconfig.Kind
	lo, hi int64
	// parse sets the config from a value; nil when the loader reads the
	// key itself (listeners, log.dirs, node.id, ...).
	parse func(c *Config, value string) error
	// fill sets Kafka's default where the Config leaves the value unset.
	fill func(c *Config)
	// current is the value in effect, and whether it was set rather than
	// defaulted; nil when DescribeConfigs does not list the key.
	current func(b *Broker) (value string, explicit bool)
	// docDefault is the default as the docs show it, when not Default.
	docDefault string
	// ownKey marks a key of Gregor's own, which DescribeConfigs does not
	// list as a Kafka broker would not.
	ownKey bool
}

// Listed reports whether DescribeConfigs lists this config for the broker.
func (c *BrokerConfig) Listed() bool { return c.current != nil && !c.ownKey }

// Parses reports whether Parse sets this config, or whether the loader
// reads it itself.
func (c *BrokerConfig) Parses() bool { return c.parse != nil }

// Parse sets cfg from value, checking it as Kafka's ConfigDef does: a
// number within the range, or true or false. The error says why the value
// is refused, without the key.
func (c *BrokerConfig) Parse(cfg *Config, value string) error {
	if c.parse == nil {
		return fmt.Errorf("%s is read by the loader", c.Name)
	}
	return c.parse(cfg, strings.TrimSpace(value))
}

// BrokerConfigs returns the table, in the order the docs list it.
func BrokerConfigs() []BrokerConfig { return append([]BrokerConfig(nil), brokerConfigTable...) }

// errNotANumber and the range error are the loader's wording.
var errNotANumber = errors.New("not a number")

func parseInteger(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errNotANumber
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

func parseBoolean(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("expected true or false")
}

var kindNames = map[topicconfig.Kind]string{topicconfig.KindBoolean: "BOOLEAN", topicconfig.KindString: "STRING", topicconfig.KindInt: "INT", topicconfig.KindShort: "SHORT",
	topicconfig.KindLong: "LONG", topicconfig.KindDouble: "DOUBLE", topicconfig.KindList: "LIST", topicconfig.KindClass: "CLASS"}

// intConfig is an integer key kept in a Config field that is unset at
// zero or below.
func intConfig[T ~int | ~int16 | ~int32 | ~int64](name, field string, kind topicconfig.Kind, def T, lo, hi int64, doc string, at func(*Config) *T) BrokerConfig {
	return BrokerConfig{Name: name, Field: field, Default: strconv.FormatInt(int64(def), 10), Doc: doc, kind: kind, lo: lo, hi: hi,
		parse: func(c *Config, v string) error {
			n, err := parseInteger(v, lo, hi)
			if err == nil {
				*at(c) = T(n)
			}
			return err
		},
		fill: func(c *Config) {
			if *at(c) <= 0 {
				*at(c) = def
			}
		},
		current: func(b *Broker) (string, bool) {
			v := *at(&b.cfg)
			return strconv.FormatInt(int64(v), 10), v != def
		},
	}
}

// optionalConfig is an integer key whose zero is a value: nil is unset.
func optionalConfig(name, field string, kind topicconfig.Kind, def, lo, hi int64, doc string, at func(*Config) **int64) BrokerConfig {
	c := pointerConfig(def, func(v string) (int64, error) { return parseInteger(v, lo, hi) },
		func(v int64) string { return strconv.FormatInt(v, 10) }, at)
	c.Name, c.Field, c.Doc, c.kind, c.lo, c.hi = name, field, doc, kind, lo, hi
	return c
}

// boolConfig is a boolean key: nil is unset.
func boolConfig(name, field string, def bool, doc string, at func(*Config) **bool) BrokerConfig {
	c := pointerConfig(def, parseBoolean, strconv.FormatBool, at)
	c.Name, c.Field, c.Doc, c.kind = name, field, doc, topicconfig.KindBoolean
	return c
}

// pointerConfig is a key kept in a pointer field of Config, nil when unset.
func pointerConfig[T comparable](def T, parse func(string) (T, error), format func(T) string, at func(*Config) **T) BrokerConfig {
	return BrokerConfig{Default: format(def),
		parse: func(c *Config, v string) error {
			n, err := parse(v)
			if err == nil {
				*at(c) = &n
			}
			return err
		},
		fill: func(c *Config) {
			if *at(c) == nil {
				d := def
				*at(c) = &d
			}
		},
		current: func(b *Broker) (string, bool) {
			v := **at(&b.cfg)
			return format(v), v != def
		},
	}
}

// stringConfig is a string key whose default is empty.
func stringConfig(name, field, doc string, at func(*Config) *string) BrokerConfig {
	return BrokerConfig{Name: name, Field: field, Doc: doc, kind: topicconfig.KindString,
		parse: func(c *Config, v string) error {
			*at(c) = v
			return nil
		},
		fill: func(*Config) {},
		current: func(b *Broker) (string, bool) {
			v := *at(&b.cfg)
			return v, v != ""
		},
	}
}

// loaderConfig is a key the loader reads itself (its parse is nil).
func loaderConfig(name string, kind topicconfig.Kind, def string, doc string) BrokerConfig {
	return BrokerConfig{Name: name, Default: def, NullDefault: def == "", Doc: doc, kind: kind}
}

// unlisted keeps a key out of DescribeConfigs: a key of Gregor's own,
// which a Kafka broker would not list.
func (c BrokerConfig) unlisted() BrokerConfig {
	c.ownKey = true
	return c
}

// listed gives a loader-read key a value for DescribeConfigs.
func (c BrokerConfig) listed(current func(b *Broker) (string, bool)) BrokerConfig {
	c.current = current
	return c
}

// shownAs sets how the docs show the default.
func (c BrokerConfig) shownAs(docDefault string) BrokerConfig {
	c.docDefault = docDefault
	return c
}

// always marks a listed key as set: Kafka requires it in the file.
func always(value func(b *Broker) string) func(b *Broker) (string, bool) {
	return func(b *Broker) (string, bool) { return value(b), true }
}

var brokerConfigTable = func() []BrokerConfig {
	t := []BrokerConfig{
		loaderConfig("listeners", topicconfig.KindList, "PLAINTEXT://:9092", "every listener is bound and served (`PLAINTEXT://:9092` is every interface), each with its own security; listeners named in `controller.listener.names` are skipped; a listener's protocol is its name or its entry in `listener.security.protocol.map`: PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL; an SSL or SASL_SSL listener reads its `ssl.*` keys and `ssl.principal.mapping.rules` (`listener.name.<listener>.ssl.*` over `ssl.*`), see [security.md](security.md)").
			listed(always(func(b *Broker) string { return b.listenersValue(false) })).shownAs("`PLAINTEXT://127.0.0.1:9092`"),
		loaderConfig("advertised.listeners", topicconfig.KindList, "", "each listener's entry (by name; a listener without one advertises the address it is bound to) is what Metadata, FindCoordinator and DescribeCluster return to the clients of that listener").
			listed(func(b *Broker) (string, bool) {
				return b.listenersValue(true), slices.ContainsFunc(b.cfg.Listeners, func(l ListenerConfig) bool { return l.Advertise != "" })
			}).shownAs("the listeners"),
		loaderConfig("inter.broker.listener.name", topicconfig.KindString, "", "the listener other brokers reach this one on (replica fetches, controller calls, forwarding, transaction peers), and which this node dials them on with its security: TLS with its `ssl.*` stores (its key store is the client certificate when the others require one), SASL with `sasl.mechanism.inter.broker.protocol`; default the listener named after `security.inter.broker.protocol`, else the first PLAINTEXT listener, see [security.md](security.md#between-the-nodes)").
			listed(always(func(b *Broker) string { return b.cfg.InterBrokerListenerName })).shownAs("`PLAINTEXT`"),
		loaderConfig("security.inter.broker.protocol", topicconfig.KindString, "PLAINTEXT", "names the inter-broker listener by its protocol (the listener called `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`) when `inter.broker.listener.name` is not set; both set refuses to start, as in Kafka").shownAs("`PLAINTEXT`"),
		loaderConfig("sasl.mechanism.inter.broker.protocol", topicconfig.KindString, "GSSAPI", "the mechanism this node logs in to the others' SASL inter-broker listener with: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`, one of the listener's `sasl.enabled.mechanisms`; the login is the `username` and `password` options of `listener.name.<listener>.<mechanism>.sasl.jaas.config` (for SCRAM, a user the cluster has, e.g. from `--add-scram`); `GSSAPI` and `OAUTHBEARER` refuse to start with a SASL inter-broker listener, see [security.md](security.md#between-the-nodes)").
			listed(func(b *Broker) (string, bool) {
				if m := b.cfg.InterBrokerSASLMechanism; m != "" {
					return m, true
				}
				return defaultInterBrokerSASLMechanism, false
			}).shownAs("`GSSAPI`"),
		loaderConfig("log.dirs", topicconfig.KindList, "", "the data directory; `log.dirs` wins over `log.dir`; more than one directory refuses to start").
			listed(always(func(b *Broker) string { return b.logDir() })).shownAs("`./data`"),
		loaderConfig("log.dir", topicconfig.KindList, "/tmp/kafka-logs", "the data directory when `log.dirs` is not set").shownAs("`./data`"),
		loaderConfig("node.id", topicconfig.KindInt, "", "this broker's id, 0 to 2147483647; `node.id` and `broker.id` both set and different refuses to start").
			listed(always(func(b *Broker) string { return strconv.Itoa(int(b.cfg.NodeID)) })).shownAs("`1`"),
		loaderConfig("broker.id", topicconfig.KindInt, "-1", "the same as `node.id`").
			listed(always(func(b *Broker) string { return strconv.Itoa(int(b.cfg.NodeID)) })).shownAs("`1`"),
		loaderConfig("controller.quorum.voters", topicconfig.KindList, "", "`ID@HOST:PORT,...`, the static voters of the metadata quorum; set, the node runs in cluster mode, as one of them (`process.roles=broker,controller`: its `node.id` must be a voter) or as a broker-only node (`process.roles=broker`: its `node.id` must not be one), see [operations.md](operations.md#running-a-cluster); a malformed list refuses to start").shownAs("none"),
		loaderConfig("process.roles", topicconfig.KindList, "", "with `controller.quorum.voters`: `broker,controller` (combined mode, a voter) or `broker` (a broker-only node, an observer of the quorum, which needs a controller listener: [operations.md](operations.md#adding-a-broker)); `controller` alone refuses to start (not served yet); without voters it is ignored (one node)").
			listed(always(func(b *Broker) string {
				if b.isCluster() && b.cluster.raftAddr != "" {
					return "broker"
				}
				return "broker,controller"
			})).shownAs("`broker,controller`"),
		loaderConfig("controller.listener.names", topicconfig.KindList, "", "with `controller.quorum.voters`, the first listener in `listeners` with one of these names is the controller listener (the raft transport)").shownAs("none"),
		boolConfig("controlled.shutdown.enable", "ControlledShutdownEnable", true, "cluster mode: stopping a broker first asks the active controller to move its leaderships (KIP-631), waiting at most 30 s ([operations.md](operations.md#running-a-cluster)); `false` stops at once and leaves fencing to the session timeout", func(c *Config) **bool { return &c.ControlledShutdownEnable }),
		loaderConfig("broker.rack", topicconfig.KindString, "", "the rack this broker is in: registered with the controller (replicas of a new topic are spread across racks) and listed in Metadata and DescribeCluster").
			listed(func(b *Broker) (string, bool) { return b.cfg.BrokerRack, b.cfg.BrokerRack != "" }).shownAs("none"),
		loaderConfig("replica.selector.class", topicconfig.KindString, "", "KIP-392 fetch from follower: `org.apache.kafka.common.replica.RackAwareReplicaSelector` makes a partition leader point a consumer (Fetch v11+ naming its rack, as `client.rack` does) to an in-sync replica in the consumer's rack; none means consumers read from leaders. Any other class refuses to start. Followers serve consumer fetches v11+ either way, see [operations.md](operations.md#fetching-from-the-closest-replica)").shownAs("none"),
		loaderConfig("group.consumer.assignors", topicconfig.KindList, "uniform,range", "server assignors members may name (`uniform`, `range`, or Kafka's class names for them); the first is the default"),
		loaderConfig("group.consumer.min.assignment.interval.ms", topicconfig.KindInt, "0", "lower bound of `group.consumer.assignment.interval.ms`"),
		loaderConfig("group.consumer.max.assignment.interval.ms", topicconfig.KindInt, "15000", "upper bound of `group.consumer.assignment.interval.ms`"),
		loaderConfig("log.retention.minutes", topicconfig.KindInt, "", "`retention.ms` when `log.retention.ms` is not set (minutes win over hours; negative is -1, forever)").shownAs("none"),
		loaderConfig("log.retention.hours", topicconfig.KindInt, "168", "`retention.ms` when neither `log.retention.ms` nor `log.retention.minutes` is set").
			listed(func(b *Broker) (string, bool) {
				v, explicit := topicDefault("retention.ms")(b)
				ms, _ := strconv.ParseInt(v, 10, 64)
				if ms < 0 {
					return "-1", explicit
				}
				return strconv.FormatInt(ms/3600000, 10), explicit
			}),
		loaderConfig("log.roll.hours", topicconfig.KindInt, "168", "`segment.ms` when `log.roll.ms` is not set"),
		loaderConfig("log.roll.jitter.hours", topicconfig.KindInt, "0", "`segment.jitter.ms` when `log.roll.jitter.ms` is not set"),
		loaderConfig("log.flush.scheduler.interval.ms", topicconfig.KindLong, "9223372036854775807", "`flush.ms` when `log.flush.interval.ms` is not set, as in Kafka. Gregor has no flusher thread to schedule: each partition fsyncs when its own `flush.ms` is due (see \"Durability\")"),
		intConfig("num.partitions", "NumPartitions", topicconfig.KindInt, int32(1), 1, math.MaxInt32, "partitions of auto-created topics and of CreateTopics asking for the default", func(c *Config) *int32 { return &c.NumPartitions }),
		intConfig("default.replication.factor", "DefaultReplicationFactor", topicconfig.KindInt, int16(1), 1, math.MaxInt16, "replication factor for the same; above 1 only in cluster mode (a single node refuses it, INVALID_REPLICATION_FACTOR)", func(c *Config) *int16 { return &c.DefaultReplicationFactor }),
		boolConfig("auto.create.topics.enable", "AutoCreateTopics", true, "Metadata for an unknown topic creates it", func(c *Config) **bool { return &c.AutoCreateTopics }),
		intConfig("connections.max.reauth.ms", "ConnectionsMaxReauthMs", topicconfig.KindLong, int64(0), 0, math.MaxInt64, "on a SASL listener, the session lifetime SaslAuthenticate v1+ tells the client (KIP-368); a connection that has not re-authenticated by then is closed when its next request arrives; 0 means sessions do not expire, see [security.md](security.md)", func(c *Config) *int64 { return &c.ConnectionsMaxReauthMs }),
		optionalConfig("connection.failed.authentication.delay.ms", "FailedAuthenticationDelayMs", topicconfig.KindInt, 100, 0, math.MaxInt32, "a failed SASL authentication is answered (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM) and the connection closed after this delay", func(c *Config) **int64 { return &c.FailedAuthenticationDelayMs }),
		intConfig("sasl.server.max.receive.size", "SASLServerMaxReceiveSize", topicconfig.KindInt, int32(524288), 1, math.MaxInt32, "the largest frame a SASL listener reads before authentication completes; a larger one fails the authentication without a response", func(c *Config) *int32 { return &c.SASLServerMaxReceiveSize }),
		loaderConfig("sasl.enabled.mechanisms", topicconfig.KindList, "GSSAPI", "the mechanisms of a SASL listener, listed in that order by SaslHandshake; `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` and `OAUTHBEARER` are served (SCRAM's credentials: `--add-scram` and AlterUserScramCredentials; OAUTHBEARER with Kafka's unsecured or JWKS validator); `GSSAPI` refuses to start (not served yet), so a SASL listener must set it, see [security.md](security.md)"),
		loaderConfig("listener.name.<listener>.scram-sha-256.sasl.jaas.config", topicconfig.KindString, "", "Kafka's `org.apache.kafka.common.security.scram.ScramLoginModule required;` entry (also `scram-sha-512`), which a Kafka broker needs for each SCRAM mechanism; Gregor's server side needs none (SCRAM's credentials are the broker's, see [security.md](security.md#sasl_plaintext-with-scram)); on the inter-broker listener its `username` and `password` options are this node's login to the others when `sasl.mechanism.inter.broker.protocol` is that mechanism").shownAs("none"),
		loaderConfig("ssl.keystore.location", topicconfig.KindString, "", "an SSL or SASL_SSL listener's certificate and key: a `ssl.keystore.type` (`JKS`, the default, `PKCS12` or `PEM`) file, with `ssl.keystore.password` (JKS, PKCS12) and `ssl.key.password`; or inline PEM in `ssl.keystore.key` and `ssl.keystore.certificate.chain`; read at start, and replaceable at run time per listener (`listener.name.<l>.ssl.keystore.location`, ...) by AlterConfigs until restart, see [security.md](security.md#certificates-reloaded)").shownAs("none"),
		loaderConfig("ssl.truststore.location", topicconfig.KindString, "", "the CAs client certificates must chain to (`ssl.truststore.type`, `ssl.truststore.password`, or inline `ssl.truststore.certificates`)").shownAs("none"),
		loaderConfig("ssl.client.auth", topicconfig.KindString, "none", "`none`, `requested` (a certificate is checked if sent) or `required` (a client without a trusted certificate fails the handshake)"),
		loaderConfig("ssl.principal.mapping.rules", topicconfig.KindString, "DEFAULT", "how a client certificate's subject (RFC 2253) becomes the principal's name: `RULE:pattern/replacement/[LU]`, ..., `DEFAULT` (the whole subject), as Kafka's"),
		loaderConfig("listener.name.<listener>.oauthbearer.sasl.jaas.config", topicconfig.KindString, "", "OAUTHBEARER on the SASL listener `<listener>` (lower case): one `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ...;` entry whose `unsecuredValidatorPrincipalClaimName`, `unsecuredValidatorScopeClaimName`, `unsecuredValidatorRequiredScope` and `unsecuredValidatorAllowableClockSkewMs` options configure Kafka's unsecured validator, see [security.md](security.md#sasl_plaintext-with-oauthbearer)").shownAs("none"),
		loaderConfig("listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class", topicconfig.KindClass, "", "the OAUTHBEARER token validator: empty or Kafka's `org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler` (unsigned tokens, for tests); Kafka's `org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler` validates signed tokens against `sasl.oauthbearer.jwks.endpoint.url`; any other class refuses to start, see [security.md](security.md#oauthbearer-with-a-jwks)"),
		loaderConfig("sasl.oauthbearer.jwks.endpoint.url", topicconfig.KindString, "", "the JWKS of Kafka's JWKS validator: an `https`/`http` URL, fetched at start and kept fresh, or a `file:` URL read at start; it must be listed in `org.apache.kafka.sasl.oauthbearer.allowed.urls`. Each `sasl.oauthbearer.*` key is also read as `listener.name.<listener>.oauthbearer.<key>` and `listener.name.<listener>.<key>`, which win, as in Kafka"),
		loaderConfig("sasl.oauthbearer.jwks.endpoint.refresh.ms", topicconfig.KindLong, "3600000", "the interval at which the JWKS is refetched; a token naming a `kid` the keys lack also starts a refetch, once a minute per `kid` at most"),
		loaderConfig("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", topicconfig.KindLong, "100", "the first wait before a failed JWKS refetch is tried again, doubling each time"),
		loaderConfig("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", topicconfig.KindLong, "10000", "how long a failed JWKS refetch is retried; then the keys fetched before are kept"),
		loaderConfig("sasl.oauthbearer.expected.audience", topicconfig.KindList, "", "a signed token's `aud` must hold one of these; unset, a token with an `aud` is refused, as in Kafka"),
		loaderConfig("sasl.oauthbearer.expected.issuer", topicconfig.KindString, "", "the `iss` a signed token must have; unset, any"),
		loaderConfig("sasl.oauthbearer.sub.claim.name", topicconfig.KindString, "sub", "the claim of a signed token that names the principal"),
		loaderConfig("sasl.oauthbearer.scope.claim.name", topicconfig.KindString, "scope", "the scope claim of a signed token"),
		loaderConfig("sasl.oauthbearer.clock.skew.seconds", topicconfig.KindInt, "30", "the clock skew allowed on a signed token's `exp` and `nbf`"),
		loaderConfig("org.apache.kafka.sasl.oauthbearer.allowed.urls", topicconfig.KindList, "", "Kafka 4.x's system property of that name, a key here: the URLs `sasl.oauthbearer.jwks.endpoint.url` may be, exactly; empty (the default, as in Kafka 4.x) allows none").unlisted(),
		loaderConfig("listener.name.<listener>.plain.sasl.jaas.config", topicconfig.KindString, "", "the PLAIN users of the SASL listener `<listener>` (lower case): one `org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME=\"password\" ...;` entry, Kafka's JAAS syntax; an unprefixed `sasl.jaas.config` is ignored with a warning, as Kafka ignores it on a broker").shownAs("none"),
		intConfig("socket.request.max.bytes", "MaxFrameBytes", topicconfig.KindInt, int32(protocol.DefaultMaxFrameBytes), 1, math.MaxInt32, "a larger request closes the connection", func(c *Config) *int32 { return &c.MaxFrameBytes }),
		optionalConfig("queued.max.request.bytes", "QueuedMaxRequestBytes", topicconfig.KindLong, -1, math.MinInt64, math.MaxInt64, "the bytes of requests read and not yet answered, over all connections; a connection whose next request does not fit is not read until others are answered, as Kafka's memory pool mutes it, and as in Kafka one request may take the pool past the bound while anything is left, and a request reserves the size its frame claims; -1 (or any value <= 0) is no bound. Whatever this is, a frame's buffer grows only as its bytes arrive, and one connection has at most 16 MiB of requests read ahead (a larger request alone)", func(c *Config) **int64 { return &c.QueuedMaxRequestBytes }),
		intConfig("gregor.message.max.uncompressed.bytes", "MaxUncompressedBytes", topicconfig.KindInt, int32(batch.DefaultMaxUncompressed), 1, math.MaxInt32, "Gregor's own key, which DescribeConfigs does not list: the most a produced batch's records may decompress to; a larger one is INVALID_RECORD. Kafka has no such bound. A compressed batch is checked as it decompresses, holding a window of 4 MiB and the codec's state rather than its records, by one of a few decoder sets the connections share (one per core, at least two): a batch that finds them all busy waits", func(c *Config) *int32 { return &c.MaxUncompressedBytes }).unlisted(),
		optionalConfig("max.connections", "MaxConnections", topicconfig.KindInt, maxConnectionsDefault, 0, math.MaxInt32, "client connections open at once: at the limit no more are accepted (they wait in the listen backlog) until one closes", func(c *Config) **int64 { return &c.MaxConnections }),
		optionalConfig("max.connections.per.ip", "MaxConnectionsPerIP", topicconfig.KindInt, maxConnectionsDefault, 0, math.MaxInt32, "connections from one address: one more is closed as soon as it is accepted; 0 only with `max.connections.per.ip.overrides`", func(c *Config) **int64 { return &c.MaxConnectionsPerIP }),
		stringConfig("max.connections.per.ip.overrides", "MaxConnectionsPerIPOverrides", "other per-address limits, `host:count,host:count` (hosts resolved at start)", func(c *Config) *string { return &c.MaxConnectionsPerIPOverrides }),
		optionalConfig("connections.max.idle.ms", "ConnectionsMaxIdleMs", topicconfig.KindLong, defaultIdleMillis, math.MinInt64, math.MaxInt64, "a connection with no request in flight and no traffic for this long is closed; negative never", func(c *Config) **int64 { return &c.ConnectionsMaxIdleMs }),
		intConfig("offsets.topic.num.partitions", "OffsetsTopicPartitions", topicconfig.KindInt, int32(50), 1, math.MaxInt32, "partitions of `__consumer_offsets` when first created", func(c *Config) *int32 { return &c.OffsetsTopicPartitions }),
		intConfig("offsets.topic.replication.factor", "OffsetsTopicReplicationFactor", topicconfig.KindShort, int16(3), 1, math.MaxInt16, "cluster mode: replicas of `__consumer_offsets` when first created; with fewer unfenced brokers FindCoordinator answers COORDINATOR_NOT_AVAILABLE (a single node always uses 1)", func(c *Config) *int16 { return &c.OffsetsTopicReplicationFactor }),
		optionalConfig("group.initial.rebalance.delay.ms", "GroupInitialRebalanceDelayMs", topicconfig.KindInt, 3000, 0, math.MaxInt32, "delay before the first rebalance of an empty group", func(c *Config) **int64 { return &c.GroupInitialRebalanceDelayMs }),
		intConfig("group.min.session.timeout.ms", "GroupMinSessionTimeoutMs", topicconfig.KindInt, int32(6000), 1, math.MaxInt32, "shortest session timeout a member may ask for", func(c *Config) *int32 { return &c.GroupMinSessionTimeoutMs }),
		intConfig("group.max.session.timeout.ms", "GroupMaxSessionTimeoutMs", topicconfig.KindInt, int32(1800000), 1, math.MaxInt32, "longest session timeout a member may ask for", func(c *Config) *int32 { return &c.GroupMaxSessionTimeoutMs }),
		intConfig("group.max.size", "GroupMaxSize", topicconfig.KindInt, int(2147483647), 1, math.MaxInt32, "members a group may hold (the default is no limit in practice)", func(c *Config) *int { return &c.GroupMaxSize }),
		intConfig("offsets.retention.minutes", "OffsetsRetentionMinutes", topicconfig.KindInt, int64(10080), 1, math.MaxInt32, "how long committed offsets of an empty group are kept", func(c *Config) *int64 { return &c.OffsetsRetentionMinutes }),
		intConfig("group.consumer.session.timeout.ms", "GroupConsumerSessionTimeoutMs", topicconfig.KindInt, int32(45000), 1, math.MaxInt32, "a KIP-848 consumer group member silent this long is fenced", func(c *Config) *int32 { return &c.GroupConsumerSessionTimeoutMs }),
		intConfig("group.consumer.heartbeat.interval.ms", "GroupConsumerHeartbeatIntervalMs", topicconfig.KindInt, int32(5000), 1, math.MaxInt32, "heartbeat interval told to KIP-848 consumer group members", func(c *Config) *int32 { return &c.GroupConsumerHeartbeatIntervalMs }),
		intConfig("group.consumer.max.size", "GroupConsumerMaxSize", topicconfig.KindInt, int(2147483647), 1, math.MaxInt32, "members a KIP-848 consumer group may hold (the default is no limit in practice)", func(c *Config) *int { return &c.GroupConsumerMaxSize }),
		optionalConfig("group.consumer.assignment.interval.ms", "GroupConsumerAssignmentIntervalMs", topicconfig.KindInt, 1000, 0, math.MaxInt32, "a KIP-848 consumer group's target assignment is computed at most once per interval (Kafka 4.3+); `0` computes it at the heartbeat that needs it", func(c *Config) **int64 { return &c.GroupConsumerAssignmentIntervalMs }),
		boolConfig("group.consumer.assignor.offload.enable", "GroupConsumerAssignorOffloadEnable", true, "the assignor runs off the heartbeat path: the heartbeat that starts a computation is answered with the previous target, the result lands at the coordinator's next tick (Kafka 4.3+)", func(c *Config) **bool { return &c.GroupConsumerAssignorOffloadEnable }),
		intConfig("transaction.state.log.num.partitions", "TransactionStateLogNumPartitions", topicconfig.KindInt, int32(50), 1, math.MaxInt32, "partitions of `__transaction_state` when first created", func(c *Config) *int32 { return &c.TransactionStateLogNumPartitions }),
		intConfig("transaction.state.log.replication.factor", "TransactionStateLogReplicationFactor", topicconfig.KindShort, int16(3), 1, math.MaxInt16, "cluster mode: replicas of `__transaction_state` when first created, as `offsets.topic.replication.factor` (a single node always uses 1)", func(c *Config) *int16 { return &c.TransactionStateLogReplicationFactor }),
		intConfig("transaction.state.log.min.isr", "TransactionStateLogMinISR", topicconfig.KindInt, int32(2), 1, math.MaxInt32, "cluster mode: `min.insync.replicas` of `__transaction_state` when first created; below it transaction state changes are COORDINATOR_NOT_AVAILABLE", func(c *Config) *int32 { return &c.TransactionStateLogMinISR }),
		intConfig("add.partitions.to.txn.retry.backoff.ms", "AddPartitionsToTxnRetryBackoffMs", topicconfig.KindInt, int64(20), 1, math.MaxInt32, "how long a transactions V2 produce waits before asking the transaction coordinator again to add its partition while the previous transaction completes", func(c *Config) *int64 { return &c.AddPartitionsToTxnRetryBackoffMs }),
		optionalConfig("add.partitions.to.txn.retry.backoff.max.ms", "AddPartitionsToTxnRetryBackoffMaxMs", topicconfig.KindInt, 100, 0, math.MaxInt32, "how long such a produce keeps asking (from its first question, at most 30 s) before it answers CONCURRENT_TRANSACTIONS; `0` answers at once", func(c *Config) **int64 { return &c.AddPartitionsToTxnRetryBackoffMaxMs }),
		intConfig("transaction.max.timeout.ms", "TransactionMaxTimeoutMs", topicconfig.KindInt, int32(900000), 1, math.MaxInt32, "longest transaction timeout a producer may ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it)", func(c *Config) *int32 { return &c.TransactionMaxTimeoutMs }),
		intConfig("transaction.abort.timed.out.transaction.cleanup.interval.ms", "TransactionAbortTimedOutTransactionCleanupIntervalMs", topicconfig.KindInt, int64(10000), 1, math.MaxInt32, "how often transactions running past their timeout are aborted (their producer is fenced: the epoch is bumped)", func(c *Config) *int64 { return &c.TransactionAbortTimedOutTransactionCleanupIntervalMs }),
		intConfig("transactional.id.expiration.ms", "TransactionalIDExpirationMs", topicconfig.KindInt, int64(604800000), 1, math.MaxInt32, "a transactional id with no transaction in progress and no update for this long is removed", func(c *Config) *int64 { return &c.TransactionalIDExpirationMs }),
		intConfig("transaction.remove.expired.transaction.cleanup.interval.ms", "TransactionRemoveExpiredTransactionCleanupIntervalMs", topicconfig.KindInt, int64(3600000), 1, math.MaxInt32, "how often transactional ids are checked against `transactional.id.expiration.ms`", func(c *Config) *int64 { return &c.TransactionRemoveExpiredTransactionCleanupIntervalMs }),
		intConfig("log.retention.check.interval.ms", "LogRetentionCheckIntervalMs", topicconfig.KindLong, int64(300000), 1, math.MaxInt64, "how often every partition's segments are checked against `retention.ms`, `retention.bytes` and the log start offset", func(c *Config) *int64 { return &c.LogRetentionCheckIntervalMs }),
		boolConfig("log.cleaner.enable", "LogCleanerEnable", true, "run the log cleaner, which compacts topics whose `cleanup.policy` includes `compact`", func(c *Config) **bool { return &c.LogCleanerEnable }),
		intConfig("log.cleaner.threads", "LogCleanerThreads", topicconfig.KindInt, int(1), 0, 1024, "cleaner goroutines; each cleans one log at a time; `0` runs none, as in Kafka", func(c *Config) *int { return &c.LogCleanerThreads }),
		intConfig("log.cleaner.backoff.ms", "LogCleanerBackoffMs", topicconfig.KindLong, int64(15000), 1, math.MaxInt64, "how long an idle cleaner thread sleeps before looking for a dirty log again", func(c *Config) *int64 { return &c.LogCleanerBackoffMs }),
		intConfig("log.cleaner.dedupe.buffer.size", "LogCleanerDedupeBufferSize", topicconfig.KindLong, int64(134217728), 1, math.MaxInt64, "memory for the cleaners' key maps, shared by the threads: a thread indexes as many keys per round as Kafka's map of its share holds (24 bytes a key, 0.9 load); a round that fills it cleans up to there and the next goes on", func(c *Config) *int64 { return &c.LogCleanerDedupeBufferSize }),
		intConfig("quota.window.num", "QuotaWindowNum", topicconfig.KindInt, int(11), 1, math.MaxInt32, "samples a client's rate is measured over, for `producer_byte_rate`, `consumer_byte_rate` and `connection_creation_rate` ([Client quotas](#client-quotas))", func(c *Config) *int { return &c.QuotaWindowNum }),
		intConfig("quota.window.size.seconds", "QuotaWindowSizeSeconds", topicconfig.KindInt, int(1), 1, math.MaxInt32, "length of each of those samples", func(c *Config) *int { return &c.QuotaWindowSizeSeconds }),
		intConfig("replication.quota.window.num", "ReplicationQuotaWindowNum", topicconfig.KindInt, int(11), 1, math.MaxInt32, "samples a replication throttle's rate is measured over ([Replication throttles](#replication-throttles))", func(c *Config) *int { return &c.ReplicationQuotaWindowNum }),
		intConfig("replication.quota.window.size.seconds", "ReplicationQuotaWindowSizeSeconds", topicconfig.KindInt, int(1), 1, math.MaxInt32, "length of each of those samples", func(c *Config) *int { return &c.ReplicationQuotaWindowSizeSeconds }),
		intConfig("broker.session.timeout.ms", "BrokerSessionTimeoutMs", topicconfig.KindInt, int64(9000), 1, math.MaxInt32, "cluster mode: a broker that has not heartbeated the active controller for this long is fenced", func(c *Config) *int64 { return &c.BrokerSessionTimeoutMs }),
		intConfig("broker.heartbeat.interval.ms", "BrokerHeartbeatIntervalMs", topicconfig.KindInt, int64(2000), 1, math.MaxInt32, "cluster mode: how often a broker heartbeats the active controller", func(c *Config) *int64 { return &c.BrokerHeartbeatIntervalMs }),
		intConfig("replica.lag.time.max.ms", "ReplicaLagTimeMaxMs", topicconfig.KindLong, int64(30000), 1, math.MaxInt32, "cluster mode: a follower that has not caught up with the leader's log end for this long leaves the ISR (checked every half of it)", func(c *Config) *int64 { return &c.ReplicaLagTimeMaxMs }),
		intConfig("replica.fetch.wait.max.ms", "ReplicaFetchWaitMaxMs", topicconfig.KindInt, int32(500), 1, math.MaxInt32, "cluster mode: how long a follower's fetch waits at the leader for data", func(c *Config) *int32 { return &c.ReplicaFetchWaitMaxMs }),
		intConfig("replica.fetch.min.bytes", "ReplicaFetchMinBytes", topicconfig.KindInt, int32(1), 1, math.MaxInt32, "cluster mode: bytes a follower's fetch waits for", func(c *Config) *int32 { return &c.ReplicaFetchMinBytes }),
		intConfig("replica.fetch.max.bytes", "ReplicaFetchMaxBytes", topicconfig.KindInt, int32(1048576), 1, math.MaxInt32, "cluster mode: bytes a follower fetches per partition per round (the first batch comes whole even if larger)", func(c *Config) *int32 { return &c.ReplicaFetchMaxBytes }),
		intConfig("replica.fetch.response.max.bytes", "ReplicaFetchResponseMaxBytes", topicconfig.KindInt, int32(10485760), 1, math.MaxInt32, "cluster mode: bytes a follower's fetch response may hold", func(c *Config) *int32 { return &c.ReplicaFetchResponseMaxBytes }),
		intConfig("replica.fetch.backoff.ms", "ReplicaFetchBackoffMs", topicconfig.KindInt, int64(1000), 1, math.MaxInt32, "cluster mode: how long a follower waits after a failed fetch before fetching that partition (or from that leader) again", func(c *Config) *int64 { return &c.ReplicaFetchBackoffMs }),
		intConfig("replica.high.watermark.checkpoint.interval.ms", "ReplicaHighWatermarkCheckpointIntervalMs", topicconfig.KindLong, int64(5000), 1, math.MaxInt32, "cluster mode: how often each partition's high watermark is checkpointed (also at shutdown)", func(c *Config) *int64 { return &c.ReplicaHighWatermarkCheckpointIntervalMs }),
	}
	// Every broker synonym of a topic config sets that config's
	// broker-wide default (Config.TopicDefaults); the topic config table
	// has its type and default.
	for _, d := range topicconfig.Defs() {
		name, ok := topicconfig.BrokerSynonym(d.Name)
		if !ok {
			continue
		}
		c := loaderConfig(name, d.Kind, d.Default, "the broker-wide default of the topic config `"+d.Name+"`")
		if !topicconfig.HasBrokerDefault(name) {
			c.Default, c.NullDefault = "", true
		}
		t = append(t, c.listed(topicDefault(d.Name)))
	}
	for i := range t {
		t[i].Type = kindNames[t[i].kind]
	}
	return t
}()

var brokerConfigByName = func() map[string]*BrokerConfig {
	m := make(map[string]*BrokerConfig, len(brokerConfigTable))
	for i := range brokerConfigTable {
		m[brokerConfigTable[i].Name] = &brokerConfigTable[i]
	}
	return m
}()

// fillDefaults sets every table config the Config leaves unset to Kafka's
// default.
func (c *Config) fillDefaults() {
	for _, k := range brokerConfigTable {
		if k.fill != nil {
			k.fill(c)
		}
	}
}

// topicDefault reports the broker-level value of a topic config.
func topicDefault(topicConfig string) func(*Broker) (string, bool) {
	return func(b *Broker) (string, bool) {
		if v, ok := b.cfg.TopicDefaults[topicConfig]; ok {
			return v, true
		}
		return topicconfig.Lookup(topicConfig).Default, false
	}
}

// markdownLink matches [text](target), which DescribeConfigs reports as
// text.
var markdownLink = regexp.MustCompile(`\[([^\]]+)\]\([^)]+\)`)

// wireDoc is Doc as DescribeConfigs reports it: plain text, one sentence
// or more, capitalised and ended with a full stop.
func (c *BrokerConfig) wireDoc() string {
	s := strings.ReplaceAll(markdownLink.ReplaceAllString(c.Doc, "$1"), "`", "")
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
		if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, ")") {
			s += "."
		}
	}
	return s
}

// brokerConfigs lists this node's broker configs as DescribeConfigs
// reports them: read-only, STATIC_BROKER_CONFIG when set (with the default
// as a second synonym) and DEFAULT_CONFIG otherwise; a config whose default
// is null is listed unset with a null value and no synonym, as Kafka's
// ConfigHelper lists it.
func (b *Broker) brokerConfigs() []describedConfig {
	out := make([]describedConfig, 0, len(brokerConfigTable))
	for i := range brokerConfigTable {
		c := &brokerConfigTable[i]
		if !c.Listed() {
			continue
		}
		v, explicit := c.current(b)
		dc := describedConfig{name: c.Name, value: v, source: topicconfig.SourceDefault, readOnly: true, kind: c.kind, doc: c.wireDoc(),
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}}
		if explicit {
			dc.source = topicconfig.SourceStaticBroker
		}
		switch {
		case c.NullDefault && !explicit:
			// Unset, a config without a default is null, with no synonym,
			// even where Gregor derives what is in effect from another
			// setting (advertised.listeners, log.retention.ms), as Kafka
			// reports it.
			dc.null = true
		case explicit && !c.NullDefault:
			// Kafka lists the default under the set value.
			dc.synonyms = append(dc.synonyms, synonym(c.Name, v, dc.source), synonym(c.Name, c.Default, topicconfig.SourceDefault))
		default:
			dc.synonyms = append(dc.synonyms, synonym(c.Name, v, dc.source))
		}
		out = append(out, dc)
	}
	return out
}

// RenderBrokerConfigDocs renders the table as docs/configuration.md lists
// it: one markdown table row per key.
func RenderBrokerConfigDocs() string {
	var sb strings.Builder
	sb.WriteString("| key | default | meaning |\n| --- | --- | --- |\n")
	for _, c := range brokerConfigTable {
		if c.Field == "" && c.parse == nil && strings.HasPrefix(c.Doc, "the broker-wide default of the topic config") {
			continue
		}
		def := c.docDefault
		if def == "" {
			def = "`" + c.Default + "`"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", c.Name, def, c.Doc)
	}
	sb.WriteString("| every broker synonym of a topic config | Kafka's | the broker-wide default of that topic config (table below), validated as the topic config is |\n")
	sb.WriteString("\nThe broker synonyms and the topic config each sets (Kafka's ServerTopicConfigSynonyms; DescribeConfigs\nreports a value set this way with source `STATIC_BROKER_CONFIG`):\n\n")
	sb.WriteString("| broker config | topic config |\n| --- | --- |\n")
	for _, d := range topicconfig.Defs() {
		if name, ok := topicconfig.BrokerSynonym(d.Name); ok {
			fmt.Fprintf(&sb, "| `%s` | `%s` |\n", name, d.Name)
		}
	}
	return sb.String()
}

// listenersValue is the listeners (advertised: advertised.listeners) as
// DescribeConfigs shows them, NAME://host:port for each.
func (b *Broker) listenersValue(advertised bool) string {
	parts := make([]string, len(b.listeners))
	for i, l := range b.listeners {
		addr := l.ln.Addr().String()
		if advertised {
			addr = l.advertisedAddr()
		}
		parts[i] = l.cfg.Name + "://" + addr
	}
	return strings.Join(parts, ",")
}

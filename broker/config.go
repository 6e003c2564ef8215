package broker

import (
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/broker/replication"
	"github.com/gregor-broker/gregor/broker/security/ssl"
	"github.com/gregor-broker/gregor/vfs"
)

// Config configures a broker. The zero value is usable: it listens on a
// random loopback port and keeps its data in memory.
type Config struct {
	// Listen is the address to listen on. Default "127.0.0.1:0" (random port).
	Listen string
	// Advertise is the host:port clients are told to connect to. Default: the
	// address the listener got.
	Advertise string
	// DataDir holds the partition logs and the topic metadata. Empty means an
	// in-memory store that vanishes on Close.
	DataDir string
	// NodeID is this broker's node.id (0 is a valid id, as in Kafka).
	NodeID int32
	// MaxFrameBytes is socket.request.max.bytes: larger requests close the
	// connection before anything is allocated for them. Default 100 MiB.
	MaxFrameBytes int32
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// requests read and not yet answered, over all connections, before
	// no more are read (request_memory.go); <= 0 (the default, -1, as in
	// Kafka) is no bound.
	QueuedMaxRequestBytes *int64
	// MaxUncompressedBytes is gregor.message.max.uncompressed.bytes: the
	// most a produced batch's records may decompress to (more is
	// INVALID_RECORD). Default 256 MiB.
	MaxUncompressedBytes int32
	// MaxConnections is max.connections: with that many client
	// connections open, no more are accepted until one closes.
	MaxConnections *int64
	// MaxConnectionsPerIP is max.connections.per.ip: a connection from an
	// address that already has that many is closed at once;
	// MaxConnectionsPerIPOverrides (max.connections.per.ip.overrides,
	// "host:count,...") sets other limits for some hosts.
	MaxConnectionsPerIP          *int64
	MaxConnectionsPerIPOverrides string
	// ConnectionsMaxIdleMs is connections.max.idle.ms: a connection with
	// nothing in flight and no traffic for that long is closed; negative
	// never. Default 600000 (10 minutes), as Kafka.
	ConnectionsMaxIdleMs *int64
	// Security of the Kafka listener (docs/security.md). Listen,
	// Advertise, ListenerName, SecurityProtocol and the SSL and SASL
	// fields below are the one-listener shorthand: with Listeners empty
	// they make its only listener; with Listeners set they are ignored,
	// all but the broker-wide ConnectionsMaxReauthMs,
	// FailedAuthenticationDelayMs, AddScram and SASLServerMaxReceiveSize.

	// Listeners are the Kafka listeners (listeners, advertised.listeners,
	// listener.security.protocol.map and listener.name.<name>.*), each
	// bound and served with its own security. Empty means the single
	// listener the shorthand fields describe.
	Listeners []ListenerConfig
	// InterBrokerListenerName is inter.broker.listener.name: the listener
	// other brokers reach this one on (replica fetches, forwarding,
	// transaction peers). Default: the PLAINTEXT listener named
	// PLAINTEXT, else the first PLAINTEXT listener, else the first. In
	// cluster mode this node's connections to the others (the replica
	// fetchers, the controller calls, forwarding, the transaction peers)
	// dial it with its security: TLS with its ssl.* stores, SASL with
	// InterBrokerSASLMechanism and the login in its JAAS configs.
	InterBrokerListenerName string
	// InterBrokerSASLMechanism is sasl.mechanism.inter.broker.protocol:
	// the mechanism this node logs in to the others' inter-broker listener
	// with when it is SASL_PLAINTEXT or SASL_SSL; it must be one of the
	// listener's enabled mechanisms. Default GSSAPI, as Kafka's (which
	// Gregor does not serve): PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are.
	// The login is the username and password options of the listener's
	// JAAS config for it (SASLPlainJAASConfig, SASLJAASConfigs).
	InterBrokerSASLMechanism string

	// ListenerName is the served listener's name (listeners' NAME://),
	// used in messages as Kafka uses it. Default: SecurityProtocol.
	ListenerName string
	// SecurityProtocol is the listener's security protocol: PLAINTEXT
	// (also the default), SASL_PLAINTEXT, SSL or SASL_SSL.
	SecurityProtocol string
	// SSL is the TLS configuration of an SSL or SASL_SSL listener: its
	// ssl.* keys, listener.name.<listener>.ssl.* over ssl.*, as package
	// ssl's Parse reads them. Ignored on other listeners. Its passwords
	// and inline keys are ssl.Secrets, which never print.
	SSL *ssl.Settings
	// SSLPrincipalMappingRules is the listener's
	// ssl.principal.mapping.rules: how a client certificate's subject
	// becomes the principal's name. Empty means DEFAULT (the whole
	// subject, in RFC 2253 form).
	SSLPrincipalMappingRules string
	// SASLEnabledMechanisms is sasl.enabled.mechanisms on a SASL
	// listener. Nil means Kafka's default, GSSAPI, which is not served:
	// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are.
	SASLEnabledMechanisms []string
	// SASLPlainJAASConfig is the listener's
	// listener.name.<name>.plain.sasl.jaas.config, whose
	// PlainLoginModule user_NAME="password" options are the PLAIN users.
	// It holds secrets: never log it.
	SASLPlainJAASConfig string
	// SASLJAASConfigs are the listener's other
	// listener.name.<name>.<mechanism>.sasl.jaas.config values, by
	// mechanism name (SCRAM-SHA-256, SCRAM-SHA-512). The server side does
	// not read them (SCRAM's credentials are the broker's); on the
	// inter-broker listener, the username and password options of
	// InterBrokerSASLMechanism's entry are this node's login to the
	// others. They hold secrets: never log them.
	SASLJAASConfigs map[string]string
	// OAuthBearer is the listener's OAUTHBEARER configuration.
	OAuthBearer OAuthBearerConfig
	// ConnectionsMaxReauthMs is connections.max.reauth.ms: when above 0,
	// a SASL session lasts that long; the client must re-authenticate
	// (KIP-368) or its connection is closed at its next request.
	ConnectionsMaxReauthMs int64
	// FailedAuthenticationDelayMs is
	// connection.failed.authentication.delay.ms: a failed authentication
	// is answered and closed after this delay. Nil means Kafka's 100.
	FailedAuthenticationDelayMs *int64
	// AddScram are `gregor serve --add-scram` arguments, Kafka's
	// kafka-storage format --add-scram syntax
	// ('SCRAM-SHA-512=[name=alice,password=alice-secret]'): each creates
	// a user's SCRAM credential at start, unless the user has one for that
	// mechanism already. In cluster mode they seed a new cluster's
	// metadata log, as kafka-storage format --add-scram does: the first
	// active controller writes them with the cluster id, and a log that
	// has one never takes them again. They hold passwords: never log them.
	AddScram []string
	// SASLServerMaxReceiveSize is sasl.server.max.receive.size: the
	// largest frame read before authentication completes. Default 524288.
	SASLServerMaxReceiveSize int32

	// AutoCreateTopics is auto.create.topics.enable. Nil means true.
	AutoCreateTopics *bool
	// NumPartitions is num.partitions, used for auto-created topics and for
	// CreateTopics requests that ask for the default. Default 1.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor. Default 1.
	DefaultReplicationFactor int16
	// TopicDefaults overrides the broker-wide defaults of topic configs, by
	// topic config name (for example "max.message.bytes": "2097152").
	TopicDefaults map[string]string
	// Logger receives the broker's logs. Default slog.Default().
	Logger *slog.Logger
	// FS is the file system DataDir is on. Nil means the operating
	// system's, or an in-memory one when DataDir is empty. Tests set a
	// vfs.FaultFS or a vfs.MemFS (whose CrashClone shows what a power loss
	// would leave) to inject disk faults.
	FS vfs.FS

	// Group coordinator settings (broker/groups.go), Kafka's names.

	// OffsetsTopicPartitions is offsets.topic.num.partitions, used when
	// __consumer_offsets is created. Default 50.
	OffsetsTopicPartitions int32
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor,
	// the replication factor of __consumer_offsets in cluster mode (a
	// single node always creates it with one replica). Until that many
	// brokers are registered and unfenced the topic cannot be created and
	// FindCoordinator answers COORDINATOR_NOT_AVAILABLE, as Kafka. Default 3.
	OffsetsTopicReplicationFactor int16
	// GroupInitialRebalanceDelayMs is group.initial.rebalance.delay.ms.
	// Nil means Kafka's 3000; tests set 0.
	GroupInitialRebalanceDelayMs *int64
	// GroupMinSessionTimeoutMs and GroupMaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	// Defaults 6000 and 1800000.
	GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs int32
	// GroupMaxSize is group.max.size. Default unlimited.
	GroupMaxSize int
	// OffsetsRetentionMinutes is offsets.retention.minutes. Default 10080.
	OffsetsRetentionMinutes int64
	// GroupConsumerSessionTimeoutMs is group.consumer.session.timeout.ms,
	// the session timeout of KIP-848 consumer group members. Default 45000.
	GroupConsumerSessionTimeoutMs int32
	// GroupConsumerHeartbeatIntervalMs is
	// group.consumer.heartbeat.interval.ms. Default 5000.
	GroupConsumerHeartbeatIntervalMs int32
	// GroupConsumerMaxSize is group.consumer.max.size. Default unlimited.
	GroupConsumerMaxSize int
	// GroupConsumerAssignors is group.consumer.assignors: "uniform" and/or
	// "range", the first being the default. Default uniform,range.
	GroupConsumerAssignors []string
	// GroupConsumerAssignmentIntervalMs is
	// group.consumer.assignment.interval.ms (Kafka 4.3+): a consumer
	// group's target assignment is computed at most once per interval. Nil
	// means Kafka's 1000; 0 computes it at the heartbeat that needs it.
	GroupConsumerAssignmentIntervalMs *int64
	// GroupConsumerAssignorOffloadEnable is
	// group.consumer.assignor.offload.enable (Kafka 4.3+): the heartbeat
	// that starts a target computation is answered before it lands. Nil
	// means Kafka's true.
	GroupConsumerAssignorOffloadEnable *bool

	// Transaction coordinator settings (broker/txns.go), Kafka's names.

	// TransactionStateLogNumPartitions is
	// transaction.state.log.num.partitions, used when __transaction_state
	// is created. Default 50.
	TransactionStateLogNumPartitions int32
	// TransactionStateLogReplicationFactor is
	// transaction.state.log.replication.factor, the replication factor of
	// __transaction_state in cluster mode, as OffsetsTopicReplicationFactor
	// for __consumer_offsets. Default 3.
	TransactionStateLogReplicationFactor int16
	// TransactionStateLogMinISR is transaction.state.log.min.isr, the
	// min.insync.replicas of __transaction_state in cluster mode. Default 2.
	TransactionStateLogMinISR int32
	// AddPartitionsToTxnRetryBackoffMs is
	// add.partitions.to.txn.retry.backoff.ms: how long a transactions V2
	// produce waits before asking the transaction coordinator again to add
	// its partition after CONCURRENT_TRANSACTIONS. Default 20.
	AddPartitionsToTxnRetryBackoffMs int64
	// AddPartitionsToTxnRetryBackoffMaxMs is
	// add.partitions.to.txn.retry.backoff.max.ms: how long, from its first
	// question, such a produce keeps asking before it answers the client
	// CONCURRENT_TRANSACTIONS (at most the 30 s request timeout; 0: it
	// answers at once). Default 100.
	AddPartitionsToTxnRetryBackoffMaxMs *int64
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms: a longer
	// transaction timeout is INVALID_TRANSACTION_TIMEOUT. Default 900000.
	TransactionMaxTimeoutMs int32
	// TransactionAbortTimedOutTransactionCleanupIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
	// transactions past their timeout are aborted. Default 10000.
	TransactionAbortTimedOutTransactionCleanupIntervalMs int64
	// TransactionalIDExpirationMs is transactional.id.expiration.ms: how
	// long an idle transactional id is kept. Default 604800000 (7 days).
	TransactionalIDExpirationMs int64
	// TransactionRemoveExpiredTransactionCleanupIntervalMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms: how often
	// idle transactional ids are looked for. Default 3600000.
	TransactionRemoveExpiredTransactionCleanupIntervalMs int64

	// fs, if set, replaces the data directory's file system: a test seam
	// for vfs.FaultFS. With DataDir empty the root is "/gregor".
	fs vfs.FS

	// Log retention and compaction (logmanager.go), Kafka's names.

	// LogRetentionCheckIntervalMs is log.retention.check.interval.ms: how
	// often segments are checked against retention.ms, retention.bytes and
	// the log start offset. Default 300000.
	LogRetentionCheckIntervalMs int64
	// LogCleanerEnable is log.cleaner.enable. Nil means true.
	LogCleanerEnable *bool
	// LogCleanerThreads is log.cleaner.threads. Default 1.
	LogCleanerThreads int
	// LogCleanerBackoffMs is log.cleaner.backoff.ms: how long a cleaner
	// thread sleeps when no log needs cleaning. Default 15000.
	LogCleanerBackoffMs int64
	// LogCleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size: the
	// memory for the cleaners' key maps, shared by the threads; a thread's
	// map holds as many keys as Kafka's (24 bytes a key, 0.9 load factor).
	// Default 134217728.
	LogCleanerDedupeBufferSize int64

	// Client quota windows (throttle.go), Kafka's names.

	// QuotaWindowNum is quota.window.num: how many samples a client's byte
	// rate is measured over. Default 11.
	QuotaWindowNum int
	// QuotaWindowSizeSeconds is quota.window.size.seconds: the length of
	// each sample. Default 1.
	QuotaWindowSizeSeconds int
	// ReplicationQuotaWindowNum is replication.quota.window.num: how many
	// samples a replication throttle's rate is measured over
	// (replication_throttle.go). Default 11.
	ReplicationQuotaWindowNum int
	// ReplicationQuotaWindowSizeSeconds is
	// replication.quota.window.size.seconds: the length of each sample.
	// Default 1.
	ReplicationQuotaWindowSizeSeconds int

	// HTTPListen is the address of the HTTP listener serving /metrics,
	// /healthz and /readyz (docs/operations.md), for example
	// "127.0.0.1:9644" or "127.0.0.1:0" for a random port (see
	// Broker.HTTPAddr). Empty, the default, serves no HTTP.
	HTTPListen string
	// HTTPListenIsDefault says HTTPListen is a default nobody asked for:
	// when its port is taken (another broker on the machine holds it), the
	// HTTP listener opens on a free port of the same host, with a
	// warning, instead of failing the start. gregor serve sets it when
	// --http-listen is not given; an address asked for still fails loudly.
	HTTPListenIsDefault bool

	// Cluster mode (cluster.go, docs/operations.md), Kafka's names. With
	// ControllerQuorumVoters empty, the default, the broker is a single
	// node that needs no quorum.

	// ControllerQuorumVoters is controller.quorum.voters, for example
	// "1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194": the static
	// voters of the metadata quorum. Set, the node runs in combined mode
	// (process.roles=broker,controller): a voter and a broker, NodeID
	// being one of the voters.
	ControllerQuorumVoters string
	// ControllerListen is the address the controller listener (the raft
	// transport) binds. Default: this node's address in
	// ControllerQuorumVoters.
	ControllerListen string
	// BrokerSessionTimeoutMs is broker.session.timeout.ms: a broker that
	// has not heartbeated the active controller for that long is fenced.
	// Default 9000.
	BrokerSessionTimeoutMs int64
	// BrokerHeartbeatIntervalMs is broker.heartbeat.interval.ms. Default
	// 2000.
	BrokerHeartbeatIntervalMs int64
	// BrokerRack is broker.rack: the rack this broker is in, registered
	// with the controller (rack-aware replica placement) and listed in
	// Metadata and DescribeCluster. Default none.
	BrokerRack string
	// ReplicaSelectorClass is replica.selector.class (KIP-392): ""
	// (Kafka's default: consumers fetch from partition leaders only) or
	// RackAwareReplicaSelector, with which a leader points a consumer
	// that names its rack to an in-sync replica in that rack
	// (fetch_follower.go).
	ReplicaSelectorClass string
	// ProcessRoles is process.roles in cluster mode: "broker,controller"
	// (the default: a voter and a broker) or "broker", a broker-only node
	// whose NodeID must not be a voter. A broker-only node observes the
	// quorum as a raft learner: ControllerListen (required) is the raft
	// address the voters push the metadata log to (cluster_observer.go).
	ProcessRoles string
	// ControlledShutdownEnable is controlled.shutdown.enable (default true):
	// in cluster mode Close first asks the active controller to move this
	// broker's leaderships (KIP-631), waiting at most
	// ControlledShutdownTimeout (default 30s; no Kafka key).
	ControlledShutdownEnable  *bool
	ControlledShutdownTimeout time.Duration

	// Settings is replication's replica.* keys (cluster mode,
	// partition/replica.go and replication/fetcher.go), Kafka's names and
	// defaults; replication.Config carries the same value.
	replication.Settings

	// controllerListener, if set, is the controller listener already bound
	// (tests bind every voter's port before any node starts).
	controllerListener net.Listener

	// testHooks lets tests act at points of the broker's life.
	testHooks struct {
		wrapListener func(net.Listener) net.Listener // wraps the Kafka listener once bound
		shareGroups  bool                            // serves and advertises the share group keys (share_groups.go)
		beforeLoad   func(*Broker)                   // in Start, after the HTTP listener opens, before the logs load
		// replicaFetch runs before each round of a replica fetcher, with
		// the leader it fetches from; a test blocks it to slow a follower.
		replicaFetch func(leader int32)
		closing      func(*Broker) // in Close, after readiness is withdrawn, before anything stops
		listening    func(*Broker) // in Start, once the Kafka listener is bound, before it accepts
		// tlsHandshakeTimeout, when set, replaces tlsHandshakeTimeout.
		tlsHandshakeTimeout time.Duration
	}
}

// ListenerConfig is one Kafka listener: its name, where it binds, what
// clients are told, and its own security.
type ListenerConfig struct {
	// Name is the listener's name (NAME:// in listeners), unique among a
	// node's listeners. Default: SecurityProtocol.
	Name string
	// Listen is the address to bind. Default "127.0.0.1:0".
	Listen string
	// Advertise is the host:port clients of this listener are told to
	// connect to. Default: the address the listener got.
	Advertise string
	// SecurityProtocol is PLAINTEXT (the default), SASL_PLAINTEXT, SSL or
	// SASL_SSL.
	SecurityProtocol string
	// SSL, SSLPrincipalMappingRules, SASLEnabledMechanisms,
	// SASLPlainJAASConfig, SASLJAASConfigs and OAuthBearer are this
	// listener's, as the Config fields of the same names are the shorthand
	// listener's.
	SSL                      *ssl.Settings
	SSLPrincipalMappingRules string
	SASLEnabledMechanisms    []string
	SASLPlainJAASConfig      string
	SASLJAASConfigs          map[string]string
	OAuthBearer              OAuthBearerConfig
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if len(c.Listeners) == 0 {
		c.Listeners = []ListenerConfig{{
			Name: c.ListenerName, Listen: c.Listen, Advertise: c.Advertise, SecurityProtocol: c.SecurityProtocol,
			SSL: c.SSL, SSLPrincipalMappingRules: c.SSLPrincipalMappingRules,
			SASLEnabledMechanisms: c.SASLEnabledMechanisms, SASLPlainJAASConfig: c.SASLPlainJAASConfig,
			SASLJAASConfigs: c.SASLJAASConfigs,
			OAuthBearer:     c.OAuthBearer,
		}}
	} else {
		c.Listeners = slices.Clone(c.Listeners)
	}
	for i := range c.Listeners {
		l := &c.Listeners[i]
		if l.SecurityProtocol == "" {
			l.SecurityProtocol = protocolPlaintext
		}
		if l.Name == "" {
			l.Name = l.SecurityProtocol
		}
		if l.Listen == "" {
			l.Listen = "127.0.0.1:0"
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ControlledShutdownTimeout <= 0 {
		c.ControlledShutdownTimeout = 30 * time.Second
	}
	c.fillDefaults() // the Kafka configs (broker_configs.go)
}

package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/broker/replication"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/vfs"
)

// Broker is a running broker: a single node, or one node of a cluster
// (Config.ControllerQuorumVoters). Its methods are safe for concurrent use.
type Broker struct {
	cfg Config
	log *slog.Logger
	// listeners are the Kafka listeners (listener.go), in
	// Config.Listeners order; set before Start binds them, read-only after.
	listeners []*listener
	// scram is a single node's SCRAM credentials (scram_credentials.go).
	scram *scramStore
	// interBroker is how this node's connections to the other nodes log
	// in (listener_interbroker.go); nil on a single node and over a
	// PLAINTEXT inter-broker listener.
	interBroker *peer.Security

	// mu guards the topic catalogue: read-locked for lookups, write-locked
	// to create, grow or delete topics.
	mu      sync.RWMutex
	catalog catalog

	// dataDirLock is the open lock file of an on-disk data dir
	// (datadir_lock_unix.go), released when the broker closes.
	dataDirLock *os.File

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connMu sync.Mutex
	conns  map[*conn]struct{}
	// requestMemory bounds the bytes of requests read and not yet
	// answered (queued.max.request.bytes, request_memory.go).
	requestMemory *requestMemory
	// connLimits counts the client connections for max.connections and
	// max.connections.per.ip (conn_limits.go).
	connLimits *connLimits

	closeOnce sync.Once
	closeErr  error

	// groups drives the group coordinator (groups.go).
	groups *groupCoordinator
	// txns drives the transaction coordinator (txns.go).
	txns *txnCoordinator
	// verifyTxnOffsetCommit asks the transaction coordinator whether a
	// TxnOffsetCommit belongs to an ongoing transaction, or adds the
	// group's partition to it (28_txn_offset_commit.go). Unset until a
	// transaction coordinator is connected: not verified.
	verifyTxnOffsetCommit atomic.Pointer[txnOffsetCommitVerifier]
	// shareState is where share-partition leaders persist their state
	// (share_persister.go); nil until the share coordinator runs.
	shareState sharePersister
	// shares drives the share coordinator (share_coordinator.go).
	shares *shareCoordinator
	// logs runs retention and the log cleaner (logmanager.go).
	logs *logManager

	// metrics are the broker's Prometheus series (metrics.go), served on
	// the HTTP listener (http.go) when one is configured.
	metrics *brokerMetrics
	// quotas enforces the client quotas (package quota, throttle.go), kept in
	// step with catalog.quotas.
	quotas       *quota.Clients
	loaded       atomic.Bool // the catalogue and the groups are loaded
	ready        atomic.Bool // loaded and accepting connections, not closing
	http         *http.Server
	httpListener net.Listener
	httpDone     chan struct{}

	// cluster is set in cluster mode (cluster.go): the controller quorum
	// voter and the broker's registration with the active controller.
	cluster *cluster

	// replQuotas are the replication throttles (replication_throttle.go),
	// bounded by the dynamic broker configs in dynamicConfigs.
	replQuotas     replication.Quotas
	dynamicConfigs atomic.Pointer[dynamicBrokerConfigs]
}

// Start opens the data directory, recovers every partition log, starts
// listening and returns the running broker. ctx bounds only the start-up; the
// broker runs until Close. In cluster mode Start returns once the broker is
// registered and unfenced by the controller quorum, and serves only from
// then on; it fails if ctx ends first.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	cfg.setDefaults()
	for name, value := range cfg.TopicDefaults {
		def := topicconfig.Lookup(name)
		if def == nil {
			return nil, fmt.Errorf("broker: unknown topic config %q in TopicDefaults", name)
		}
		v, err := def.Validate(value)
		if err != nil {
			return nil, fmt.Errorf("broker: TopicDefaults: %v", err)
		}
		cfg.TopicDefaults[name] = v
	}
	addScram, err := parseAddScram(cfg.AddScram)
	if err != nil {
		return nil, err
	}
	scramCreds := &scramStore{}
	listeners, err := newListeners(&cfg, scramCreds.lookup)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			stopValidators(listeners)
		}
	}()
	var interBroker *peer.Security
	if cfg.ControllerQuorumVoters != "" {
		if interBroker, err = interBrokerSecurity(&cfg, listeners); err != nil {
			return nil, err
		}
	}
	limits, err := newBrokerConnLimits(&cfg)
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, conns: map[*conn]struct{}{}, listeners: listeners, scram: scramCreds, interBroker: interBroker,
		requestMemory: newRequestMemory(*cfg.QueuedMaxRequestBytes), connLimits: limits}
	b.metrics = newBrokerMetrics(b)
	b.replQuotas.Init(b.cfg.ReplicationQuotaWindowNum, b.cfg.ReplicationQuotaWindowSizeSeconds)
	b.quotas = quota.NewClients(quota.RateConfig{Samples: cfg.QuotaWindowNum, WindowMs: int64(cfg.QuotaWindowSizeSeconds) * 1000}, b.metrics.registry)
	if err := b.startHTTP(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if !started {
			b.stopHTTP()
		}
	}()
	if cfg.testHooks.beforeLoad != nil {
		cfg.testHooks.beforeLoad(b)
	}

	var fsys vfs.FS = vfs.OSFS{}
	dir := cfg.DataDir
	switch {
	case cfg.FS != nil:
		fsys = cfg.FS
		if dir == "" {
			dir = "/gregor"
		}
	case dir == "":
		fsys, dir = vfs.NewMemFS(), "/gregor"
	}
	if cfg.fs != nil {
		fsys = cfg.fs
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: creating data dir: %w", err)
	}
	if _, onDisk := fsys.(vfs.OSFS); onDisk {
		lock, err := lockDataDir(dir)
		if err != nil {
			return nil, err
		}
		b.dataDirLock = lock
		defer func() {
			if !started {
				unlockDataDir(b.dataDirLock)
			}
		}()
	}
	b.catalog = catalog{fs: fsys, dir: dir, defaults: cfg.TopicDefaults, clusterMode: cfg.ControllerQuorumVoters != "", log: b.log, metrics: b.metrics}
	if cfg.ControllerQuorumVoters == "" {
		b.catalog.scram = b.scram // a cluster's are in the metadata log
	}
	if err := b.catalog.load(); err != nil {
		return nil, err
	}
	if cfg.ControllerQuorumVoters == "" {
		if err := b.addScramCredentials(addScram); err != nil {
			b.catalog.closeAll()
			return nil, err
		}
		b.warnNoScramUsers()
	}
	b.catalog.warnStrayEntries(b.log)
	if cfg.ControllerQuorumVoters == "" {
		b.applyCatalogBrokerConfigs() // cluster mode takes them from the image
	}
	// The coordinators exist before the controller's first image, whose
	// leadership is pushed into them (coordinatorLeadership).
	b.groups, b.txns, b.shares = b.newGroups(), b.newTxns(), b.newShareCoordinator()
	if cfg.ControllerQuorumVoters != "" {
		if err := b.startController(dir, addScram); err != nil {
			b.catalog.closeAll()
			return nil, err
		}
		b.cluster.syncImage(b.cluster.ctrl.Image())
	}
	stopController := func() {
		if b.cluster != nil {
			b.cluster.cancel()
			b.cluster.ctrl.Close()
		}
	}
	b.refreshQuotas(ctx)
	if err := ctx.Err(); err != nil {
		stopController()
		b.catalog.closeAll()
		return nil, err
	}
	// The group coordinator loads __consumer_offsets before the listener
	// opens (groups.go).
	if err := b.startGroups(); err != nil {
		stopController()
		b.catalog.closeAll()
		return nil, err
	}
	// So does the transaction coordinator with __transaction_state
	// (txns.go).
	if err := b.startTxns(); err != nil {
		b.groups.stop()
		stopController()
		b.catalog.closeAll()
		return nil, err
	}
	// And the share coordinator with __share_group_state
	// (share_coordinator.go).
	if err := b.startShareCoordinator(); err != nil {
		b.txns.stop()
		b.groups.stop()
		stopController()
		b.catalog.closeAll()
		return nil, err
	}
	b.loaded.Store(true)

	if err := b.bindListeners(ctx); err != nil {
		b.shares.stop()
		b.txns.stop()
		b.groups.stop()
		stopController()
		b.catalog.closeAll()
		return nil, err
	}
	if cfg.testHooks.listening != nil {
		cfg.testHooks.listening(b)
	}

	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.startLogManager()
	started = true // from here on, close cleans up
	if b.cluster != nil {
		// In cluster mode the listener is bound (the registration carries
		// its port) but accepts nothing until the controller has unfenced
		// this broker and its catalogue has applied the metadata log up to
		// the unfencing: before, a client would see an incomplete cluster.
		// Connections made meanwhile wait in the accept backlog, as
		// Kafka's BrokerServer.startup enables request processing only
		// then. Start blocks until that point, as Kafka's process does:
		// when Start returns, the broker serves, which is what every
		// caller (gregor serve, the readiness line process harnesses wait
		// for, in-process tests using Addr at once) relies on; a caller
		// starting several nodes of one quorum starts them concurrently.
		// ctx's deadline is the start-up deadline (gregor serve's ctx has
		// none and ends on SIGINT or SIGTERM, so a node waits for its
		// quorum as long as it takes, as Kafka's does).
		b.cluster.run()
		b.log.Info("waiting to be unfenced by the controller quorum before serving", "listen", b.Addr(), "node_id", cfg.NodeID)
		if err := b.cluster.awaitUnfenced(ctx); err != nil {
			b.close(false)
			return nil, err
		}
	}
	b.wg.Add(1 + len(b.listeners))
	for _, l := range b.listeners {
		go b.acceptLoop(l)
	}
	go b.expireIdleConnections()
	b.ready.Store(true)
	// The readiness line names the first listener, as it did with one;
	// each other listener has a line of its own.
	first := b.primary()
	b.log.Info("gregor: ready", "listen", first.ln.Addr().String(), "advertise", first.advertisedAddr(),
		"node_id", cfg.NodeID, "data_dir", cfg.DataDir, "topics", len(b.catalog.byName),
		"listener", first.cfg.Name, "security_protocol", first.securityProtocol(), "sasl_mechanisms", first.saslMechanisms())
	for i, l := range b.listeners {
		if i > 0 {
			b.log.Info("gregor: listening", "listener", l.cfg.Name, "listen", l.ln.Addr().String(), "advertise", l.advertisedAddr(),
				"security_protocol", l.securityProtocol(), "sasl_mechanisms", l.saslMechanisms())
		}
		if l.sasl != nil || l.tls.authenticatesClients() {
			b.log.Warn("gregor: no authorization yet: every authenticated principal may do everything (ACLs are not enforced)",
				"listener", l.cfg.Name)
		}
	}
	return b, nil
}

// Addr returns the address the broker's first listener is bound to,
// host:port (ListenerAddr names another).
func (b *Broker) Addr() string { return b.primary().ln.Addr().String() }

// ClusterID returns the cluster id, persisted in the data directory.
// In cluster mode a new node takes the quorum's.
func (b *Broker) ClusterID() string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.catalog.clusterID
}

// Close stops accepting connections, closes the open ones, waits for their
// requests to finish, syncs and closes every partition log. It is safe to
// call more than once.
func (b *Broker) Close() error { return b.close(true) }

// close is Close; Start, failing after the listener opened, closes without
// a controlled shutdown (a broker never unfenced leads nothing to hand
// over).
func (b *Broker) close(controlled bool) error {
	b.closeOnce.Do(func() {
		b.ready.Store(false)
		if b.cfg.testHooks.closing != nil {
			b.cfg.testHooks.closing(b)
		}
		if b.cluster != nil && controlled {
			b.cluster.controlledShutdown() // serving on, until its leaderships moved
		}
		b.cancel()
		b.closeListeners()
		b.connMu.Lock()
		for c := range b.conns {
			c.abort()
		}
		b.connMu.Unlock()
		b.wg.Wait()
		stopValidators(b.listeners)
		var errs []error
		if b.cluster != nil {
			if err := b.cluster.close(); err != nil {
				errs = append(errs, err)
			}
		}
		b.shares.stop()
		b.txns.stop()
		b.groups.stop()

		// The HTTP listener closes last, once b.mu is released: a scrape
		// in flight may be waiting for it.
		defer b.stopHTTP()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, t := range b.catalog.byName {
			for _, p := range t.partitions {
				p.Close()
				p.SnapshotAtClose()
				if err := p.Log().Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		unlockDataDir(b.dataDirLock)
		b.closeErr = errors.Join(errs...)
		b.log.Info("gregor: stopped")
	})
	return b.closeErr
}

func (b *Broker) acceptLoop(l *listener) {
	defer b.wg.Done()
	var backoff acceptBackoff
	for {
		if !b.connLimits.awaitSlot(b.ctx) {
			return
		}
		nc, err := l.ln.Accept()
		if err != nil {
			if b.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			b.metrics.acceptFailures.Inc()
			delay, warn, failures := backoff.failed(time.Now())
			if warn {
				b.log.Warn("accept failed", "listener", l.cfg.Name, "err", err, "failures_since_last_warning", failures, "backoff", delay)
			}
			if !transientAcceptError(err) {
				delay = minAcceptBackoff
			}
			select {
			case <-time.After(delay):
			case <-b.ctx.Done():
				return
			}
			continue
		}
		backoff.succeeded()
		if b.throttleConnection(nc) {
			continue
		}
		addr := remoteAddr(nc)
		if limit, ok := b.connLimits.admit(addr); !ok {
			b.log.Info("rejected connection: the address already has the configured maximum of connections", "remote", nc.RemoteAddr().String(), "max", limit)
			b.metrics.connectionsRejectedPerIP.Inc()
			nc.Close()
			continue
		}
		c := newConn(b, l, l.tls.wrap(nc))
		b.connMu.Lock()
		if b.ctx.Err() != nil {
			b.connMu.Unlock()
			b.connLimits.release(addr)
			nc.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.connMu.Unlock()
		b.metrics.connectionsAccepted.Inc()
		b.metrics.connectionsOpen.Inc()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			c.serve()
			b.connMu.Lock()
			delete(b.conns, c)
			b.connMu.Unlock()
			b.connLimits.release(addr)
			b.metrics.connectionsOpen.Dec()
			b.metrics.connectionsClosed.Inc()
		}()
	}
}

// lookupTopic returns the named topic, or nil.
func (b *Broker) lookupTopic(name string) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.catalog.byName[name]
}

// lookupTopicID returns the topic with the id, or nil.
func (b *Broker) lookupTopicID(id [16]byte) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.catalog.byID[id]
}

// lookupTopicRef returns the topic a request names, by id when the request's
// version names topics by id (byID) and by name otherwise, or nil.
func (b *Broker) lookupTopicRef(byID bool, name string, id [16]byte) *topic {
	if byID {
		return b.lookupTopicID(id)
	}
	return b.lookupTopic(name)
}

// partitions returns a snapshot of t's partitions.
func (b *Broker) partitions(t *topic) []*partition.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.partitions
}

// partition returns partition p of t, or nil.
func (b *Broker) partition(t *topic, p int32) *partition.Partition {
	parts := b.partitions(t)
	if p < 0 || int(p) >= len(parts) {
		return nil
	}
	return parts[p]
}

package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/broker/replication"
	"github.com/gregor-broker/gregor/broker/security/scram"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// cluster is what a broker in cluster mode (Config.ControllerQuorumVoters
// set) adds to a single node: its controller quorum voter, the broker's
// registration and heartbeats with the active controller, and the applied
// metadata image driving the topic catalogue.
//
// Combined mode only (process.roles=broker,controller): every node runs a
// controller.Controller voter and a broker. The broker talks to the active
// controller in-process when that is the local voter, and otherwise over
// the active controller node's Kafka listener (controller_rpc.go), with
// BrokerRegistration (62), BrokerHeartbeat (63) and the write requests it
// forwards (CreateTopics, DeleteTopics), as pre-KRaft Kafka sent admin
// writes to the controller broker. The raft transport keeps the controller
// listener to itself.
//
// The catalogue follows the image (syncImage): a topic of the image is
// opened locally with the image's id, a topic gone from it is deleted
// locally. Replication factor is 1, so a partition's data lives only on its
// leader; partitions led elsewhere have a local log that is never written,
// and Produce, Fetch and ListOffsets answer NOT_LEADER_OR_FOLLOWER for them.
type cluster struct {
	b           *Broker
	ctrl        *controller.Controller
	incarnation metadata.UUID
	epoch       atomic.Int64 // broker epoch; -1 while unregistered

	// mu guards synced and image; never held while calling the controller
	// or taking Broker.mu.
	mu     sync.Mutex
	image  *metadata.Image // the image last applied to the catalogue
	synced chan struct{}   // closed and replaced after each applied image

	rpc *controllerRPC

	// repl is this node's replication: the fetchers copy the partitions
	// it follows from their leaders (package replication,
	// replication_env.go).
	repl *replication.Manager

	// voterRank is this node's place among the voters by id, which picks
	// its range of producer ids (producerIDRange); a broker-only node's is
	// observerRank.
	voterRank int

	// raftAddr is a broker-only node's raft address ("" on a voter);
	// wantShutDown is set once Close starts a controlled shutdown
	// (cluster_observer.go).
	raftAddr     string
	wantShutDown atomic.Bool

	// scramFrom is the SCRAM credentials map of the image whose
	// credentials are in force (cluster_scram.go); only syncImage's
	// goroutine touches it.
	scramFrom map[string]map[int8]metadata.ScramCredential
	// quotas are the client quotas of the image last applied
	// (cluster_quotas.go).
	quotas atomic.Pointer[map[quota.Entity]map[string]float64]

	unsubscribe func()
	// ctx bounds every call to the controller; close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	wg     sync.WaitGroup
}

// isCluster reports whether the broker runs in cluster mode.
func (b *Broker) isCluster() bool { return b.cluster != nil }

// startController starts the local quorum voter, before the catalogue is
// served (Start).
func (b *Broker) startController(dir string, addScram []scram.AddScram) error {
	voters, err := controller.ParseVoters(b.cfg.ControllerQuorumVoters)
	if err != nil {
		return fmt.Errorf("broker: controller.quorum.voters: %w", err)
	}
	brokerOnly, err := b.checkRoles(voters)
	if err != nil {
		return err
	}
	// A single node's data dir does not become a cluster node's: its
	// topics are in no metadata log, and the first image would delete them.
	if _, err := b.catalog.fs.Stat(path.Join(dir, controller.MetadataDir)); errors.Is(err, os.ErrNotExist) && len(b.catalog.byName) > 0 {
		return fmt.Errorf("broker: the data dir %s holds %d topics of a single-node broker and no cluster metadata; turning a single node into a cluster node is not supported yet (start cluster nodes on new data dirs)", dir, len(b.catalog.byName))
	}
	c := &cluster{b: b, rpc: newControllerRPC("", b.interBroker), synced: make(chan struct{}), stop: make(chan struct{})}
	c.epoch.Store(-1)
	for id := range voters {
		if id < b.cfg.NodeID {
			c.voterRank++
		}
	}
	if brokerOnly {
		if c.voterRank, err = observerRank(voters, b.cfg.NodeID); err != nil {
			return err
		}
	}
	if _, err := rand.Read(c.incarnation[:]); err != nil {
		return fmt.Errorf("broker: incarnation id: %w", err)
	}
	ccfg := controller.Config{
		NodeID:                   b.cfg.NodeID,
		Voters:                   voters,
		DataDir:                  dir,
		FS:                       b.catalog.fs,
		ClusterID:                b.catalog.clusterID,
		UncleanLeaderElection:    uncleanDefault(b.cfg.TopicDefaults),
		SessionTimeout:           time.Duration(b.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		DefaultPartitions:        b.cfg.NumPartitions,
		DefaultReplicationFactor: b.cfg.DefaultReplicationFactor,
		Observer:                 brokerOnly,
		BootstrapRecords:         addScramRecords(addScram),
		Logger:                   b.log,
	}
	switch {
	case b.cfg.controllerListener != nil:
		ccfg.Listener = b.cfg.controllerListener
	case b.cfg.ControllerListen != "":
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", b.cfg.ControllerListen)
		if err != nil {
			return fmt.Errorf("broker: controller listener: %w", err)
		}
		ccfg.Listener = ln
	}
	if brokerOnly {
		c.raftAddr = b.observerRaftAddr(ccfg.Listener.Addr())
		ccfg.ObserverAddr = c.raftAddr
	}
	ctrl, err := controller.Start(ccfg)
	if err != nil {
		if ccfg.Listener != nil && b.cfg.ControllerListen != "" && b.cfg.controllerListener == nil {
			ccfg.Listener.Close()
		}
		return err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ctrl = ctrl
	c.repl = replication.New(c.ctx, b.replicationConfig(), replicationEnv{c}, &b.replQuotas)
	b.cluster = c
	return nil
}

// uncleanDefault is the broker's unclean.leader.election.enable, the
// default of topics that do not set it.
func uncleanDefault(defaults map[string]string) bool {
	on, err := strconv.ParseBool(defaults["unclean.leader.election.enable"])
	return err == nil && on
}

// run starts following the image and registering, once the broker listens.
func (c *cluster) run() {
	images, unsubscribe := c.ctrl.Subscribe()
	c.unsubscribe = unsubscribe
	c.syncImage(c.ctrl.Image())
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		c.repl.Run()
	}()
	go func() {
		defer c.wg.Done()
		for {
			select {
			case <-c.stop:
				return
			case im := <-images:
				c.syncImage(im)
			}
		}
	}()
	go func() {
		defer c.wg.Done()
		c.registerAndHeartbeat()
	}()
}

// close stops the broker's side, then the voter.
func (c *cluster) close() error {
	c.cancel()
	close(c.stop)
	if c.unsubscribe != nil {
		c.unsubscribe()
	}
	c.wg.Wait()
	c.repl.Wait()
	c.repl.CheckpointHighWatermarks()
	c.rpc.close()
	return c.ctrl.Close()
}

// currentImage returns the image last applied to the catalogue.
func (c *cluster) currentImage() *metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.image
}

// registerAndHeartbeat registers with the active controller and
// heartbeats every broker.heartbeat.interval.ms, registering again when
// the controller no longer knows this incarnation.
func (c *cluster) registerAndHeartbeat() {
	interval := time.Duration(c.b.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	backoff := min(interval, 100*time.Millisecond)
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-c.stop:
			return false
		case <-t.C:
			return true
		}
	}
	// A call to the controller must end well within the session, or a
	// broker whose controller went away is fenced by the next one while it
	// still waits on the old.
	callTimeout := min(5*time.Second, time.Duration(c.b.cfg.BrokerSessionTimeoutMs)*time.Millisecond/2)
	var refusedWarned time.Time
	for {
		ctx, cancel := context.WithTimeout(c.ctx, callTimeout)
		if c.epoch.Load() < 0 {
			epoch, err := c.register(ctx)
			cancel()
			if err != nil {
				if peer.LoginRefused(err) && time.Since(refusedWarned) >= refusedLoginLogInterval {
					refusedWarned = time.Now()
					c.b.log.Warn("broker registration failed: the controller's inter-broker listener refused this node's login or certificate; retrying", "err", err)
				} else {
					c.b.log.Debug("broker registration failed; retrying", "err", err)
				}
				if !wait(backoff) {
					return
				}
				continue
			}
			c.epoch.Store(epoch)
			c.b.log.Info("registered with the controller quorum", "broker_epoch", epoch)
			// Heartbeat at once, as Kafka's BrokerLifecycleManager: a
			// starting broker serves only once a heartbeat unfences it.
			continue
		} else {
			res, err := c.heartbeat(ctx)
			cancel()
			switch {
			case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
				c.b.log.Warn("the controller no longer knows this broker's registration; registering again", "err", err)
				c.epoch.Store(-1)
				continue
			case err != nil:
				c.b.log.Debug("broker heartbeat failed", "err", err)
				if !wait(backoff) {
					return
				}
				continue
			case res.IsFenced:
				// Still fenced: catching up with the metadata log, or caught
				// up and unfenced by the next heartbeat. Report again soon
				// rather than after a whole interval (Kafka's broker, while
				// starting, heartbeats every 10 ms), as a starting broker
				// serves only once unfenced (Start).
				if !wait(backoff) {
					return
				}
				continue
			}
		}
		if !wait(interval) {
			return
		}
	}
}

// refusedLoginLogInterval spaces the warnings of a registration whose
// login the controller's node refuses, repeated at every retry.
const refusedLoginLogInterval = 30 * time.Second

func (c *cluster) registration() controller.BrokerRegistration {
	b := c.b
	return controller.BrokerRegistration{
		BrokerID:      b.cfg.NodeID,
		ClusterID:     b.ClusterID(),
		IncarnationID: c.incarnation,
		Endpoints:     b.endpoints(),
		Rack:          b.cfg.BrokerRack,
		RaftAddr:      c.raftAddr,
	}
}

// activeEndpoint returns the Kafka listener of the active controller's
// node, from the local image, or the NotControllerError to answer.
func (c *cluster) activeEndpoint(leader int32) (string, error) {
	if leader < 0 || leader == c.b.cfg.NodeID {
		return "", &controller.NotControllerError{LeaderID: leader}
	}
	im := c.ctrl.Image()
	br := im.Brokers[leader]
	if br == nil || len(br.Endpoints) == 0 {
		return "", fmt.Errorf("broker: the active controller %d has not registered its broker yet: %w", leader, kerr.NotController)
	}
	host, port, ok := brokerEndpoint(br, c.b.cfg.InterBrokerListenerName)
	if !ok {
		return "", fmt.Errorf("broker: the active controller %d has no %s listener: %w", leader, c.b.cfg.InterBrokerListenerName, kerr.NotController)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

// remoteLeader returns, for an error of a local controller call, the node
// to forward to, or -1 to answer the error.
func remoteLeader(err error, self int32) int32 {
	var nc *controller.NotControllerError
	if errors.As(err, &nc) && nc.LeaderID >= 0 && nc.LeaderID != self {
		return nc.LeaderID
	}
	return -1
}

func (c *cluster) register(ctx context.Context) (int64, error) {
	b := c.b
	if im := c.ctrl.Image(); im.ClusterID != "" && im.ClusterID != b.ClusterID() {
		if err := b.adoptClusterID(im.ClusterID); err != nil {
			return 0, err
		}
	}
	reg := c.registration()
	epoch, err := c.ctrl.RegisterBroker(ctx, reg)
	if leader := remoteLeader(err, b.cfg.NodeID); leader >= 0 {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			return 0, aerr
		}
		return c.rpc.register(ctx, addr, reg)
	}
	return epoch, err
}

func (c *cluster) heartbeat(ctx context.Context) (controller.HeartbeatResult, error) {
	// The offset is the image the catalogue has applied, not merely the
	// controller: a controlled shutdown waits for other brokers to serve
	// the leaderships they were given.
	im := c.currentImage()
	if im == nil {
		im = c.ctrl.Image()
	}
	hb := controller.BrokerHeartbeat{
		BrokerID:              c.b.cfg.NodeID,
		BrokerEpoch:           c.epoch.Load(),
		CurrentMetadataOffset: int64(im.Offset),
		WantShutDown:          c.wantShutDown.Load(),
	}
	res, err := c.ctrl.Heartbeat(ctx, hb)
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			return res, aerr
		}
		return c.rpc.heartbeat(ctx, addr, hb)
	}
	return res, err
}

// adoptClusterID takes the quorum's cluster id when this broker's data
// directory holds no topics yet (a new node joining); a broker with data
// of another cluster keeps its id and is refused by the controller
// (INCONSISTENT_CLUSTER_ID), as Kafka refuses it.
func (b *Broker) adoptClusterID(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.catalog.clusterID == id {
		return nil
	}
	if len(b.catalog.byName) > 0 && b.catalog.clusterID != "" {
		return fmt.Errorf("broker: this data dir belongs to cluster %s, the quorum to %s: %w", b.catalog.clusterID, id, kerr.InconsistentClusterID)
	}
	b.catalog.clusterID = id
	return b.catalog.save()
}

// syncImage makes the catalogue match im: topics created, grown,
// reconfigured and deleted, and every partition's leadership.
func (c *cluster) syncImage(im *metadata.Image) {
	if im == nil {
		return
	}
	b := c.b
	self := b.cfg.NodeID
	var roles []roleChange
	b.mu.Lock()
	if im.ClusterID != "" && len(b.catalog.byName) == 0 && b.catalog.clusterID != im.ClusterID {
		b.catalog.clusterID = im.ClusterID
		if err := b.catalog.save(); err != nil {
			b.log.Error("saving the quorum's cluster id failed", "err", err)
		}
	}
	// A topic is deleted locally only by an image that holds this
	// incarnation's registration, so at least as new as every write before
	// it: the image a restarted voter publishes first may be older than
	// the topics in its data dir, and must not delete them.
	reg := im.Brokers[self]
	current := reg != nil && reg.IncarnationID == c.incarnation
	for _, t := range b.catalog.sortedTopics() {
		id, ok := im.TopicIDs[t.name]
		if current && (!ok || id != metadata.UUID(t.id)) {
			if err := b.catalog.remove(t); err != nil {
				b.log.Error("deleting a topic the metadata log deleted failed", "topic", t.name, "err", err)
			} else {
				b.log.Info("deleted topic", "topic", t.name)
			}
		}
	}
	for _, id := range sortedTopicIDs(im) {
		mt := im.Topics[id]
		configs := topicconfig.Configs(maps.Clone(im.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: mt.Name}]))
		if configs == nil {
			configs = topicconfig.Configs{}
		}
		n := int32(len(mt.Partitions))
		t := b.catalog.byName[mt.Name]
		if t != nil && t.id != [16]byte(id) {
			continue // an older image naming a deleted topic, or not yet deleted here
		}
		if t == nil {
			var err error
			if t, err = b.catalog.createWithID(mt.Name, [16]byte(id), n, configs); err != nil {
				b.log.Error("opening a topic of the metadata log failed", "topic", mt.Name, "err", err)
				continue
			}
			b.log.Info("created topic", "topic", mt.Name, "partitions", n)
		}
		if int32(len(t.partitions)) < n {
			if err := b.catalog.addPartitions(t, n); err != nil {
				b.log.Error("opening new partitions of the metadata log failed", "topic", mt.Name, "err", err)
			}
		}
		if !maps.Equal(t.configs, configs) {
			if err := b.catalog.alterConfigs(t, configs); err != nil {
				b.log.Error("applying topic configs of the metadata log failed", "topic", mt.Name, "err", err)
			}
		}
		for _, p := range t.partitions {
			mp := mt.Partitions[p.Index()]
			if mp == nil {
				continue
			}
			st := &partition.State{
				Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch, PartitionEpoch: mp.PartitionEpoch,
				Replicas: mp.Replicas, ISR: mp.ISR, Local: mp.Leader == self,
			}
			// Published at once, under Broker.mu with the topic, so that no
			// request sees the partition without its leadership; appends
			// wait for the role itself (applyRoles, partition.Append).
			p.SetState(st)
			roles = append(roles, roleChange{p: p, t: t, topicID: t.id, st: st})
		}
	}
	b.mu.Unlock()
	b.applyImageBrokerConfigs(im) // replication_throttle.go
	c.applyRoles(im, roles, current)
	c.syncQuotas(im)
	c.syncScram(im)

	c.mu.Lock()
	c.image = im
	close(c.synced)
	c.synced = make(chan struct{})
	c.mu.Unlock()
}

// waitFor waits until the catalogue has applied an image for which cond
// holds, or ctx ends.
func (c *cluster) waitFor(ctx context.Context, cond func(*metadata.Image) bool) bool {
	for {
		c.mu.Lock()
		im, ch := c.image, c.synced
		c.mu.Unlock()
		if im != nil && cond(im) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-c.stop:
			return false
		}
	}
}

// awaitUnfenced waits until the catalogue has applied an image in which
// this incarnation is registered and unfenced: the broker has caught up
// with the metadata log (the controller unfences only a broker whose
// heartbeat reports an offset at or past its registration), and has
// applied everything up to the record that unfenced it, so its view of the
// cluster is complete. Start serves only after it (Kafka's BrokerServer
// enables request processing at the same point). It fails when ctx ends,
// saying how far the broker got.
func (c *cluster) awaitUnfenced(ctx context.Context) error {
	self := c.b.cfg.NodeID
	if c.waitFor(ctx, func(im *metadata.Image) bool {
		br := im.Brokers[self]
		return br != nil && br.IncarnationID == c.incarnation && !br.Fenced
	}) {
		return nil
	}
	state := "not registered with the active controller"
	switch epoch := c.epoch.Load(); {
	case c.ctrl.Leader() < 0:
		state = "no active controller (the quorum has no majority)"
	case epoch >= 0:
		state = fmt.Sprintf("registered (broker epoch %d) but still fenced", epoch)
	}
	return fmt.Errorf("broker: not unfenced by the controller quorum before the start-up deadline: %s: %w", state, context.Cause(ctx))
}

func sortedTopicIDs(im *metadata.Image) []metadata.UUID {
	names := make([]string, 0, len(im.TopicIDs))
	for name := range im.TopicIDs {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]metadata.UUID, len(names))
	for i, name := range names {
		out[i] = im.TopicIDs[name]
	}
	return out
}

// metadataDirName is the quorum's directory in the data dir, which the
// stray-entry scan leaves alone.
var metadataDirName = path.Base(controller.MetadataDir)

// liveBrokers lists the image's registered brokers by id: the unfenced
// ones, and the fenced ones too with includeFenced.
func (c *cluster) liveBrokers(includeFenced bool) []*metadata.Broker {
	im := c.currentImage()
	if im == nil {
		return nil
	}
	ids := make([]int, 0, len(im.Brokers))
	for id, br := range im.Brokers {
		if includeFenced || !br.Fenced {
			ids = append(ids, int(id))
		}
	}
	sort.Ints(ids)
	out := make([]*metadata.Broker, len(ids))
	for i, id := range ids {
		out[i] = im.Brokers[int32(id)]
	}
	return out
}

// offline returns the replicas on fenced or unregistered brokers.
func (c *cluster) offline(replicas []int32) []int32 {
	im := c.currentImage()
	out := []int32{}
	for _, id := range replicas {
		if im == nil || im.Brokers[id] == nil || im.Brokers[id].Fenced {
			out = append(out, id)
		}
	}
	return out
}

// brokerEndpoint is the host and port of a broker's listener of that name;
// ok is false when the broker registered no such listener.
func brokerEndpoint(br *metadata.Broker, listener string) (host string, port int32, ok bool) {
	for _, ep := range br.Endpoints {
		if ep.Name == listener {
			return ep.Host, ep.Port, true
		}
	}
	return "", -1, false
}

// leaderHasListener reports whether broker id is registered with a
// listener of that name; a broker not registered is reported as having
// it, so that its partitions keep the answer they had (LEADER_NOT_AVAILABLE
// is the caller's to give).
func (c *cluster) leaderHasListener(id int32, listener string) bool {
	if c == nil {
		return true
	}
	im := c.currentImage()
	if im == nil || im.Brokers[id] == nil {
		return true
	}
	_, _, ok := brokerEndpoint(im.Brokers[id], listener)
	return ok
}

// endpoints are this broker's listeners as its registration carries them.
func (b *Broker) endpoints() []metadata.Endpoint {
	eps := make([]metadata.Endpoint, len(b.listeners))
	for i, l := range b.listeners {
		eps[i] = metadata.Endpoint{Name: l.cfg.Name, Host: l.host, Port: l.port, SecurityProtocol: securityProtocolID(l.securityProtocol())}
	}
	return eps
}

// leaderEndpoint returns the leader of a partition led elsewhere and its
// endpoint, for KIP-951's current leader in Produce and Fetch responses;
// ok is false when the partition has no leader or it is unknown.
func (c *cluster) leaderEndpoint(p *partition.Partition) (st *partition.State, br *metadata.Broker, ok bool) {
	st = p.State()
	if st == nil || st.Leader < 0 {
		return st, nil, false
	}
	im := c.currentImage()
	if im == nil || im.Brokers[st.Leader] == nil {
		return st, nil, false
	}
	return st, im.Brokers[st.Leader], true
}

// currentLeader fills KIP-951's current leader of a partition led
// elsewhere into a Produce v10+ or Fetch v12+ answer (setLeader), and
// returns the leader's broker when its endpoint belongs in the response's
// node endpoints: not already listed (listed), and withEndpoints.
func (c *cluster) currentLeader(p *partition.Partition, setLeader func(id, epoch int32), listed func(id int32) bool, withEndpoints bool) (*metadata.Broker, bool) {
	st, br, ok := c.leaderEndpoint(p)
	if st != nil {
		setLeader(st.Leader, st.LeaderEpoch)
	}
	if !ok || !withEndpoints || listed(br.ID) {
		return nil, false
	}
	return br, true
}

// leaderNode fills a node endpoint of a current leader with its address
// on the client's listener; ok is false when the leader has none, and the
// endpoint is left out, as Kafka's getAliveBrokerNode finds no node.
func leaderNode(br *metadata.Broker, listener string, set func(host string, port int32)) bool {
	host, port, ok := brokerEndpoint(br, listener)
	if ok {
		set(host, port)
	}
	return ok
}

// rackOf is a broker's rack as the node endpoints carry it (null for none).
func rackOf(br *metadata.Broker) *string {
	if br.Rack == "" {
		return nil
	}
	rack := br.Rack
	return &rack
}

// produceCurrentLeader fills KIP-951's current leader of a partition led
// elsewhere into a Produce v10+ answer, and the leader's endpoint into the
// response's node endpoints, so the client re-routes at once.
func (c *cluster) produceCurrentLeader(p *partition.Partition, sp *kmsg.ProduceResponseTopicPartition, resp *kmsg.ProduceResponse, listener string) {
	br, ok := c.currentLeader(p,
		func(id, epoch int32) { sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch },
		func(id int32) bool {
			return slices.ContainsFunc(resp.Brokers, func(b kmsg.ProduceResponseBroker) bool { return b.NodeID == id })
		}, true)
	if ok {
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Rack = br.ID, rackOf(br)
		if leaderNode(br, listener, func(h string, p int32) { nb.Host, nb.Port = h, p }) {
			resp.Brokers = append(resp.Brokers, nb)
		}
	}
}

// fetchCurrentLeader is produceCurrentLeader for Fetch v12+ (node
// endpoints from v16).
func (c *cluster) fetchCurrentLeader(p *partition.Partition, sp *kmsg.FetchResponseTopicPartition, resp *kmsg.FetchResponse, listener string) {
	br, ok := c.currentLeader(p,
		func(id, epoch int32) { sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch },
		func(id int32) bool {
			return slices.ContainsFunc(resp.Brokers, func(b kmsg.FetchResponseBroker) bool { return b.NodeID == id })
		}, resp.Version >= 16)
	if ok {
		nb := kmsg.NewFetchResponseBroker()
		nb.NodeID, nb.Rack = br.ID, rackOf(br)
		if leaderNode(br, listener, func(h string, p int32) { nb.Host, nb.Port = h, p }) {
			resp.Brokers = append(resp.Brokers, nb)
		}
	}
}

// errNotLocalLeader is a coordinator's append to a partition of its topic
// that another broker leads: the client asked the wrong coordinator, and
// is answered NOT_COORDINATOR so it looks the coordinator up again.
var errNotLocalLeader = errors.New("broker: another broker leads the coordinator's partition")

// producerIDRange is the range of producer ids this node hands out in
// cluster mode, [lo, hi): 2^48 ids a node, chosen by the node's rank among
// the static voters, so no two nodes ever give out the same id. (Kafka
// allocates blocks through the controller, AllocateProducerIds; Gregor's
// controller does not yet.)
func (c *cluster) producerIDRange() (lo, hi int64) {
	lo = int64(c.voterRank+1) << 48
	return lo, lo + 1<<48
}

// securityProtocolID is the id Kafka's SecurityProtocol enum gives a
// protocol name, as BrokerRegistration's listeners carry it.
func securityProtocolID(protocol string) int16 {
	switch protocol {
	case protocolSSL:
		return 1
	case protocolSASLPlaintext:
		return 2
	case protocolSASLSSL:
		return 3
	}
	return 0 // PLAINTEXT
}

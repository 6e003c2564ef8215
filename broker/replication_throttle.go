package broker

// Replication throttles: Kafka's replication quotas (KIP-73), which
// kafka-reassign-partitions.sh --throttle sets so that moving a replica
// does not starve clients of bandwidth.
//
// Two broker-level rates, dynamic broker configs of this node ("<id>") or of
// the cluster default (""), the node's own value taking precedence
// (ConfigHandler.BrokerConfigHandler): leader.replication.throttled.rate
// bounds what this broker sends to throttled followers, and
// follower.replication.throttled.rate what it fetches for its throttled
// replicas, in bytes per second (a long >= 0; unset, unbounded). In cluster
// mode they are ConfigRecords of the metadata log (BROKER resources),
// applied from the image; a single node keeps them in gregor-topics.json.
//
// Which replicas are throttled is per topic:
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas list "partition:broker" pairs, or
// "*" for every replica of the topic. Each broker takes the pairs naming
// itself: the reassign tool lists the replicas a partition already has in
// the leader list (they serve the copy) and the ones it moves in in the
// follower list (they fetch it).
//
// The leader (readReplica): a fetch from a follower that is not in the ISR,
// for a partition this broker's leader list names, is answered with no
// records, not delayed nor refused, while the leader's measured rate is
// above its bound (replication.Quotas.LeaderThrottles). The record bytes of
// listed partitions sent are recorded, in sync or not, once the response
// is complete (KafkaApis records the throttled partitions' size).
//
// The follower (package replication's fetcher): a partition its follower
// list names is left out of the fetch while the follower's rate is above
// its bound, unless the replica was caught up at its last fetch; the bytes
// fetched for listed partitions are recorded (replication/throttle.go).
//
// Rates are measured as Kafka's (package quota's Replication): over
// replication.quota.window.num samples of
// replication.quota.window.size.seconds. Throttling is checked before a
// read and the bytes recorded after it, so a single response may take the
// rate past the bound, as in Kafka, and the rate then converges on it.
//
// Cost with no throttle: a partition's lists are parsed when its topic's
// configs change; a fetch then loads them once (an atomic load) per
// partition, finds nil and does nothing else: no lock, no allocation.
//
// replica.alter.log.dirs.io.max.bytes.per.second, Kafka's throttle of
// replica moves between the log directories of one broker
// (AlterReplicaLogDirs), is refused (INVALID_CONFIG): Gregor has one log
// directory, so no such move exists for it to bound. Deleting it, as the
// reassign tool's --verify and --cancel do on every broker whether or not
// it was set, succeeds and changes nothing.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Replication quota config names (Kafka's QuotaConfig).
const (
	leaderThrottledRate      = "leader.replication.throttled.rate"
	followerThrottledRate    = "follower.replication.throttled.rate"
	alterLogDirsThrottleRate = "replica.alter.log.dirs.io.max.bytes.per.second"
)

// Kafka's config sources of dynamic broker configs.
const (
	sourceDynamicBroker        int8 = 2
	sourceDynamicDefaultBroker int8 = 3
)

// leaderThrottles reports whether the leader answers replica's fetch of p
// without records now, and whether p is on the leader's list at all (its
// bytes are recorded).
func (b *Broker) leaderThrottles(t *topic, p *partition.Partition, replica int32) (throttle, listed bool) {
	if !t.effective.Load().leaderThrottled.Has(p.Index(), b.cfg.NodeID) {
		return false, false
	}
	return b.replQuotas.LeaderThrottles(p, replica), true
}

// recordLeaderThrottled records the bytes of the throttled partitions of a
// follower's fetch response, once it is complete.
func (b *Broker) recordLeaderThrottled(resp kmsg.Response) {
	if reply, ok := resp.(*fetchReply); ok && reply.leaderThrottledBytes > 0 {
		b.replQuotas.Leader.Record(reply.leaderThrottledBytes)
	}
}

// dynamicBrokerConfigs are the dynamic broker configs in force on this
// node: its own and the cluster default. Replaced, never mutated.
type dynamicBrokerConfigs struct {
	perBroker, defaults map[string]string
}

// setDynamicBrokerConfigs puts this node's dynamic configs in force: the
// replication quotas' bounds, the node's own value over the default.
func (b *Broker) setDynamicBrokerConfigs(perBroker, defaults map[string]string) {
	b.dynamicConfigs.Store(&dynamicBrokerConfigs{perBroker: maps.Clone(perBroker), defaults: maps.Clone(defaults)})
	bound := func(name string) int64 {
		v, ok := perBroker[name]
		if !ok {
			v, ok = defaults[name]
		}
		if !ok {
			return math.MaxInt64
		}
		n, err := parseThrottleRate(name, v)
		if err != nil {
			// Kafka ignores an invalid stored value (removeInvalidConfigs).
			b.log.Error("ignoring an invalid dynamic broker config", "name", name, "value", v)
			return math.MaxInt64
		}
		return n
	}
	for _, q := range []struct {
		q    *quota.Replication
		name string
	}{{&b.replQuotas.Leader, leaderThrottledRate}, {&b.replQuotas.Follower, followerThrottledRate}} {
		if n := bound(q.name); q.q.SetBound(n) != n {
			b.log.Info("replication throttle rate", "config", q.name, "bytes_per_second", n)
		}
	}
}

// applyImageBrokerConfigs puts the image's dynamic configs of this node in
// force (cluster mode).
func (b *Broker) applyImageBrokerConfigs(im *metadata.Image) {
	self := im.Configs[metadata.ConfigResource{Type: metadata.ResourceBroker, Name: strconv.Itoa(int(b.cfg.NodeID))}]
	defaults := im.Configs[metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""}]
	if cur := b.dynamicConfigs.Load(); cur != nil && maps.Equal(cur.perBroker, self) && maps.Equal(cur.defaults, defaults) {
		return
	}
	b.setDynamicBrokerConfigs(self, defaults)
}

// parseThrottleRate checks a rate as Kafka's ConfigDef checks a LONG at
// least 0, with its message.
func parseThrottleRate(name, value string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type LONG", value, name)
	}
	if n < 0 {
		return 0, fmt.Errorf("Invalid value %d for configuration %s: Value must be at least 0", n, name)
	}
	return n, nil
}

// brokerResourceConfigs returns the stored dynamic configs of a broker
// resource ("" for the cluster default). The map is the caller's.
func (b *Broker) brokerResourceConfigs(name string) map[string]string {
	if b.isCluster() {
		im := b.cluster.currentImage()
		if im == nil {
			return map[string]string{}
		}
		m := maps.Clone(im.Configs[metadata.ConfigResource{Type: metadata.ResourceBroker, Name: name}])
		if m == nil {
			m = map[string]string{}
		}
		return m
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	m := maps.Clone(b.catalog.brokerConfigs[name])
	if m == nil {
		m = map[string]string{}
	}
	return m
}

// throttleRateChanges applies the changes of the replication throttle rates
// to the resource's stored configs: it returns the other changes, and the
// rates' new set when it differs from the stored one (nil otherwise). A
// legacy AlterConfigs (not incremental) replaces the whole set. A bad
// value is INVALID_REQUEST, as Kafka's broker refuses a dynamic config
// that fails validation (KAFKA-13609 kept that code); APPEND and SUBTRACT
// are UNKNOWN_SERVER_ERROR, as Kafka answers them.
func (b *Broker) throttleRateChanges(name string, changes []configChange, incremental bool) (rest []configChange, old, next map[string]string, refused *alterResult) {
	old = b.brokerResourceConfigs(name)
	next = map[string]string{}
	if incremental {
		next = maps.Clone(old)
	}
	for _, c := range changes {
		switch c.name {
		case alterLogDirsThrottleRate:
			if c.op != opDelete {
				return nil, nil, nil, &alterResult{kerr.InvalidConfig, "Gregor has a single log directory, so no replica moves between log directories for " + c.name + " to throttle"}
			}
		case leaderThrottledRate, followerThrottledRate:
			switch c.op {
			case opSet:
				if _, err := parseThrottleRate(c.name, *c.value); err != nil {
					return nil, nil, nil, &alterResult{kerr.InvalidRequest, err.Error()}
				}
				next[c.name] = *c.value
			case opDelete:
				delete(next, c.name)
			default:
				// APPEND or SUBTRACT: Kafka's broker looks the key up among
				// KafkaConfig's, where the rates are not, and fails with
				// UNKNOWN_SERVER_ERROR and no message (rawdiff checks it).
				return nil, nil, nil, &alterResult{kerr.UnknownServerError, ""}
			}
		default:
			rest = append(rest, c)
		}
	}
	return rest, old, next, nil
}

// storeBrokerConfigs writes a broker resource's new dynamic config set:
// through the active controller in cluster mode (answering once this
// node's image has it), in gregor-topics.json on a single node.
func (b *Broker) storeBrokerConfigs(name string, old, next map[string]string, fwd bool) alterResult {
	if maps.Equal(old, next) {
		return alterResult{}
	}
	if b.isCluster() {
		return b.cluster.alterBrokerConfigs(name, old, next, fwd)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.catalog.brokerConfigs == nil {
		b.catalog.brokerConfigs = map[string]map[string]string{}
	}
	prev := b.catalog.brokerConfigs[name]
	if len(next) == 0 {
		delete(b.catalog.brokerConfigs, name)
	} else {
		b.catalog.brokerConfigs[name] = next
	}
	if err := b.catalog.save(); err != nil {
		if prev == nil {
			delete(b.catalog.brokerConfigs, name)
		} else {
			b.catalog.brokerConfigs[name] = prev
		}
		b.log.Error("saving dynamic broker configs failed", "err", err)
		return alterResult{kerr.UnknownServerError, err.Error()}
	}
	b.applyCatalogBrokerConfigs()
	return alterResult{}
}

// applyCatalogBrokerConfigs puts a single node's stored dynamic configs in
// force. Broker.mu held.
func (b *Broker) applyCatalogBrokerConfigs() {
	bc := b.catalog.brokerConfigs
	b.setDynamicBrokerConfigs(bc[strconv.Itoa(int(b.cfg.NodeID))], bc[""])
}

// alterBrokerConfigs writes a broker resource's config changes through the
// active controller as ConfigRecords, forwarding them to it when it is
// another node, and waits until this node's image has them.
func (c *cluster) alterBrokerConfigs(name string, old, next map[string]string, forwarded bool) alterResult {
	changes := configChanges(metadata.ResourceBroker, name, old, next)
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	err := c.ctrl.AlterConfigs(ctx, changes)
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 && !forwarded {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			err = aerr
		} else {
			err = c.rpc.alterConfigs(ctx, addr, kmsg.ConfigResourceTypeBroker, name, changes)
		}
	}
	if err != nil {
		ke, msg := kerrOf(err)
		return alterResult{ke, msg}
	}
	res := metadata.ConfigResource{Type: metadata.ResourceBroker, Name: name}
	applied := func(im *metadata.Image) bool {
		return maps.Equal(im.Configs[res], next) || len(next) == 0 && len(im.Configs[res]) == 0
	}
	if !c.waitFor(ctx, applied) {
		return alterResult{kerr.RequestTimedOut, fmt.Sprintf("The configs of broker '%s' were altered, but this broker has not applied them yet.", name)}
	}
	return alterResult{}
}

// throttleRateDocs describe the rates for DescribeConfigs.
var throttleRateDocs = map[string]string{
	leaderThrottledRate:   "Bytes per second this broker sends, as a leader, to followers of the replicas listed in leader.replication.throttled.replicas while they are out of the ISR.",
	followerThrottledRate: "Bytes per second this broker fetches, as a follower, for the replicas listed in follower.replication.throttled.replicas while they are not caught up.",
}

// describeThrottleRates lists the rates set for this node (perBroker) or
// as the cluster default, with their sources, as Kafka's ConfigHelper
// lists dynamic configs: only those set. Kafka reports them read-only (they
// are not among its reconfigurable KafkaConfig keys), and so does Gregor.
func (b *Broker) describeThrottleRates(perBroker bool) []describedConfig {
	dc := b.dynamicConfigs.Load()
	if dc == nil {
		return nil
	}
	var out []describedConfig
	for _, name := range []string{followerThrottledRate, leaderThrottledRate} {
		var syn []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if v, ok := dc.perBroker[name]; ok && perBroker {
			syn = append(syn, synonym(name, v, sourceDynamicBroker))
		}
		if v, ok := dc.defaults[name]; ok {
			syn = append(syn, synonym(name, v, sourceDynamicDefaultBroker))
		}
		if len(syn) == 0 {
			continue
		}
		out = append(out, describedConfig{name: name, value: *syn[0].Value, source: int8(syn[0].Source), readOnly: true,
			kind: topicconfig.KindLong, doc: throttleRateDocs[name], synonyms: syn})
	}
	return out
}

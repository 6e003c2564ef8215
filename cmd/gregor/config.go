package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/broker/security/listeners"
	"github.com/gregor-broker/gregor/broker/security/ssl"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/controller"
)

// topicSynonyms maps a Kafka broker config to the topic config whose
// broker-wide default it sets (Kafka's ServerTopicConfigSynonyms), from the
// topic config table.
var topicSynonyms = topicconfig.TopicConfigsBySynonym()

// derivedTopicSettings are the coarser broker configs Kafka derives a topic
// default from when the millisecond config is not set: the topic config and
// the factor to milliseconds, in the order Kafka prefers them.
var derivedTopicSettings = []struct {
	key, topic string
	factor     int64
}{
	{"log.retention.minutes", "retention.ms", 60_000},
	{"log.retention.hours", "retention.ms", 3_600_000},
	{"log.roll.hours", "segment.ms", 3_600_000},
	{"log.roll.jitter.hours", "segment.jitter.ms", 3_600_000},
	// Kafka: log.flush.interval.ms "if not set, the value in
	// log.flush.scheduler.interval.ms is used".
	{"log.flush.scheduler.interval.ms", "flush.ms", 1},
}

// ignoredKeys are Kafka broker configs that Gregor accepts and ignores (no
// thread pools to size).
var ignoredKeys = []string{
	"process.roles", "controller.quorum.bootstrap.servers",
	"num.network.threads", "num.io.threads",
	"socket.send.buffer.bytes", "socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir",
	"num.replica.fetchers",
	"share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
	"delete.topic.enable", "metadata.log.dir",
	"group.coordinator.rebalance.protocols", "zookeeper.connect", "zookeeper.connection.timeout.ms",
}

// ignoredPrefixes are families of configs ignored as a whole.
var ignoredPrefixes = []string{"transaction.state.log.", "ssl.", "sasl."}

// listenerKeys are read only to interpret listeners and advertised.listeners.
var listenerKeys = []string{"listener.security.protocol.map", "controller.listener.names"}

// setting is a property's winning value after layering.
type setting struct {
	value, origin string
}

// layerProperties merges layers, later layers and later lines winning.
func layerProperties(layers ...[]property) map[string]setting {
	out := map[string]setting{}
	for _, layer := range layers {
		for _, p := range layer {
			out[p.key] = setting{value: p.value, origin: p.origin}
		}
	}
	return out
}

// applyProperties sets cfg from Kafka broker configs. It logs one WARN line
// per ignored or unknown key and returns every invalid value joined into one
// error, leaving cfg untouched.
func applyProperties(dst *broker.Config, props map[string]setting, logger *slog.Logger) error {
	_, err := applyPropertiesWithOrigins(dst, props, logger)
	return err
}

// applyPropertiesWithOrigins is applyProperties that also returns, for each
// topic default set, the broker key, value and origin that set it, so that
// the broker's refusal of a topic default can name the key the user wrote.
func applyPropertiesWithOrigins(dst *broker.Config, props map[string]setting, logger *slog.Logger) (map[string]string, error) {
	cfg := *dst
	var errs []error
	bad := func(key, why string) {
		errs = append(errs, fmt.Errorf("%s=%q (%s): %s", key, props[key].value, props[key].origin, why))
	}
	value := func(key string) (string, bool) {
		s, ok := props[key]
		return strings.TrimSpace(s.value), ok
	}
	integer := func(key string, lo, hi int64) (int64, bool) {
		v, ok := value(key)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad(key, "not a number")
			return 0, false
		}
		if n < lo || n > hi {
			bad(key, fmt.Sprintf("out of range [%d, %d]", lo, hi))
			return 0, false
		}
		return n, true
	}
	handled := map[string]bool{}
	for _, k := range listenerKeys {
		handled[k] = true
	}

	// Listeners: every listener in listeners but the controller's is
	// served, each with its own security (listenerSecurity). One listener
	// fills the Config's one-listener shorthand; more fill
	// Config.Listeners.
	handled["listeners"], handled["advertised.listeners"] = true, true
	handled["sasl.enabled.mechanisms"] = true
	if _, ok := props["listeners"]; ok {
		served, err := listenerEntries(props, "listeners")
		var advertised []listenerEntry
		if err == nil {
			if _, ok := props["advertised.listeners"]; ok {
				if advertised, err = listenerEntries(props, "advertised.listeners"); err != nil {
					bad("advertised.listeners", err.Error())
				}
			}
		} else {
			bad("listeners", err.Error())
		}
		var ls []broker.ListenerConfig
		for _, e := range served {
			lc := broker.ListenerConfig{Name: e.name, Listen: e.addr, SecurityProtocol: e.protocol}
			for _, a := range advertised {
				if a.name == e.name {
					lc.Advertise = a.addr
				}
			}
			if lc.Advertise == "" && len(served) == 1 && len(advertised) > 0 {
				lc.Advertise = advertised[0].addr // one listener: the first entry, as before
			}
			if err := listenerSecurity(props, &lc, handled, logger); err != nil {
				bad("listeners", err.Error())
			}
			ls = append(ls, lc)
		}
		// The shorthand holds the first listener either way (what Addr
		// serves, and what one-listener callers read); the broker reads
		// Listeners when it is set.
		if len(ls) > 0 {
			l := ls[0]
			cfg.Listen, cfg.ListenerName, cfg.SecurityProtocol, cfg.Advertise = l.Listen, l.Name, l.SecurityProtocol, l.Advertise
			cfg.SSL, cfg.SSLPrincipalMappingRules = l.SSL, l.SSLPrincipalMappingRules
			cfg.SASLEnabledMechanisms, cfg.SASLPlainJAASConfig, cfg.OAuthBearer = l.SASLEnabledMechanisms, l.SASLPlainJAASConfig, l.OAuthBearer
			cfg.SASLJAASConfigs = l.SASLJAASConfigs
		}
		if len(ls) > 1 {
			cfg.Listeners = ls
		}
	} else {
		if _, ok := props["advertised.listeners"]; ok {
			if _, adv, _, err := servedListener(props, "advertised.listeners", ""); err != nil {
				bad("advertised.listeners", err.Error())
			} else {
				cfg.Advertise = adv
			}
		}
		if v, ok := value("sasl.enabled.mechanisms"); ok {
			cfg.SASLEnabledMechanisms = mechanismList(v)
		}
	}
	handled["inter.broker.listener.name"], handled["security.inter.broker.protocol"] = true, true
	ibl, iblSet := value("inter.broker.listener.name")
	ibp, ibpSet := value("security.inter.broker.protocol")
	switch {
	case iblSet && ibpSet:
		// KafkaConfig's message.
		bad("inter.broker.listener.name", "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
	case iblSet && ibl != "":
		cfg.InterBrokerListenerName = strings.ToUpper(ibl)
	case ibpSet && ibp != "":
		// Kafka names the listener after the protocol.
		cfg.InterBrokerListenerName = strings.ToUpper(ibp)
	}
	handled["sasl.mechanism.inter.broker.protocol"] = true
	if v, ok := value("sasl.mechanism.inter.broker.protocol"); ok {
		cfg.InterBrokerSASLMechanism = strings.TrimSpace(v)
	}
	// The JWKS validator's sasl.oauthbearer.* keys, as Kafka's broker reads
	// them: listener.name.<name>.oauthbearer.<key> over
	// listener.name.<name>.<key> over <key>. Kafka's
	// org.apache.kafka.sasl.oauthbearer.allowed.urls system property is a
	// key here.
	// Each listener reads its own (listener names differ only in the
	// prefixed keys).
	readJWKS := func(listenerName string, o *broker.OAuthBearerConfig) {
		oauthKey := func(key string) (string, bool) {
			keys := []string{key}
			if listenerName != "" {
				l := "listener.name." + strings.ToLower(listenerName) + "."
				keys = []string{l + "oauthbearer." + key, l + key, key}
			}
			winner, found := "", false
			for _, k := range keys {
				handled[k] = true
				if _, ok := props[k]; ok && !found {
					winner, found = k, true
				}
			}
			return winner, found
		}
		list := func(v string) []string {
			out := []string{}
			for _, e := range strings.Split(v, ",") {
				if e = strings.TrimSpace(e); e != "" {
					out = append(out, e)
				}
			}
			return out
		}
		for name, dst := range map[string]*string{
			"sasl.oauthbearer.jwks.endpoint.url": &o.JWKSEndpointURL,
			"sasl.oauthbearer.expected.issuer":   &o.ExpectedIssuer,
			"sasl.oauthbearer.scope.claim.name":  &o.ScopeClaimName,
			"sasl.oauthbearer.sub.claim.name":    &o.SubClaimName,
		} {
			if k, ok := oauthKey(name); ok {
				*dst, _ = value(k)
			}
		}
		if k, ok := oauthKey("sasl.oauthbearer.expected.audience"); ok {
			v, _ := value(k)
			o.ExpectedAudience = list(v)
		}
		for name, dst := range map[string]**int64{
			"sasl.oauthbearer.jwks.endpoint.refresh.ms":           &o.JWKSEndpointRefreshMs,
			"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms":     &o.JWKSEndpointRetryBackoffMs,
			"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": &o.JWKSEndpointRetryBackoffMaxMs,
			"sasl.oauthbearer.clock.skew.seconds":                 &o.ClockSkewSeconds,
		} {
			hi := int64(math.MaxInt64)
			if name == "sasl.oauthbearer.clock.skew.seconds" {
				hi = math.MaxInt32 // an INT in Kafka
			}
			if k, ok := oauthKey(name); ok {
				if n, ok := integer(k, 0, hi); ok {
					*dst = &n
				}
			}
		}
		handled["org.apache.kafka.sasl.oauthbearer.allowed.urls"] = true
		if v, ok := value("org.apache.kafka.sasl.oauthbearer.allowed.urls"); ok {
			o.AllowedURLs = list(v)
		}
	}
	readJWKS(cfg.ListenerName, &cfg.OAuthBearer)
	for i := range cfg.Listeners {
		readJWKS(cfg.Listeners[i].Name, &cfg.Listeners[i].OAuthBearer)
	}
	if _, ok := props["sasl.jaas.config"]; ok {
		handled["sasl.jaas.config"] = true
		logger.Warn("gregor: Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring config",
			"from", props["sasl.jaas.config"].origin, "use", "listener.name.<listener>.plain.sasl.jaas.config")
	}

	// log.dirs wins over log.dir, as in Kafka.
	handled["log.dirs"], handled["log.dir"] = true, true
	for _, key := range []string{"log.dirs", "log.dir"} {
		v, ok := value(key)
		if !ok {
			continue
		}
		dirs := strings.Split(v, ",")
		switch {
		case v == "":
			bad(key, "empty")
		case len(dirs) > 1:
			bad(key, "Gregor keeps its data in one directory; give one")
		default:
			cfg.DataDir = v
		}
		break
	}

	// node.id wins over broker.id; both set means they must agree.
	handled["node.id"], handled["broker.id"] = true, true
	nodeID, okNode := integer("node.id", 0, math.MaxInt32)
	brokerID, okBroker := integer("broker.id", 0, math.MaxInt32)
	switch {
	case okNode && okBroker && nodeID != brokerID:
		bad("broker.id", fmt.Sprintf("differs from node.id %d", nodeID))
	case okNode:
		cfg.NodeID = int32(nodeID)
	case okBroker:
		cfg.NodeID = int32(brokerID)
	}

	// Every key of the broker's config table that it parses itself.
	for _, k := range broker.BrokerConfigs() {
		if !k.Parses() {
			continue
		}
		handled[k.Name] = true
		if v, ok := value(k.Name); ok {
			if err := k.Parse(&cfg, v); err != nil {
				bad(k.Name, err.Error())
			}
		}
	}

	// Kafka's GroupCoordinatorConfig requires the interval within its
	// bounds, which also bound a group's consumer.assignment.interval.ms.
	handled["group.consumer.min.assignment.interval.ms"], handled["group.consumer.max.assignment.interval.ms"] = true, true
	minAssignMs, maxAssignMs := int64(0), int64(15000)
	if n, ok := integer("group.consumer.min.assignment.interval.ms", 0, math.MaxInt32); ok {
		minAssignMs = n
	}
	if n, ok := integer("group.consumer.max.assignment.interval.ms", 0, math.MaxInt32); ok {
		maxAssignMs = n
	}
	if minAssignMs > maxAssignMs {
		bad("group.consumer.min.assignment.interval.ms", "must be less than or equal to group.consumer.max.assignment.interval.ms")
	}
	if v := cfg.GroupConsumerAssignmentIntervalMs; v != nil && (*v < minAssignMs || *v > maxAssignMs) {
		bad("group.consumer.assignment.interval.ms", fmt.Sprintf("must be between group.consumer.min.assignment.interval.ms (%d) and group.consumer.max.assignment.interval.ms (%d)", minAssignMs, maxAssignMs))
	}

	// log.cleaner.threads=0 starts no cleaner thread, as in Kafka.
	if v, ok := value("log.cleaner.threads"); ok && v == "0" {
		off := false
		cfg.LogCleanerEnable = &off
	}

	// group.consumer.assignors: Kafka takes class names or the short names
	// of its own assignors; Gregor has those two.
	handled["group.consumer.assignors"] = true
	if v, ok := value("group.consumer.assignors"); ok {
		var names []string
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			switch a {
			case "uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
				names = append(names, "uniform")
			case "range", "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
				names = append(names, "range")
			default:
				bad("group.consumer.assignors", fmt.Sprintf("unknown assignor %q (uniform and range exist)", a))
			}
		}
		cfg.GroupConsumerAssignors = names
	}

	// Cluster mode: static controller.quorum.voters; combined broker and
	// controller nodes (the voters) and broker-only nodes (observers).
	// Without voters (Kafka's single-node
	// example files name a dynamic quorum instead) the node runs alone
	// and process.roles is ignored, as before.
	handled["controller.quorum.voters"] = true
	if v, ok := value("controller.quorum.voters"); ok && v != "" {
		if _, err := controller.ParseVoters(v); err != nil {
			bad("controller.quorum.voters", err.Error())
		} else {
			cfg.ControllerQuorumVoters = v
		}
	}
	if v, ok := value("process.roles"); ok && cfg.ControllerQuorumVoters != "" {
		handled["process.roles"] = true
		roles := map[string]bool{}
		for _, r := range strings.Split(v, ",") {
			roles[strings.ToLower(strings.TrimSpace(r))] = true
		}
		switch {
		case len(roles) == 2 && roles["broker"] && roles["controller"]:
			cfg.ProcessRoles = "broker,controller"
		case len(roles) == 1 && roles["broker"]:
			cfg.ProcessRoles = "broker" // a broker-only node: an observer of the quorum
		default:
			bad("process.roles", "broker,controller (a voter) and broker (a broker-only node) are served; controller-only nodes are not yet")
		}
	}
	if _, ok := props["controller.listener.names"]; ok && cfg.ControllerQuorumVoters != "" {
		if addr, found, err := controllerListener(props); err != nil {
			bad("listeners", err.Error())
		} else if found {
			cfg.ControllerListen = addr
		}
	}

	// KIP-392: broker.rack, and replica.selector.class, of which Kafka
	// ships one implementation.
	handled["broker.rack"], handled["replica.selector.class"] = true, true
	if v, ok := value("broker.rack"); ok {
		cfg.BrokerRack = v
	}
	if v, ok := value("replica.selector.class"); ok {
		switch v {
		case "", broker.RackAwareReplicaSelector:
			cfg.ReplicaSelectorClass = v
		default:
			bad("replica.selector.class", "the only replica selector is "+broker.RackAwareReplicaSelector)
		}
	}

	// Topic defaults. The broker validates them by their topic names, so
	// check here only that the coarse units are numbers.
	topicDefaults := map[string]string{}
	topicOrigins := map[string]string{}
	for i := len(derivedTopicSettings) - 1; i >= 0; i-- { // preferred last, so it wins
		d := derivedTopicSettings[i]
		handled[d.key] = true
		if n, ok := integer(d.key, math.MinInt64, math.MaxInt64); ok {
			ms := n * d.factor
			if n < 0 || ms/d.factor != n {
				ms = -1 // Kafka: a negative retention is "forever"
			}
			topicDefaults[d.topic] = strconv.FormatInt(ms, 10)
			topicOrigins[d.topic] = fmt.Sprintf("%s=%q (%s)", d.key, props[d.key].value, props[d.key].origin)
		}
	}
	for key, topic := range topicSynonyms {
		handled[key] = true
		if v, ok := value(key); ok {
			topicDefaults[topic] = v
			topicOrigins[topic] = fmt.Sprintf("%s=%q (%s)", key, props[key].value, props[key].origin)
		}
	}

	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case handled[k]:
		case isIgnored(k):
			logger.Warn("gregor: config ignored: Gregor does not use it", "key", k, "from", props[k].origin)
		default:
			logger.Warn("gregor: unknown config", "key", k, "from", props[k].origin)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(topicDefaults) > 0 {
		merged := make(map[string]string, len(cfg.TopicDefaults)+len(topicDefaults))
		for k, v := range cfg.TopicDefaults {
			merged[k] = v
		}
		for k, v := range topicDefaults {
			merged[k] = v
		}
		cfg.TopicDefaults = merged
	}
	*dst = cfg
	return topicOrigins, nil
}

func isIgnored(key string) bool {
	if slices.Contains(ignoredKeys, key) {
		return true
	}
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// sslKeys are the keys of a TLS listener's configuration.
var sslKeys = append(slices.Clone(ssl.Keys), "ssl.principal.mapping.rules")

// listenerSSL reads the TLS configuration of the listener named name and
// marks the keys it read as handled. The error is ssl.Parse's, which never
// shows a password or key. On SASL_SSL, as in Kafka's ChannelBuilders,
// only the listener-prefixed ssl.client.auth asks for client
// certificates: the broker-wide one applies to SSL listeners alone.
func listenerSSL(props map[string]setting, name, protocol string, handled map[string]bool, logger *slog.Logger) (*ssl.Settings, string, error) {
	get := func(key string) (string, bool) {
		s, ok := props[key]
		if ok {
			handled[key] = true
		}
		return s.value, ok
	}
	lookup := func(key string) (string, bool) { return listeners.Lookup(get, name, key) }
	for _, k := range sslKeys { // both forms are read, whichever wins
		get(k)
		get("listener.name." + strings.ToLower(name) + "." + k)
	}
	prefixedClientAuth := "listener.name." + strings.ToLower(name) + ".ssl.client.auth"
	parse := lookup
	if _, ok := props[prefixedClientAuth]; !ok && protocol == "SASL_SSL" {
		if v, ok := props["ssl.client.auth"]; ok && !strings.EqualFold(strings.TrimSpace(v.value), ssl.ClientAuthNone) {
			logger.Warn("gregor: Broker configuration 'ssl.client.auth' is applied only to SSL listeners. Listener-prefixed configuration can be used to enable SSL client authentication for SASL_SSL listeners.",
				"from", v.origin, "use", prefixedClientAuth)
		}
		parse = func(key string) (string, bool) {
			if key == "ssl.client.auth" {
				return ssl.ClientAuthNone, true
			}
			return lookup(key)
		}
	}
	settings, err := ssl.Parse(parse)
	if err != nil {
		return nil, "", fmt.Errorf("listener %s: %v", name, err)
	}
	rules, _ := lookup("ssl.principal.mapping.rules")
	return &settings, rules, nil
}

// listenerEntry is one listener of listeners or advertised.listeners.
type listenerEntry struct{ name, addr, protocol string }

// listenerEntries parses key (listeners or advertised.listeners): each
// NAME://HOST:PORT but the controller listeners, with its security
// protocol (its name, or its listener.security.protocol.map entry:
// PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL). Names are upper-cased, as
// Kafka's ListenerName.normalised.
func listenerEntries(props map[string]setting, key string) ([]listenerEntry, error) {
	protocols := map[string]string{}
	if m, ok := props["listener.security.protocol.map"]; ok {
		for _, pair := range strings.Split(m.value, ",") {
			n, p, ok := strings.Cut(strings.TrimSpace(pair), ":")
			if ok {
				protocols[strings.ToUpper(strings.TrimSpace(n))] = strings.ToUpper(strings.TrimSpace(p))
			}
		}
	}
	controller := map[string]bool{}
	if c, ok := props["controller.listener.names"]; ok {
		for _, n := range strings.Split(c.value, ",") {
			controller[strings.ToUpper(strings.TrimSpace(n))] = true
		}
	}
	var out []listenerEntry
	for _, l := range strings.Split(props[key].value, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		n, hostPort, ok := strings.Cut(l, "://")
		if !ok {
			return nil, fmt.Errorf("%q is not NAME://HOST:PORT", l)
		}
		n = strings.ToUpper(n)
		if controller[n] {
			continue
		}
		if _, _, err := net.SplitHostPort(hostPort); err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		proto, ok := protocols[n]
		if !ok {
			proto = n
		}
		switch proto {
		case "PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL":
		default:
			return nil, fmt.Errorf("listener %s has no security protocol (map it in listener.security.protocol.map)", n)
		}
		if slices.ContainsFunc(out, func(e listenerEntry) bool { return e.name == n }) {
			// Kafka's CoreUtils.validate message.
			return nil, fmt.Errorf("Each listener must have a different name, %s: %s", key, props[key].value)
		}
		out = append(out, listenerEntry{n, hostPort, proto})
	}
	if len(out) == 0 {
		return nil, errors.New("no PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL listener")
	}
	return out, nil
}

// servedListener picks from key the listener named want if want is set
// and present, otherwise the first one.
func servedListener(props map[string]setting, key, want string) (name, addr, protocol string, err error) {
	entries, err := listenerEntries(props, key)
	if err != nil {
		return "", "", "", err
	}
	for _, l := range entries {
		if l.name == want {
			return l.name, l.addr, l.protocol, nil
		}
	}
	return entries[0].name, entries[0].addr, entries[0].protocol, nil
}

// mechanismList is a sasl.enabled.mechanisms value as a list.
func mechanismList(v string) []string {
	mechs := []string{}
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mechs = append(mechs, m)
		}
	}
	return mechs
}

// listenerSecurity reads the security of listener l: on SSL and SASL_SSL
// its ssl.* keys and ssl.principal.mapping.rules; its
// sasl.enabled.mechanisms; PLAIN's users from its
// listener.name.<name>.plain.sasl.jaas.config, the only place a Kafka
// broker takes them from besides the JVM's JAAS file; and OAUTHBEARER's
// keys. Each key is listener.name.<name>.<key> over <key>, as Kafka reads
// them.
func listenerSecurity(props map[string]setting, l *broker.ListenerConfig, handled map[string]bool, logger *slog.Logger) error {
	if l.SecurityProtocol == "SSL" || l.SecurityProtocol == "SASL_SSL" {
		settings, rules, err := listenerSSL(props, l.Name, l.SecurityProtocol, handled, logger)
		if err != nil {
			return err
		}
		l.SSL, l.SSLPrincipalMappingRules = settings, rules
	}
	prefix := "listener.name." + strings.ToLower(l.Name) + "."
	handled[prefix+"sasl.enabled.mechanisms"] = true
	if s, ok := props[prefix+"sasl.enabled.mechanisms"]; ok {
		l.SASLEnabledMechanisms = mechanismList(strings.TrimSpace(s.value))
	} else if s, ok := props["sasl.enabled.mechanisms"]; ok {
		l.SASLEnabledMechanisms = mechanismList(strings.TrimSpace(s.value))
	}
	handled[prefix+"plain.sasl.jaas.config"] = true
	if s, ok := props[prefix+"plain.sasl.jaas.config"]; ok {
		l.SASLPlainJAASConfig = s.value
	}
	for key, dst := range map[string]*string{
		prefix + "oauthbearer.sasl.jaas.config":                   &l.OAuthBearer.JAASConfig,
		prefix + "oauthbearer.sasl.server.callback.handler.class": &l.OAuthBearer.ServerCallbackHandlerClass,
	} {
		handled[key] = true
		if s, ok := props[key]; ok {
			*dst = s.value
		}
	}
	// Kafka needs a ScramLoginModule entry for each SCRAM mechanism; the
	// server does not read its options, its credentials being the
	// broker's (--add-scram, AlterUserScramCredentials), but on the
	// inter-broker listener the username and password are this node's
	// login to the others.
	for _, m := range []string{"scram-sha-256", "scram-sha-512"} {
		handled[prefix+m+".sasl.jaas.config"] = true
		if s, ok := props[prefix+m+".sasl.jaas.config"]; ok {
			if l.SASLJAASConfigs == nil {
				l.SASLJAASConfigs = map[string]string{}
			}
			l.SASLJAASConfigs[strings.ToUpper(m)] = s.value
		}
	}
	return nil
}

// controllerListener returns the address of the first listener in
// listeners named in controller.listener.names, if any.
func controllerListener(props map[string]setting) (addr string, found bool, err error) {
	names := map[string]bool{}
	for _, n := range strings.Split(props["controller.listener.names"].value, ",") {
		names[strings.ToUpper(strings.TrimSpace(n))] = true
	}
	for _, l := range strings.Split(props["listeners"].value, ",") {
		n, hostPort, ok := strings.Cut(strings.TrimSpace(l), "://")
		if !ok || !names[strings.ToUpper(n)] {
			continue
		}
		if _, _, err := net.SplitHostPort(hostPort); err != nil {
			return "", false, fmt.Errorf("%q: %v", l, err)
		}
		return hostPort, true, nil
	}
	return "", false, nil
}

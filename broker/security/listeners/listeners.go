package listeners

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SecurityProtocol is a listener's security protocol, Kafka's
// SecurityProtocol enum, by name.
type SecurityProtocol string

// The security protocols Kafka knows.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// protocolForName is SecurityProtocol.forName: the name upper-cased.
func protocolForName(name string) (SecurityProtocol, bool) {
	switch p := SecurityProtocol(javaUpper(name)); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, true
	}
	return "", false
}

// IsSASL reports whether the protocol authenticates with SASL.
func (p SecurityProtocol) IsSASL() bool { return p == SASLPlaintext || p == SASLSSL }

// IsTLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) IsTLS() bool { return p == SSL || p == SASLSSL }

// Endpoint is one listener or advertised address, Kafka's Endpoint.
type Endpoint struct {
	// Listener is the listener name, upper-cased (Kafka's normalised
	// ListenerName).
	Listener string
	Protocol SecurityProtocol
	// Host is empty for a listener given without a host, which binds to
	// every interface (Kafka stores it as null). IPv6 hosts are given
	// without their brackets.
	Host string
	// Port is the port as written: 0 picks a free port, and Kafka accepts
	// negative and out-of-range numbers here and fails at bind time.
	Port int
}

// Address is host:port for net.Listen ("" for every interface, IPv6 in
// brackets).
func (e Endpoint) Address() string {
	return joinHostPort(e.Host, e.Port)
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// Role is a process.roles entry.
type Role string

// The roles of process.roles.
const (
	RoleBroker     Role = "broker"
	RoleController Role = "controller"
)

// Config is the listener configuration Parse accepted.
type Config struct {
	// Roles are process.roles, without repeats.
	Roles []Role
	// NodeID is node.id (or broker.id, its synonym).
	NodeID int32
	// Listeners are the listeners to bind, in the order given, the
	// controller listeners among them.
	Listeners []Endpoint
	// Advertised are the broker listeners' advertised endpoints
	// (advertised.listeners, or Listeners when it is not set), without
	// the controller listeners. Empty on a controller-only node.
	Advertised []Endpoint
	// AdvertisedControllers are the controller listeners' advertised
	// endpoints, in controller.listener.names order. A controller listener
	// not in advertised.listeners advertises its listeners entry; the
	// first one, given without a host or with 0.0.0.0, advertises this
	// node's address in controller.quorum.voters instead.
	AdvertisedControllers []Endpoint
	// InterBrokerListener is the listener brokers replicate over
	// (inter.broker.listener.name, or the listener named after
	// security.inter.broker.protocol), and InterBrokerProtocol its
	// security protocol.
	InterBrokerListener string
	InterBrokerProtocol SecurityProtocol
	// ControllerListenerNames are controller.listener.names as given
	// (Kafka does not upper-case them), without repeats.
	ControllerListenerNames []string
	// Protocols is the effective listener.security.protocol.map, by
	// upper-cased listener name.
	Protocols map[string]SecurityProtocol

	get func(string) (string, bool)
}

// Error is a configuration Kafka refuses: the Java exception KafkaConfig
// throws (ConfigException, IllegalArgumentException, ...) and its
// message.
type Error struct {
	Exception string
	Message   string
}

func (e *Error) Error() string { return e.Message }

// errEmptyListenerName is ListenerName's refusal of an empty name.
var errEmptyListenerName = configError("The provided listener name is null or empty string")

func configError(format string, args ...any) *Error {
	return &Error{Exception: "ConfigException", Message: fmt.Sprintf(format, args...)}
}

func illegalArgument(format string, args ...any) *Error {
	return &Error{Exception: "IllegalArgumentException", Message: fmt.Sprintf(format, args...)}
}

// require is Scala's require: an IllegalArgumentException whose message
// starts "requirement failed: ".
func require(ok bool, msg string) error {
	if ok {
		return nil
	}
	return illegalArgument("requirement failed: %s", msg)
}

// The keys Parse reads.
const (
	KeyProcessRoles              = "process.roles"
	KeyNodeID                    = "node.id"
	KeyBrokerID                  = "broker.id"
	KeyQuorumVoters              = "controller.quorum.voters"
	KeyQuorumBootstrapServers    = "controller.quorum.bootstrap.servers"
	KeyListeners                 = "listeners"
	KeyAdvertisedListeners       = "advertised.listeners"
	KeyProtocolMap               = "listener.security.protocol.map"
	KeyInterBrokerListenerName   = "inter.broker.listener.name"
	KeyInterBrokerProtocol       = "security.inter.broker.protocol"
	KeyControllerListenerNames   = "controller.listener.names"
	KeySASLEnabledMechanisms     = "sasl.enabled.mechanisms"
	KeySASLMechanismInterBroker  = "sasl.mechanism.inter.broker.protocol"
	defaultListeners             = "PLAINTEXT://:9092"
	defaultProtocolMap           = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
	defaultSASLMechanism         = "GSSAPI"
	defaultInterBrokerProtocol   = "PLAINTEXT"
	validInterBrokerProtocolList = "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
)

// parser holds what Parse has read so far.
type parser struct {
	get             func(string) (string, bool)
	roles           []Role
	nodeID          int32
	brokerID        int32
	voters          []voter
	controllerNames []string
	listenersRaw    []string
	advertisedRaw   []string // nil: not set
	protocols       map[string]SecurityProtocol
	listeners       []Endpoint
}

type voter struct {
	id   int32
	host string
	port int
}

// Parse reads and validates the listener configuration. get returns a
// key's value and whether it is set, after whatever layering the caller
// does; unset keys take Kafka's defaults. The checks run in KafkaConfig's
// order, and the first refusal is returned.
func Parse(get func(key string) (string, bool)) (*Config, error) {
	p := &parser{get: get}
	if err := p.parseKeys(); err != nil {
		return nil, err
	}
	return p.validate()
}

// value returns a STRING key's trimmed value, or def when it is unset.
func (p *parser) value(key, def string) (string, bool) {
	v, ok := p.get(key)
	if !ok {
		return def, def != ""
	}
	return javaTrim(v), true
}

// list parses a LIST key as ConfigDef does (trim, split on commas with the
// spaces around them, keep empty items) and drops repeated items as
// Kafka 4.4 does. set is false when the key is unset and has no default.
func (p *parser) list(key, def string, hasDefault bool) (items []string, set bool) {
	v, ok := p.get(key)
	if !ok {
		if !hasDefault {
			return nil, false
		}
		v = def
	}
	v = javaTrim(v)
	if v == "" {
		return []string{}, true
	}
	for _, item := range splitComma(v, true) {
		if !slices.Contains(items, item) {
			items = append(items, item)
		}
	}
	return items, true
}

// validList is ConfigDef.ValidList's check: no empty list unless allowed,
// no empty item, and each item among valid if valid is given.
func validList(key string, items []string, valid []string) error {
	if len(items) == 0 {
		allowed := "any non-empty value"
		if valid != nil {
			allowed = "[" + strings.Join(valid, ", ") + "]"
		}
		return configError("Configuration '%s' must not be empty. Valid values include: %s", key, allowed)
	}
	for _, item := range items {
		if item == "" {
			return configError("Configuration '%s' values must not be empty.", key)
		}
		if valid != nil && !slices.Contains(valid, item) {
			return configError("Invalid value %s for configuration %s: String must be one of: %s", item, key, strings.Join(valid, ", "))
		}
	}
	return nil
}

func missing(key string) error {
	return configError("Missing required configuration \"%s\" which has no default value.", key)
}

// parseKeys is the ConfigDef half: each key's type and validator.
func (p *parser) parseKeys() error {
	roles, ok := p.list(KeyProcessRoles, "", false)
	if !ok {
		return missing(KeyProcessRoles)
	}
	if err := validList(KeyProcessRoles, roles, []string{"broker", "controller"}); err != nil {
		return err
	}
	for _, r := range roles {
		p.roles = append(p.roles, Role(r))
	}
	// broker.id and node.id are synonyms: either one set stands for both
	// (AbstractKafkaConfig.populateSynonyms), broker.id parsed first.
	brokerID, brokerSet := p.value(KeyBrokerID, "")
	nodeID, nodeSet := p.value(KeyNodeID, "")
	switch {
	case !brokerSet && nodeSet:
		brokerID = nodeID
	case brokerSet && !nodeSet:
		nodeID = brokerID
	}
	b, n := int64(-1), int64(0)
	var err error
	if brokerSet || nodeSet {
		if b, err = strconv.ParseInt(brokerID, 10, 32); err != nil {
			return configError("Invalid value %s for configuration %s: Not a number of type INT", brokerID, KeyBrokerID)
		}
	}
	if !brokerSet && !nodeSet {
		return missing(KeyNodeID)
	}
	if n, err = strconv.ParseInt(nodeID, 10, 32); err != nil {
		return configError("Invalid value %s for configuration %s: Not a number of type INT", nodeID, KeyNodeID)
	}
	if n < 0 {
		return configError("Invalid value %d for configuration %s: Value must be at least 0", n, KeyNodeID)
	}
	p.nodeID, p.brokerID = int32(n), int32(b)
	p.voters = parseVoters(p.get)

	names, ok := p.list(KeyControllerListenerNames, "", false)
	if !ok {
		return missing(KeyControllerListenerNames)
	}
	if err := validList(KeyControllerListenerNames, names, nil); err != nil {
		return err
	}
	p.controllerNames = names

	p.listenersRaw, _ = p.list(KeyListeners, defaultListeners, true)
	if err := validList(KeyListeners, p.listenersRaw, nil); err != nil {
		return err
	}
	if adv, set := p.list(KeyAdvertisedListeners, "", false); set {
		if err := validList(KeyAdvertisedListeners, adv, nil); err != nil {
			return err
		}
		p.advertisedRaw = adv
	}
	proto, _ := p.value(KeyInterBrokerProtocol, defaultInterBrokerProtocol)
	if _, ok := protocolForName(proto); !ok || javaUpper(proto) != proto {
		return configError("Invalid value %s for configuration %s: String must be one of: %s", proto, KeyInterBrokerProtocol, validInterBrokerProtocolList)
	}
	return nil
}

// parseVoters reads controller.quorum.voters (id@host:port,...) for the
// addresses of the voters; entries that do not parse are skipped, as the
// quorum's own configuration reports them.
func parseVoters(get func(string) (string, bool)) []voter {
	v, ok := get(KeyQuorumVoters)
	if !ok || javaTrim(v) == "" {
		return nil
	}
	var out []voter
	for _, entry := range splitComma(javaTrim(v), true) {
		idStr, addr, ok := strings.Cut(entry, "@")
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		colon := strings.LastIndex(addr, ":")
		if err != nil || colon < 0 {
			continue
		}
		port, err := strconv.Atoi(addr[colon+1:])
		if err != nil {
			continue
		}
		host := strings.TrimSuffix(strings.TrimPrefix(addr[:colon], "["), "]")
		out = append(out, voter{id: int32(id), host: host, port: port})
	}
	return out
}

func (p *parser) hasRole(r Role) bool { return slices.Contains(p.roles, r) }

func (p *parser) onlyRole(r Role) bool { return len(p.roles) == 1 && p.roles[0] == r }

// protocolMap is effectiveListenerSecurityProtocolMap.
func (p *parser) protocolMap() (map[string]SecurityProtocol, error) {
	if p.protocols != nil {
		return p.protocols, nil
	}
	raw, set := p.get(KeyProtocolMap)
	value := defaultProtocolMap
	if set {
		value = javaTrim(raw)
	}
	keys, values, err := parseCSVMap(value)
	if err != nil {
		return nil, illegalArgument("Error parsing configuration property '%s': %s", KeyProtocolMap, err.Error())
	}
	out := map[string]SecurityProtocol{}
	// Collectors.toMap over the HashMap's entries: the key normalised,
	// the protocol parsed, a repeated key refused.
	hashes := make([]int32, len(keys))
	for i, k := range keys {
		hashes[i] = javaStringHash(k)
	}
	for _, i := range hashMapOrder(hashes) {
		name := javaUpper(keys[i])
		if name == "" {
			return nil, errEmptyListenerName
		}
		proto, ok := protocolForName(values[i])
		if !ok {
			return nil, configError("Invalid security protocol `%s` defined in %s", values[i], KeyProtocolMap)
		}
		if prev, dup := out[name]; dup {
			return nil, &Error{Exception: "IllegalStateException",
				Message: fmt.Sprintf("Duplicate key ListenerName(%s) (attempted merging values %s and %s)", name, prev, proto)}
		}
		out[name] = proto
	}
	if !set {
		// KRaft's default: controller listeners not otherwise mapped are
		// PLAINTEXT, unless some listener uses SSL or SASL.
		inUse, err := p.sslOrSASLInUse()
		if err != nil {
			return nil, err
		}
		for _, n := range p.controllerNames {
			if !inUse && n != string(Plaintext) {
				out[n] = Plaintext
			}
		}
	}
	p.protocols = out
	return out, nil
}

// sslOrSASLInUse is whether a controller listener name or a listener's name
// (up to its first colon) is SSL, SASL_SSL or SASL_PLAINTEXT, looked at in
// Kafka's order, which stops at the first. A listener without a colon
// before that is Kafka's KafkaException.
func (p *parser) sslOrSASLInUse() (bool, error) {
	isSSLOrSASL := func(n string) bool {
		return n == string(SSL) || n == string(SASLSSL) || n == string(SASLPlaintext)
	}
	for _, n := range p.controllerNames {
		if isSSLOrSASL(n) {
			return true, nil
		}
	}
	for _, l := range p.listenersRaw {
		i := strings.IndexByte(l, ':')
		if i < 0 {
			return false, &Error{Exception: "KafkaException", Message: "Unable to parse a listener name from " + l}
		}
		if isSSLOrSASL(javaUpper(l[:i])) {
			return true, nil
		}
	}
	return false, nil
}

// parseCSVMap is Csv.parseCsvMap: entries split on commas, each at its
// last colon, both sides trimmed; later entries replace earlier ones. It
// returns the distinct keys in insertion order and their values.
func parseCSVMap(s string) (keys, values []string, err error) {
	if s == "" {
		return nil, nil, nil
	}
	for _, entry := range splitComma(s, false) {
		i := strings.LastIndex(entry, ":")
		if i < 0 {
			return nil, nil, fmt.Errorf("begin 0, end -1, length %d", utf16Len(entry))
		}
		k, v := javaTrim(entry[:i]), javaTrim(entry[i+1:])
		if j := slices.Index(keys, k); j >= 0 {
			values[j] = v
			continue
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}

// utf16Len is the length of s in UTF-16 code units, which Java's
// messages count.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

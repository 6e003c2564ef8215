package listeners

import (
	"slices"
	"strconv"
	"strings"
)

// validate is the listener part of KafkaConfig.validateValues, in its
// order, after the accessors it calls.
func (p *parser) validate() (*Config, error) {
	if p.nodeID != p.brokerID {
		return nil, configError("`node.id` and `broker.id` must be set to the same value. `broker.id` is deprecated, please use `node.id` instead.")
	}
	protocols, err := p.protocolMap()
	if err != nil {
		return nil, err
	}
	// advertisedBrokerListenerNames, computed first.
	advertised, err := p.advertisedBrokers()
	if err != nil {
		return nil, err
	}
	advertisedNames := endpointNames(advertised)

	voterIDs := p.voterIDs()
	switch {
	case p.onlyRole(RoleBroker):
		if err := p.validateQuorum(voterIDs); err != nil {
			return nil, err
		}
		if err := require(!slices.Contains(voterIDs, p.nodeID), "If process.roles contains just the 'broker' role, the node id "+
			strconv.Itoa(int(p.nodeID))+" must not be included in the set of voters "+KeyQuorumVoters+"="+p.voterSet(voterIDs)); err != nil {
			return nil, err
		}
		if err := require(len(p.controllerNames) > 0, "controller.listener.names must contain at least one value when running KRaft with just the broker role"); err != nil {
			return nil, err
		}
		listeners, err := p.parsedListeners()
		if err != nil {
			return nil, err
		}
		if err := require(len(p.controllerListeners(listeners)) == 0, "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role"); err != nil {
			return nil, err
		}
		for _, n := range p.controllerNames {
			if _, ok := protocols[javaUpper(n)]; !ok {
				return nil, configError("Controller listener with name %s defined in controller.listener.names not found in listener.security.protocol.map  (an explicit security mapping for each controller listener is required if listener.security.protocol.map is non-empty, or if there are security protocols other than PLAINTEXT in use)", javaUpper(n))
			}
		}
	case p.onlyRole(RoleController):
		if err := p.validateQuorum(voterIDs); err != nil {
			return nil, err
		}
		advControllers, err := p.advertisedControllers()
		if err != nil {
			return nil, err
		}
		listeners, err := p.parsedListeners()
		if err != nil {
			return nil, err
		}
		if err := require(len(advControllers) == len(listeners), "The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller"); err != nil {
			return nil, err
		}
		if _, set := p.get(KeyInterBrokerListenerName); set {
			name, _, err := p.interBroker()
			if err != nil {
				return nil, err
			}
			if err := require(!slices.Contains(p.controllerNames, name), "controller.listener.names must not contain an explicitly set inter.broker.listener.name configuration value when process.roles=controller'"); err != nil {
				return nil, err
			}
		}
		if err := p.validateController(voterIDs); err != nil {
			return nil, err
		}
	default: // combined
		if err := p.validateQuorum(voterIDs); err != nil {
			return nil, err
		}
		if err := p.validateController(voterIDs); err != nil {
			return nil, err
		}
	}

	listeners, err := p.parsedListeners()
	if err != nil {
		return nil, err
	}
	listenerNames := endpointNames(listeners)
	if p.hasRole(RoleBroker) {
		hint := ""
		if p.hasRole(RoleBroker) {
			hint = " Perhaps all listeners appear in controller.listener.names?"
		}
		if err := require(len(advertisedNames) > 0, "There must be at least one broker advertised listener."+hint); err != nil {
			return nil, err
		}
		name, _, err := p.interBroker()
		if err != nil {
			return nil, err
		}
		if err := require(slices.Contains(advertisedNames, name), "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are "+strings.Join(advertisedNames, ",")); err != nil {
			return nil, err
		}
		subset := true
		for _, n := range advertisedNames {
			subset = subset && slices.Contains(listenerNames, n)
		}
		if err := require(subset, "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found "+
			strings.Join(advertisedNames, ",")+". The valid options based on the current configuration are "+strings.Join(listenerNames, ",")); err != nil {
			return nil, err
		}
	}
	const wildcard = "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
	for _, e := range advertised {
		if e.Host == "0.0.0.0" {
			return nil, require(false, wildcard)
		}
	}
	advControllers, err := p.advertisedControllers()
	if err != nil {
		return nil, err
	}
	for _, e := range advControllers {
		if e.Host == "0.0.0.0" {
			return nil, require(false, wildcard)
		}
	}
	interName, interProto, err := p.interBroker()
	if err != nil {
		return nil, err
	}
	if interProto.IsSASL() {
		mechanism, _ := p.value(KeySASLMechanismInterBroker, defaultSASLMechanism)
		if err := require(slices.Contains(p.saslMechanisms(interName), mechanism), "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"); err != nil {
			return nil, err
		}
	}
	roles := slices.Clone(p.roles)
	return &Config{
		Roles:                   roles,
		NodeID:                  p.nodeID,
		Listeners:               listeners,
		Advertised:              advertised,
		AdvertisedControllers:   advControllers,
		InterBrokerListener:     interName,
		InterBrokerProtocol:     interProto,
		ControllerListenerNames: slices.Clone(p.controllerNames),
		Protocols:               protocols,
		get:                     p.get,
	}, nil
}

// validateQuorum: some voter or bootstrap server must be given.
func (p *parser) validateQuorum(voterIDs []int32) error {
	if len(voterIDs) > 0 {
		return nil
	}
	if v, ok := p.get(KeyQuorumBootstrapServers); ok && javaTrim(v) != "" {
		return nil
	}
	return configError("If using process.roles, either controller.quorum.bootstrap.servers must " +
		"contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable " +
		"set of controllers.")
}

// validateController is the checks of a node with the controller role.
func (p *parser) validateController(voterIDs []int32) error {
	if len(voterIDs) > 0 {
		if err := require(slices.Contains(voterIDs, p.nodeID), "If process.roles contains the 'controller' role, the node id "+
			strconv.Itoa(int(p.nodeID))+" must be included in the set of voters "+KeyQuorumVoters+"="+p.voterSet(voterIDs)); err != nil {
			return err
		}
	}
	adv, err := p.advertisedControllers()
	if err != nil {
		return err
	}
	if err := require(len(adv) > 0, "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role"); err != nil {
		return err
	}
	listeners, err := p.parsedListeners()
	if err != nil {
		return err
	}
	names := endpointNames(listeners)
	for _, n := range p.controllerNames {
		if !slices.Contains(names, n) {
			return require(false, "controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role")
		}
	}
	return nil
}

func (p *parser) voterIDs() []int32 {
	var ids []int32
	for _, v := range p.voters {
		if !slices.Contains(ids, v.id) {
			ids = append(ids, v.id)
		}
	}
	slices.Sort(ids) // a Java HashSet of small Integers iterates in order
	return ids
}

func (p *parser) voterSet(ids []int32) string {
	items := make([]string, len(ids))
	for i, id := range ids {
		items[i] = strconv.Itoa(int(id))
	}
	return scalaSet(items)
}

// parsedListeners is KafkaConfig.listeners.
func (p *parser) parsedListeners() ([]Endpoint, error) {
	if p.listeners != nil {
		return p.listeners, nil
	}
	protocols, err := p.protocolMap()
	if err != nil {
		return nil, err
	}
	eps, err := parseEndpoints(p.listenersRaw, protocols, true)
	if err != nil {
		return nil, err
	}
	p.listeners = eps
	return eps, nil
}

func (p *parser) isControllerName(name string) bool { return slices.Contains(p.controllerNames, name) }

// controllerListeners are the listeners named in controller.listener.names.
func (p *parser) controllerListeners(listeners []Endpoint) []Endpoint {
	var out []Endpoint
	for _, e := range listeners {
		if p.isControllerName(e.Listener) {
			out = append(out, e)
		}
	}
	return out
}

// advertisedEndpoints parses advertised.listeners (ports may repeat).
func (p *parser) advertisedEndpoints() ([]Endpoint, error) {
	protocols, err := p.protocolMap()
	if err != nil {
		return nil, err
	}
	return parseEndpoints(p.advertisedRaw, protocols, false)
}

// advertisedBrokers is effectiveAdvertisedBrokerListeners.
func (p *parser) advertisedBrokers() ([]Endpoint, error) {
	var eps []Endpoint
	var err error
	if p.advertisedRaw != nil {
		eps, err = p.advertisedEndpoints()
	} else {
		eps, err = p.parsedListeners()
	}
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	for _, e := range eps {
		if !p.isControllerName(e.Listener) {
			out = append(out, e)
		}
	}
	return out, nil
}

// advertisedControllers is effectiveAdvertisedControllerListeners.
func (p *parser) advertisedControllers() ([]Endpoint, error) {
	var fromAdvertised []Endpoint
	if p.advertisedRaw != nil {
		eps, err := p.advertisedEndpoints()
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			if p.isControllerName(e.Listener) {
				fromAdvertised = append(fromAdvertised, e)
			}
		}
	}
	listeners, err := p.parsedListeners()
	if err != nil {
		return nil, err
	}
	controllers := p.controllerListeners(listeners)
	var out []Endpoint
	for i, name := range p.controllerNames {
		if j := slices.IndexFunc(fromAdvertised, func(e Endpoint) bool { return e.Listener == name }); j >= 0 {
			out = append(out, fromAdvertised[j])
			continue
		}
		j := slices.IndexFunc(controllers, func(e Endpoint) bool { return e.Listener == name })
		if j < 0 {
			continue
		}
		e := controllers[j]
		if i == 0 && (e.Host == "" || e.Host == "0.0.0.0") {
			if k := slices.IndexFunc(p.voters, func(v voter) bool { return v.id == p.nodeID }); k >= 0 {
				out = append(out, Endpoint{Listener: e.Listener, Protocol: e.Protocol, Host: p.voters[k].host, Port: p.voters[k].port})
				continue
			}
		}
		if e.Host == "0.0.0.0" {
			e.Host = ""
		}
		out = append(out, e)
	}
	return out, nil
}

// interBroker is interBrokerListenerNameAndSecurityProtocol.
func (p *parser) interBroker() (string, SecurityProtocol, error) {
	if name, set := p.get(KeyInterBrokerListenerName); set {
		if _, both := p.get(KeyInterBrokerProtocol); both {
			return "", "", configError("Only one of %s and %s should be set.", KeyInterBrokerListenerName, KeyInterBrokerProtocol)
		}
		name = javaUpper(javaTrim(name))
		if name == "" {
			return "", "", errEmptyListenerName
		}
		protocols, err := p.protocolMap()
		if err != nil {
			return "", "", err
		}
		proto, ok := protocols[name]
		if !ok {
			return "", "", configError("Listener with name %s defined in %s not found in %s.", name, KeyInterBrokerListenerName, KeyProtocolMap)
		}
		return name, proto, nil
	}
	v, _ := p.value(KeyInterBrokerProtocol, defaultInterBrokerProtocol)
	proto, ok := protocolForName(v)
	if !ok {
		return "", "", configError("Invalid security protocol `%s` defined in %s", v, KeyInterBrokerProtocol)
	}
	return string(proto), proto, nil
}

// saslMechanisms is saslEnabledMechanisms(listener): the listener's
// sasl.enabled.mechanisms, else the broker's (default GSSAPI).
func (p *parser) saslMechanisms(listener string) []string {
	key := listenerPrefix(listener) + KeySASLEnabledMechanisms
	if _, ok := p.get(key); ok {
		items, _ := p.list(key, "", false)
		return items
	}
	items, _ := p.list(KeySASLEnabledMechanisms, defaultSASLMechanism, true)
	return items
}

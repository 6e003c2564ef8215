package broker

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	franzsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	franzscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/broker/security/scram"
)

// defaultInterBrokerSASLMechanism is sasl.mechanism.inter.broker.protocol's
// default in Kafka.
const defaultInterBrokerSASLMechanism = "GSSAPI"

// interBrokerSecurity is how this node's connections to the other nodes
// (replica fetchers, controller calls, forwarding, transaction peers)
// authenticate: as a client of the inter-broker listener, with that
// listener's stores for TLS and its JAAS login for SASL, as Kafka's
// inter-broker channel builder. Nil is plain TCP. A configuration this
// node could not log in with is refused at start-up, with Kafka's message
// where Kafka has one.
func interBrokerSecurity(cfg *Config, ls []*listener) (*peer.Security, error) {
	i := slices.IndexFunc(ls, func(l *listener) bool { return l.cfg.Name == cfg.InterBrokerListenerName })
	if i < 0 || ls[i].cfg.SecurityProtocol == protocolPlaintext {
		return nil, nil
	}
	l := ls[i]
	sec := &peer.Security{}
	if l.tls != nil {
		factory := l.tls.factory
		sec.TLS = func(host string) *tls.Config { return factory.ClientConfig(host) }
	}
	if l.sasl != nil {
		mech, err := interBrokerLogin(cfg, &l.cfg)
		if err != nil {
			return nil, err
		}
		sec.SASL = mech
	}
	return sec, nil
}

// interBrokerLogin is the SASL mechanism, with its credentials, this node
// logs in to the inter-broker listener l with.
func interBrokerLogin(cfg *Config, l *ListenerConfig) (franzsasl.Mechanism, error) {
	name := cfg.InterBrokerSASLMechanism
	if name == "" {
		name = defaultInterBrokerSASLMechanism
	}
	enabled := l.SASLEnabledMechanisms
	if enabled == nil {
		enabled = []string{defaultInterBrokerSASLMechanism}
	}
	if !slices.Contains(enabled, name) {
		// KafkaConfig's requirement, in its words.
		return nil, fmt.Errorf("broker: sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication (it is %s; listener %s enables %s)", name, l.Name, strings.Join(enabled, ","))
	}
	jaas := l.SASLJAASConfigs[name]
	if name == sasl.PlainMechanism {
		jaas = l.SASLPlainJAASConfig
	}
	key := "listener.name." + strings.ToLower(l.Name) + "." + strings.ToLower(name) + ".sasl.jaas.config"
	login := func() (user, password string, err error) {
		if jaas == "" {
			return "", "", fmt.Errorf("broker: inter-broker listener %s logs in with %s, but %s is not set: its username and password options are this node's login to the others", l.Name, name, key)
		}
		entry, err := sasl.ServerJAAS(jaas)
		if err != nil {
			return "", "", fmt.Errorf("broker: %s: %v", key, err)
		}
		user, hasUser := entry.Options["username"]
		password, hasPassword := entry.Options["password"]
		if !hasUser || !hasPassword {
			return "", "", fmt.Errorf("broker: %s: the inter-broker login needs the username and password options", key)
		}
		return user, password, nil
	}
	switch name {
	case sasl.PlainMechanism:
		user, password, err := login()
		if err != nil {
			return nil, err
		}
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case scram.SHA256.Name(), scram.SHA512.Name():
		user, password, err := login()
		if err != nil {
			return nil, err
		}
		auth := franzscram.Auth{User: user, Pass: password}
		if name == scram.SHA256.Name() {
			return auth.AsSha256Mechanism(), nil
		}
		return auth.AsSha512Mechanism(), nil
	default:
		return nil, fmt.Errorf("broker: sasl.mechanism.inter.broker.protocol %s is not served between nodes; PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are", name)
	}
}

package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/broker/security/scram"
)

// listener is one bound Kafka listener: its configuration, its socket,
// the address its clients are told, and its TLS and SASL sides. A
// connection keeps the listener it came in on (conn.l), so that its
// security, its principal and the endpoints it is answered with are that
// listener's.
type listener struct {
	cfg ListenerConfig
	ln  net.Listener
	// host and port are the advertised address.
	host string
	port int32
	// sasl is the listener's SASL configuration, nil on PLAINTEXT and SSL.
	sasl *sasl.Config
	// tls is the listener's TLS side, nil unless it is SSL or SASL_SSL
	// (listener_tls.go).
	tls *listenerTLS
	// stopValidator, when not nil, stops the OAUTHBEARER validator's JWKS
	// refreshing (listener_oauthbearer.go); the broker calls it as it
	// closes.
	stopValidator func()
}

// newListeners checks cfg's listeners and builds their security, binding
// nothing yet. It fills cfg.InterBrokerListenerName's default.
func newListeners(cfg *Config, scramLookup scram.Lookup) ([]*listener, error) {
	seen := map[string]bool{}
	for _, l := range cfg.Listeners {
		if seen[l.Name] {
			// Kafka's CoreUtils.validate message for listeners.
			return nil, fmt.Errorf("broker: listeners: Each listener must have a different name, listeners: %s", listenerList(cfg.Listeners))
		}
		seen[l.Name] = true
	}
	if cfg.InterBrokerListenerName == "" {
		cfg.InterBrokerListenerName = defaultInterBrokerListener(cfg.Listeners)
	} else if !seen[cfg.InterBrokerListenerName] {
		// Kafka's KafkaConfig message for inter.broker.listener.name.
		return nil, fmt.Errorf("broker: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are %s", strings.Join(listenerNames(cfg.Listeners), ","))
	}
	out := make([]*listener, 0, len(cfg.Listeners))
	for i := range cfg.Listeners {
		lc := &cfg.Listeners[i]
		tlsCfg, err := newListenerTLS(cfg, lc)
		if err != nil {
			stopValidators(out)
			return nil, err
		}
		saslCfg, stop, err := listenerSASL(cfg, lc, scramLookup)
		if err != nil {
			stopValidators(out)
			return nil, err
		}
		out = append(out, &listener{cfg: *lc, tls: tlsCfg, sasl: saslCfg, stopValidator: stop})
	}
	return out, nil
}

// stopValidators stops the listeners' OAUTHBEARER validators.
func stopValidators(ls []*listener) {
	for _, l := range ls {
		if l.stopValidator != nil {
			l.stopValidator()
		}
	}
}

// defaultInterBrokerListener is inter.broker.listener.name's default:
// Kafka's is the listener named after security.inter.broker.protocol,
// PLAINTEXT; Gregor takes the first PLAINTEXT listener when none is named
// so, and the first listener when none is PLAINTEXT.
func defaultInterBrokerListener(ls []ListenerConfig) string {
	for _, l := range ls {
		if l.Name == protocolPlaintext && l.SecurityProtocol == protocolPlaintext {
			return l.Name
		}
	}
	for _, l := range ls {
		if l.SecurityProtocol == protocolPlaintext {
			return l.Name
		}
	}
	return ls[0].Name
}

func listenerNames(ls []ListenerConfig) []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return names
}

func listenerList(ls []ListenerConfig) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "://" + l.Listen
	}
	return strings.Join(parts, ",")
}

// bind opens every listener's socket and resolves its advertised address;
// on failure it closes those it opened.
func (b *Broker) bindListeners(ctx context.Context) error {
	for _, l := range b.listeners {
		if err := l.bind(ctx, &b.cfg); err != nil {
			b.closeListeners()
			return err
		}
	}
	return nil
}

func (l *listener) bind(ctx context.Context, cfg *Config) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", l.cfg.Listen)
	if err != nil {
		return fmt.Errorf("broker: listen on listener %s: %w", l.cfg.Name, err)
	}
	if cfg.testHooks.wrapListener != nil {
		ln = cfg.testHooks.wrapListener(ln)
	}
	advertise := l.cfg.Advertise
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(advertise)
	if err != nil {
		ln.Close()
		return fmt.Errorf("broker: advertised address %q of listener %s: %w", advertise, l.cfg.Name, err)
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		ln.Close()
		return fmt.Errorf("broker: advertised port %q of listener %s: %w", port, l.cfg.Name, err)
	}
	l.ln, l.host, l.port = ln, host, int32(portNum)
	return nil
}

// closeListeners closes every bound listener socket.
func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
	}
}

// securityProtocol is the listener's security protocol.
func (l *listener) securityProtocol() string { return l.cfg.SecurityProtocol }

// saslMechanisms lists the listener's SASL mechanisms ("" without SASL).
func (l *listener) saslMechanisms() string {
	if l.sasl == nil {
		return ""
	}
	return strings.Join(l.sasl.Mechanisms, ",")
}

// advertisedAddr is the listener's advertised host:port.
func (l *listener) advertisedAddr() string {
	return net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
}

// ListenerAddr returns the address the listener of that name is bound to,
// host:port, or "" when the broker has no such listener.
func (b *Broker) ListenerAddr(name string) string {
	for _, l := range b.listeners {
		if l.cfg.Name == name && l.ln != nil {
			return l.ln.Addr().String()
		}
	}
	return ""
}

// primary is the broker's first listener, the one Addr reports.
func (b *Broker) primary() *listener { return b.listeners[0] }

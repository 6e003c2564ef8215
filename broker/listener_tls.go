package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker/security/principal"
	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/broker/security/ssl"
)

// Security protocols of a Kafka listener that run over TLS.
const (
	protocolSSL     = "SSL"
	protocolSASLSSL = "SASL_SSL"
)

// tlsHandshakeTimeout bounds a TLS handshake: a client that connects to a
// TLS listener and never finishes its handshake is closed after it, so it
// holds neither a goroutine nor a connection slot for longer. (Kafka has
// no such bound of its own; its idle-connection reaper,
// connections.max.idle.ms, closes such a channel after ten minutes.)
const tlsHandshakeTimeout = 10 * time.Second

// listenerTLS is the TLS side of an SSL or SASL_SSL listener.
type listenerTLS struct {
	// server is the accepted connections' tls.Config; it reads the
	// factory's stores at each handshake.
	server *tls.Config
	// mapper is ssl.principal.mapping.rules.
	mapper *principal.Mapper
	// clientAuth is ssl.client.auth.
	clientAuth string
	// factory holds the listener's stores; on the inter-broker listener
	// it makes this node's client configurations too.
	factory *ssl.Factory
	// dynamic is the listener's ssl.* values set through AlterConfigs
	// (listener_ssl_dynamic.go).
	dynamic listenerDynamic
}

// usesTLS reports whether protocol runs over TLS.
func usesTLS(protocol string) bool {
	return protocol == protocolSSL || protocol == protocolSASLSSL
}

// newListenerTLS builds the served listener's TLS configuration, nil when
// it does not use TLS. A configuration Gregor cannot serve is refused.
func newListenerTLS(cfg *Config, l *ListenerConfig) (*listenerTLS, error) {
	if !usesTLS(l.SecurityProtocol) {
		return nil, nil
	}
	if l.SSL == nil {
		return nil, fmt.Errorf("broker: listener %s uses %s but has no SSL settings (Config.SSL; ssl.keystore.* in server.properties)", l.Name, l.SecurityProtocol)
	}
	for _, w := range l.SSL.Warnings {
		cfg.Logger.Warn("gregor: "+w, "listener", l.Name)
	}
	var opts []ssl.Option
	if l.Name == cfg.InterBrokerListenerName {
		// Its stores are this node's client side too (interBrokerSecurity).
		opts = append(opts, ssl.InterBroker())
	}
	factory, err := ssl.New(*l.SSL, opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: listener %s: %v", l.Name, err)
	}
	if !factory.HasKeystore() {
		return nil, fmt.Errorf("broker: listener %s uses %s but has no key store (set ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)", l.Name, l.SecurityProtocol)
	}
	rules := l.SSLPrincipalMappingRules
	if strings.TrimSpace(rules) == "" {
		rules = principal.DefaultRules
	}
	mapper, err := principal.ParseRules(rules)
	if err != nil {
		return nil, fmt.Errorf("broker: listener %s: ssl.principal.mapping.rules: %v", l.Name, err)
	}
	return &listenerTLS{server: factory.ServerConfig(), mapper: mapper, clientAuth: l.SSL.ClientAuth, factory: factory}, nil
}

// authenticatesClients reports whether the listener asks for client
// certificates, so that its connections have principals of their own.
func (l *listenerTLS) authenticatesClients() bool {
	return l != nil && l.clientAuth != ssl.ClientAuthNone
}

// wrap makes an accepted connection the server side of a TLS connection;
// the handshake runs later, on the connection's own goroutine
// (conn.handshake), so that a slow client never stalls the accept loop.
func (l *listenerTLS) wrap(nc net.Conn) net.Conn {
	if l == nil {
		return nc
	}
	return tls.Server(nc, l.server)
}

// abort closes c's socket at once. A TLS connection's Close would first
// send a close_notify alert, which can wait up to 5 s on a peer that reads
// nothing; the broker, closing, does not wait for that.
func (c *conn) abort() {
	if tc, ok := c.nc.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	c.nc.Close()
}

// handshake runs the TLS handshake of c, bounded by tlsHandshakeTimeout,
// and sets its principal from the client certificate as Kafka's
// DefaultKafkaPrincipalBuilder does: User:<mapped subject DN>, or
// User:ANONYMOUS without one. On SASL_SSL the SASL exchange that follows
// replaces it. It reports whether the connection may go on; a failure is
// logged and counted, and the caller closes the connection.
func (c *conn) handshake(ctx context.Context) bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true // not a TLS listener
	}
	timeout := tlsHandshakeTimeout
	if t := c.b.cfg.testHooks.tlsHandshakeTimeout; t > 0 {
		timeout = t
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		if c.b.ctx.Err() != nil {
			return false // the broker is closing
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no TLS handshake within %v", timeout)
		}
		c.b.metrics.failedTLSHandshakes.Inc()
		c.log.Info("closing connection: TLS handshake failed", "reason", err)
		return false
	}
	state := tc.ConnectionState()
	var leaf *x509.Certificate
	if len(state.PeerCertificates) > 0 {
		leaf = state.PeerCertificates[0]
	}
	p, err := principal.SSLPrincipal(leaf, c.l.tls.mapper)
	if err != nil {
		// Kafka builds the principal when the first request arrives and
		// closes the connection when that fails; nothing is answered
		// either way.
		c.log.Info("closing connection: no principal for the client certificate", "reason", err)
		return false
	}
	sp := sasl.Principal{Type: p.Type, Name: p.Name}
	c.principal.Store(&sp)
	c.log.Debug("TLS handshake complete", "principal", sp.String(),
		"tls_version", tls.VersionName(state.Version), "cipher_suite", tls.CipherSuiteName(state.CipherSuite))
	return true
}

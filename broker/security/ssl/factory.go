package ssl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// state is what a Factory's handshakes use: the settings and the stores
// loaded from them.
type state struct {
	settings Settings
	keys     *keyStore
	trust    *trustStore
	lo, hi   uint16
	suites   []uint16
}

// Factory makes the TLS configurations of one listener's connections
// (Kafka's SslFactory). Its configurations read the stores current at
// each handshake, so Reconfigure changes them for new connections.
type Factory struct {
	mu  sync.Mutex // serializes Reconfigure
	cur atomic.Pointer[state]
	// verifyOwnKeystore is Kafka's keystoreVerifiableUsingTruststore: on
	// the inter-broker listener a new keystore must be trusted by the
	// new truststore, which Reconfigure checks with a trial handshake.
	verifyOwnKeystore bool
}

// Option configures a Factory.
type Option func(*Factory)

// InterBroker marks the factory as the inter-broker listener's, whose
// reconfigurations are checked with a trial handshake between its own
// client and server sides.
func InterBroker() Option { return func(f *Factory) { f.verifyOwnKeystore = true } }

// New loads the stores s names.
func New(s Settings, opts ...Option) (*Factory, error) {
	st, err := load(s)
	if err != nil {
		return nil, err
	}
	f := &Factory{}
	for _, o := range opts {
		o(f)
	}
	f.cur.Store(st)
	return f, nil
}

func load(s Settings) (*state, error) {
	lo, hi, err := s.versions()
	if err != nil {
		return nil, err
	}
	suites, err := s.cipherSuites()
	if err != nil {
		return nil, err
	}
	if len(s.CipherSuites) > 0 && len(suites) == 0 {
		// Only TLS 1.3 suites are named: no older version can agree on one.
		if hi < tls.VersionTLS13 {
			return nil, fmt.Errorf("ssl.cipher.suites %s has no suite for the enabled protocols %s", strings.Join(s.CipherSuites, ","), strings.Join(s.EnabledProtocols, ","))
		}
		lo = tls.VersionTLS13
	}
	keys, err := loadKeyStore(s)
	if err != nil {
		return nil, err
	}
	trust, err := loadTrustStore(s)
	if err != nil {
		return nil, err
	}
	return &state{settings: s, keys: keys, trust: trust, lo: lo, hi: hi, suites: suites}, nil
}

// Settings is the settings in force.
func (f *Factory) Settings() Settings { return f.cur.Load().settings }

// HasKeystore reports whether a key store is configured (a server side
// needs one).
func (f *Factory) HasKeystore() bool { return f.cur.Load().keys != nil }

// ServerConfig is the tls.Config of the listener's accepted connections.
// Its certificate and client verification follow the stores in force at
// each handshake.
func (f *Factory) ServerConfig() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return f.cur.Load().server()
		},
	}
}

func (st *state) server() (*tls.Config, error) {
	if st.keys == nil {
		return nil, errors.New("ssl: the listener has no key store (ssl.keystore.location or ssl.keystore.key)")
	}
	// No session tickets: a TLS 1.3 server that issues them sends its
	// NewSessionTicket messages after the handshake, and when it asks for
	// a client certificate only once the client's Finished has arrived.
	// kafka-python's selector then finds the socket readable with no
	// request in flight and closes the connection ("Socket EVENT_READ
	// without in-flight-requests"). Kafka's clients do not resume
	// sessions, so nothing is lost.
	c := &tls.Config{MinVersion: st.lo, MaxVersion: st.hi, CipherSuites: st.suites, SessionTicketsDisabled: true}
	for _, e := range st.keys.entries {
		c.Certificates = append(c.Certificates, e.cert)
	}
	switch st.settings.ClientAuth {
	case ClientAuthRequired:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthRequested:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	if c.ClientAuth != tls.NoClientCert {
		c.ClientCAs = x509.NewCertPool()
		if st.trust != nil {
			c.ClientCAs = st.trust.pool()
		}
	}
	return c, nil
}

// ClientConfig is the tls.Config of a connection this node makes to
// serverName (another node's listener): the trust store's certificates as
// roots (the system's when there is none, as Java's default trust
// manager), the key store's certificate for mutual TLS, and the server's
// name checked when ssl.endpoint.identification.algorithm is https.
func (f *Factory) ClientConfig(serverName string) *tls.Config {
	return f.cur.Load().client(serverName)
}

func (st *state) client(serverName string) *tls.Config {
	c := &tls.Config{MinVersion: st.lo, MaxVersion: st.hi, CipherSuites: st.suites, ServerName: serverName}
	if st.trust != nil {
		c.RootCAs = st.trust.pool()
	}
	if st.keys != nil {
		cert := st.keys.entries[0].cert
		c.Certificates = []tls.Certificate{cert}
	}
	if !strings.EqualFold(st.settings.EndpointIdentification, "https") {
		// Chain checked, host not: Go has no switch for only that.
		c.InsecureSkipVerify = true
		c.VerifyConnection = verifyChain(c.RootCAs)
	}
	return c
}

// verifyChain checks a server's chain against roots (the system's when
// nil) without its host name.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("ssl: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// Reconfigure replaces the settings with s, as Kafka's
// SslFactory.reconfigure: nothing changes when s equals the settings in
// force and no store file has been modified since it was loaded
// (shouldBeRebuilt); otherwise the new stores are loaded and checked
// (validateReconfiguration) and only then put in force. A refusal leaves
// the settings in force untouched.
func (f *Factory) Reconfigure(s Settings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.check(s)
	if err != nil || st == nil {
		return err
	}
	f.cur.Store(st)
	return nil
}

// Validate makes Reconfigure's checks of s and changes nothing, as Kafka's
// SslFactory.validateReconfiguration (an AlterConfigs with validateOnly).
func (f *Factory) Validate(s Settings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.check(s)
	return err
}

// check loads and checks s against the settings in force: the new state,
// or nil when nothing is to be rebuilt. f.mu held.
func (f *Factory) check(s Settings) (*state, error) {
	old := f.cur.Load()
	if !old.shouldBeRebuilt(s) {
		return nil, nil
	}
	st, err := load(s)
	if err != nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: %v", err)
	}
	if err := f.compatible(old, st); err != nil {
		return nil, err
	}
	return st, nil
}

// shouldBeRebuilt is DefaultSslEngineFactory.shouldBeRebuilt: another
// setting, or a store file modified since it was loaded.
func (st *state) shouldBeRebuilt(s Settings) bool {
	if !sameSettings(st.settings, s) {
		return true
	}
	modified := func(location string, loaded time.Time) bool {
		if location == "" {
			return false
		}
		fi, err := os.Stat(location)
		return err != nil || !fi.ModTime().Equal(loaded)
	}
	return st.keys != nil && modified(st.keys.location, st.keys.modTime) ||
		st.trust != nil && modified(st.trust.location, st.trust.modTime)
}

func sameSettings(a, b Settings) bool {
	secretEq := func(x, y Secret) bool { return x.Set() == y.Set() && x.Value() == y.Value() }
	return a.Protocol == b.Protocol && slices.Equal(a.EnabledProtocols, b.EnabledProtocols) &&
		slices.Equal(a.CipherSuites, b.CipherSuites) &&
		a.KeystoreType == b.KeystoreType && a.KeystoreLocation == b.KeystoreLocation &&
		secretEq(a.KeystorePassword, b.KeystorePassword) && secretEq(a.KeyPassword, b.KeyPassword) &&
		secretEq(a.KeystoreKey, b.KeystoreKey) && secretEq(a.KeystoreCertificateChain, b.KeystoreCertificateChain) &&
		a.TruststoreType == b.TruststoreType && a.TruststoreLocation == b.TruststoreLocation &&
		secretEq(a.TruststorePassword, b.TruststorePassword) && secretEq(a.TruststoreCertificates, b.TruststoreCertificates) &&
		a.ClientAuth == b.ClientAuth && a.EndpointIdentification == b.EndpointIdentification &&
		a.AllowDNChanges == b.AllowDNChanges && a.AllowSANChanges == b.AllowSANChanges
}

// compatible is SslFactory.validateReconfiguration's checks of the new
// stores against the old.
func (f *Factory) compatible(old, st *state) error {
	switch {
	case old.keys == nil && st.keys != nil:
		return errors.New("Cannot add SSL keystore to an existing listener for which no keystore was configured.")
	case old.keys != nil && st.keys == nil:
		return errors.New("Cannot remove the SSL keystore from an existing listener for which a keystore was configured.")
	case old.keys != nil:
		if err := ensureCompatible(old.keys, st.keys, st.settings.AllowDNChanges, st.settings.AllowSANChanges); err != nil {
			return fmt.Errorf("Validation of dynamic config update of SSLFactory failed: %v", err)
		}
	}
	if old.trust == nil && st.trust != nil {
		return errors.New("Cannot add SSL truststore to an existing listener for which no truststore was configured.")
	}
	if f.verifyOwnKeystore && (st.trust != nil || st.keys != nil) {
		if err := trialHandshake(st); err != nil {
			return fmt.Errorf("Validation of dynamic config update of SSLFactory failed: %v", err)
		}
	}
	return nil
}

// ensureCompatible is SslFactory.CertificateEntries.ensureCompatible: the
// same number of key entries, and each keeping its leaf's subject and
// subject alternative names unless allowed to change.
func ensureCompatible(old, cur *keyStore, allowDN, allowSAN bool) error {
	if len(old.entries) != len(cur.entries) {
		return fmt.Errorf("Keystore entries do not match, existing store contains %d entries, new store contains %d entries", len(old.entries), len(cur.entries))
	}
	for i, o := range old.entries {
		n := cur.entries[i]
		if !allowDN && !slices.Equal(o.cert.Leaf.RawSubject, n.cert.Leaf.RawSubject) {
			return fmt.Errorf("Keystore DistinguishedName does not match:  existing={alias=%s, DN=%s}, new={alias=%s, DN=%s}",
				o.alias, o.cert.Leaf.Subject, n.alias, n.cert.Leaf.Subject)
		}
		if !allowSAN && !sameSANs(o.cert.Leaf, n.cert.Leaf) {
			return fmt.Errorf("Keystore SubjectAltNames do not match:  existing={alias=%s, SAN=%s}, new={alias=%s, SAN=%s}",
				o.alias, sanString(o.cert.Leaf), n.alias, sanString(n.cert.Leaf))
		}
	}
	return nil
}

func sanString(c *x509.Certificate) string {
	var parts []string
	for _, d := range c.DNSNames {
		parts = append(parts, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		parts = append(parts, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		parts = append(parts, "email:"+e)
	}
	for _, u := range c.URIs {
		parts = append(parts, "URI:"+u.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sameSANs(a, b *x509.Certificate) bool {
	return sanString(a) == sanString(b)
}

// trialHandshake is SslFactory.SslEngineValidator.validate: a client and a
// server made of st shake hands in memory. It checks that the key store's
// certificate is trusted by the trust store (and, when the listener
// requires client certificates, the other way round too).
func trialHandshake(st *state) error {
	sc, err := st.server()
	if err != nil {
		return err
	}
	cc := st.client("")
	// A trial's host name means nothing; the chain is checked.
	cc.InsecureSkipVerify = true
	cc.VerifyConnection = verifyChain(cc.RootCAs)
	// Over loopback TCP rather than an unbuffered pipe: a client that
	// refuses the certificate writes its alert while the server is still
	// writing the rest of its flight.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serverErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		err = tls.Server(conn, sc).HandshakeContext(ctx)
		conn.Close()
		serverErr <- err
	}()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	cerr := tls.Client(conn, cc).HandshakeContext(ctx)
	conn.Close()
	serr := <-serverErr
	if cerr != nil {
		return fmt.Errorf("A client SSLEngine created with the provided settings can't connect to a server SSLEngine created with those settings: %v", cerr)
	}
	if serr != nil {
		return fmt.Errorf("A client SSLEngine created with the provided settings can't connect to a server SSLEngine created with those settings: %v", serr)
	}
	return nil
}

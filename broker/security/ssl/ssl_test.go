package ssl

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// pki is a test CA and certificates it signed.
type pki struct {
	caKey  *ecdsa.PrivateKey
	ca     *x509.Certificate
	serial int64
}

func newPKI(t *testing.T, cn string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &pki{caKey: key, ca: ca, serial: 1}
}

// leaf issues a certificate for cn with the given DNS SANs.
func (p *pki) leaf(t *testing.T, cn string, dns ...string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"Gregor"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: dns, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return key, c
}

func certPEM(certs ...*x509.Certificate) string {
	var b bytes.Buffer
	for _, c := range certs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

func keyPEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func props(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustParse(t *testing.T, kv ...string) Settings {
	t.Helper()
	s, err := Parse(props(kv...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustFactory(t *testing.T, s Settings, opts ...Option) *Factory {
	t.Helper()
	f, err := New(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// handshake runs a TLS handshake between server and client configs over
// loopback TCP and returns the client's view and both errors.
func handshake(server, client *tls.Config) (tls.ConnectionState, error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tls.ConnectionState{}, err, nil
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serr <- err
			return
		}
		defer conn.Close()
		s := tls.Server(conn, server)
		err = s.HandshakeContext(ctx)
		if err == nil {
			// TLS 1.3 checks a client's certificate after the client's
			// handshake has returned: write once so that the client
			// reads either this byte or the server's alert.
			s.Write([]byte{1})
		}
		serr <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return tls.ConnectionState{}, err, nil
	}
	defer conn.Close()
	c := tls.Client(conn, client)
	cerr := c.HandshakeContext(ctx)
	if cerr == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			cerr = err
		}
	}
	st := c.ConnectionState()
	return st, cerr, <-serr
}

func TestPEMInlineMutualTLS(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	ck, cc := p.leaf(t, "alice", "")
	server := mustFactory(t, mustParse(t,
		"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, sk), "ssl.keystore.certificate.chain", certPEM(sc, p.ca),
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca),
		"ssl.client.auth", "required"))
	client := mustFactory(t, mustParse(t,
		"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, ck), "ssl.keystore.certificate.chain", certPEM(cc),
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)))
	st, cerr, serr := handshake(server.ServerConfig(), client.ClientConfig("localhost"))
	if cerr != nil || serr != nil {
		t.Fatalf("handshake: client %v, server %v", cerr, serr)
	}
	if st.Version != tls.VersionTLS13 || st.PeerCertificates[0].Subject.CommonName != "broker" {
		t.Fatalf("version %x, peer %v", st.Version, st.PeerCertificates[0].Subject)
	}
	// The wrong host fails with endpoint identification on (the default).
	if _, cerr, _ := handshake(server.ServerConfig(), client.ClientConfig("elsewhere")); cerr == nil {
		t.Fatal("a certificate for localhost was accepted for host elsewhere")
	}
	// Without endpoint identification the chain is still checked.
	noHost := mustFactory(t, mustParse(t, "ssl.endpoint.identification.algorithm", "",
		"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, ck), "ssl.keystore.certificate.chain", certPEM(cc),
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)))
	if _, cerr, serr := handshake(server.ServerConfig(), noHost.ClientConfig("elsewhere")); cerr != nil || serr != nil {
		t.Fatalf("without endpoint identification: client %v, server %v", cerr, serr)
	}
	other := newPKI(t, "other-ca")
	stranger := mustFactory(t, mustParse(t, "ssl.endpoint.identification.algorithm", "",
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(other.ca)))
	if _, cerr, _ := handshake(server.ServerConfig(), stranger.ClientConfig("localhost")); cerr == nil {
		t.Fatal("a server certificate from an untrusted CA was accepted without endpoint identification")
	}
}

func TestClientAuth(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	ck, cc := p.leaf(t, "alice", "")
	other := newPKI(t, "other-ca")
	ok2, oc := other.leaf(t, "mallory", "")
	serverFor := func(auth string) *tls.Config {
		return mustFactory(t, mustParse(t,
			"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, sk), "ssl.keystore.certificate.chain", certPEM(sc),
			"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca),
			"ssl.client.auth", auth)).ServerConfig()
	}
	trustOnly := []string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)}
	anonymous := mustFactory(t, mustParse(t, trustOnly...))
	withCert := mustFactory(t, mustParse(t, append(trustOnly,
		"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, ck), "ssl.keystore.certificate.chain", certPEM(cc))...))
	// A client that sends its certificate though the server's list of
	// acceptable CAs does not name its issuer (Go's and Java's clients
	// send none then, which "requested" accepts).
	untrusted := &tls.Config{RootCAs: anonymous.ClientConfig("localhost").RootCAs, ServerName: "localhost",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &tls.Certificate{Certificate: [][]byte{oc.Raw}, PrivateKey: ok2}, nil
		}}
	tests := []struct {
		auth   string
		client *tls.Config
		ok     bool
	}{
		{"none", anonymous.ClientConfig("localhost"), true},
		{"none", untrusted, true}, // not asked for, not checked
		{"requested", anonymous.ClientConfig("localhost"), true},
		{"requested", withCert.ClientConfig("localhost"), true},
		{"requested", untrusted, false}, // given, so verified
		{"required", anonymous.ClientConfig("localhost"), false},
		{"required", withCert.ClientConfig("localhost"), true},
		{"required", untrusted, false},
		{"REQUIRED", withCert.ClientConfig("localhost"), true}, // case-insensitive, as SslClientAuth.forConfig
	}
	for _, tt := range tests {
		_, cerr, serr := handshake(serverFor(tt.auth), tt.client)
		if ok := cerr == nil && serr == nil; ok != tt.ok {
			t.Errorf("ssl.client.auth=%s: handshake ok %v (client %v, server %v), want %v", tt.auth, ok, cerr, serr, tt.ok)
		}
	}
	s := mustParse(t, "ssl.client.auth", "sometimes")
	if s.ClientAuth != ClientAuthNone || len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], "Unrecognized client authentication configuration sometimes.") {
		t.Fatalf("unrecognized ssl.client.auth: %q, warnings %q", s.ClientAuth, s.Warnings)
	}
}

func TestPEMFileAndEncryptedKey(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	dir := t.TempDir()
	enc, err := pkcs8.MarshalPrivateKey(sk, []byte("key-secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	encPEM := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}))
	plainFile := writeFile(t, dir, "plain.pem", []byte(keyPEM(t, sk)+certPEM(sc, p.ca)))
	encFile := writeFile(t, dir, "enc.pem", []byte(certPEM(sc)+encPEM))
	trustFile := writeFile(t, dir, "ca.pem", []byte(certPEM(p.ca)))
	client := mustFactory(t, mustParse(t, "ssl.truststore.type", "PEM", "ssl.truststore.location", trustFile))
	for _, kv := range [][]string{
		{"ssl.keystore.type", "PEM", "ssl.keystore.location", plainFile},
		{"ssl.keystore.type", "PEM", "ssl.keystore.location", encFile, "ssl.key.password", "key-secret"},
		{"ssl.keystore.type", "PEM", "ssl.keystore.key", encPEM, "ssl.keystore.certificate.chain", certPEM(sc), "ssl.key.password", "key-secret"},
	} {
		f := mustFactory(t, mustParse(t, kv...))
		if _, cerr, serr := handshake(f.ServerConfig(), client.ClientConfig("localhost")); cerr != nil || serr != nil {
			t.Fatalf("%v: client %v, server %v", kv[:4], cerr, serr)
		}
	}
	for _, kv := range [][]string{
		{"ssl.keystore.type", "PEM", "ssl.keystore.location", encFile},                                   // encrypted, no password
		{"ssl.keystore.type", "PEM", "ssl.keystore.location", encFile, "ssl.key.password", "wrong"},      // wrong password
		{"ssl.keystore.type", "PEM", "ssl.keystore.location", plainFile, "ssl.key.password", "needless"}, // Kafka decrypts whenever a password is given
	} {
		_, err := New(mustParse(t, kv...))
		if err == nil || err.Error() != "Invalid PEM keystore configs: Private key could not be loaded" {
			t.Errorf("%v: %v", kv[2:], err)
		}
		if err != nil && (strings.Contains(err.Error(), "key-secret") || strings.Contains(err.Error(), "wrong")) {
			t.Errorf("an error carries the password: %v", err)
		}
	}
}

func TestPKCS12AndJKSStores(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	dir := t.TempDir()
	p12, err := pkcs12.Modern.Encode(sk, sc, []*x509.Certificate{p.ca}, "store-secret")
	if err != nil {
		t.Fatal(err)
	}
	p12trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, "trust-secret")
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(sk)
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("broker", keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: sc.Raw}, {Type: "X509", Content: p.ca.Raw}}}, []byte("key-secret")); err != nil {
		t.Fatal(err)
	}
	var jks bytes.Buffer
	if err := ks.Store(&jks, []byte("store-secret")); err != nil {
		t.Fatal(err)
	}
	ts := keystore.New()
	if err := ts.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: time.Now(),
		Certificate: keystore.Certificate{Type: "X509", Content: p.ca.Raw}}); err != nil {
		t.Fatal(err)
	}
	var jksTrust bytes.Buffer
	if err := ts.Store(&jksTrust, []byte("trust-secret")); err != nil {
		t.Fatal(err)
	}
	p12File := writeFile(t, dir, "server.p12", p12)
	p12TrustFile := writeFile(t, dir, "trust.p12", p12trust)
	jksFile := writeFile(t, dir, "server.jks", jks.Bytes())
	jksTrustFile := writeFile(t, dir, "trust.jks", jksTrust.Bytes())

	servers := [][]string{
		{"ssl.keystore.type", "PKCS12", "ssl.keystore.location", p12File, "ssl.keystore.password", "store-secret"},
		{"ssl.keystore.location", jksFile, "ssl.keystore.password", "store-secret", "ssl.key.password", "key-secret"}, // JKS is the default
		// Java reads either format whatever the type says.
		{"ssl.keystore.type", "JKS", "ssl.keystore.location", p12File, "ssl.keystore.password", "store-secret"},
	}
	clients := [][]string{
		{"ssl.truststore.type", "PKCS12", "ssl.truststore.location", p12TrustFile, "ssl.truststore.password", "trust-secret"},
		{"ssl.truststore.location", jksTrustFile, "ssl.truststore.password", "trust-secret"},
		{"ssl.truststore.location", jksTrustFile}, // no password: read without the integrity check
	}
	for _, s := range servers {
		for _, c := range clients {
			sf, cf := mustFactory(t, mustParse(t, s...)), mustFactory(t, mustParse(t, c...))
			if _, cerr, serr := handshake(sf.ServerConfig(), cf.ClientConfig("localhost")); cerr != nil || serr != nil {
				t.Fatalf("server %v, client %v: %v / %v", s[:4], c[:2], cerr, serr)
			}
		}
	}
	for _, kv := range [][]string{
		{"ssl.keystore.type", "PKCS12", "ssl.keystore.location", p12File, "ssl.keystore.password", "wrong"},
		{"ssl.keystore.location", jksFile, "ssl.keystore.password", "wrong"},
		{"ssl.keystore.location", jksFile, "ssl.keystore.password", "store-secret", "ssl.key.password", "wrong"},
		{"ssl.keystore.type", "BKS", "ssl.keystore.location", jksFile, "ssl.keystore.password", "store-secret"},
		{"ssl.keystore.location", filepath.Join(dir, "missing.jks"), "ssl.keystore.password", "store-secret"},
		{"ssl.truststore.location", jksTrustFile, "ssl.truststore.password", "wrong"},
	} {
		if _, err := New(mustParse(t, kv...)); err == nil {
			t.Errorf("%v: loaded", kv)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: the error carries a password: %v", kv, err)
		}
	}
}

// TestKeytoolStores reads stores made by Java 17's keytool
// (testdata/make-stores.sh): PKCS12 (keytool's default) and JKS key stores
// and trust stores.
func TestKeytoolStores(t *testing.T) {
	client := func(kv ...string) *tls.Config {
		return mustFactory(t, mustParse(t, append(kv, "ssl.endpoint.identification.algorithm", "")...)).ClientConfig("localhost")
	}
	for _, server := range [][]string{
		{"ssl.keystore.type", "PKCS12", "ssl.keystore.location", "testdata/keytool-server.p12", "ssl.keystore.password", "changeit"},
		{"ssl.keystore.type", "JKS", "ssl.keystore.location", "testdata/keytool-server.jks", "ssl.keystore.password", "changeit"},
	} {
		sf := mustFactory(t, mustParse(t, server...))
		for _, c := range []*tls.Config{
			client("ssl.truststore.type", "PKCS12", "ssl.truststore.location", "testdata/keytool-trust.p12", "ssl.truststore.password", "changeit"),
			client("ssl.truststore.type", "JKS", "ssl.truststore.location", "testdata/keytool-trust.jks", "ssl.truststore.password", "changeit"),
		} {
			st, cerr, serr := handshake(sf.ServerConfig(), c)
			if cerr != nil || serr != nil {
				t.Fatalf("%s: client %v, server %v", server[3], cerr, serr)
			}
			if cn := st.PeerCertificates[0].Subject.CommonName; cn != "localhost" {
				t.Fatalf("%s: peer %s", server[3], cn)
			}
		}
	}
}

func TestStoreConfigErrors(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	key, chain := keyPEM(t, sk), certPEM(sc)
	tests := []struct {
		kv   []string
		want string
	}{
		{[]string{"ssl.keystore.key", key, "ssl.keystore.certificate.chain", chain}, "SSL private key can be specified only for PEM, but key store type is JKS."},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.key", key}, "SSL private key is specified, but certificate chain is not specified."},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.key", key, "ssl.keystore.certificate.chain", chain, "ssl.keystore.location", "/x"}, "Both SSL key store location and separate private key are specified."},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.key", key, "ssl.keystore.certificate.chain", chain, "ssl.keystore.password", "p"}, "SSL key store password cannot be specified with PEM format, only key password may be specified."},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.certificate.chain", chain}, "SSL certificate chain is specified, but private key is not specified"},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.location", "/x", "ssl.keystore.password", "p"}, "SSL key store password cannot be specified with PEM format, only key password may be specified"},
		{[]string{"ssl.keystore.password", "p"}, "SSL key store is not specified, but key store password is specified."},
		{[]string{"ssl.keystore.location", "/x"}, "SSL key store is specified, but key store password is not specified."},
		{[]string{"ssl.truststore.certificates", chain}, "SSL trust store certs can be specified only for PEM, but trust store type is JKS."},
		{[]string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", chain, "ssl.truststore.location", "/x"}, "Both SSL trust store location and separate trust certificates are specified."},
		{[]string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", chain, "ssl.truststore.password", "p"}, "SSL trust store password cannot be specified for PEM format."},
		{[]string{"ssl.truststore.password", "p"}, "SSL trust store is not specified, but trust store password is specified."},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.key", "nothing", "ssl.keystore.certificate.chain", chain}, "Invalid PEM keystore configs: Private key not provided"},
		{[]string{"ssl.keystore.type", "PEM", "ssl.keystore.key", key, "ssl.keystore.certificate.chain", "nothing"}, "Invalid PEM keystore configs: At least one certificate expected, but none found"},
		{[]string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", "nothing"}, "Invalid PEM truststore configs: At least one certificate expected, but none found"},
	}
	for _, tt := range tests {
		_, err := New(mustParse(t, tt.kv...))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v:\n got %v\nwant %s", tt.kv[0], err, tt.want)
		}
	}
	// A key that is not the certificate's.
	other, _ := p.leaf(t, "other", "")
	if _, err := New(mustParse(t, "ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, other), "ssl.keystore.certificate.chain", chain)); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("mismatched key: %v", err)
	}
}

func TestProtocolsAndCipherSuites(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	base := []string{"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, sk), "ssl.keystore.certificate.chain", certPEM(sc),
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)}
	version := func(server, client []string) (uint16, error) {
		sf := mustFactory(t, mustParse(t, append(append([]string{}, base...), server...)...))
		cf := mustFactory(t, mustParse(t, append(append([]string{}, base...), client...)...))
		st, cerr, serr := handshake(sf.ServerConfig(), cf.ClientConfig("localhost"))
		if cerr != nil {
			return 0, cerr
		}
		return st.Version, serr
	}
	if v, err := version(nil, nil); err != nil || v != tls.VersionTLS13 {
		t.Fatalf("defaults: %x %v", v, err)
	}
	if v, err := version([]string{"ssl.enabled.protocols", "TLSv1.2"}, nil); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("TLSv1.2 only: %x %v", v, err)
	}
	if v, err := version([]string{"ssl.protocol", "TLSv1.2"}, nil); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("a TLSv1.2 context: %x %v", v, err)
	}
	if _, err := version([]string{"ssl.enabled.protocols", "TLSv1.3"}, []string{"ssl.enabled.protocols", "TLSv1.2"}); err == nil {
		t.Fatal("a TLS 1.2 client reached a TLS 1.3-only server")
	}
	suite := "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
	if v, err := version([]string{"ssl.enabled.protocols", "TLSv1.2", "ssl.cipher.suites", suite}, nil); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("one TLS 1.2 suite: %x %v", v, err)
	}
	if _, err := version([]string{"ssl.enabled.protocols", "TLSv1.2", "ssl.cipher.suites", suite},
		[]string{"ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}); err == nil {
		t.Fatal("a handshake with no common suite succeeded")
	}
	// Only TLS 1.3 suites named: TLS 1.2 cannot be agreed.
	f := mustFactory(t, mustParse(t, append(append([]string{}, base...), "ssl.cipher.suites", "TLS_AES_128_GCM_SHA256")...))
	if st := f.cur.Load(); st.lo != tls.VersionTLS13 {
		t.Fatalf("TLS 1.3 suites only: lowest version %x", st.lo)
	}
	for _, kv := range [][]string{
		{"ssl.enabled.protocols", "SSLv3"},
		{"ssl.protocol", "QUIC"},
		{"ssl.cipher.suites", "TLS_NOT_A_SUITE"},
		{"ssl.protocol", "TLSv1.2", "ssl.enabled.protocols", "TLSv1.3"},
		{"ssl.allow.dn.changes", "yes"},
	} {
		if _, err := Parse(props(kv...)); err == nil {
			t.Errorf("%v: parsed", kv)
		}
	}
}

func TestReconfigure(t *testing.T) {
	p := newPKI(t, "test-ca")
	dir := t.TempDir()
	storeFile := filepath.Join(dir, "server.pem")
	write := func(cn string, dns ...string) {
		k, c := p.leaf(t, cn, dns...)
		if err := os.WriteFile(storeFile, []byte(keyPEM(t, k)+certPEM(c)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("broker", "localhost")
	settings := mustParse(t, "ssl.keystore.type", "PEM", "ssl.keystore.location", storeFile,
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca))
	f := mustFactory(t, settings, InterBroker())
	client := mustFactory(t, mustParse(t, "ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)))
	serial := func() *big.Int {
		st, cerr, serr := handshake(f.ServerConfig(), client.ClientConfig("localhost"))
		if cerr != nil || serr != nil {
			t.Fatalf("handshake: %v / %v", cerr, serr)
		}
		return st.PeerCertificates[0].SerialNumber
	}
	first := serial()
	if err := f.Reconfigure(settings); err != nil || serial().Cmp(first) != 0 {
		t.Fatalf("unchanged: %v", err)
	}
	// The same path with a renewed certificate (same DN and SANs) takes
	// effect for the next handshake, as Kafka's dynamic keystore update.
	write("broker", "localhost")
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(storeFile, later, later)
	if err := f.Reconfigure(settings); err != nil {
		t.Fatal(err)
	}
	renewed := serial()
	if renewed.Cmp(first) == 0 {
		t.Fatal("the renewed certificate is not served")
	}
	// Another DN, or other SANs, are refused unless allowed.
	refuse := func(want string) {
		t.Helper()
		later = later.Add(2 * time.Second)
		os.Chtimes(storeFile, later, later)
		err := f.Reconfigure(settings)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
		if serial().Cmp(renewed) != 0 {
			t.Fatal("a refused reconfiguration changed the certificate served")
		}
	}
	write("imposter", "localhost")
	refuse("Keystore DistinguishedName does not match:  existing={alias=kafka, DN=CN=broker,O=Gregor}, new={alias=kafka, DN=CN=imposter,O=Gregor}")
	write("broker", "elsewhere")
	refuse("Keystore SubjectAltNames do not match:  existing={alias=kafka, SAN=[DNS:localhost, IP:127.0.0.1]}, new={alias=kafka, SAN=[DNS:elsewhere, IP:127.0.0.1]}")
	allowed := settings
	allowed.AllowSANChanges = true
	later = later.Add(2 * time.Second)
	os.Chtimes(storeFile, later, later)
	if err := f.Reconfigure(allowed); err != nil {
		t.Fatalf("ssl.allow.san.changes: %v", err)
	}
	// An inter-broker listener's new keystore must be trusted by its own
	// trust store.
	other := newPKI(t, "other-ca")
	k, c := other.leaf(t, "broker", "elsewhere")
	os.WriteFile(storeFile, []byte(keyPEM(t, k)+certPEM(c)), 0o600)
	later = later.Add(2 * time.Second)
	os.Chtimes(storeFile, later, later)
	if err := f.Reconfigure(allowed); err == nil || !strings.Contains(err.Error(), "can't connect to a server SSLEngine") {
		t.Fatalf("untrusted keystore on the inter-broker listener: %v", err)
	}
	// Adding or removing a store is refused.
	noKeys := mustFactory(t, mustParse(t, "ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)))
	if err := noKeys.Reconfigure(settings); err == nil || err.Error() != "Cannot add SSL keystore to an existing listener for which no keystore was configured." {
		t.Fatalf("adding a keystore: %v", err)
	}
	if err := f.Reconfigure(mustParse(t, "ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca))); err == nil ||
		err.Error() != "Cannot remove the SSL keystore from an existing listener for which a keystore was configured." {
		t.Fatalf("removing the keystore: %v", err)
	}
	noTrust := mustFactory(t, mustParse(t, "ssl.keystore.type", "PEM", "ssl.keystore.location", storeFile))
	if err := noTrust.Reconfigure(mustParse(t, "ssl.keystore.type", "PEM", "ssl.keystore.location", storeFile,
		"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca))); err == nil ||
		err.Error() != "Cannot add SSL truststore to an existing listener for which no truststore was configured." {
		t.Fatalf("adding a truststore: %v", err)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	s := mustParse(t, "ssl.keystore.password", "hunter2", "ssl.key.password", "hunter3", "ssl.keystore.key", "-----BEGIN PRIVATE KEY-----hunter4")
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, s); strings.Contains(out, "hunter") {
			t.Errorf("%s prints a secret: %s", format, out)
		}
	}
	if s.KeystorePassword.Value() != "hunter2" {
		t.Fatal("the secret's value is lost")
	}
}

// FuzzStores feeds arbitrary bytes to every store reader: none panics,
// and a store either loads or is refused with an error.
func FuzzStores(f *testing.F) {
	for _, name := range []string{"testdata/keytool-server.p12", "testdata/keytool-server.jks", "testdata/keytool-trust.jks"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		pw := NewSecret("changeit")
		for _, typ := range []string{TypeJKS, TypePKCS12} {
			fileKeyEntries(typ, data, pw, pw)
			fileTrustedCerts(typ, data, pw)
			fileTrustedCerts(typ, data, Secret{})
		}
		pemKeyEntry(data, data, Secret{})
		pemKeyEntry(data, data, pw)
		pemCertificates(data)
	})
}

// TestNoDataAfterHandshake checks that the server sends nothing once the
// handshake is over until it is asked something: no TLS 1.3
// NewSessionTicket, which kafka-python's selector takes for a response
// with no request in flight.
func TestNoDataAfterHandshake(t *testing.T) {
	p := newPKI(t, "test-ca")
	sk, sc := p.leaf(t, "broker", "localhost")
	ck, cc := p.leaf(t, "alice", "")
	trust := []string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", certPEM(p.ca)}
	clientKeys := []string{"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, ck), "ssl.keystore.certificate.chain", certPEM(cc)}
	for _, auth := range []string{"none", "requested", "required"} {
		server := mustFactory(t, mustParse(t, append(trust,
			"ssl.keystore.type", "PEM", "ssl.keystore.key", keyPEM(t, sk), "ssl.keystore.certificate.chain", certPEM(sc),
			"ssl.client.auth", auth)...))
		client := mustFactory(t, mustParse(t, append(trust, clientKeys...)...))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		serr := make(chan error, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				serr <- err
				return
			}
			defer conn.Close()
			serr <- tls.Server(conn, server.ServerConfig()).Handshake()
			<-done
		}()
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		cc := client.ClientConfig("localhost")
		// A session cache makes Go's client offer resumption (the
		// psk_key_exchange_modes extension), as OpenSSL's clients do.
		cc.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		c := tls.Client(raw, cc)
		if err := c.Handshake(); err != nil {
			t.Fatalf("ssl.client.auth=%s: client handshake: %v", auth, err)
		}
		if err := <-serr; err != nil {
			t.Fatalf("ssl.client.auth=%s: server handshake: %v", auth, err)
		}
		// Whatever the server sent after its handshake is in the socket
		// by now (the server's handshake returned after it wrote it).
		raw.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := raw.Read(make([]byte, 1024))
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Errorf("ssl.client.auth=%s: the server sent %d bytes after the handshake (read error %v), want none", auth, n, err)
		}
		close(done)
		raw.Close()
		ln.Close()
	}
}

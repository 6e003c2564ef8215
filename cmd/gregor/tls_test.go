package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// testCA signs the certificates of one test, written as PEM into its
// temporary directory so that no fixture expires.
type testCA struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca := &testCA{dir: t.TempDir(), key: mustKey(t)}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.write(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (ca *testCA) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// keystore writes a PEM key store (PKCS#8 key, then the certificate) for
// cn, a server certificate for 127.0.0.1 and localhost when server, and
// returns its path and the certificate for a Go client.
func (ca *testCA) keystore(t *testing.T, name, cn string, server bool) (string, tls.Certificate) {
	t.Helper()
	key := mustKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"Example"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca.write(t, name, append(keyPEM, certPEM...)), pair
}

func (ca *testCA) clientConfig(certs ...tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: certs}
}

// securityExample returns the server.properties example of
// docs/security.md for proto://:port that contains every one of want,
// with its port, data directory and certificate paths replaced.
func securityExample(t *testing.T, proto, port, addr string, ca *testCA, serverKeystore string, want ...string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	listener := "listeners=" + proto + "://:" + port + "\n"
next:
	for _, block := range strings.Split(string(doc), "```properties\n")[1:] {
		example, _, _ := strings.Cut(block, "```")
		for _, w := range append(want, listener) {
			if !strings.Contains(example, w) {
				continue next
			}
		}
		example = strings.ReplaceAll(example, proto+"://:"+port, proto+"://"+addr)
		example = strings.ReplaceAll(example, proto+"://localhost:"+port, proto+"://"+addr)
		example = strings.ReplaceAll(example, "log.dirs=./data", "log.dirs="+t.TempDir())
		example = strings.ReplaceAll(example, "/etc/gregor/server-keystore.pem", serverKeystore)
		return strings.ReplaceAll(example, "/etc/gregor/ca.pem", filepath.Join(ca.dir, "ca.pem"))
	}
	t.Fatalf("docs/security.md has no server.properties example for %s with %q", listener, want)
	return ""
}

// TestServeMutualTLSFromServerProperties: docs/security.md's mTLS example,
// as written there, serves SSL with required client certificates; a client
// with one produces, one without is refused.
func TestServeMutualTLSFromServerProperties(t *testing.T) {
	ca := newTestCA(t)
	serverKeystore, _ := ca.keystore(t, "server-keystore.pem", "localhost", true)
	_, alice := ca.keystore(t, "alice.pem", "alice", false)
	addr := freePort(t)
	example := securityExample(t, "SSL", "9093", addr, ca, serverKeystore, "ssl.client.auth=required", "ssl.principal.mapping.rules=")
	lines := startGregorLogging(t, "serve --http-listen 127.0.0.1:0 --config "+writeFile(t, example))
	if ready := lines[len(lines)-1]; !strings.Contains(ready, "security_protocol=SSL") {
		t.Fatalf("readiness line %q does not name SSL", ready)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr, kgo.DialTLSConfig(ca.clientConfig(alice)), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("mtls"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with a client certificate: %v", err)
	}
	anon := newTestClient(t, addr, kgo.DialTLSConfig(ca.clientConfig()), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, anon); err == nil {
		t.Fatal("a client without a certificate was answered")
	}
}

// TestServeSASLSSLFromServerProperties: docs/security.md's SASL_SSL
// example serves PLAIN over TLS.
func TestServeSASLSSLFromServerProperties(t *testing.T) {
	ca := newTestCA(t)
	serverKeystore, _ := ca.keystore(t, "server-keystore.pem", "localhost", true)
	addr := freePort(t)
	example := securityExample(t, "SASL_SSL", "9094", addr, ca, serverKeystore, "sasl.enabled.mechanisms=PLAIN")
	lines := startGregorLogging(t, "serve --http-listen 127.0.0.1:0 --config "+writeFile(t, example))
	if ready := lines[len(lines)-1]; !strings.Contains(ready, "security_protocol=SASL_SSL") || !strings.Contains(ready, "sasl_mechanisms=PLAIN") {
		t.Fatalf("readiness line %q does not name SASL_SSL and PLAIN", ready)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr, kgo.DialTLSConfig(ca.clientConfig()), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("sasl-ssl"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as alice: %v", err)
	}
	bad := newTestClient(t, addr, kgo.DialTLSConfig(ca.clientConfig()), kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	for _, l := range lines {
		if strings.Contains(l, "alice-secret") {
			t.Fatalf("the log names a password: %s", l)
		}
	}
}

// TestServeSSLFromServerProperties: docs/security.md's plain SSL example
// serves TLS to a client that trusts the CA.
func TestServeSSLFromServerProperties(t *testing.T) {
	ca := newTestCA(t)
	serverKeystore, _ := ca.keystore(t, "server-keystore.pem", "localhost", true)
	addr := freePort(t)
	example := securityExample(t, "SSL", "9093", addr, ca, serverKeystore)
	if strings.Contains(example, "ssl.client.auth") {
		t.Fatalf("the first SSL example is not the one without client certificates:\n%s", example)
	}
	startGregorLogging(t, "serve --http-listen 127.0.0.1:0 --config "+writeFile(t, example))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr, kgo.DialTLSConfig(ca.clientConfig()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("ssl"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

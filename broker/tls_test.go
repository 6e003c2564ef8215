package broker

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
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/ssl"
)

// testPKI is a certificate authority with a server certificate for
// 127.0.0.1 and localhost and client certificates, made for one test and
// written as PEM files into its temporary directory, so that nothing
// expires.
type testPKI struct {
	dir string
	// caFile holds the CA certificate (a trust store, or librdkafka's
	// ssl.ca.location).
	caFile string
	// serverKeystore holds the server's PKCS#8 key and its chain, a PEM
	// key store.
	serverKeystore string
	ca             *x509.Certificate
	caKey          *ecdsa.PrivateKey
}

// testCert is a certificate and its key, in memory and as PEM files.
type testCert struct {
	tls               tls.Certificate
	certFile, keyFile string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	p.caKey = newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Gregor test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.caFile = writePEM(t, p.dir, "ca.pem", pemBlock("CERTIFICATE", der))
	server := p.issue(t, "server", pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth)
	certPEM, _ := os.ReadFile(server.certFile)
	keyPEM, _ := os.ReadFile(server.keyFile)
	p.serverKeystore = writePEM(t, p.dir, "server-keystore.pem", append(keyPEM, certPEM...))
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writePEM(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate for subject signed by the CA; a server
// certificate names 127.0.0.1 and localhost.
func (p *testPKI) issue(t testing.TB, name string, subject pkix.Name, usage x509.ExtKeyUsage) testCert {
	t.Helper()
	return p.issueFor(t, name, subject, usage)
}

// issueFor is issue with several usages: a node's certificate on a mutual
// TLS inter-broker listener serves both ends. With ServerAuth it names
// 127.0.0.1 and localhost.
func (p *testPKI) issueFor(t testing.TB, name string, subject pkix.Name, usages ...x509.ExtKeyUsage) testCert {
	t.Helper()
	key := newKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	if slices.Contains(usages, x509.ExtKeyUsageServerAuth) {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER)
	c := testCert{
		certFile: writePEM(t, p.dir, name+".pem", certPEM),
		keyFile:  writePEM(t, p.dir, name+".key", keyPEM),
	}
	if c.tls, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return c
}

// clientTLS is a client's tls.Config trusting the CA, presenting certs.
func (p *testPKI) clientTLS(certs ...tls.Certificate) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: certs}
}

// sslSettings are a listener's ssl.* keys as server.properties gives
// them, parsed.
func (p *testPKI) sslSettings(t testing.TB, clientAuth string) *ssl.Settings {
	t.Helper()
	return p.sslSettingsWith(t, p.serverKeystore, clientAuth)
}

// sslSettingsWith is sslSettings with the PEM key store at keystore.
func (p *testPKI) sslSettingsWith(t testing.TB, keystore, clientAuth string) *ssl.Settings {
	t.Helper()
	keys := map[string]string{
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   keystore,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": p.caFile,
		"ssl.client.auth":         clientAuth,
	}
	s, err := ssl.Parse(func(k string) (string, bool) { v, ok := keys[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// startTLSBroker starts a broker on an SSL (or, with adjust, SASL_SSL)
// listener with the PKI's server certificate, its data on disk so that
// fetches read segment files.
func startTLSBroker(t testing.TB, p *testPKI, clientAuth string, adjust func(*Config)) *Broker {
	t.Helper()
	zero := int64(0)
	cfg := Config{
		DataDir:                      t.TempDir(),
		ListenerName:                 "SSL",
		SecurityProtocol:             "SSL",
		SSL:                          p.sslSettings(t, clientAuth),
		GroupInitialRebalanceDelayMs: &zero,
		FailedAuthenticationDelayMs:  &zero,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return startBroker(t, cfg)
}

// logRecords keeps what a broker logs, for a test to look up.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

// logger is a debug-level logger whose records land in l.
func (l *logRecords) logger() *slog.Logger { return slog.New(recordHandler{store: l}) }

// attr returns key's value in the first record whose message is msg.
func (l *logRecords) attr(msg, key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		var v string
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v, found = a.Value.String(), true
				return false
			}
			return true
		})
		return v, found
	}
	return "", false
}

type recordHandler struct {
	store *logRecords
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	h.store.recs = append(h.store.recs, r)
	return nil
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{store: h.store, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }

// principals lists the principals of the broker's open connections.
func principals(b *Broker) []string {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	var out []string
	for c := range b.conns {
		out = append(out, c.principal.Load().String())
	}
	return out
}

// dialTLS opens a TLS connection to b with cfg and completes the client
// side of the handshake.
func dialTLS(t testing.TB, b *Broker, cfg *tls.Config) (*rawConn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", b.Addr(), cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { tc.Close() })
	return &rawConn{t: t, nc: tc}, nil
}

// tlsAPIVersions sends ApiVersions on a TLS connection and returns the
// error of reading its answer (nil when it came).
func tlsAPIVersions(c *rawConn) error {
	c.corr++
	if _, err := c.nc.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), c.corr)); err != nil {
		return err
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	_, err := io.ReadFull(c.nc, size[:])
	return err
}

// TestTLSFranzProduceConsumeLarge: franz-go produces and consumes several
// MiB over SSL; the records, sent by sendfile on a TCP connection, go
// through the TLS connection's write buffer intact.
func TestTLSFranzProduceConsumeLarge(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "tls-franz"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(p.clientTLS()),
		kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n, size = 96, 64 << 10 // 6 MiB
	var recs []*kgo.Record
	for i := range n {
		v := bytes.Repeat([]byte{byte(i)}, size)
		copy(v, []byte{byte(i >> 8), byte(i)})
		recs = append(recs, &kgo.Record{Topic: topic, Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch after %d records: %v", got, err)
		}
		for _, r := range fs.Records() {
			if !bytes.Equal(r.Value, recs[got].Value) {
				t.Fatalf("record %d differs from the one produced", got)
			}
			got++
		}
	}
	for _, pr := range principals(b) {
		if pr != "User:ANONYMOUS" {
			t.Errorf("principal %s without a client certificate, want User:ANONYMOUS", pr)
		}
	}
	b.connMu.Lock()
	for c := range b.conns {
		if c.tcp != nil {
			t.Error("a TLS connection would send records by sendfile, past the encryption")
		}
	}
	b.connMu.Unlock()
}

// TestTLSCloseDuringHandshake: closing the broker does not wait for a
// client that never finishes its handshake.
func TestTLSCloseDuringHandshake(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", nil)
	dialRaw(t, b.Addr()) // connects, sends nothing
	waitFor(t, "the connection accepted", func() bool { return len(principals(b)) == 1 })
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v with a handshake pending", d)
	}
	if n := saslCounter(b.metrics.failedTLSHandshakes); n != 0 {
		t.Errorf("a handshake cut short by Close counted as failed (%v)", n)
	}
}

// TestTLSLibrdkafkaProduceConsume: librdkafka (confluent-kafka-go) with
// security.protocol=SSL, trusting the CA by ssl.ca.location, and with a
// client certificate on a listener that requires one.
func TestTLSLibrdkafkaProduceConsume(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	client := p.issue(t, "rdkafka", pkix.Name{CommonName: "rdkafka"}, x509.ExtKeyUsageClientAuth)
	b := startTLSBroker(t, p, "required", nil)
	common := kafka.ConfigMap{
		"bootstrap.servers":        b.Addr(),
		"security.protocol":        "SSL",
		"ssl.ca.location":          p.caFile,
		"ssl.certificate.location": client.certFile,
		"ssl.key.location":         client.keyFile,
		"log_level":                3,
	}
	librdkafkaProduceConsume(t, common, "tls-librdkafka", func() {
		for _, pr := range principals(b) {
			if pr != "User:CN=rdkafka" {
				t.Errorf("principal %s, want User:CN=rdkafka", pr)
			}
		}
	})
}

// TestTLSSaramaProduceConsume: sarama over SSL.
func TestTLSSaramaProduceConsume(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", nil)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = p.clientTLS()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	const topic = "tls-sarama"
	admin, err := sarama.NewClusterAdmin([]string{b.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	producer, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for i := range 10 {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(strings.Repeat("s", i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	consumer, err := sarama.NewConsumer([]string{b.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	timeout := time.After(30 * time.Second)
	for i := range 10 {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != strings.Repeat("s", i+1) {
				t.Fatalf("record %d: %q", i, m.Value)
			}
		case err := <-pc.Errors():
			t.Fatalf("after %d records: %v", i, err)
		case <-timeout:
			t.Fatalf("consumed %d of 10 records", i)
		}
	}
}

// TestTLSClientCertificatePrincipal: the principal of an SSL connection
// is its client certificate's subject, RFC 2253, mapped by
// ssl.principal.mapping.rules; without a certificate (requested) it is
// User:ANONYMOUS; a certificate no rule maps closes the connection.
func TestTLSClientCertificatePrincipal(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	alice := p.issue(t, "alice", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Gregor, Inc."}}, x509.ExtKeyUsageClientAuth)
	for _, tc := range []struct {
		name       string
		clientAuth string
		rules      string
		certs      []tls.Certificate
		want       string // "" means the connection is closed
	}{
		{"default rules", "required", "", []tls.Certificate{alice.tls}, `User:CN=alice,OU=eng,O=Gregor\, Inc.`},
		{"explicit DEFAULT", "requested", "DEFAULT", []tls.Certificate{alice.tls}, `User:CN=alice,OU=eng,O=Gregor\, Inc.`},
		{"rule to the CN, upper case", "required", "RULE:^CN=([^,]*),.*$/$1/U,DEFAULT", []tls.Certificate{alice.tls}, "User:ALICE"},
		{"requested without a certificate", "requested", "RULE:^CN=([^,]*),.*$/$1/", nil, "User:ANONYMOUS"},
		{"none ignores the client", "none", "RULE:^CN=([^,]*),.*$/$1/", []tls.Certificate{alice.tls}, "User:ANONYMOUS"},
		{"no rule maps it", "required", "RULE:^CN=bob,.*$/bob/", []tls.Certificate{alice.tls}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logRecords
			b := startTLSBroker(t, p, tc.clientAuth, func(c *Config) {
				c.SSLPrincipalMappingRules = tc.rules
				c.Logger = logs.logger()
			})
			// Clients with certificates are authenticated, not authorized.
			_, warned := logs.attr("gregor: no authorization yet: every authenticated principal may do everything (ACLs are not enforced)", "listener")
			if warned != (tc.clientAuth != "none") {
				t.Errorf("warned about authorization: %v, with ssl.client.auth=%s", warned, tc.clientAuth)
			}
			c, err := dialTLS(t, b, p.clientTLS(tc.certs...))
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			err = tlsAPIVersions(c)
			if tc.want == "" {
				if err == nil {
					t.Fatal("answered a connection whose certificate maps to no principal")
				}
				waitFor(t, "the refusal logged", func() bool {
					reason, _ := logs.attr("closing connection: no principal for the client certificate", "reason")
					return reason == `Failed to map name for 'CN=alice,OU=eng,O=Gregor\, Inc.' based on SSL principal mapping rules.`
				})
				return
			}
			if err != nil {
				t.Fatalf("ApiVersions: %v", err)
			}
			if got := principals(b); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("principals %q, want [%s]", got, tc.want)
			}
			// The debug line says who the client is, as the operator sees it.
			if got, _ := logs.attr("TLS handshake complete", "principal"); got != tc.want {
				t.Fatalf("the handshake's debug line names %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTLSHandshakeRefusals: what is not a good TLS client is closed before
// anything is read as Kafka, counted, and leaves the broker serving.
func TestTLSHandshakeRefusals(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	alice := p.issue(t, "alice", pkix.Name{CommonName: "alice"}, x509.ExtKeyUsageClientAuth)
	other := newTestPKI(t) // a CA the broker does not trust
	mallory := other.issue(t, "mallory", pkix.Name{CommonName: "mallory"}, x509.ExtKeyUsageClientAuth)
	for _, tc := range []struct {
		name       string
		clientAuth string
		certs      []tls.Certificate
		reason     string // in the log line
	}{
		{"required without a certificate", "required", nil, "client didn't provide a certificate"},
		{"required, untrusted certificate", "required", []tls.Certificate{mallory.tls}, "certificate signed by unknown authority"},
		{"requested, untrusted certificate", "requested", []tls.Certificate{mallory.tls}, "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logRecords
			b := startTLSBroker(t, p, tc.clientAuth, func(c *Config) { c.Logger = logs.logger() })
			// In TLS 1.3 the client finishes its side before the server
			// has checked the client's certificate: the refusal shows
			// at the first read.
			c, err := dialTLS(t, b, p.clientTLS(tc.certs...))
			if err == nil {
				err = tlsAPIVersions(c)
			}
			if err == nil {
				t.Fatal("the broker answered")
			}
			waitFor(t, "the failed handshake counted", func() bool { return saslCounter(b.metrics.failedTLSHandshakes) == 1 })
			if reason, _ := logs.attr("closing connection: TLS handshake failed", "reason"); !strings.Contains(reason, tc.reason) {
				t.Errorf("logged reason %q, want one containing %q", reason, tc.reason)
			}
			good, err := dialTLS(t, b, p.clientTLS(alice.tls))
			if err != nil {
				t.Fatal(err)
			}
			if err := tlsAPIVersions(good); err != nil {
				t.Fatalf("a trusted client after the refusal: %v", err)
			}
		})
	}
}

// TestTLSPlainBytesOnTLSListener: a Kafka frame on an SSL listener fails
// the handshake; the connection closes unanswered.
func TestTLSPlainBytesOnTLSListener(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", func(c *Config) { c.HTTPListen = "127.0.0.1:0" })
	raw := dialRaw(t, b.Addr())
	raw.send(kmsg.NewPtrApiVersionsRequest())
	raw.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := io.ReadAll(raw.nc)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the broker kept the connection open")
	}
	// At most a TLS alert record (type 21) comes back: never a Kafka
	// frame.
	if len(reply) > 0 && reply[0] != 21 {
		t.Fatalf("answered % x", reply)
	}
	waitFor(t, "the failed handshake counted", func() bool {
		n, _ := scrapeMetrics(t, b.HTTPAddr()).value("gregor_tls_failed_handshakes_total")
		return n == 1
	})
	c, err := dialTLS(t, b, p.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsAPIVersions(c); err != nil {
		t.Fatalf("a TLS client after the plain one: %v", err)
	}
}

// TestTLSIdleHandshakeTimesOut: a client that connects and sends nothing
// is closed when the handshake deadline passes.
func TestTLSIdleHandshakeTimesOut(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", func(c *Config) { c.testHooks.tlsHandshakeTimeout = 200 * time.Millisecond })
	raw := dialRaw(t, b.Addr())
	start := time.Now()
	raw.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := raw.nc.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the idle connection was kept open")
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the handshake deadline", d)
	}
	waitFor(t, "the timed-out handshake counted", func() bool { return saslCounter(b.metrics.failedTLSHandshakes) == 1 })
	waitFor(t, "the connection forgotten", func() bool { return len(principals(b)) == 0 })
}

// TestTLSClientHelloOnPlaintextListener: a TLS ClientHello on a PLAINTEXT
// listener reads as a frame size far above socket.request.max.bytes; the
// broker closes the connection, as Kafka does.
func TestTLSClientHelloOnPlaintextListener(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	nc, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tc := tls.Client(nc, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the handshake must fail
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	err = tc.Handshake()
	if err == nil {
		t.Fatal("a TLS handshake succeeded on a PLAINTEXT listener")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the broker kept the connection open: %v", err)
	}
	c := dialRaw(t, b.Addr())
	if resp := c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions after the TLS client: error %d", resp.ErrorCode)
	}
}

// TestTLSSASLPlainFranz: SASL_SSL is TLS, then PLAIN; the SASL principal
// wins over the client certificate's.
func TestTLSSASLPlainFranz(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	cert := p.issue(t, "client", pkix.Name{CommonName: "someone-else"}, x509.ExtKeyUsageClientAuth)
	b := startTLSBroker(t, p, "requested", func(c *Config) {
		c.ListenerName, c.SecurityProtocol = "SASL_SSL", "SASL_SSL"
		c.SASLEnabledMechanisms = []string{"PLAIN"}
		c.SASLPlainJAASConfig = saslTestJAAS
	})
	checkSASLSSL(t, b, p.clientTLS(cert.tls), plainOpt("alice", "alice-secret"), plainOpt("alice", "wrong"), "tls-sasl", "Invalid username or password")
	if n := saslCounter(b.metrics.successfulAuthentications); n < 1 {
		t.Errorf("successful authentications %v, want at least 1", n)
	}
}

// checkSASLSSL produces and consumes over TLS logged in by login, checks
// that the principal is User:alice whatever certificate the client sent,
// and that wrong (a wrong password) fails as on SASL_PLAINTEXT, with a
// message containing refusal.
func checkSASLSSL(t *testing.T, b *Broker, tlsCfg *tls.Config, login, wrong kgo.Opt, topic, refusal string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(tlsCfg),
		login, kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("over tls")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over tls" {
		t.Fatalf("consumed %d records, want the one produced", len(recs))
	}
	for _, pr := range principals(b) {
		if pr != "User:alice" {
			t.Errorf("principal %s, want User:alice", pr)
		}
	}
	bad, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(tlsCfg), wrong, kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); err == nil || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("metadata with a wrong password over SASL_SSL: %v, want %q", err, refusal)
	}
}

// TestTLSStartRefusals: a TLS listener Gregor cannot serve does not start.
func TestTLSStartRefusals(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	for _, tc := range []struct {
		name   string
		adjust func(*Config)
		want   string
	}{
		{"no settings", func(c *Config) { c.SSL = nil }, "has no SSL settings"},
		{"no key store", func(c *Config) { c.SSL.KeystoreLocation = "" }, "has no key store"},
		{"missing key store file", func(c *Config) { c.SSL.KeystoreLocation = filepath.Join(p.dir, "absent.pem") }, "absent.pem"},
		{"bad mapping rule", func(c *Config) { c.SSLPrincipalMappingRules = "RULE:oops" }, "ssl.principal.mapping.rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{SecurityProtocol: "SSL", SSL: p.sslSettings(t, "none")}
			tc.adjust(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b, err := Start(ctx, cfg)
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTLSUnrecognizedClientAuthWarns: an ssl.client.auth Kafka does not
// know is logged with Kafka's warning and taken as none.
func TestTLSUnrecognizedClientAuthWarns(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	var logs logRecords
	b := startTLSBroker(t, p, "maybe", func(c *Config) { c.Logger = logs.logger() })
	if _, ok := logs.attr("gregor: Unrecognized client authentication configuration maybe.  Falling back to NONE.  Recognized client authentication configurations are REQUIRED, REQUESTED, NONE.", "listener"); !ok {
		t.Fatal("no warning about ssl.client.auth=maybe")
	}
	c, err := dialTLS(t, b, p.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsAPIVersions(c); err != nil {
		t.Fatalf("a client without a certificate under none: %v", err)
	}
}

// TestTLSUserQuotaByCertificatePrincipal: a client quota for a user
// applies to the SSL connections whose certificate maps to that user, as
// in Kafka, and not to the anonymous ones beside them.
func TestTLSUserQuotaByCertificatePrincipal(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	alice := p.issue(t, "alice", pkix.Name{CommonName: "alice"}, x509.ExtKeyUsageClientAuth)
	b := startTLSBroker(t, p, "requested", func(c *Config) { c.SSLPrincipalMappingRules = "RULE:^CN=(.*)$/$1/" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newClient := func(tc *throttleCounter, certs ...tls.Certificate) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(p.clientTLS(certs...)),
			kgo.DefaultProduceTopic("tls-quota"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(tc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	var adminThrottles throttleCounter
	adm := kadm.NewClient(newClient(&adminThrottles))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tls-quota"); err != nil {
		t.Fatal(err)
	}
	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(strp("user"), strp("alice")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}},
	})
	value := make([]byte, 20<<10)
	var aliceThrottles, anonThrottles throttleCounter
	aliceCl, anonCl := newClient(&aliceThrottles, alice.tls), newClient(&anonThrottles)
	for range 3 {
		if err := anonCl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("anonymous produce: %v", err)
		}
	}
	for aliceThrottles.n.Load() == 0 {
		if err := aliceCl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce as alice (never throttled): %v", err)
		}
	}
	if n := anonThrottles.n.Load(); n != 0 {
		t.Errorf("the anonymous client was throttled %d times by alice's quota", n)
	}
}

package peer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gregor-broker/gregor/protocol"
)

// fakeLogin is a fake peer's SASL side: PLAIN with one user, granting
// sessions of lifetime (none when zero).
type fakeLogin struct {
	user, password string
	lifetime       time.Duration
	logins         atomic.Int32
}

// answer answers one SASL request on nc; false closes the connection.
func (l *fakeLogin) answer(nc net.Conn, h protocol.RequestHeader, body []byte, authenticated *bool) bool {
	var resp kmsg.Response
	switch h.APIKey {
	case 17:
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = h.APIVersion
		if req.ReadFrom(body) != nil {
			return false
		}
		r := kmsg.NewPtrSASLHandshakeResponse()
		r.SupportedMechanisms = []string{"PLAIN"}
		if req.Mechanism != "PLAIN" {
			r.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		resp = r
	case 36:
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = h.APIVersion
		if req.ReadFrom(body) != nil {
			return false
		}
		r := kmsg.NewPtrSASLAuthenticateResponse()
		if !bytes.Equal(req.SASLAuthBytes, []byte("\x00"+l.user+"\x00"+l.password)) {
			r.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "Authentication failed: Invalid username or password"
			r.ErrorMessage = &msg
		} else {
			*authenticated = true
			l.logins.Add(1)
			r.SessionLifetimeMillis = l.lifetime.Milliseconds()
		}
		resp = r
	}
	resp.SetVersion(h.APIVersion)
	_, err := nc.Write(protocol.AppendResponse(nil, h.CorrelationID, resp))
	return err == nil
}

func TestConnLogsInWithSASLBeforeItsFirstRequest(t *testing.T) {
	p := startLoginPeer(t, 1, &fakeLogin{user: "broker", password: "s3cret"})
	c := &Conn{Security: &Security{SASL: plain.Auth{User: "broker", Pass: "s3cret"}.AsMechanism()}}
	defer c.Close()
	for range 3 {
		if got := controllerOf(t, c, context.Background(), p.addr()); got != 1 {
			t.Fatalf("controller %d, want 1", got)
		}
	}
	if p.accepts.Load() != 1 || p.login.logins.Load() != 1 {
		t.Fatalf("%d dials and %d logins, want one each", p.accepts.Load(), p.login.logins.Load())
	}
}

func TestConnRefusedLoginsSayWhy(t *testing.T) {
	p := startLoginPeer(t, 1, &fakeLogin{user: "broker", password: "s3cret"})
	for _, tc := range []struct {
		name string
		sec  *Security
		want error
	}{
		{"wrong password", &Security{SASL: plain.Auth{User: "broker", Pass: "wrong"}.AsMechanism()}, kerr.SaslAuthenticationFailed},
		{"mechanism not enabled", &Security{SASL: fakeMechanism("SCRAM-SHA-512")}, kerr.UnsupportedSaslMechanism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Conn{Security: tc.sec}
			defer c.Close()
			_, err := c.Do(context.Background(), p.addr(), metadata())
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Fatalf("the error %q shows the password", err)
			}
		})
	}
	// Without a login the peer closes the connection at the first request.
	if _, err := (&Conn{}).Do(context.Background(), p.addr(), metadata()); err == nil {
		t.Fatal("a request without a login was answered")
	}
}

// fakeMechanism is a mechanism the fake peer does not enable.
type fakeMechanism string

func (m fakeMechanism) Name() string { return string(m) }
func (m fakeMechanism) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	return nil, nil, errors.New("not reached: the handshake refuses the mechanism")
}

func TestConnDialsAgainBeforeItsSessionEnds(t *testing.T) {
	p := startLoginPeer(t, 1, &fakeLogin{user: "broker", password: "s3cret", lifetime: 200 * time.Millisecond})
	c := &Conn{Security: &Security{SASL: plain.Auth{User: "broker", Pass: "s3cret"}.AsMechanism()}}
	defer c.Close()
	controllerOf(t, c, context.Background(), p.addr())
	controllerOf(t, c, context.Background(), p.addr())
	if n := p.login.logins.Load(); n != 1 {
		t.Fatalf("%d logins within the session, want 1", n)
	}
	time.Sleep(200 * time.Millisecond) // past 85% of the lifetime
	controllerOf(t, c, context.Background(), p.addr())
	if p.accepts.Load() != 2 || p.login.logins.Load() != 2 {
		t.Fatalf("%d dials and %d logins after the session's end, want 2 each", p.accepts.Load(), p.login.logins.Load())
	}
}

func TestConnRunsTLSAndChecksThePeersCertificate(t *testing.T) {
	cert, roots := selfSigned(t, "127.0.0.1")
	p := startPeer(t, 1)
	tlsPeer := &fakePeer{id: 1, answer: p.answer}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	tlsPeer.listen(t, ln)

	trusting := &Security{TLS: func(host string) *tls.Config { return &tls.Config{RootCAs: roots, ServerName: host} }}
	c := &Conn{Security: trusting}
	defer c.Close()
	if got := controllerOf(t, c, context.Background(), tlsPeer.addr()); got != 1 {
		t.Fatalf("controller %d, want 1", got)
	}

	// The system's roots do not know the certificate; a peer speaking
	// plain TCP does not answer a ClientHello.
	c2 := &Conn{Security: &Security{TLS: func(host string) *tls.Config { return &tls.Config{ServerName: host} }}}
	defer c2.Close()
	var unknown x509.UnknownAuthorityError
	if _, err := c2.Do(context.Background(), tlsPeer.addr(), metadata()); !errors.As(err, &unknown) {
		t.Fatalf("untrusted certificate: %v, want x509.UnknownAuthorityError", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c3 := &Conn{Security: trusting}
	defer c3.Close()
	if _, err := c3.Do(ctx, p.addr(), metadata()); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("TLS to a plain listener: %v, want a failed TLS handshake", err)
	}
}

// selfSigned is a certificate for host and a pool trusting it.
func selfSigned(t *testing.T, host string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP(host)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Security is how a Conn's connections prove who they are to the peer's
// listener, as the inter-broker listener is configured: TLS (SSL), SASL
// (SASL_PLAINTEXT), both (SASL_SSL) or neither (a nil *Security,
// PLAINTEXT). Its functions are called with the Conn's mutex held and
// must not call back into the Conn.
type Security struct {
	// TLS, when not nil, returns the tls.Config of a connection to host
	// (the peer address's host, for the certificate's name check); the
	// handshake runs right after the dial.
	TLS func(host string) *tls.Config
	// SASL, when not nil, is the mechanism a connection logs in with, after
	// TLS and before its first request: SaslHandshake v1, then
	// SaslAuthenticate until the mechanism is done.
	SASL sasl.Mechanism
}

// reauthFraction is the part of the session lifetime the server grants
// (KIP-368's SessionLifetimeMs) after which a connection is dialled
// afresh; Kafka's clients re-authenticate between 85 and 95 per cent of
// it, so a request never reaches a server whose session has expired.
const reauthFraction = 0.85

// secure runs the TLS handshake and the SASL login of a freshly dialled
// connection nc to addr, bounded by ctx. It returns the connection to use
// and, when the server bounded the session, when to dial again.
func (c *Conn) secureLocked(ctx context.Context, nc net.Conn, addr string) (net.Conn, time.Time, error) {
	sec := c.Security
	if sec == nil {
		return nc, time.Time{}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if sec.TLS != nil {
		tc := tls.Client(nc, sec.TLS(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, time.Time{}, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	if sec.SASL == nil {
		return nc, time.Time{}, nil
	}
	c.nc = nc // the login's requests go over it
	expires, err := c.loginLocked(ctx, sec.SASL, host)
	c.nc = nil
	if err != nil {
		nc.Close()
		return nil, time.Time{}, fmt.Errorf("SASL %s login to %s: %w", sec.SASL.Name(), addr, err)
	}
	return nc, expires, nil
}

// loginLocked runs mech's exchange over c.nc as Kafka's client does with a
// broker that serves SaslAuthenticate: the mechanism named in
// SaslHandshake v1, then each message in a SaslAuthenticate request and
// each answer handed back to the mechanism. The refusals are the server's
// error codes and messages; they never hold the credentials.
func (c *Conn) loginLocked(ctx context.Context, mech sasl.Mechanism, host string) (time.Time, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	resp, err := c.roundTrip(ctx, hs)
	if err != nil {
		return time.Time{}, fmt.Errorf("SaslHandshake: %w", err)
	}
	if hr := resp.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return time.Time{}, fmt.Errorf("SaslHandshake: %w (the listener enables %v)", kerr.ErrorForCode(hr.ErrorCode), hr.SupportedMechanisms)
	}
	session, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return time.Time{}, err
	}
	var expires time.Time
	for {
		started := time.Now()
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = msg
		resp, err := c.roundTrip(ctx, req)
		if err != nil {
			return time.Time{}, fmt.Errorf("SaslAuthenticate: %w", err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			err := kerr.ErrorForCode(ar.ErrorCode)
			if ar.ErrorMessage != nil && *ar.ErrorMessage != "" {
				err = fmt.Errorf("%s: %w", *ar.ErrorMessage, err)
			}
			return time.Time{}, err
		}
		if ar.SessionLifetimeMillis > 0 {
			life := time.Duration(float64(ar.SessionLifetimeMillis)*reauthFraction) * time.Millisecond
			expires = started.Add(life)
		}
		if session == nil {
			return expires, nil // the last message was sent
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return time.Time{}, err
		}
		if done {
			if len(next) == 0 {
				return expires, nil
			}
			session = nil // send the final message, then stop
		}
		msg = next
	}
}

// LoginRefused reports whether err, from Do, says that the peer refused
// this node's login (a SASL error) or that one side refused the other's
// TLS certificate: a configuration fault that retrying does not mend,
// which callers log louder than a peer that is merely away.
func LoginRefused(err error) bool {
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

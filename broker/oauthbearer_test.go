package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const oauthTestJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
	unsecuredValidatorRequiredScope="kafka";`

// testUnsecuredJWT is an unsigned JWT with the given claims.
func testUnsecuredJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(c) + "."
}

func startOAuthBroker(t *testing.T, adjust func(*Config)) *Broker {
	return startSASLBroker(t, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
		c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS}
		if adjust != nil {
			adjust(c)
		}
	})
}

func oauthOpt(token func() string) kgo.Opt {
	return kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: token()}, nil }))
}

// TestOAuthBearerFranzAcceptedAndRefused: franz-go's OAUTHBEARER client
// logs in with an unsecured token (the principal is its sub); a token
// without the required scope gets the JSON challenge, answers %x01 and
// fails with SASL_AUTHENTICATION_FAILED and that JSON as the message,
// counted as a failed authentication.
func TestOAuthBearerFranzAcceptedAndRefused(t *testing.T) {
	t.Parallel()
	b := startOAuthBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exp := time.Now().Add(time.Hour).Unix()
	good := testUnsecuredJWT(t, map[string]any{"sub": "carol", "exp": exp, "scope": "kafka"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string { return good }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("metadata with a good token: %v", err)
	}
	b.connMu.Lock()
	for c := range b.conns {
		if p := c.principal.Load(); p.String() != "User:carol" {
			t.Errorf("connection principal %s, want User:carol", p)
		}
	}
	b.connMu.Unlock()

	noScope := testUnsecuredJWT(t, map[string]any{"sub": "carol", "exp": exp})
	bad, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string { return noScope }), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("metadata without the scope: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if !strings.Contains(err.Error(), `{"status":"insufficient_scope", "scope":"[kafka]"}`) {
		t.Errorf("error %q lacks Kafka's JSON status", err)
	}
	waitFor(t, "the failed authentication counted", func() bool {
		return saslCounter(b.metrics.failedAuthentications) >= 1
	})
}

// TestOAuthBearerSessionEndsAtTokenExpiry: the session lifetime sent to
// the client is the time left on the token when it is shorter than
// connections.max.reauth.ms, and franz-go re-authenticates with a new
// token before it runs out.
func TestOAuthBearerSessionEndsAtTokenExpiry(t *testing.T) {
	t.Parallel()
	b := startOAuthBroker(t, func(c *Config) { c.ConnectionsMaxReauthMs = 3_600_000 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string {
		return testUnsecuredJWT(t, map[string]any{"sub": "carol", "scope": "kafka", "exp": time.Now().Add(3 * time.Second).Unix()})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("metadata across token expiries: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := saslCounter(b.metrics.successfulAuthentications); n < 3 {
		t.Errorf("successful authentications %v, want at least 3 (re-authentication at each token expiry)", n)
	}
	if saslCounter(b.metrics.expiredSessions) != 0 {
		t.Errorf("a session expired without re-authentication")
	}
}

package broker

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const jwksTestJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`

// testJWKS is a JWKS endpoint whose keys a test can rotate.
type testJWKS struct {
	*httptest.Server
	mu      sync.Mutex
	keys    map[string]crypto.Signer
	fetches atomic.Int32
}

func (j *testJWKS) add(kid string, k crypto.Signer) {
	j.mu.Lock()
	j.keys[kid] = k
	j.mu.Unlock()
}

func (j *testJWKS) doc(t testing.TB) []byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	var set jose.JSONWebKeySet
	for kid, k := range j.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Error(err)
	}
	return b
}

// newTestJWKS serves keys over HTTPS, as a provider does.
func newTestJWKS(t *testing.T, keys map[string]crypto.Signer) *testJWKS {
	j := &testJWKS{keys: keys}
	j.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(j.doc(t))
	}))
	t.Cleanup(j.Close)
	return j
}

func signTestJWT(t *testing.T, alg jose.SignatureAlgorithm, kid string, key crypto.Signer, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOAuthBearerJWKSFranz: with Kafka's JWKS validator, franz-go logs in
// with tokens signed by the provider's RSA and EC keys (the principal is
// the sub); a bad signature, another issuer or audience, an expired token
// and an unknown kid get Kafka's invalid_token challenge, whose reason
// goes to the log without the token; a key the provider adds later is
// fetched when a token first names it.
func TestOAuthBearerJWKSFranz(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := newTestJWKS(t, map[string]crypto.Signer{"rsa1": rsaKey, "ec1": ecKey})
	var logs syncBuffer
	b := startSASLBroker(t, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.OAuthBearer = OAuthBearerConfig{JAASConfig: jwksTestJAAS,
			ServerCallbackHandlerClass: "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			JWKSEndpointURL:            jwks.URL + "/jwks", AllowedURLs: []string{jwks.URL + "/jwks"},
			ExpectedIssuer: "https://idp.test", ExpectedAudience: []string{"kafka"},
			httpClient: jwks.Client()}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	claims := func(sub string, edit func(map[string]any)) map[string]any {
		c := map[string]any{"sub": sub, "iss": "https://idp.test", "aud": "kafka", "scope": "kafka",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	login := func(token string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string { return token }), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	principals := func() map[string]bool {
		out := map[string]bool{}
		b.connMu.Lock()
		defer b.connMu.Unlock()
		for c := range b.conns {
			if p := c.principal.Load(); p != nil {
				out[p.String()] = true
			}
		}
		return out
	}

	for _, tc := range []struct {
		name, token, principal string
	}{
		{"RS256", signTestJWT(t, jose.RS256, "rsa1", rsaKey, claims("alice", nil)), "User:alice"},
		{"ES256", signTestJWT(t, jose.ES256, "ec1", ecKey, claims("bob", nil)), "User:bob"},
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string { return tc.token }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("%s: metadata with a good token: %v", tc.name, err)
		}
		if !principals()[tc.principal] {
			t.Errorf("%s: no connection of %s among %v", tc.name, tc.principal, principals())
		}
		cl.Close()
	}

	for _, tc := range []struct {
		name, token, reason string
	}{
		{"bad signature", signTestJWT(t, jose.RS256, "rsa1", otherRSA, claims("mallory", nil)), "invalid signature"},
		{"wrong issuer", signTestJWT(t, jose.RS256, "rsa1", rsaKey, claims("mallory", func(c map[string]any) { c["iss"] = "https://evil.test" })), "Issuer (iss) claim value"},
		{"wrong audience", signTestJWT(t, jose.RS256, "rsa1", rsaKey, claims("mallory", func(c map[string]any) { c["aud"] = "other" })), "Audience (aud) claim"},
		{"expired", signTestJWT(t, jose.ES256, "ec1", ecKey, claims("mallory", func(c map[string]any) {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
		})), "no longer valid"},
		{"unknown kid", signTestJWT(t, jose.RS256, "nobody", otherRSA, claims("mallory", nil)), "Unable to find a suitable verification key"},
	} {
		err := login(tc.token)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with the invalid_token challenge", tc.name, err)
		}
		waitFor(t, tc.name+" logged", func() bool { return strings.Contains(logs.String(), tc.reason) })
		if strings.Contains(logs.String(), tc.token) || strings.Contains(logs.String(), strings.Split(tc.token, ".")[1]) {
			t.Fatalf("%s: the log holds the token", tc.name)
		}
	}

	// Rotation: the provider adds a key; the first token naming it starts
	// a refetch (that token itself is refused, as in Kafka, though the
	// client may retry), and a login with it is then accepted.
	newKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks.add("ec2", newKey)
	rotated := signTestJWT(t, jose.ES384, "ec2", newKey, claims("carol", nil))
	before := jwks.fetches.Load()
	waitFor(t, "a login with the rotated key", func() bool { return login(rotated) == nil })
	if jwks.fetches.Load() <= before {
		t.Errorf("the JWKS was not refetched for the new kid")
	}
}

// TestOAuthBearerJWKSFile: a file: URL names a local JWKS, read at start.
func TestOAuthBearerJWKSFile(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "f1"}}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	u := "file://" + path
	b := startSASLBroker(t, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
		c.OAuthBearer = OAuthBearerConfig{JAASConfig: jwksTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler,
			JWKSEndpointURL: u, AllowedURLs: []string{u}}
	})
	token := signTestJWT(t, jose.ES256, "f1", key, map[string]any{"sub": "dave", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), oauthOpt(func() string { return token }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("metadata: %v", err)
	}
}

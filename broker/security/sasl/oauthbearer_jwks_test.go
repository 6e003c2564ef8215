package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// testKeys are the signing keys of the JWKS tests, made once.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, otherRSA *rsa.PrivateKey
	ec256, ec384  *ecdsa.PrivateKey
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.otherRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// signJWT signs claims with key as alg, with kid in the header when not
// empty.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, kid string, key crypto.Signer, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
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

// jwksDoc is a JWKS of the public halves of keys, by kid.
func jwksDoc(t testing.TB, keys map[string]crypto.Signer) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for kid, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordingKeys is a KeySource that records the kids it was told are
// missing.
type recordingKeys struct {
	StaticKeys
	missing []string
}

func (r *recordingKeys) MissingKey(kid string) { r.missing = append(r.missing, kid) }

func TestJWKSValidator(t *testing.T) {
	k := testKeys()
	keys, _, err := ParseJWKS(jwksDoc(t, map[string]crypto.Signer{"rsa1": k.rsa, "ec1": k.ec256, "ec384": k.ec384}))
	if err != nil || len(keys) != 3 {
		t.Fatalf("ParseJWKS: %d keys, %v", len(keys), err)
	}
	now := time.Unix(1_800_000_000, 0)
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "iss": "https://idp", "aud": "kafka",
			"iat": now.Unix() - 10, "exp": now.Unix() + 600, "scope": []string{"read", "write"}}
		if edit != nil {
			edit(c)
		}
		return c
	}
	noneToken := func() string {
		enc := base64.RawURLEncoding.EncodeToString
		p, _ := json.Marshal(claims(nil))
		return enc([]byte(`{"alg":"none","kid":"rsa1"}`)) + "." + enc(p) + "."
	}
	for _, tc := range []struct {
		name      string
		token     string
		cfg       func(*JWKSValidatorConfig)
		principal string
		scope     []string
		want      string // a refusal's reason contains it
		missing   string // the kid reported missing
	}{
		{name: "RS256", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(nil)), principal: "alice", scope: []string{"read", "write"}},
		{name: "PS512", token: signJWT(t, jose.PS512, "rsa1", k.rsa, claims(nil)), principal: "alice", scope: []string{"read", "write"}},
		{name: "ES256", token: signJWT(t, jose.ES256, "ec1", k.ec256, claims(nil)), principal: "alice", scope: []string{"read", "write"}},
		{name: "ES384", token: signJWT(t, jose.ES384, "ec384", k.ec384, claims(nil)), principal: "alice", scope: []string{"read", "write"}},
		{name: "no kid picks a key of the algorithm's type", token: signJWT(t, jose.ES256, "", k.ec256, claims(nil)), principal: "alice", scope: []string{"read", "write"}},
		{name: "a string scope is one scope", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["scope"] = " read write " })), principal: "alice", scope: []string{"read write"}},
		{name: "no scope", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "scope") })), principal: "alice"},
		{name: "other claim names", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["client_id"] = " svc "; c["scp"] = []string{"x", "x"} })),
			cfg: func(c *JWKSValidatorConfig) { c.SubClaim, c.ScopeClaim = "client_id", "scp" }, principal: "svc", scope: []string{"x"}},
		{name: "expired within the clock skew", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["exp"] = now.Unix() - 20 })), principal: "alice", scope: []string{"read", "write"}},
		{name: "audience among several", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["aud"] = []string{"x", "kafka"} })),
			cfg: func(c *JWKSValidatorConfig) { c.ExpectedAudience = []string{"y", "kafka"} }, principal: "alice", scope: []string{"read", "write"}},
		{name: "no issuer configured takes any", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["iss"] = "elsewhere" })),
			cfg: func(c *JWKSValidatorConfig) { c.ExpectedIssuer = "" }, principal: "alice", scope: []string{"read", "write"}},

		{name: "bad signature", token: signJWT(t, jose.RS256, "rsa1", k.otherRSA, claims(nil)), want: "invalid signature"},
		{name: "unknown kid", token: signJWT(t, jose.RS256, "rsa9", k.rsa, claims(nil)), want: "Unable to find a suitable verification key", missing: "rsa9"},
		{name: "kid of a key of another type", token: signJWT(t, jose.RS256, "ec1", k.rsa, claims(nil)), want: "Unable to find a suitable verification key", missing: "ec1"},
		{name: "EC key of another curve", token: signJWT(t, jose.ES256, "ec384", k.ec256, claims(nil)), want: "Unable to find a suitable verification key", missing: "ec384"},
		{name: "alg none", token: noneToken(), want: "Could not validate the access token"},
		{name: "malformed", token: "a.b", want: "expected three sections"},
		{name: "garbage", token: "a.b.c", want: "Could not validate the access token"},
		{name: "expired", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["exp"] = now.Unix() - 31 })), want: "is on or after the Expiration Time"},
		{name: "no exp", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "exp") })), want: "No Expiration Time (exp) claim present"},
		{name: "no iat", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "iat") })), want: "No Issued At (iat) claim present"},
		{name: "not yet valid", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["nbf"] = now.Unix() + 31 })), want: "is before the Not Before"},
		{name: "wrong issuer", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["iss"] = "https://evil" })), want: "doesn't match expected value of https://idp"},
		{name: "no issuer", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "iss") })), want: "No Issuer (iss) claim present"},
		{name: "wrong audience", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["aud"] = "other" })), want: "doesn't contain an acceptable identifier"},
		{name: "no audience", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "aud") })), want: "No Audience (aud) claim present"},
		{name: "an audience none expected", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(nil)),
			cfg: func(c *JWKSValidatorConfig) { c.ExpectedAudience = nil }, want: "no expected audience value(s) were provided"},
		{name: "no sub", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { delete(c, "sub") })), want: "sub value must be non-null"},
		{name: "blank sub", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["sub"] = "  " })), want: "sub value must not be empty"},
		{name: "numeric sub", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["sub"] = 7 })), want: "Could not extract the 'sub' claim"},
		{name: "blank scope", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["scope"] = []string{"a", " "} })), want: "empty or whitespace-only scope"},
		{name: "numeric scope element", token: signJWT(t, jose.RS256, "rsa1", k.rsa, claims(func(c map[string]any) { c["scope"] = []any{"a", 1} })), want: "Could not extract the 'scope' claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &recordingKeys{StaticKeys: keys}
			cfg := JWKSValidatorConfig{Keys: src, ExpectedAudience: []string{"kafka"}, ExpectedIssuer: "https://idp",
				ClockSkew: 30 * time.Second, Now: func() time.Time { return now }}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			tok, err := NewJWKSValidator(cfg).Validate(tc.token)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tok.Principal != tc.principal || !reflect.DeepEqual(tok.Scope, tc.scope) {
					t.Errorf("principal %q scope %q, want %q %q", tok.Principal, tok.Scope, tc.principal, tc.scope)
				}
				return
			}
			var ve *TokenValidationError
			if !errors.As(err, &ve) || ve.Status != "invalid_token" {
				t.Fatalf("error %v, want an invalid_token refusal", err)
			}
			if !strings.Contains(ve.Reason, tc.want) {
				t.Errorf("reason %q, want one containing %q", ve.Reason, tc.want)
			}
			if strings.Contains(ve.Reason, tc.token) {
				t.Errorf("reason %q holds the token", ve.Reason)
			}
			if tc.missing != "" && !reflect.DeepEqual(src.missing, []string{tc.missing}) {
				t.Errorf("missing kids %q, want [%s]", src.missing, tc.missing)
			}
			if tc.missing == "" && len(src.missing) != 0 {
				t.Errorf("missing kids %q, want none", src.missing)
			}
		})
	}
	t.Run("lifetime", func(t *testing.T) {
		tok, err := NewJWKSValidator(JWKSValidatorConfig{Keys: StaticKeys(keys), ExpectedAudience: []string{"kafka"}, Now: func() time.Time { return now }}).
			Validate(signJWT(t, jose.RS256, "rsa1", k.rsa, claims(nil)))
		if err != nil || tok.LifetimeMs != (now.Unix()+600)*1000 {
			t.Fatalf("lifetime %d, %v; want %d", tok.LifetimeMs, err, (now.Unix()+600)*1000)
		}
	})
}

func TestParseJWKS(t *testing.T) {
	k := testKeys()
	good := jwksDoc(t, map[string]crypto.Signer{"a": k.rsa})
	var withBad map[string][]json.RawMessage
	if err := json.Unmarshal(good, &withBad); err != nil {
		t.Fatal(err)
	}
	withBad["keys"] = append(withBad["keys"], json.RawMessage(`{"kty":"oct","k":"c2VjcmV0","kid":"h"}`), json.RawMessage(`{"kty":"XX"}`))
	mixed, _ := json.Marshal(withBad)
	// A private JWK gives its public half.
	priv, _ := json.Marshal(jose.JSONWebKey{Key: k.ec256, KeyID: "p"})
	for _, tc := range []struct {
		name    string
		doc     string
		keys    int
		skipped int
		err     string
	}{
		{"one key", string(good), 1, 0, ""},
		{"unusable keys skipped", string(mixed), 1, 2, ""},
		{"private key made public", `{"keys":[` + string(priv) + `]}`, 1, 0, ""},
		{"empty", `{"keys":[]}`, 0, 0, ""},
		{"not json", `{"keys":`, 0, 0, "malformed JWKS"},
		{"keys not a list", `{"keys":{}}`, 0, 0, "malformed JWKS"},
		{"deep", strings.Repeat("[", 100), 0, 0, "nested too deeply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, skipped, err := ParseJWKS([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(keys) != tc.keys || len(skipped) != tc.skipped {
				t.Fatalf("%d keys, %d skipped (%q), %v; want %d, %d", len(keys), len(skipped), skipped, err, tc.keys, tc.skipped)
			}
			for _, k := range keys {
				if !k.IsPublic() {
					t.Errorf("key %s is not public", k.KeyID)
				}
			}
		})
	}
}

func TestReadJWKSFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, jwksDoc(t, map[string]crypto.Signer{"a": testKeys().rsa}), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := ReadJWKSFile(path, slog.Default())
	if err != nil || len(keys.Keys()) != 1 || keys.Keys()[0].KeyID != "a" {
		t.Fatalf("keys %v, %v", keys, err)
	}
	for name, p := range map[string]string{"missing": filepath.Join(dir, "none"), "directory": dir} {
		if _, err := ReadJWKSFile(p, slog.Default()); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// jwksServer serves a JWKS that a test can change or break, counting its
// fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     []byte
	broken  bool
	fetches atomic.Int32
}

func newJWKSServer(t testing.TB, doc []byte) *jwksServer {
	s := &jwksServer{doc: doc}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.broken {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.doc)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(doc []byte, broken bool) {
	s.mu.Lock()
	s.doc, s.broken = doc, broken
	s.mu.Unlock()
}

func kids(keys []jose.JSONWebKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.KeyID)
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRemoteKeys: the first fetch must succeed; a missing kid starts one
// refetch (not another within the minute); a failed refetch, retried,
// keeps the old keys; the interval refetches.
func TestRemoteKeys(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, jwksDoc(t, map[string]crypto.Signer{"a": k.rsa}))
	t.Run("first fetch fails", func(t *testing.T) {
		down := newJWKSServer(t, nil)
		down.set(nil, true)
		if _, err := NewRemoteKeys(RemoteKeysConfig{URL: down.URL, Refresh: time.Hour}); err == nil || !strings.Contains(err.Error(), "Could not refresh JWKS") {
			t.Fatalf("error %v", err)
		}
	})
	r, err := NewRemoteKeys(RemoteKeysConfig{URL: srv.URL, Refresh: time.Hour, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := kids(r.Keys()); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("kids %q", got)
	}

	srv.set(jwksDoc(t, map[string]crypto.Signer{"b": k.ec256}), false)
	r.MissingKey("b")
	waitUntil(t, "the refetch for kid b", func() bool { return reflect.DeepEqual(kids(r.Keys()), []string{"b"}) })
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}

	// A kid still missing after its refetch starts none again for a minute.
	r.MissingKey("c")
	waitUntil(t, "the refetch for kid c", func() bool { return srv.fetches.Load() == 3 })
	r.MissingKey("c")
	time.Sleep(100 * time.Millisecond)
	if n := srv.fetches.Load(); n != 3 {
		t.Errorf("%d fetches after kid c again within the minute, want 3", n)
	}

	// A failing endpoint is retried with backoff and the keys kept.
	srv.set(nil, true)
	before := srv.fetches.Load()
	r.MissingKey("d")
	waitUntil(t, "retries", func() bool { return srv.fetches.Load() >= before+3 })
	time.Sleep(150 * time.Millisecond) // past the retry budget
	if got := kids(r.Keys()); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("kids %q after a failed refresh, want the old [b]", got)
	}
	if n := srv.fetches.Load() - before; n > 6 {
		t.Errorf("%d attempts within a 100 ms budget from a 10 ms backoff, want a few", n)
	}

	t.Run("interval", func(t *testing.T) {
		s2 := newJWKSServer(t, jwksDoc(t, map[string]crypto.Signer{"a": k.rsa}))
		r2, err := NewRemoteKeys(RemoteKeysConfig{URL: s2.URL, Refresh: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Close()
		s2.set(jwksDoc(t, map[string]crypto.Signer{"z": k.rsa}), false)
		waitUntil(t, "the scheduled refetch", func() bool { return reflect.DeepEqual(kids(r2.Keys()), []string{"z"}) })
	})
}

// FuzzJWKSValidator: any token is refused or accepted without a panic,
// and an accepted one has a principal.
func FuzzJWKSValidator(f *testing.F) {
	k := testKeys()
	keys, _, err := ParseJWKS(jwksDoc(f, map[string]crypto.Signer{"rsa1": k.rsa, "ec1": k.ec256}))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	claims := map[string]any{"sub": "alice", "iat": now.Unix(), "exp": now.Unix() + 60, "scope": "a"}
	f.Add(signJWT(f, jose.RS256, "rsa1", k.rsa, claims))
	f.Add(signJWT(f, jose.ES256, "ec1", k.ec256, claims))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("..")
	v := NewJWKSValidator(JWKSValidatorConfig{Keys: StaticKeys(keys), Now: func() time.Time { return now }})
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := v.Validate(token)
		if err == nil && tok.Principal == "" {
			t.Fatal("accepted without a principal")
		}
	})
}

// FuzzParseJWKS: any document decodes to public keys or an error.
func FuzzParseJWKS(f *testing.F) {
	f.Add(jwksDoc(f, map[string]crypto.Signer{"rsa1": testKeys().rsa, "ec1": testKeys().ec256}))
	f.Add([]byte(`{"keys":[{"kty":"EC"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, _, err := ParseJWKS(doc)
		for _, k := range keys {
			if err != nil || !k.IsPublic() {
				t.Fatalf("key %v with error %v", k.KeyID, err)
			}
		}
	})
}

package sasl

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func unsecuredJWT(t testing.TB, claims map[string]any) string {
	t.Helper()
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(c) + "."
}

func TestParseOAuthBearerInitialResponse(t *testing.T) {
	for _, tc := range []struct {
		name, msg    string
		authz, token string
		ext          map[string]string
		wantErr      string
	}{
		{name: "plain", msg: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{name: "authzid and extension", msg: "n,a=alice,\x01auth=bearer t\x01traceId=x y\x01\x01", authz: "alice", token: "t", ext: map[string]string{"traceId": "x y"}},
		{name: "base64 token with padding", msg: "n,,\x01auth=Bearer ab~+/c==\x01\x01", token: "ab~+/c=="},
		{name: "padding inside the token", msg: "n,,\x01auth=Bearer ab=c\x01\x01", wantErr: "Invalid OAUTHBEARER client first message: invalid 'auth' format"},
		{name: "no auth", msg: "n,,\x01foo=bar\x01\x01", wantErr: "Invalid OAUTHBEARER client first message: 'auth' not specified"},
		{name: "bad scheme", msg: "n,,\x01auth=Basic abc\x01\x01", wantErr: "Invalid scheme in OAUTHBEARER client first message: Basic"},
		{name: "bad auth format", msg: "n,,\x01auth=Bearer a*b\x01\x01", wantErr: "Invalid OAUTHBEARER client first message: invalid 'auth' format"},
		{name: "no gs2 header", msg: "auth=Bearer t\x01\x01", wantErr: "Invalid OAUTHBEARER client first message"},
		{name: "missing final separator", msg: "n,,\x01auth=Bearer t\x01", wantErr: "Invalid OAUTHBEARER client first message"},
		{name: "comma in authzid", msg: "n,a=a,b,\x01auth=Bearer t\x01\x01", wantErr: "Invalid OAUTHBEARER client first message"},
		{name: "empty", msg: "", wantErr: "Invalid OAUTHBEARER client first message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseOAuthBearerInitialResponse([]byte(tc.msg))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.AuthorizationID != tc.authz || r.Token != tc.token || len(r.Extensions) != len(tc.ext) {
				t.Fatalf("got %+v", r)
			}
			for k, v := range tc.ext {
				if r.Extensions[k] != v {
					t.Fatalf("extension %s = %q, want %q", k, r.Extensions[k], v)
				}
			}
		})
	}
}

func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	sec := now.Unix()
	for _, tc := range []struct {
		name      string
		options   map[string]string
		token     string
		principal string
		status    string
		scope     string
	}{
		{name: "valid", token: unsecuredJWT(t, map[string]any{"sub": "alice", "iat": sec, "exp": sec + 60}), principal: "alice"},
		{name: "other principal claim", options: map[string]string{"unsecuredValidatorPrincipalClaimName": "user"},
			token: unsecuredJWT(t, map[string]any{"user": "bob", "exp": sec + 60}), principal: "bob"},
		{name: "expired", token: unsecuredJWT(t, map[string]any{"sub": "a", "exp": sec}), status: "invalid_token"},
		{name: "expired within skew", options: map[string]string{"unsecuredValidatorAllowableClockSkewMs": "2000"},
			token: unsecuredJWT(t, map[string]any{"sub": "a", "exp": sec - 1}), principal: "a"},
		{name: "issued in the future", token: unsecuredJWT(t, map[string]any{"sub": "a", "iat": sec + 10, "exp": sec + 60}), status: "invalid_token"},
		{name: "exp before iat", options: map[string]string{"unsecuredValidatorAllowableClockSkewMs": "100000"},
			token: unsecuredJWT(t, map[string]any{"sub": "a", "iat": sec + 50, "exp": sec + 40}), status: "invalid_token"},
		{name: "no exp", token: unsecuredJWT(t, map[string]any{"sub": "a"}), status: "invalid_token"},
		{name: "missing sub", token: unsecuredJWT(t, map[string]any{"exp": sec + 60}), status: "invalid_token"},
		{name: "sub not a string", token: unsecuredJWT(t, map[string]any{"sub": 5, "exp": sec + 60}), status: "invalid_token"},
		{name: "required scope present", options: map[string]string{"unsecuredValidatorRequiredScope": "read write"},
			token: unsecuredJWT(t, map[string]any{"sub": "a", "exp": sec + 60, "scope": "write read other"}), principal: "a"},
		{name: "required scope missing", options: map[string]string{"unsecuredValidatorRequiredScope": "read write"},
			token: unsecuredJWT(t, map[string]any{"sub": "a", "exp": sec + 60, "scope": []string{"read"}}), status: "insufficient_scope", scope: "[read, write]"},
		{name: "signed", token: unsecuredJWT(t, map[string]any{"sub": "a", "exp": sec + 60}) + "c2ln", status: "invalid_token"},
		{name: "two parts", token: "e30.e30", status: "invalid_token"},
		{name: "bad base64", token: "!!.e30.", status: "invalid_token"},
		{name: "claims not an object", token: "e30.WzFd.", status: "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewUnsecuredValidator(tc.options, clock)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := v.Validate(tc.token)
			if tc.status != "" {
				var ve *TokenValidationError
				if !errors.As(err, &ve) || ve.Status != tc.status || ve.Scope != tc.scope {
					t.Fatalf("err = %#v, want status %s scope %q", err, tc.status, tc.scope)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tok.Principal != tc.principal || tok.LifetimeMs <= 0 {
				t.Fatalf("token = %+v", tok)
			}
		})
	}
	if _, err := NewUnsecuredValidator(map[string]string{"unsecuredValidatorAllowableClockSkewMs": "x"}, clock); err == nil {
		t.Fatal("a bad clock skew was accepted")
	}
}

func TestOAuthBearerMechanism(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	v, err := NewUnsecuredValidator(map[string]string{"unsecuredValidatorRequiredScope": "kafka"}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good := unsecuredJWT(t, map[string]any{"sub": "alice", "exp": now.Unix() + 60, "scope": "kafka"})
	noScope := unsecuredJWT(t, map[string]any{"sub": "alice", "exp": now.Unix() + 60})
	msg := func(authz, tok string) []byte { return []byte("n," + authz + ",\x01auth=Bearer " + tok + "\x01\x01") }

	t.Run("accepted", func(t *testing.T) {
		m := NewOAuthBearer(v, nil)
		out, done, err := m.Evaluate(msg("", good))
		if err != nil || !done || len(out) != 0 || m.AuthorizationID() != "alice" {
			t.Fatalf("out %q done %v err %v id %q", out, done, err, m.AuthorizationID())
		}
		if ms, ok := m.CredentialExpiryMs(); !ok || ms != (now.Unix()+60)*1000 {
			t.Fatalf("expiry %d %v", ms, ok)
		}
	})
	t.Run("refused: challenge then failure", func(t *testing.T) {
		var reasons []string
		m := NewOAuthBearer(v, func(r string) { reasons = append(reasons, r) })
		out, done, err := m.Evaluate(msg("", noScope))
		want := `{"status":"insufficient_scope", "scope":"[kafka]"}`
		if err != nil || done || string(out) != want {
			t.Fatalf("out %q done %v err %v", out, done, err)
		}
		_, _, err = m.Evaluate([]byte{0x01})
		var ae *AuthenticationError
		if !errors.As(err, &ae) || ae.Message != want {
			t.Fatalf("err = %v", err)
		}
		if len(reasons) != 1 {
			t.Fatalf("reasons %q", reasons)
		}
		if _, ok := m.CredentialExpiryMs(); ok {
			t.Fatal("a refused exchange has an expiry")
		}
	})
	t.Run("authzid differs", func(t *testing.T) {
		_, _, err := NewOAuthBearer(v, nil).Evaluate(msg("a=bob", good))
		var ae *AuthenticationError
		if !errors.As(err, &ae) || ae.Message != "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad message is generic", func(t *testing.T) {
		_, _, err := NewOAuthBearer(v, nil).Evaluate([]byte("garbage"))
		var ae *AuthenticationError
		if err == nil || errors.As(err, &ae) {
			t.Fatalf("err = %v, want a plain error", err)
		}
	})
}

// FuzzParseOAuthBearerInitialResponse: the parser never panics, and a
// message it accepts has a token of the auth pattern.
func FuzzParseOAuthBearerInitialResponse(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.\x01\x01"))
	f.Add([]byte("n,a=x=2Cy,\x01auth=bearer t\x01k=v\x01\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseOAuthBearerInitialResponse(in)
		if err == nil && !oauthAuthValue.MatchString("Bearer "+r.Token) {
			t.Fatalf("accepted token %q", r.Token)
		}
	})
}

// FuzzUnsecuredValidator: token parsing never panics, and an accepted
// token has a principal.
func FuzzUnsecuredValidator(f *testing.F) {
	f.Add(unsecuredJWT(f, map[string]any{"sub": "a", "exp": 1_700_000_060}))
	f.Add("e30.e30.")
	f.Add("e30.W1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1td.")
	v, _ := NewUnsecuredValidator(map[string]string{"unsecuredValidatorRequiredScope": "s"}, func() time.Time { return time.Unix(1_700_000_000, 0) })
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := v.Validate(tok)
		if err == nil && got.Principal == "" {
			t.Fatal("accepted a token without a principal")
		}
	})
}

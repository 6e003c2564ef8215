package sasl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwsAlgorithms are the signature algorithms a signed token may use: the
// asymmetric ones jose4j verifies with a JWKS key (Kafka allows every
// algorithm but none; a JWKS of public keys serves only these).
var jwsAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
}

// A KeySource gives the verification keys of a JWKS, as Kafka's
// CloseableVerificationKeyResolver: the keys now, and a hint that a
// token named a key id the keys lack (which may start a refetch).
type KeySource interface {
	Keys() []jose.JSONWebKey
	MissingKey(kid string)
}

// JWKSValidatorConfig is the configuration of a JWKSValidator, Kafka's
// sasl.oauthbearer.* settings of the broker.
type JWKSValidatorConfig struct {
	Keys KeySource
	// ExpectedAudience is sasl.oauthbearer.expected.audience: a token's
	// aud must hold one of them. Empty means a token must have no aud
	// claim at all (jose4j's default, which Kafka keeps).
	ExpectedAudience []string
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer; empty means any.
	ExpectedIssuer string
	// ScopeClaim and SubClaim are sasl.oauthbearer.scope.claim.name and
	// sasl.oauthbearer.sub.claim.name (scope and sub when empty).
	ScopeClaim, SubClaim string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds.
	ClockSkew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWKSValidator is Kafka's broker-side OAuthBearerValidatorCallbackHandler
// (BrokerJwtValidator): a token is a JWS signed by a key of the JWKS, with
// exp and iat, nbf if present, the configured issuer and audience, and a
// string subject claim as the principal.
type JWKSValidator struct {
	cfg JWKSValidatorConfig
}

// NewJWKSValidator returns the validator of cfg.
func NewJWKSValidator(cfg JWKSValidatorConfig) *JWKSValidator {
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &JWKSValidator{cfg: cfg}
}

// maxKeyIDLength is Kafka's RefreshingHttpsJwks.MISSING_KEY_ID_MAX_KEY_LENGTH:
// a longer kid is taken for a malformed token and starts no refetch.
const maxKeyIDLength = 1000

// Validate checks a signed token as Kafka's BrokerJwtValidator.
func (v *JWKSValidator) Validate(token string) (OAuthBearerToken, error) {
	token = strings.TrimSpace(token)
	if strings.Count(token, ".") != 2 {
		// Kafka's SerializedJwt.
		return OAuthBearerToken{}, invalidToken("Malformed JWT provided; expected three sections (header, payload, and signature)")
	}
	tok, err := jwt.ParseSigned(token, jwsAlgorithms)
	if err != nil {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %v", err)
	}
	if len(tok.Headers) != 1 {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: expected one signature")
	}
	hdr := tok.Headers[0]
	key, ok := v.selectKey(hdr)
	if !ok {
		if len(hdr.KeyID) <= maxKeyIDLength {
			v.cfg.Keys.MissingKey(hdr.KeyID)
		}
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: Unable to find a suitable verification key for JWS w/ header {alg=%s, kid=%.64q}", hdr.Algorithm, hdr.KeyID)
	}
	var all map[string]json.RawMessage
	if err := tok.Claims(key.Key, &all); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return OAuthBearerToken{}, invalidToken("Could not validate the access token: JWT rejected due to invalid signature")
		}
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %v", err)
	}
	var std registeredClaims
	if err := tok.UnsafeClaimsWithoutVerification(&std); err != nil {
		// Verified above: only a claim of the wrong type fails here.
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %v", err)
	}
	if err := v.checkClaims(std, all); err != nil {
		return OAuthBearerToken{}, err
	}
	sub, err := v.subject(all)
	if err != nil {
		return OAuthBearerToken{}, err
	}
	scope, err := v.scope(all)
	if err != nil {
		return OAuthBearerToken{}, err
	}
	return OAuthBearerToken{Principal: sub, LifetimeMs: int64(*std.Expiry) * 1000, Scope: scope}, nil
}

// registeredClaims are the claims jose4j checks (RFC 7519 section 4.1);
// the subject is the configured claim, read apart.
type registeredClaims struct {
	Issuer    string           `json:"iss"`
	Audience  jwt.Audience     `json:"aud"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
}

// selectKey is jose4j's VerificationJwkSelector: a signing key of the
// algorithm's type, with the header's kid when it has one.
func (v *JWKSValidator) selectKey(hdr jose.Header) (jose.JSONWebKey, bool) {
	for _, k := range v.cfg.Keys.Keys() {
		if hdr.KeyID != "" && k.KeyID != hdr.KeyID {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != hdr.Algorithm {
			continue
		}
		if keyFits(k.Key, hdr.Algorithm) {
			return k, true
		}
	}
	return jose.JSONWebKey{}, false
}

// keyFits says whether key verifies signatures of alg.
func keyFits(key any, alg string) bool {
	switch alg {
	case string(jose.RS256), string(jose.RS384), string(jose.RS512), string(jose.PS256), string(jose.PS384), string(jose.PS512):
		_, ok := key.(*rsa.PublicKey)
		return ok
	case string(jose.ES256), string(jose.ES384), string(jose.ES512):
		k, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return false
		}
		want := map[string]elliptic.Curve{string(jose.ES256): elliptic.P256(), string(jose.ES384): elliptic.P384(), string(jose.ES512): elliptic.P521()}[alg]
		return k.Curve == want
	}
	return false
}

// checkClaims is jose4j's claim validation as Kafka configures it: exp
// and iat required, exp and nbf within the clock skew, the issuer and
// the audience.
func (v *JWKSValidator) checkClaims(std registeredClaims, all map[string]json.RawMessage) error {
	now := v.cfg.Now()
	skew := v.cfg.ClockSkew
	if std.Expiry == nil {
		return invalidToken("Could not validate the access token: No Expiration Time (exp) claim present.")
	}
	if std.IssuedAt == nil {
		return invalidToken("Could not validate the access token: No Issued At (iat) claim present.")
	}
	if *std.Expiry < 0 {
		return invalidToken("exp value must be non-negative; value given was \"%d\"", int64(*std.Expiry))
	}
	if *std.IssuedAt < 0 {
		return invalidToken("iat value must be non-negative; value given was \"%d\"", int64(*std.IssuedAt))
	}
	if !now.Add(-skew).Before(std.Expiry.Time()) {
		return invalidToken("Could not validate the access token: The JWT is no longer valid - the evaluation time %d is on or after the Expiration Time (exp=%d) claim value (even when providing %d seconds of leeway to account for clock skew).",
			now.Unix(), int64(*std.Expiry), int64(skew/time.Second))
	}
	if std.NotBefore != nil && now.Add(skew).Before(std.NotBefore.Time()) {
		return invalidToken("Could not validate the access token: The JWT is not yet valid as the evaluation time %d is before the Not Before (nbf=%d) claim time (even when providing %d seconds of leeway to account for clock skew).",
			now.Unix(), int64(*std.NotBefore), int64(skew/time.Second))
	}
	if iss := v.cfg.ExpectedIssuer; iss != "" {
		if _, has := all["iss"]; !has {
			return invalidToken("Could not validate the access token: No Issuer (iss) claim present but was expecting %s", iss)
		}
		if std.Issuer != iss {
			return invalidToken("Could not validate the access token: Issuer (iss) claim value (%.256s) doesn't match expected value of %s", std.Issuer, iss)
		}
	}
	_, hasAud := all["aud"]
	switch {
	case len(v.cfg.ExpectedAudience) == 0 && hasAud:
		return invalidToken("Could not validate the access token: Audience (aud) claim %.256v present in the JWT but no expected audience value(s) were provided to the JWT Consumer.", []string(std.Audience))
	case len(v.cfg.ExpectedAudience) > 0 && !hasAud:
		return invalidToken("Could not validate the access token: No Audience (aud) claim present.")
	case len(v.cfg.ExpectedAudience) > 0:
		found := slices.ContainsFunc(v.cfg.ExpectedAudience, std.Audience.Contains)
		if !found {
			return invalidToken("Could not validate the access token: Audience (aud) claim %.256v doesn't contain an acceptable identifier. Expected one of %v as an aud value.", []string(std.Audience), v.cfg.ExpectedAudience)
		}
	}
	return nil
}

// subject is Kafka's validateClaimSubject: a string, trimmed, not empty.
func (v *JWKSValidator) subject(all map[string]json.RawMessage) (string, error) {
	raw, ok := all[v.cfg.SubClaim]
	if !ok || string(raw) == "null" {
		return "", invalidToken("%s value must be non-null", v.cfg.SubClaim)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalidToken("Could not extract the '%s' claim from the access token", v.cfg.SubClaim)
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", invalidToken("%s value must not be empty", v.cfg.SubClaim)
	}
	return s, nil
}

// scope is Kafka's scope of a signed token: a string is one scope (not
// split on spaces, unlike the unsecured validator), a list of strings is
// the scopes, anything else is none; each scope trimmed and not empty.
func (v *JWKSValidator) scope(all map[string]json.RawMessage) ([]string, error) {
	raw, ok := all[v.cfg.ScopeClaim]
	if !ok {
		return nil, nil
	}
	var one string
	var list []any
	var scopes []string
	switch {
	case json.Unmarshal(raw, &one) == nil:
		scopes = []string{one}
	case json.Unmarshal(raw, &list) == nil:
		for _, e := range list {
			s, isString := e.(string)
			if !isString {
				return nil, invalidToken("Could not extract the '%s' claim from the access token", v.cfg.ScopeClaim)
			}
			scopes = append(scopes, s)
		}
	default:
		return nil, nil
	}
	var out []string
	for _, s := range scopes {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, invalidToken("%s value must not contain empty or whitespace-only scope values", v.cfg.ScopeClaim)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseJWKS decodes a JWKS document (RFC 7517 section 5) into its public
// verification keys: a key that does not decode, or is not RSA or EC, is
// skipped (and named in skipped), as jose4j skips keys it cannot use.
func ParseJWKS(doc []byte) (keys []jose.JSONWebKey, skipped []string, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if jsonDepth(doc) > maxJSONDepth {
		return nil, nil, errors.New("malformed JWKS: nested too deeply")
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, nil, fmt.Errorf("malformed JWKS: %v", err)
	}
	for i, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		pub := k.Public()
		switch pub.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			keys = append(keys, pub)
		default:
			skipped = append(skipped, fmt.Sprintf("key %d (kid %.64q): not an RSA or EC public key", i, k.KeyID))
		}
	}
	return keys, skipped, nil
}

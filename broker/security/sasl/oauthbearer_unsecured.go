package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The JAAS options of Kafka's OAuthBearerUnsecuredValidatorCallbackHandler.
const (
	unsecuredPrincipalClaimOption = "unsecuredValidatorPrincipalClaimName"
	unsecuredScopeClaimOption     = "unsecuredValidatorScopeClaimName"
	unsecuredRequiredScopeOption  = "unsecuredValidatorRequiredScope"
	unsecuredClockSkewOption      = "unsecuredValidatorAllowableClockSkewMs"
)

// UnsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler:
// it accepts unsigned JWTs (alg none, empty signature) and checks only
// their claims. It is for tests and development, as in Kafka.
type UnsecuredValidator struct {
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	clockSkewMs    int64
	now            func() time.Time
}

// NewUnsecuredValidator takes its settings from the options of the
// OAuthBearerLoginModule JAAS entry, as Kafka. now nil means time.Now.
func NewUnsecuredValidator(options map[string]string, now func() time.Time) (*UnsecuredValidator, error) {
	v := &UnsecuredValidator{principalClaim: "sub", scopeClaim: "scope", now: now}
	if s := strings.TrimSpace(options[unsecuredPrincipalClaimOption]); s != "" {
		v.principalClaim = s
	}
	if s := strings.TrimSpace(options[unsecuredScopeClaimOption]); s != "" {
		v.scopeClaim = s
	}
	v.requiredScope = strings.Fields(options[unsecuredRequiredScopeOption])
	if s := strings.TrimSpace(options[unsecuredClockSkewOption]); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: not a non-negative integer: %q", unsecuredClockSkewOption, s)
		}
		v.clockSkewMs = n
	}
	return v, nil
}

func invalidToken(format string, args ...any) *TokenValidationError {
	return &TokenValidationError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// maxJSONDepth bounds the nesting of a token's JSON: the token is already
// bounded by sasl.server.max.receive.size, this only refuses nesting
// attacks early.
const maxJSONDepth = 32

// decodeJWTPart decodes one base64url part of a compact JWT into a JSON
// object, as Kafka's OAuthBearerUnsecuredJws.toMap.
func decodeJWTPart(part string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, invalidToken("malformed Base64 URL encoded value")
	}
	if jsonDepth(raw) > maxJSONDepth {
		return nil, invalidToken("malformed JSON")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil || d.More() {
		return nil, invalidToken("malformed JSON")
	}
	return m, nil
}

// jsonDepth is the deepest nesting of brackets in b, strings ignored.
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// numericClaim is a claim that must be a number when present, in seconds.
func numericClaim(claims map[string]any, name string) (float64, bool, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, invalidToken("The '%s' claim value was not of type Number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, invalidToken("The '%s' claim value was not of type Number", name)
	}
	return f, true, nil
}

// scopeClaim is a space-separated string or a list of strings, as Kafka's
// OAuthBearerUnsecuredJws.calculateScope (another type is no scope).
func scopeClaim(claims map[string]any, name string) []string {
	switch v := claims[name].(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				out = append(out, fmt.Sprint(e))
			}
		}
		return out
	}
	return nil
}

// Validate checks an unsecured JWS as Kafka's handler: three parts with an
// empty signature, a string principal claim, iat not after now plus skew,
// exp after now minus skew, exp after iat, and every required scope.
func (v *UnsecuredValidator) Validate(token string) (OAuthBearerToken, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return OAuthBearerToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	if _, err := decodeJWTPart(parts[0]); err != nil {
		return OAuthBearerToken{}, err
	}
	claims, err := decodeJWTPart(parts[1])
	if err != nil {
		return OAuthBearerToken{}, err
	}
	if parts[2] != "" {
		return OAuthBearerToken{}, invalidToken("Signatures are not supported")
	}
	exp, hasExp, err := numericClaim(claims, "exp")
	if err != nil {
		return OAuthBearerToken{}, err
	}
	if !hasExp {
		return OAuthBearerToken{}, invalidToken("No expiration time in JWT")
	}
	iat, hasIat, err := numericClaim(claims, "iat")
	if err != nil {
		return OAuthBearerToken{}, err
	}
	principal, isString := claims[v.principalClaim].(string)
	if _, present := claims[v.principalClaim]; !present {
		return OAuthBearerToken{}, invalidToken("Required claim missing: %s", v.principalClaim)
	}
	if !isString {
		return OAuthBearerToken{}, invalidToken("The '%s' claim value was not of type String", v.principalClaim)
	}
	if strings.TrimSpace(principal) == "" {
		return OAuthBearerToken{}, invalidToken("No principal name in JWT claim: %s", v.principalClaim)
	}
	now := time.Now
	if v.now != nil {
		now = v.now
	}
	nowMs := now().UnixMilli()
	if hasIat && iat*1000 > float64(nowMs+v.clockSkewMs) {
		return OAuthBearerToken{}, invalidToken("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", iat, nowMs, v.clockSkewMs)
	}
	if float64(nowMs-v.clockSkewMs) >= exp*1000 {
		return OAuthBearerToken{}, invalidToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)", nowMs, v.clockSkewMs, exp)
	}
	if hasIat && exp <= iat {
		return OAuthBearerToken{}, invalidToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	scope := scopeClaim(claims, v.scopeClaim)
	for _, want := range v.requiredScope {
		found := false
		for _, have := range scope {
			found = found || have == want
		}
		if !found {
			// Kafka's failure scope is the Java list's toString.
			return OAuthBearerToken{}, &TokenValidationError{Status: "insufficient_scope",
				Scope:  "[" + strings.Join(v.requiredScope, ", ") + "]",
				Reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s)", scope, want)}
		}
	}
	return OAuthBearerToken{Principal: principal, LifetimeMs: int64(exp * 1000), Scope: scope}, nil
}

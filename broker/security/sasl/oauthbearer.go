package sasl

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// OAuthBearerMechanism is the name of SASL/OAUTHBEARER (RFC 7628, KIP-255).
const OAuthBearerMechanism = "OAUTHBEARER"

// OAuthBearerLoginModule is Kafka's login module of OAUTHBEARER, whose
// JAAS options carry the unsecured validator's settings.
const OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// The patterns of Kafka's OAuthBearerClientInitialResponse: a GS2 header
// with an optional authorization id, then key=value pairs each ended by
// %x01, then a last %x01 (RFC 7628 section 3.1).
var (
	oauthInitialResponse = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	oauthAuthValue       = regexp.MustCompile(`^([0-9A-Za-z_]+) +([-_~+/.a-zA-Z0-9]+=*)$`)
	oauthExtensionKey    = regexp.MustCompile(`^[A-Za-z]+$`)
	oauthExtensionValue  = regexp.MustCompile(`^[\x21-\x7E \t\r\n]+$`)
)

// OAuthBearerInitialResponse is a client's first OAUTHBEARER message.
// Token is a secret: never log it.
type OAuthBearerInitialResponse struct {
	AuthorizationID string
	Token           string
	// Extensions are the key=value pairs other than auth (KIP-342).
	Extensions map[string]string
}

// ParseOAuthBearerInitialResponse parses a client's first message as
// Kafka's OAuthBearerClientInitialResponse, with its refusals (which a
// client sees only as the generic authentication failure, as Kafka's are
// SaslExceptions).
func ParseOAuthBearerInitialResponse(msg []byte) (OAuthBearerInitialResponse, error) {
	var r OAuthBearerInitialResponse
	s := strings.ToValidUTF8(string(msg), "\uFFFD")
	m := oauthInitialResponse.FindStringSubmatch(s)
	if m == nil {
		return r, errors.New("Invalid OAUTHBEARER client first message")
	}
	r.AuthorizationID = m[1]
	props := map[string]string{}
	// Kafka's Utils.parseMap: split on %x01, then each on its first '='.
	for _, kv := range strings.Split(m[2], "\x01") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	auth, ok := props["auth"]
	if !ok {
		return r, errors.New("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	delete(props, "auth")
	for k, v := range props {
		if !oauthExtensionKey.MatchString(k) {
			return r, fmt.Errorf("Extension name %s is invalid", k)
		}
		if !oauthExtensionValue.MatchString(v) {
			return r, fmt.Errorf("Extension value for extension %s is invalid", k)
		}
	}
	am := oauthAuthValue.FindStringSubmatch(auth)
	if am == nil {
		return r, errors.New("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "bearer") {
		return r, fmt.Errorf("Invalid scheme in OAUTHBEARER client first message: %s", am[1])
	}
	r.Token, r.Extensions = am[2], props
	return r, nil
}

// OAuthBearerToken is a validated token, as Kafka's OAuthBearerToken.
type OAuthBearerToken struct {
	// Principal is the principal name: the sub claim, or the claim the
	// validator is configured with.
	Principal string
	// LifetimeMs is the expiry (exp), in milliseconds since the epoch.
	LifetimeMs int64
	// Scope is the token's scope claim.
	Scope []string
}

// TokenValidationError is a token that does not validate: Status and
// Scope go into the JSON error challenge (RFC 7628 section 3.2.2);
// Reason is for the broker's log and never holds the token.
type TokenValidationError struct {
	Status string // invalid_token or insufficient_scope
	Scope  string // the required scope, for insufficient_scope
	Reason string
}

func (e *TokenValidationError) Error() string { return e.Reason }

// A TokenValidator validates an OAUTHBEARER token, as the validator
// callback handler of a Kafka listener. It returns a *TokenValidationError
// for a token it refuses; any other error fails the exchange with the
// generic message.
type TokenValidator interface {
	Validate(token string) (OAuthBearerToken, error)
}

// NewOAuthBearer returns the server side of one OAUTHBEARER exchange,
// validating tokens with v: Kafka's OAuthBearerSaslServer. A token that
// does not validate is answered with the JSON error challenge; the
// client's %x01 reply then fails the exchange with that JSON as the
// message (SASL_AUTHENTICATION_FAILED), as Kafka.
func NewOAuthBearer(v TokenValidator, onRefused func(reason string)) Mechanism {
	return &oauthServer{validator: v, onRefused: onRefused}
}

type oauthServer struct {
	validator    TokenValidator
	onRefused    func(reason string)
	errorMessage string
	token        OAuthBearerToken
	complete     bool
}

func (o *oauthServer) Evaluate(msg []byte) ([]byte, bool, error) {
	if o.complete {
		return nil, true, authFailed("Authentication failed: exchange already complete")
	}
	if len(msg) == 1 && msg[0] == 0x01 && o.errorMessage != "" {
		return nil, false, &AuthenticationError{Message: o.errorMessage}
	}
	o.errorMessage = ""
	r, err := ParseOAuthBearerInitialResponse(msg)
	if err != nil {
		return nil, false, err
	}
	tok, err := o.validator.Validate(r.Token)
	if err != nil {
		var ve *TokenValidationError
		if !errors.As(err, &ve) {
			return nil, false, err
		}
		if o.onRefused != nil {
			o.onRefused(ve.Reason)
		}
		o.errorMessage = jsonErrorChallenge(ve.Status, ve.Scope)
		return []byte(o.errorMessage), false, nil
	}
	if r.AuthorizationID != "" && r.AuthorizationID != tok.Principal {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			r.AuthorizationID, tok.Principal)
	}
	// Extensions: Kafka's default handlers accept them all; Gregor uses
	// none.
	o.token, o.complete = tok, true
	return []byte{}, true, nil
}

// jsonErrorChallenge is Kafka's OAuthBearerSaslServer.jsonErrorResponse,
// byte for byte (its ", " separators included).
func jsonErrorChallenge(status, scope string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"status":"%s"`, status)
	if scope != "" {
		fmt.Fprintf(&b, `, "scope":"%s"`, scope)
	}
	b.WriteString("}")
	return b.String()
}

func (o *oauthServer) AuthorizationID() string { return o.token.Principal }

func (o *oauthServer) CredentialExpiryMs() (int64, bool) {
	return o.token.LifetimeMs, o.complete
}

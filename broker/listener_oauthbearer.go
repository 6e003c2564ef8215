package broker

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker/security/sasl"
)

// Kafka's validator callback handler of OAUTHBEARER when none is
// configured: it accepts unsigned tokens (for tests and development).
const unsecuredValidatorCallbackHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"

// Kafka's JWKS-validating validator callback handler, under the name
// Kafka 4.x serves (the deprecated ...oauthbearer.secured. name of 3.x
// was removed in 4.0).
const jwksValidatorCallbackHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

// allowedURLsKey is the system property with which Kafka 4.x restricts the
// JWKS (and token) endpoint URLs; Gregor reads it from server.properties.
const allowedURLsKey = "org.apache.kafka.sasl.oauthbearer.allowed.urls"

// OAuthBearerConfig is the OAUTHBEARER configuration of the SASL listener.
type OAuthBearerConfig struct {
	// JAASConfig is listener.name.<name>.oauthbearer.sasl.jaas.config:
	// one OAuthBearerLoginModule entry, whose unsecuredValidator* options
	// configure Kafka's unsecured validator.
	JAASConfig string
	// ServerCallbackHandlerClass is
	// listener.name.<name>.oauthbearer.sasl.server.callback.handler.class:
	// empty (or Kafka's unsecured handler) is the unsecured validator;
	// Kafka's org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
	// validates signed tokens against the JWKS of JWKSEndpointURL.
	ServerCallbackHandlerClass string

	// The settings of the JWKS validator, Kafka's sasl.oauthbearer.* keys
	// (each also read listener-prefixed from server.properties).

	// JWKSEndpointURL is sasl.oauthbearer.jwks.endpoint.url: an http(s)
	// URL of the provider's JWKS, or a file: URL of a JWKS file (read
	// once, at start).
	JWKSEndpointURL string
	// JWKSEndpointRefreshMs is sasl.oauthbearer.jwks.endpoint.refresh.ms
	// (nil: 3600000).
	JWKSEndpointRefreshMs *int64
	// JWKSEndpointRetryBackoffMs and JWKSEndpointRetryBackoffMaxMs are
	// sasl.oauthbearer.jwks.endpoint.retry.backoff.ms and .max.ms (nil:
	// 100 and 10000).
	JWKSEndpointRetryBackoffMs, JWKSEndpointRetryBackoffMaxMs *int64
	// ExpectedAudience is sasl.oauthbearer.expected.audience: a token's
	// aud must hold one of them; empty, a token with an aud is refused,
	// as in Kafka.
	ExpectedAudience []string
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer.
	ExpectedIssuer string
	// ScopeClaimName and SubClaimName are sasl.oauthbearer.scope.claim.name
	// and sasl.oauthbearer.sub.claim.name (empty: scope and sub).
	ScopeClaimName, SubClaimName string
	// ClockSkewSeconds is sasl.oauthbearer.clock.skew.seconds (nil: 30).
	ClockSkewSeconds *int64
	// AllowedURLs is org.apache.kafka.sasl.oauthbearer.allowed.urls: the
	// JWKS endpoint URL must be one of them, exactly, as in Kafka 4.x,
	// where the list is empty unless set.
	AllowedURLs []string

	// httpClient, when set, fetches the JWKS (tests).
	httpClient *http.Client
}

// The defaults of Kafka's sasl.oauthbearer.* keys.
const (
	defaultJWKSRefreshMs         = 3_600_000
	defaultJWKSRetryBackoffMs    = 100
	defaultJWKSRetryBackoffMaxMs = 10_000
	defaultClockSkewSeconds      = 30
)

// oauthBearerValidator is the token validator the listener's
// configuration names, and the function that stops it (nil when it needs
// no stopping).
func oauthBearerValidator(lc *ListenerConfig, logger *slog.Logger) (sasl.TokenValidator, func(), error) {
	l := strings.ToLower(lc.Name)
	cls := strings.TrimSpace(lc.OAuthBearer.ServerCallbackHandlerClass)
	switch cls {
	case "", unsecuredValidatorCallbackHandler, jwksValidatorCallbackHandler:
	default:
		return nil, nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.server.callback.handler.class: %s is not served; Kafka's unsecured validator (%s, the default) and JWKS validator (%s) are", l, cls, unsecuredValidatorCallbackHandler, jwksValidatorCallbackHandler)
	}
	if lc.OAuthBearer.JAASConfig == "" {
		return nil, nil, fmt.Errorf("broker: OAUTHBEARER on listener %s: set listener.name.%s.oauthbearer.sasl.jaas.config to an %s entry", lc.Name, l, sasl.OAuthBearerLoginModule)
	}
	entry, err := sasl.ServerJAAS(lc.OAuthBearer.JAASConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: %v", l, err)
	}
	if entry.LoginModule != sasl.OAuthBearerLoginModule {
		return nil, nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: login module %s is not %s", l, entry.LoginModule, sasl.OAuthBearerLoginModule)
	}
	if cls == jwksValidatorCallbackHandler {
		return jwksValidator(&lc.OAuthBearer, logger)
	}
	v, err := sasl.NewUnsecuredValidator(entry.Options, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: %v", l, err)
	}
	return v, nil, nil
}

// jwksValidator is Kafka's OAuthBearerValidatorCallbackHandler with the
// listener's sasl.oauthbearer.* settings (its JAAS entry, required as
// in Kafka, has no options the validator reads).
func jwksValidator(o *OAuthBearerConfig, logger *slog.Logger) (sasl.TokenValidator, func(), error) {
	raw := strings.TrimSpace(o.JWKSEndpointURL)
	if raw == "" {
		return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url: The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url must be non-null")
	}
	if !slices.Contains(o.AllowedURLs, raw) {
		// Kafka's ConfigurationUtils.throwIfURLIsNotAllowed.
		return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url: %s is not allowed. Update system property '%s' to allow %s", raw, allowedURLsKey, raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url: The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a URL (%s) that is malformed", raw)
	}
	num := func(p *int64, def int64, key string) (int64, error) {
		if p == nil {
			return def, nil
		}
		if *p < 0 {
			return 0, fmt.Errorf("broker: %s: The OAuth configuration option %s value must be non-negative", key, key)
		}
		return *p, nil
	}
	skew, err := num(o.ClockSkewSeconds, defaultClockSkewSeconds, "sasl.oauthbearer.clock.skew.seconds")
	if err != nil {
		return nil, nil, err
	}
	if skew > math.MaxInt32 {
		// An INT in Kafka.
		return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.clock.skew.seconds: %d is out of range", skew)
	}
	var keys sasl.KeySource
	var stop func()
	switch strings.ToLower(u.Scheme) {
	case "file":
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		k, err := sasl.ReadJWKSFile(path, logger)
		if err != nil {
			return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url: The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a file (%s) that cannot be read: %v", path, err)
		}
		keys = k
	case "http", "https":
		refresh, err := num(o.JWKSEndpointRefreshMs, defaultJWKSRefreshMs, "sasl.oauthbearer.jwks.endpoint.refresh.ms")
		if err != nil {
			return nil, nil, err
		}
		if refresh == 0 {
			return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.refresh.ms: JWKS validation key refresh configuration value must be positive")
		}
		backoff, err := num(o.JWKSEndpointRetryBackoffMs, defaultJWKSRetryBackoffMs, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
		if err != nil {
			return nil, nil, err
		}
		backoffMax, err := num(o.JWKSEndpointRetryBackoffMaxMs, defaultJWKSRetryBackoffMaxMs, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")
		if err != nil {
			return nil, nil, err
		}
		r, err := sasl.NewRemoteKeys(sasl.RemoteKeysConfig{URL: raw,
			Refresh:         time.Duration(refresh) * time.Millisecond,
			RetryBackoff:    time.Duration(backoff) * time.Millisecond,
			RetryBackoffMax: time.Duration(backoffMax) * time.Millisecond,
			Client:          o.httpClient, Logger: logger})
		if err != nil {
			return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url %s: %v", raw, err)
		}
		keys, stop = r, r.Close
	default:
		return nil, nil, fmt.Errorf("broker: sasl.oauthbearer.jwks.endpoint.url: The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a URL (%s) that contains an invalid protocol (%s); only \"http\", \"https\" and \"file\" are supported", raw, u.Scheme)
	}
	var aud []string
	for _, a := range o.ExpectedAudience {
		if a = strings.TrimSpace(a); a != "" {
			aud = append(aud, a)
		}
	}
	v := sasl.NewJWKSValidator(sasl.JWKSValidatorConfig{
		Keys:             keys,
		ExpectedAudience: aud,
		ExpectedIssuer:   strings.TrimSpace(o.ExpectedIssuer),
		ScopeClaim:       strings.TrimSpace(o.ScopeClaimName),
		SubClaim:         strings.TrimSpace(o.SubClaimName),
		ClockSkew:        time.Duration(skew) * time.Second,
	})
	return v, stop, nil
}

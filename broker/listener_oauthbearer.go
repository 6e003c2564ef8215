package broker

import (
	"fmt"
	"strings"

	"github.com/gregor-broker/gregor/broker/security/sasl"
)

// Kafka's validator callback handler of OAUTHBEARER when none is
// configured: it accepts unsigned tokens (for tests and development).
const unsecuredValidatorCallbackHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"

// OAuthBearerConfig is the OAUTHBEARER configuration of the SASL listener.
type OAuthBearerConfig struct {
	// JAASConfig is listener.name.<name>.oauthbearer.sasl.jaas.config:
	// one OAuthBearerLoginModule entry, whose unsecuredValidator* options
	// configure Kafka's unsecured validator.
	JAASConfig string
	// ServerCallbackHandlerClass is
	// listener.name.<name>.oauthbearer.sasl.server.callback.handler.class.
	// Empty (or Kafka's unsecured handler) is the unsecured validator;
	// any other class, Kafka's JWKS-validating
	// OAuthBearerValidatorCallbackHandler included, refuses to start:
	// signed tokens are not validated yet.
	ServerCallbackHandlerClass string
}

// oauthBearerValidator is the token validator the listener's
// configuration names.
func oauthBearerValidator(l *ListenerConfig) (sasl.TokenValidator, error) {
	name := strings.ToLower(l.Name)
	switch cls := strings.TrimSpace(l.OAuthBearer.ServerCallbackHandlerClass); cls {
	case "", unsecuredValidatorCallbackHandler:
	default:
		return nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.server.callback.handler.class: %s is not served; only Kafka's unsecured validator (%s, the default) is, JWKS validation is not yet", name, cls, unsecuredValidatorCallbackHandler)
	}
	if l.OAuthBearer.JAASConfig == "" {
		return nil, fmt.Errorf("broker: OAUTHBEARER on listener %s: set listener.name.%s.oauthbearer.sasl.jaas.config to an %s entry", l.Name, name, sasl.OAuthBearerLoginModule)
	}
	entry, err := sasl.ServerJAAS(l.OAuthBearer.JAASConfig)
	if err != nil {
		return nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: %v", name, err)
	}
	if entry.LoginModule != sasl.OAuthBearerLoginModule {
		return nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: login module %s is not %s", name, entry.LoginModule, sasl.OAuthBearerLoginModule)
	}
	v, err := sasl.NewUnsecuredValidator(entry.Options, nil)
	if err != nil {
		return nil, fmt.Errorf("broker: listener.name.%s.oauthbearer.sasl.jaas.config: %v", name, err)
	}
	return v, nil
}

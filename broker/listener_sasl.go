package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/broker/security/scram"
)

// Security protocols of a Kafka listener.
const (
	protocolPlaintext     = "PLAINTEXT"
	protocolSASLPlaintext = "SASL_PLAINTEXT"
)

// defaultFailedAuthenticationDelayMs is Kafka's
// connection.failed.authentication.delay.ms.
const defaultFailedAuthenticationDelayMs = 100

// listenerSASL is the SASL configuration of the served listener, nil when
// it is PLAINTEXT or SSL; a configuration Gregor cannot serve is refused.
//
// stopValidator, when not nil, stops the OAUTHBEARER validator's JWKS
// refreshing: the broker calls it as it closes.
func listenerSASL(cfg *Config, l *ListenerConfig, scramLookup scram.Lookup) (_ *sasl.Config, stopValidator func(), err error) {
	var stop func()
	defer func() {
		if err != nil && stop != nil {
			stop() // refused after the validator started
		}
	}()
	switch l.SecurityProtocol {
	case "", protocolPlaintext, protocolSSL:
		return nil, nil, nil
	case protocolSASLPlaintext, protocolSASLSSL:
	default:
		return nil, nil, fmt.Errorf("broker: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL are served)", l.SecurityProtocol)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	mechs := l.SASLEnabledMechanisms
	if mechs == nil {
		mechs = []string{"GSSAPI"} // Kafka's default
	}
	if len(mechs) == 0 {
		return nil, nil, fmt.Errorf("broker: sasl.enabled.mechanisms: No SASL mechanisms are enabled")
	}
	var users *sasl.PlainUsers
	var validator sasl.TokenValidator
	for _, m := range mechs {
		switch m {
		case sasl.PlainMechanism:
			if l.SASLPlainJAASConfig == "" {
				// Kafka falls back to the JVM's JAAS file, which Gregor
				// has no equivalent of.
				return nil, nil, fmt.Errorf("broker: PLAIN on listener %s: Could not find a 'KafkaServer' or '%s.KafkaServer' entry in the JAAS configuration. System property 'java.security.auth.login.config' is not set (set listener.name.%s.plain.sasl.jaas.config)",
					l.Name, strings.ToLower(l.Name), strings.ToLower(l.Name))
			}
			entry, err := sasl.ServerJAAS(l.SASLPlainJAASConfig)
			if err != nil {
				return nil, nil, fmt.Errorf("broker: listener.name.%s.plain.sasl.jaas.config: %v", strings.ToLower(l.Name), err)
			}
			users = sasl.NewPlainUsers([]sasl.JAASEntry{entry})
		case scram.SHA256.Name(), scram.SHA512.Name():
			// The credentials are the broker's (scram_credentials.go;
			// the metadata log's in cluster mode, cluster_scram.go), not
			// the JAAS entry's, as in Kafka.
		case sasl.OAuthBearerMechanism:
			v, vstop, err := oauthBearerValidator(l, logger)
			if err != nil {
				return nil, nil, err
			}
			validator, stop = v, vstop
		case "GSSAPI":
			return nil, nil, fmt.Errorf("broker: sasl.enabled.mechanisms: %s is not served yet; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are", m)
		default:
			return nil, nil, fmt.Errorf("broker: sasl.enabled.mechanisms: unknown SASL mechanism %q; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are served", m)
		}
	}
	onRefused := func(reason string) {
		// The reason never holds the token.
		logger.Info("gregor: OAUTHBEARER token refused", "listener", l.Name, "reason", reason)
	}
	return &sasl.Config{
		Mechanisms: mechs,
		New: func(name string) sasl.Mechanism {
			if m, ok := scram.MechanismByName(name); ok {
				return sasl.NewScram(m, scramLookup)
			}
			if name == sasl.OAuthBearerMechanism {
				return sasl.NewOAuthBearer(validator, onRefused)
			}
			return sasl.NewPlain(users) // the handshake admits only enabled mechanisms
		},
		MaxReauthMs:    cfg.ConnectionsMaxReauthMs,
		MaxReceiveSize: cfg.SASLServerMaxReceiveSize,
	}, stop, nil
}

// failedAuthenticationDelay is connection.failed.authentication.delay.ms.
func (c *Config) failedAuthenticationDelay() time.Duration {
	ms := int64(defaultFailedAuthenticationDelayMs)
	if c.FailedAuthenticationDelayMs != nil {
		ms = *c.FailedAuthenticationDelayMs
	}
	return time.Duration(ms) * time.Millisecond
}

// anonymous is Kafka's principal of a connection that did not
// authenticate (KafkaPrincipal.ANONYMOUS).
var anonymous = sasl.Principal{Type: "User", Name: "ANONYMOUS"}

package main

// How the client commands connect to a secured listener: Kafka's
// --command-config client.properties (security.protocol, sasl.mechanism,
// sasl.jaas.config, ssl.*), the file Kafka's own tools take, and flags for
// the same settings, which win over the file.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/urfave/cli/v2"

	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/broker/security/ssl"
)

// saslPasswordEnv names the variable that sets --sasl-password, so that a
// password need not be on the command line.
const saslPasswordEnv = "GREGOR_SASL_PASSWORD"

// saslOAuthBearerTokenEnv names the variable that sets
// --sasl-oauthbearer-token.
const saslOAuthBearerTokenEnv = "GREGOR_SASL_OAUTHBEARER_TOKEN"

// securityFlags are the flags of every client command that choose how it
// authenticates.
func securityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "command-config", Usage: "a client.properties `FILE`, as Kafka's tools take: security.protocol, sasl.mechanism, sasl.jaas.config and the ssl.* keys"},
		&cli.StringFlag{Name: "security-protocol", Usage: "`PROTOCOL` of the listener: PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL (security.protocol)"},
		&cli.StringFlag{Name: "sasl-mechanism", Usage: "`MECHANISM`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (sasl.mechanism)"},
		&cli.StringFlag{Name: "sasl-oauthbearer-token", EnvVars: []string{saslOAuthBearerTokenEnv}, Usage: "the OAUTHBEARER `TOKEN` (a JWT) to log in with (better: $" + saslOAuthBearerTokenEnv + ")"},
		&cli.StringFlag{Name: "sasl-username", Usage: "SASL `USER`, in place of sasl.jaas.config's username"},
		&cli.StringFlag{Name: "sasl-password", EnvVars: []string{saslPasswordEnv}, Usage: "SASL `PASSWORD`, in place of sasl.jaas.config's password (better: $" + saslPasswordEnv + ")"},
		&cli.StringFlag{Name: "ssl-truststore", Usage: "`FILE` of the CA certificates the brokers' certificates must chain to: PEM, or JKS or PKCS12 (by its .jks, .p12 or .pfx name; its password in ssl.truststore.password) (ssl.truststore.location)"},
	}
}

// clientKeys are the keys of a client.properties the commands use; the
// ssl.* keys of ssl.Keys are read too.
var clientKeys = []string{"security.protocol", "sasl.mechanism", "sasl.jaas.config"}

// clientConfig is a client.properties, read from --command-config with the
// flags applied over it.
type clientConfig struct {
	values   map[string]string
	username string
	password string
	// oauthToken is --sasl-oauthbearer-token: a secret, never logged.
	oauthToken string
	// credentialsByFlag is whether --sasl-username or --sasl-password
	// gave a value, which makes sasl.jaas.config optional.
	credentialsByFlag bool
}

// readClientConfig reads --command-config and applies the flags. It warns,
// on the command's error stream, of keys the commands do not use.
func readClientConfig(c *cli.Context) (*clientConfig, error) {
	cfg := &clientConfig{values: map[string]string{}}
	if path := c.String("command-config"); path != "" {
		props, err := readPropertiesFile(path)
		if err != nil {
			return nil, fmt.Errorf("--command-config: %w", err)
		}
		var unused []string
		for _, p := range props {
			cfg.values[p.key] = strings.TrimSpace(p.value)
			if !usedClientKey(p.key) {
				unused = append(unused, p.key)
			}
		}
		if len(unused) > 0 {
			sort.Strings(unused)
			fmt.Fprintf(c.App.ErrWriter, "gregor: %s: these configurations are not used by gregor's client commands: %s\n", path, strings.Join(unused, ", "))
		}
	}
	for flag, key := range map[string]string{"security-protocol": "security.protocol", "sasl-mechanism": "sasl.mechanism", "ssl-truststore": "ssl.truststore.location"} {
		if c.IsSet(flag) {
			cfg.values[key] = c.String(flag)
		}
	}
	if c.IsSet("ssl-truststore") {
		cfg.values["ssl.truststore.type"] = storeTypeOf(c.String("ssl-truststore"))
	}
	cfg.username, cfg.password = c.String("sasl-username"), c.String("sasl-password")
	cfg.oauthToken = c.String("sasl-oauthbearer-token")
	cfg.credentialsByFlag = cfg.username != "" || cfg.password != ""
	return cfg, nil
}

func usedClientKey(key string) bool {
	for _, k := range clientKeys {
		if key == k {
			return true
		}
	}
	for _, k := range ssl.Keys {
		if key == k {
			return true
		}
	}
	return false
}

// storeTypeOf is the store type a file's name suggests.
func storeTypeOf(path string) string {
	lower := strings.ToLower(path)
	switch {
	case strings.HasSuffix(lower, ".jks"):
		return ssl.TypeJKS
	case strings.HasSuffix(lower, ".p12"), strings.HasSuffix(lower, ".pfx"):
		return ssl.TypePKCS12
	}
	return ssl.TypePEM
}

// securityOpts are the client options of cfg: TLS for SSL and SASL_SSL, a
// SASL mechanism for SASL_PLAINTEXT and SASL_SSL. The errors name the key,
// as Kafka's client configuration does.
func (cfg *clientConfig) securityOpts() ([]kgo.Opt, error) {
	protocol := strings.ToUpper(cfg.values["security.protocol"])
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT":
		return nil, nil
	case "SSL", "SASL_SSL":
		settings, err := ssl.Parse(func(key string) (string, bool) { v, ok := cfg.values[key]; return v, ok })
		if err != nil {
			return nil, err
		}
		factory, err := ssl.New(settings)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(factory.ClientConfig("")))
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", cfg.values["security.protocol"])
	}
	if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
		mech, err := cfg.saslMechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, mech)
	}
	return opts, nil
}

// saslMechanism is the SASL login of cfg: sasl.mechanism (Kafka's default,
// GSSAPI, is not served here) with the username and password of the
// flags, or of sasl.jaas.config's login module.
func (cfg *clientConfig) saslMechanism() (kgo.Opt, error) {
	mechanism := strings.TrimSpace(cfg.values["sasl.mechanism"])
	if mechanism == "" {
		mechanism = "GSSAPI"
	}
	if mechanism == "OAUTHBEARER" {
		if cfg.oauthToken == "" {
			return nil, fmt.Errorf("sasl.mechanism OAUTHBEARER: set --sasl-oauthbearer-token or $%s", saslOAuthBearerTokenEnv)
		}
		return kgo.SASL(oauth.Auth{Token: cfg.oauthToken}.AsMechanism()), nil
	}
	user, pass, err := cfg.credentials()
	if err != nil {
		return nil, err
	}
	switch mechanism {
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), nil
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()), nil
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), nil
	}
	return nil, fmt.Errorf("sasl.mechanism %s: gregor's client commands log in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mechanism)
}

// credentials are the username and password to log in with: the flags',
// else the one login module of sasl.jaas.config.
func (cfg *clientConfig) credentials() (user, pass string, err error) {
	user, pass = cfg.username, cfg.password
	text, ok := cfg.values["sasl.jaas.config"]
	if !ok || strings.TrimSpace(text) == "" {
		if !cfg.credentialsByFlag {
			return "", "", errors.New("Could not find a 'KafkaClient' entry in the JAAS configuration. System property 'java.security.auth.login.config' is not set (set sasl.jaas.config in --command-config, or --sasl-username and --sasl-password)")
		}
		return user, pass, nil
	}
	entries, err := sasl.ParseJAAS(text)
	if err != nil {
		return "", "", fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if len(entries) != 1 {
		return "", "", fmt.Errorf("sasl.jaas.config: JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	if user == "" {
		user = entries[0].Options["username"]
	}
	if pass == "" {
		pass = entries[0].Options["password"]
	}
	return user, pass, nil
}

// clientSecurity reads the security settings of a client command.
func clientSecurity(c *cli.Context) ([]kgo.Opt, error) {
	cfg, err := readClientConfig(c)
	if err != nil {
		return nil, err
	}
	opts, err := cfg.securityOpts()
	if err != nil {
		if c.String("command-config") != "" {
			return nil, fmt.Errorf("--command-config %s: %w", c.String("command-config"), err)
		}
		return nil, err
	}
	return opts, nil
}

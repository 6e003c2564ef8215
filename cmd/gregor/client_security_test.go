package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/broker/security/ssl"
)

// startSecuredBroker starts an in-memory broker with adjust applied to its
// configuration and returns its address.
func startSecuredBroker(t *testing.T, adjust func(*broker.Config)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := broker.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	adjust(&cfg)
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Addr()
}

// TestClientCommandsLogInWithSASL: the client commands log in with PLAIN
// from a --command-config client.properties as Kafka's tools read it, and
// with SCRAM from flags; the refusals name what is wrong.
func TestClientCommandsLogInWithSASL(t *testing.T) {
	addr := startSecuredBroker(t, func(c *broker.Config) {
		c.ListenerName, c.SecurityProtocol = "SASL_PLAINTEXT", "SASL_PLAINTEXT"
		c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-512"}
		c.SASLPlainJAASConfig = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
		c.AddScram = []string{"SCRAM-SHA-512=[name=bob,password=bob-secret]"}
	})
	plainConfig := writeFile(t, `security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";
request.timeout.ms=30000
`)
	r := mustRun(t, addr, nil, "topic", "create", "--partitions", "2", "--command-config", plainConfig, "secured")
	if !strings.Contains(r.stderr, "not used by gregor's client commands: request.timeout.ms") {
		t.Errorf("no warning of the unused key: %q", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "alice-secret") {
		t.Fatal("the command printed the password")
	}
	r = mustRun(t, addr, nil, "topic", "list", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512",
		"--sasl-username", "bob", "--sasl-password", "bob-secret")
	if !strings.Contains(r.stdout, "secured") {
		t.Fatalf("topic list as bob: %q", r.stdout)
	}
	t.Setenv(saslPasswordEnv, "bob-secret")
	mustRun(t, addr, nil, "topic", "describe", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "bob", "secured")

	mustFail(t, addr, nil, "invalid credentials with SASL mechanism SCRAM-SHA-512", "topic", "list",
		"--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "bob", "--sasl-password", "wrong", "--timeout", "5s")
	noJAAS := writeFile(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
	t.Setenv(saslPasswordEnv, "")
	mustFail(t, addr, nil, "Could not find a 'KafkaClient' entry in the JAAS configuration", "topic", "list", "--command-config", noJAAS)
	mustFail(t, addr, nil, "Invalid value SASL_TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
		"topic", "list", "--security-protocol", "SASL_TLS")
	mustFail(t, addr, nil, "sasl.mechanism GSSAPI", "topic", "list", "--security-protocol", "SASL_PLAINTEXT", "--sasl-username", "bob", "--sasl-password", "x")
}

// TestClientCommandsLogInWithOAuthBearer: the client commands log in with
// an OAUTHBEARER token from the flag or the environment; a token the
// broker refuses fails with Kafka's JSON status.
func TestClientCommandsLogInWithOAuthBearer(t *testing.T) {
	addr := startSecuredBroker(t, func(c *broker.Config) {
		c.ListenerName, c.SecurityProtocol = "SASL_PLAINTEXT", "SASL_PLAINTEXT"
		c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
		c.OAuthBearer.JAASConfig = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`
	})
	enc := base64.RawURLEncoding.EncodeToString
	token := func(exp time.Time) string {
		return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"carol","exp":%d}`, exp.Unix()))) + "."
	}
	good := token(time.Now().Add(time.Hour))
	r := mustRun(t, addr, nil, "topic", "create", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "OAUTHBEARER",
		"--sasl-oauthbearer-token", good, "oauth-topic")
	if strings.Contains(r.stdout+r.stderr, good) {
		t.Fatal("the command printed the token")
	}
	t.Setenv(saslOAuthBearerTokenEnv, good)
	r = mustRun(t, addr, nil, "topic", "list", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "OAUTHBEARER")
	if !strings.Contains(r.stdout, "oauth-topic") {
		t.Fatalf("topic list with the token: %q", r.stdout)
	}
	t.Setenv(saslOAuthBearerTokenEnv, token(time.Now().Add(-time.Minute)))
	mustFail(t, addr, nil, `invalid_token`, "topic", "list", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "OAUTHBEARER", "--timeout", "5s")
	t.Setenv(saslOAuthBearerTokenEnv, "")
	mustFail(t, addr, nil, "set --sasl-oauthbearer-token", "topic", "list", "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "OAUTHBEARER")
}

// TestClientCommandsOverMutualTLS: with a client.properties naming a trust
// store and a key store, the commands produce and consume over a listener
// that requires client certificates; with only --ssl-truststore the
// handshake is refused.
func TestClientCommandsOverMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	serverKeystore, _ := ca.keystore(t, "server.pem", "localhost", true)
	aliceKeystore, _ := ca.keystore(t, "alice.pem", "alice", false)
	caFile := filepath.Join(ca.dir, "ca.pem")
	serverSSL := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": serverKeystore,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": caFile, "ssl.client.auth": "required"}
	settings, err := ssl.Parse(func(k string) (string, bool) { v, ok := serverSSL[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	addr := startSecuredBroker(t, func(c *broker.Config) {
		c.ListenerName, c.SecurityProtocol = "SSL", "SSL"
		c.SSL = &settings
	})
	config := writeFile(t, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+caFile+
		"\nssl.keystore.type=PEM\nssl.keystore.location="+aliceKeystore+"\n")
	mustRun(t, addr, nil, "topic", "create", "--command-config", config, "tls-topic")
	mustRun(t, addr, strings.NewReader("one\ntwo\n"), "produce", "--command-config", config, "tls-topic")
	r := mustRun(t, addr, nil, "consume", "--command-config", config, "--from-beginning", "--max-messages", "2", "--timeout", "10s", "tls-topic")
	if r.stdout != "one\ntwo\n" {
		t.Fatalf("consumed %q", r.stdout)
	}
	mustFail(t, addr, nil, "tls: certificate required", "topic", "list", "--security-protocol", "SSL", "--ssl-truststore", caFile, "--timeout", "5s")
}

//go:build cluster

package broker

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/broker/security/ssl"
)

// nodeSSL is the ssl.* keys of a node's inter-broker listener: cert as
// the key store (both the server's and, for mutual TLS, the client's
// certificate) and p's CA as the trust store.
func nodeSSL(t *testing.T, p *testPKI, cert testCert, clientAuth string) *ssl.Settings {
	t.Helper()
	certPEM, _ := os.ReadFile(cert.certFile)
	keyPEM, _ := os.ReadFile(cert.keyFile)
	return p.sslSettingsWith(t, writePEM(t, t.TempDir(), "keystore.pem", append(keyPEM, certPEM...)), clientAuth)
}

// TestClusterInterBrokerSecurity: the nodes talk to each other over a
// secured inter-broker listener (SASL_SSL with SCRAM-SHA-512, SASL_PLAINTEXT
// with PLAIN, and SSL with client certificates required), while clients
// use a PLAINTEXT one: registrations, forwarded admin requests, replica
// fetches and transactions all go over it, and a node whose login or
// certificate the others refuse never joins.
func TestClusterInterBrokerSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3-node clusters")
	}
	const scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="%s";`
	const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="%s" user_broker="broker-secret";`
	pki := newTestPKI(t)
	node := pki.issueFor(t, "node", pkix.Name{CommonName: "node"}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	stranger := newTestPKI(t).issueFor(t, "stranger", pkix.Name{CommonName: "node"}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	for _, tc := range []struct {
		name string
		// internal is the INTERNAL listener, logging in with password.
		internal  func(password string) ListenerConfig
		mechanism string
		// intruder is a node the others must refuse.
		intruder func(*ListenerConfig)
	}{
		{
			name: "SASL_SSL SCRAM-SHA-512",
			internal: func(password string) ListenerConfig {
				return ListenerConfig{Name: "INTERNAL", SecurityProtocol: "SASL_SSL", SSL: pki.sslSettings(t, "none"),
					SASLEnabledMechanisms: []string{"SCRAM-SHA-512"},
					SASLJAASConfigs:       map[string]string{"SCRAM-SHA-512": fmt.Sprintf(scramJAAS, password)}}
			},
			mechanism: "SCRAM-SHA-512",
			intruder: func(l *ListenerConfig) {
				l.SASLJAASConfigs = map[string]string{"SCRAM-SHA-512": fmt.Sprintf(scramJAAS, "guessed")}
			},
		},
		{
			name: "SASL_PLAINTEXT PLAIN",
			internal: func(password string) ListenerConfig {
				return ListenerConfig{Name: "INTERNAL", SecurityProtocol: "SASL_PLAINTEXT",
					SASLEnabledMechanisms: []string{"PLAIN"}, SASLPlainJAASConfig: fmt.Sprintf(plainJAAS, password)}
			},
			mechanism: "PLAIN",
			intruder:  func(l *ListenerConfig) { l.SASLPlainJAASConfig = fmt.Sprintf(plainJAAS, "guessed") },
		},
		{
			name: "SSL with client certificates",
			internal: func(string) ListenerConfig {
				return ListenerConfig{Name: "INTERNAL", SecurityProtocol: "SSL", SSL: nodeSSL(t, pki, node, "required")}
			},
			intruder: func(l *ListenerConfig) { l.SSL = nodeSSL(t, pki, stranger, "required") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := startClusterWith(t, 3, func(c *Config) {
				c.Listeners = []ListenerConfig{{Name: "CLIENT"}, tc.internal("broker-secret")}
				c.InterBrokerListenerName = "INTERNAL"
				c.InterBrokerSASLMechanism = tc.mechanism
				c.AddScram = []string{"SCRAM-SHA-512=[name=broker,password=broker-secret]"}
			})
			for _, id := range cluster.live() {
				if cluster.nodes[id].interBroker == nil {
					t.Fatalf("node %d dials the others without security", id)
				}
			}
			// Created through a node that is not the controller: the
			// request is forwarded over INTERNAL.
			ctrl := cluster.controller(1)
			topic := "secured"
			adm := cluster.otherThan(ctrl)
			cluster.createReplicatedVia(adm, topic, 1, 3, nil)
			cl := cluster.client(adm, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID("secured-txn"))
			ctx := testCtx(t)
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
			cluster.waitReplicated(topic, 0, 21) // 20 records and the commit marker

			// A broker-only node whose login (or certificate) the others
			// refuse cannot register, so it never serves.
			startCtx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			cluster.addBrokerOnlyNodeErr(startCtx, 4, func(c *Config) {
				internal := tc.internal("broker-secret")
				tc.intruder(&internal)
				c.Listeners = []ListenerConfig{{Name: "CLIENT"}, internal}
			}, func(err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the intruder's start: %v, want it to wait until its deadline", err)
				}
			})
			if n := len(cluster.metadata(1).Brokers); n != 3 {
				t.Fatalf("the cluster lists %d brokers after the intruder tried, want 3", n)
			}
		})
	}
}

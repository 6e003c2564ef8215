package broker

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/peer"
)

// TestNewListenersChecksTheListeners checks the refusals and defaults of a
// node's listener configuration, before anything is bound.
func TestNewListenersChecksTheListeners(t *testing.T) {
	sasl := ListenerConfig{Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"PLAIN"}, SASLPlainJAASConfig: saslTestJAAS}
	const plainLogin = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";`
	pki := newTestPKI(t)
	tests := []struct {
		name      string
		cfg       Config
		wantErr   string
		wantInter string
	}{
		{"shorthand", Config{}, "", "PLAINTEXT"},
		{"first plaintext is inter-broker", Config{Listeners: []ListenerConfig{sasl, {Name: "INTERNAL"}}}, "", "INTERNAL"},
		{"PLAINTEXT by name wins", Config{Listeners: []ListenerConfig{{Name: "A"}, {Name: "PLAINTEXT"}}}, "", "PLAINTEXT"},
		{"named inter-broker listener", Config{Listeners: []ListenerConfig{{Name: "A"}, {Name: "B"}}, InterBrokerListenerName: "B"}, "", "B"},
		{"duplicate names", Config{Listeners: []ListenerConfig{{Name: "A"}, {Name: "A", Listen: "127.0.0.1:1"}}},
			"Each listener must have a different name", ""},
		{"unknown inter-broker listener", Config{Listeners: []ListenerConfig{{Name: "A"}}, InterBrokerListenerName: "B"},
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are A", ""},
		{"cluster: SASL beside a PLAINTEXT inter-broker listener", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{{Name: "INTERNAL"}, sasl}}, "", "INTERNAL"},
		{"cluster: SASL inter-broker listener, GSSAPI by default", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{{Name: "INTERNAL"}, sasl}, InterBrokerListenerName: "CLIENT"},
			"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication (it is GSSAPI; listener CLIENT enables PLAIN)", ""},
		{"cluster: PLAIN inter-broker login", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners:                []ListenerConfig{{Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"PLAIN"}, SASLPlainJAASConfig: plainLogin}},
			InterBrokerSASLMechanism: "PLAIN"}, "", "CLIENT"},
		{"cluster: PLAIN inter-broker login without a username", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{sasl}, InterBrokerSASLMechanism: "PLAIN"},
			"listener.name.client.plain.sasl.jaas.config: the inter-broker login needs the username and password options", ""},
		{"cluster: SCRAM inter-broker login without its JAAS entry", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners:                []ListenerConfig{{Name: "CLIENT", SecurityProtocol: "SASL_SSL", SSL: pki.sslSettings(t, "none"), SASLEnabledMechanisms: []string{"SCRAM-SHA-256"}}},
			InterBrokerSASLMechanism: "SCRAM-SHA-256"},
			"inter-broker listener CLIENT logs in with SCRAM-SHA-256, but listener.name.client.scram-sha-256.sasl.jaas.config is not set", ""},
		{"cluster: OAUTHBEARER between nodes", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{{Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"OAUTHBEARER"},
				OAuthBearer: OAuthBearerConfig{JAASConfig: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}}},
			InterBrokerSASLMechanism: "OAUTHBEARER"},
			"sasl.mechanism.inter.broker.protocol OAUTHBEARER is not served between nodes; PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are", ""},
		{"cluster: SSL inter-broker listener", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{{Name: "SECURE", SecurityProtocol: "SSL", SSL: pki.sslSettings(t, "required")}}}, "", "SECURE"},
		{"cluster: SCRAM beside a PLAINTEXT inter-broker listener", Config{ControllerQuorumVoters: "1@127.0.0.1:1",
			Listeners: []ListenerConfig{{Name: "INTERNAL"}, {Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"SCRAM-SHA-512"}}}},
			"", "INTERNAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.setDefaults()
			ls, err := newListeners(&cfg, (&scramStore{}).lookup)
			var sec *peer.Security
			if err == nil && cfg.ControllerQuorumVoters != "" {
				sec, err = interBrokerSecurity(&cfg, ls)
				stopValidators(ls)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != len(cfg.Listeners) {
				t.Errorf("%d listeners, want %d", len(ls), len(cfg.Listeners))
			}
			if inter := ls[slices.IndexFunc(ls, func(l *listener) bool { return l.cfg.Name == cfg.InterBrokerListenerName })]; cfg.ControllerQuorumVoters != "" &&
				(sec == nil) != (inter.cfg.SecurityProtocol == protocolPlaintext) {
				t.Errorf("inter-broker security %+v over a %s listener", sec, inter.cfg.SecurityProtocol)
			}
			if cfg.InterBrokerListenerName != tt.wantInter {
				t.Errorf("inter-broker listener %q, want %q", cfg.InterBrokerListenerName, tt.wantInter)
			}
		})
	}
}

// hostPort splits addr for comparison with a response's host and port.
func hostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, int32(n)
}

// TestListenersAnswerWithTheirOwnEndpoints starts one node with a
// PLAINTEXT, a SASL_PLAINTEXT and an advertised PLAINTEXT listener: a
// franz-go client works on each of the first two, and Metadata,
// FindCoordinator and DescribeCluster name the address of the listener
// asked.
func TestListenersAnswerWithTheirOwnEndpoints(t *testing.T) {
	zero := int64(0)
	b := startBroker(t, Config{
		FailedAuthenticationDelayMs:  &zero,
		GroupInitialRebalanceDelayMs: &zero,
		Listeners: []ListenerConfig{
			{Name: "INTERNAL"},
			{Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"PLAIN"}, SASLPlainJAASConfig: saslTestJAAS},
			{Name: "EXTERNAL", Advertise: "ext.example:9999"},
		},
	})
	if b.Addr() != b.ListenerAddr("INTERNAL") || b.ListenerAddr("CLIENT") == "" || b.ListenerAddr("NONE") != "" {
		t.Fatalf("Addr %s, INTERNAL %s, CLIENT %s, NONE %q", b.Addr(), b.ListenerAddr("INTERNAL"), b.ListenerAddr("CLIENT"), b.ListenerAddr("NONE"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	clients := map[string]*kgo.Client{}
	for name, opts := range map[string][]kgo.Opt{
		"INTERNAL": nil,
		"CLIENT":   {plainOpt("alice", "alice-secret")},
	} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(b.ListenerAddr(name)), kgo.DefaultProduceTopic("l-"+strings.ToLower(name)), kgo.AllowAutoTopicCreation())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		clients[name] = cl
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("via " + name)}).FirstErr(); err != nil {
			t.Fatalf("produce via %s: %v", name, err)
		}
		wantHost, wantPort := hostPort(t, b.ListenerAddr(name))
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Host != wantHost || md.Brokers[0].Port != wantPort {
			t.Errorf("%s: Metadata brokers %+v, want %s:%d", name, md.Brokers, wantHost, wantPort)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{"g"}
		fr, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(fr.Coordinators) != 1 || fr.Coordinators[0].Host != wantHost || fr.Coordinators[0].Port != wantPort {
			t.Errorf("%s: FindCoordinator %+v, want %s:%d", name, fr.Coordinators, wantHost, wantPort)
		}
	}
	// A record produced on one listener is read on the other.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("CLIENT")), plainOpt("bob", "bob-secret"), kgo.ConsumeTopics("l-internal"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumer.Close)
	fs := consumer.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "via INTERNAL" {
		t.Fatalf("consumed %v", recs)
	}

	// The advertised listener answers with its advertised address.
	raw := dialRaw(t, b.ListenerAddr("EXTERNAL"))
	md := raw.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 || md.Brokers[0].Host != "ext.example" || md.Brokers[0].Port != 9999 {
		t.Errorf("EXTERNAL: Metadata brokers %+v, want ext.example:9999", md.Brokers)
	}
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dc := raw.do(dreq).(*kmsg.DescribeClusterResponse)
	if len(dc.Brokers) != 1 || dc.Brokers[0].Host != "ext.example" || dc.Brokers[0].Port != 9999 {
		t.Errorf("EXTERNAL: DescribeCluster brokers %+v, want ext.example:9999", dc.Brokers)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 3
	fc.CoordinatorKey = "g"
	fr := raw.do(fc).(*kmsg.FindCoordinatorResponse)
	if fr.Host != "ext.example" || fr.Port != 9999 {
		t.Errorf("EXTERNAL: FindCoordinator v3 %s:%d, want ext.example:9999", fr.Host, fr.Port)
	}
	// A SASL listener still wants SASL first: a plain Metadata closes it.
	unauth, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("CLIENT")), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer unauth.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, unauth); err == nil {
		t.Error("Metadata without SASL on the SASL listener succeeded")
	}
}

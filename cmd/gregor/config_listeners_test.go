package main

import (
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/broker"
)

// TestApplyPropertiesSeveralListeners checks that every listener of
// server.properties but the controller's reaches Config.Listeners, with
// its advertised address by name, its protocol from
// listener.security.protocol.map and its own listener.name.<name>.* keys.
func TestApplyPropertiesSeveralListeners(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
	const scramLogin = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`
	tests := []struct {
		name          string
		kv            []string
		want          []broker.ListenerConfig
		wantInter     string
		wantMechanism string
		wantErr       string
	}{
		{
			name: "one listener stays the shorthand",
			kv:   []string{"listeners", "PLAINTEXT://:9092"},
		},
		{
			name: "plaintext and sasl, advertised by name, controller skipped",
			kv: []string{
				"listeners", "INTERNAL://:9092,CONTROLLER://:9093,CLIENT://:9094",
				"advertised.listeners", "CLIENT://kafka.example:19094,INTERNAL://broker1:9092",
				"listener.security.protocol.map", "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
				"controller.listener.names", "CONTROLLER",
				"inter.broker.listener.name", "internal",
				"sasl.enabled.mechanisms", "SCRAM-SHA-512",
				"listener.name.client.sasl.enabled.mechanisms", "PLAIN, OAUTHBEARER",
				"listener.name.client.plain.sasl.jaas.config", jaas,
				"listener.name.client.oauthbearer.sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
			},
			want: []broker.ListenerConfig{
				{Name: "INTERNAL", Listen: ":9092", Advertise: "broker1:9092", SecurityProtocol: "PLAINTEXT", SASLEnabledMechanisms: []string{"SCRAM-SHA-512"}},
				{Name: "CLIENT", Listen: ":9094", Advertise: "kafka.example:19094", SecurityProtocol: "SASL_PLAINTEXT",
					SASLEnabledMechanisms: []string{"PLAIN", "OAUTHBEARER"}, SASLPlainJAASConfig: jaas,
					OAuthBearer: broker.OAuthBearerConfig{JAASConfig: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}},
			},
			wantInter: "INTERNAL",
		},
		{
			name: "a listener without an advertised entry advertises nothing",
			kv: []string{
				"listeners", "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
				"advertised.listeners", "SASL_PLAINTEXT://public:9093",
			},
			want: []broker.ListenerConfig{
				{Name: "PLAINTEXT", Listen: ":9092", SecurityProtocol: "PLAINTEXT"},
				{Name: "SASL_PLAINTEXT", Listen: ":9093", Advertise: "public:9093", SecurityProtocol: "SASL_PLAINTEXT"},
			},
		},
		{
			name: "a SASL inter-broker listener named by its protocol, with its SCRAM login",
			kv: []string{
				"listeners", "CLIENT://:9092,SASL_PLAINTEXT://:9093",
				"listener.security.protocol.map", "CLIENT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
				"security.inter.broker.protocol", "SASL_PLAINTEXT",
				"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
				"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "SCRAM-SHA-512",
				"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config", scramLogin,
			},
			want: []broker.ListenerConfig{
				{Name: "CLIENT", Listen: ":9092", SecurityProtocol: "PLAINTEXT"},
				{Name: "SASL_PLAINTEXT", Listen: ":9093", SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"SCRAM-SHA-512"},
					SASLJAASConfigs: map[string]string{"SCRAM-SHA-512": scramLogin}},
			},
			wantInter:     "SASL_PLAINTEXT",
			wantMechanism: "SCRAM-SHA-512",
		},
		{
			name: "both inter-broker keys",
			kv: []string{
				"listeners", "PLAINTEXT://:9092,SSL://:9093",
				"inter.broker.listener.name", "PLAINTEXT",
				"security.inter.broker.protocol", "PLAINTEXT",
			},
			wantErr: "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
		},
		{
			name:    "duplicate listener names",
			kv:      []string{"listeners", "PLAINTEXT://:9092,plaintext://:9093"},
			wantErr: "Each listener must have a different name",
		},
		{
			name:    "unmapped protocol",
			kv:      []string{"listeners", "PLAINTEXT://:9092,EXTERNAL://:9093"},
			wantErr: "listener EXTERNAL has no security protocol",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg broker.Config
			err := applyProperties(&cfg, props(tt.kv...), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Listeners, tt.want) {
				t.Errorf("Listeners = %+v\nwant        %+v", cfg.Listeners, tt.want)
			}
			if cfg.InterBrokerListenerName != tt.wantInter {
				t.Errorf("InterBrokerListenerName = %q, want %q", cfg.InterBrokerListenerName, tt.wantInter)
			}
			if cfg.InterBrokerSASLMechanism != tt.wantMechanism {
				t.Errorf("InterBrokerSASLMechanism = %q, want %q", cfg.InterBrokerSASLMechanism, tt.wantMechanism)
			}
			if len(tt.want) > 0 && (cfg.ListenerName != tt.want[0].Name || cfg.Listen != tt.want[0].Listen) {
				t.Errorf("shorthand %q %q, want the first listener", cfg.ListenerName, cfg.Listen)
			}
		})
	}
}

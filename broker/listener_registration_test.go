package broker

import (
	"testing"

	"github.com/gregor-broker/gregor/broker/security/sasl"
)

// TestRegistrationNamesServedListener checks that the broker registers its
// listener under the name and security protocol it serves, not a fixed
// PLAINTEXT, so that other brokers can match it by listener name.
func TestRegistrationNamesServedListener(t *testing.T) {
	tests := []struct {
		name         string
		listenerName string
		protocol     string
		sasl         bool
		wantName     string
		wantProtocol int16
	}{
		{"default", "", "", false, "PLAINTEXT", 0},
		{"named plaintext", "INTERNAL", "PLAINTEXT", false, "INTERNAL", 0},
		{"sasl plaintext", "", "SASL_PLAINTEXT", true, "SASL_PLAINTEXT", 2},
		{"named sasl", "CLIENT", "SASL_PLAINTEXT", true, "CLIENT", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Broker{cfg: Config{ListenerName: tt.listenerName, SecurityProtocol: tt.protocol, NodeID: 4}}
			if tt.sasl {
				b.sasl = &sasl.Config{Mechanisms: []string{"PLAIN"}}
			}
			b.advertised.host, b.advertised.port = "broker4.example", 9092
			reg := (&cluster{b: b}).registration()
			if len(reg.Endpoints) != 1 {
				t.Fatalf("endpoints = %+v, want one", reg.Endpoints)
			}
			ep := reg.Endpoints[0]
			if ep.Name != tt.wantName || ep.SecurityProtocol != tt.wantProtocol || ep.Host != "broker4.example" || ep.Port != 9092 {
				t.Errorf("endpoint = %+v, want %s/%d at broker4.example:9092", ep, tt.wantName, tt.wantProtocol)
			}
		})
	}
}

func TestSecurityProtocolID(t *testing.T) {
	// Kafka's SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol).
	for name, want := range map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3} {
		if got := securityProtocolID(name); got != want {
			t.Errorf("securityProtocolID(%s) = %d, want %d", name, got, want)
		}
	}
}

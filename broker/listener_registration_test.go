package broker

import (
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"

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
			cfg := Config{ListenerName: tt.listenerName, SecurityProtocol: tt.protocol, NodeID: 4}
			cfg.setDefaults()
			l := &listener{cfg: cfg.Listeners[0], host: "broker4.example", port: 9092}
			if tt.sasl {
				l.sasl = &sasl.Config{Mechanisms: []string{"PLAIN"}}
			}
			b := &Broker{cfg: cfg, listeners: []*listener{l}}
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

// TestRegistrationCarriesEveryListener checks that a broker with several
// listeners registers each, in order, with its own address and protocol.
func TestRegistrationCarriesEveryListener(t *testing.T) {
	cfg := Config{NodeID: 4, Listeners: []ListenerConfig{
		{Name: "INTERNAL"},
		{Name: "EXTERNAL", SecurityProtocol: "SASL_PLAINTEXT"},
		{SecurityProtocol: "SSL"},
	}}
	cfg.setDefaults()
	b := &Broker{cfg: cfg}
	for i, lc := range cfg.Listeners {
		b.listeners = append(b.listeners, &listener{cfg: lc, host: "broker4.example", port: int32(9092 + i)})
	}
	got := (&cluster{b: b}).registration().Endpoints
	want := []metadata.Endpoint{
		{Name: "INTERNAL", Host: "broker4.example", Port: 9092, SecurityProtocol: 0},
		{Name: "EXTERNAL", Host: "broker4.example", Port: 9093, SecurityProtocol: 2},
		{Name: "SSL", Host: "broker4.example", Port: 9094, SecurityProtocol: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints = %+v, want %+v", got, want)
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

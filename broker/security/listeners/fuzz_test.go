package listeners

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary listeners, advertised.listeners,
// listener.security.protocol.map and controller.listener.names values
// (the strings an operator or a KAFKA_* variable supplies) to Parse.
// Invariants: it never panics; it either refuses with an *Error or returns
// a configuration in which every listener and advertised endpoint has a
// non-empty upper-case name and the protocol the effective map gives that
// name, the inter-broker listener is advertised (with the broker role),
// and Address splits back into the endpoint's host and port.
func FuzzParse(f *testing.F) {
	f.Add("PLAINTEXT://:9092,CONTROLLER://:9093", "", "", "CONTROLLER", "broker,controller")
	f.Add("A://127.0.0.1:9092,B://[::1]:9092,CONTROLLER://:9093", "A://a:1,B://b:1", "A:SSL,B:SASL_SSL,CONTROLLER:PLAINTEXT", "CONTROLLER", "broker,controller")
	f.Add("SSL://:9092", "", "SSL:SSL,CONTROLLER:SSL", "CONTROLLER", "broker")
	f.Add("CONTROLLER://0.0.0.0:9093", "", "", "CONTROLLER", "controller")
	f.Add("x://[::1%25a]:-0,  ,", ",", ":,", ",", "broker,,")
	f.Fuzz(func(t *testing.T, listeners, advertised, protocolMap, controllerNames, roles string) {
		props := map[string]string{
			"process.roles":             roles,
			"node.id":                   "1",
			"controller.quorum.voters":  "1@localhost:9093",
			"controller.listener.names": controllerNames,
			"listeners":                 listeners,
		}
		if advertised != "" {
			props["advertised.listeners"] = advertised
		}
		if protocolMap != "" {
			props["listener.security.protocol.map"] = protocolMap
		}
		cfg, err := Parse(lookupIn(props))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		for _, eps := range [][]Endpoint{cfg.Listeners, cfg.Advertised} {
			for _, e := range eps {
				if e.Listener == "" || e.Listener != strings.ToUpper(e.Listener) {
					t.Fatalf("listener name %q", e.Listener)
				}
				if cfg.Protocols[e.Listener] != e.Protocol {
					t.Fatalf("%s has %s, the map says %s", e.Listener, e.Protocol, cfg.Protocols[e.Listener])
				}
				if !utf8.ValidString(e.Address()) && utf8.ValidString(listeners+advertised) {
					t.Fatalf("address %q", e.Address())
				}
			}
		}
		hasBroker := false
		for _, r := range cfg.Roles {
			hasBroker = hasBroker || r == RoleBroker
		}
		if hasBroker {
			found := false
			for _, e := range cfg.Advertised {
				found = found || e.Listener == cfg.InterBrokerListener
			}
			if !found {
				t.Fatalf("inter-broker listener %s is not advertised: %+v", cfg.InterBrokerListener, cfg.Advertised)
			}
		}
	})
}

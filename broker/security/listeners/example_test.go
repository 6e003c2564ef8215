package listeners_test

import (
	"fmt"

	"github.com/gregor-broker/gregor/broker/security/listeners"
)

// A broker's properties, after whatever layering of server.properties,
// KAFKA_* variables and --override the caller does, looked up by key.
func ExampleParse() {
	props := map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        "1",
		"controller.quorum.voters":       "1@controller1:9093",
		"controller.listener.names":      "CONTROLLER",
		"listeners":                      "INTERNAL://:9092,EXTERNAL://[::]:9094,CONTROLLER://:9093",
		"advertised.listeners":           "INTERNAL://broker1:9092,EXTERNAL://kafka.example.com:443",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.external.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
	}
	cfg, err := listeners.Parse(func(k string) (string, bool) { v, ok := props[k]; return v, ok })
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range cfg.Listeners {
		fmt.Printf("bind %s %s %s\n", l.Listener, l.Protocol, l.Address())
	}
	for _, a := range cfg.Advertised {
		fmt.Printf("advertise %s %s\n", a.Listener, a.Address())
	}
	fmt.Println("controller", cfg.AdvertisedControllers[0].Address())
	fmt.Println("inter-broker", cfg.InterBrokerListener)
	jaas, _ := cfg.GetMechanism("EXTERNAL", "SCRAM-SHA-512", "sasl.jaas.config")
	fmt.Println(jaas)

	props["inter.broker.listener.name"] = "REPLICATION"
	_, err = listeners.Parse(func(k string) (string, bool) { v, ok := props[k]; return v, ok })
	fmt.Println(err)
	// Output:
	// bind INTERNAL PLAINTEXT :9092
	// bind EXTERNAL SASL_SSL [::]:9094
	// bind CONTROLLER PLAINTEXT :9093
	// advertise INTERNAL broker1:9092
	// advertise EXTERNAL kafka.example.com:443
	// controller controller1:9093
	// inter-broker INTERNAL
	// org.apache.kafka.common.security.scram.ScramLoginModule required;
	// Listener with name REPLICATION defined in inter.broker.listener.name not found in listener.security.protocol.map.
}

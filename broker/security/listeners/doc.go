// Package listeners reads a broker's listener configuration as Apache
// Kafka 4.4.0's KafkaConfig does: listeners, advertised.listeners,
// listener.security.protocol.map, inter.broker.listener.name,
// security.inter.broker.protocol, controller.listener.names and the
// listener rules that depend on process.roles (and on node.id and
// controller.quorum.voters, which the controller listener's advertised
// address comes from). Parse takes the configuration as a lookup function,
// so any layering of server.properties, KAFKA_* variables and --override
// arguments fits in front of it, and returns the typed listeners, the
// advertised endpoints, the inter-broker listener and the controller
// listeners. Config.Get and Config.GetMechanism look a key up for one
// listener in Kafka's order: listener.name.<listener>.<key> first, then
// <key>; a SASL mechanism's key only under its listener.
//
// A refusal is an *Error holding the Java exception Kafka throws and its
// message, word for word (the messages are what operators search for, so
// they carry no package prefix). The Java semantics the messages depend on
// (String.split, String.trim, HashMap iteration order, commons-validator's
// address checks) are reproduced, and cases.txt in testdata holds the
// inputs whose answers compat-tests/kafkaconfig/run took from Kafka itself.
//
// Imports: nothing of this project.
package listeners

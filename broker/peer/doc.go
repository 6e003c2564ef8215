// Package peer is one Kafka client connection from this node to another
// node's Kafka listener: the request frame, the correlation id, the
// response's decoding, the dial, and the dial again after an error or when
// the peer's address changes. The broker's controller client, its
// transaction peers and its replica fetchers each hold Conns.
//
// A Conn sends one request at a time; its mutex, held for the whole round
// trip, is a leaf of the broker's lock order: nothing else is taken while
// it is held. Cancelling a request's context ends the request in flight.
//
// Security (SASL and TLS between nodes) belongs here, in one place, when
// Gregor has it.
//
// Imports: protocol of this project, and kmsg.
package peer

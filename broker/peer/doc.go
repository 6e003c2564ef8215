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
// Security between nodes lives here, in one place (security.go): a Conn
// with a Security runs the TLS handshake and the SASL login of the
// inter-broker listener right after each dial, and dials again before the
// session the peer granted (KIP-368) runs out.
//
// Imports: protocol of this project, and franz-go's kmsg, kerr and SASL
// mechanisms.
package peer

// Package sasl is the server side of SASL authentication on a Kafka
// listener, as Kafka's SaslServerAuthenticator: the state machine one
// connection goes through before its first ordinary request (Authenticator),
// the mechanisms it drives (Mechanism; PLAIN here, as Kafka's
// PlainSaslServer, and SCRAM-SHA-256/512 over package scram's exchange, as
// Kafka's ScramSaslServer, and OAUTHBEARER as OAuthBearerSaslServer, with
// Kafka's unsecured token validator or its JWKS validator: JWKSValidator,
// whose keys come from a JWKS file (StaticKeys) or endpoint kept fresh
// (RemoteKeys)), the JAAS configuration text PLAIN takes its users from
// (ParseJAAS, as Kafka's JaasConfig), and re-authentication (KIP-368):
// the session lifetime sent in SaslAuthenticate, a SaslHandshake on an
// authenticated connection, and the expiry of a session.
//
// The Authenticator knows no sockets: it takes one frame at a time (the
// bytes after the size prefix) and says what to write, and whether the
// connection goes on, closes at once, or closes after the failed
// authentication delay with a last response. The broker reads the frames,
// answers ApiVersions through a callback with its normal handler, and owns
// the delay.
//
// Imports: protocol (request headers and response framing),
// broker/security/scram (the SCRAM exchange NewScram drives), and of other
// projects franz-go's kmsg and kerr, and go-jose (JWS and JWK decoding and
// signature verification).
//
// Goroutines: a RemoteKeys refetches its JWKS on one goroutine of its own
// until Close.
//
// Locks: none. An Authenticator belongs to one connection and is used by
// one goroutine at a time.
package sasl

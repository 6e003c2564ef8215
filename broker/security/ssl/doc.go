// Package ssl turns a listener's ssl.* keys into the TLS configuration of
// its connections, as Kafka's DefaultSslEngineFactory and SslFactory do:
// the key store (ssl.keystore.type JKS, PKCS12 or PEM, from a file or, for
// PEM, inline with ssl.keystore.key and ssl.keystore.certificate.chain),
// the trust store (the same types, or inline ssl.truststore.certificates),
// ssl.client.auth, ssl.enabled.protocols, ssl.protocol and ssl.cipher.suites,
// and ssl.endpoint.identification.algorithm for the connections a node
// makes to others.
//
// What it owns: the parsing and validation of those keys, with Kafka's
// messages for every refusal (InvalidConfigurationException's and
// ConfigException's); the loading of the stores; a Factory whose server
// and client tls.Configs always use the stores last loaded, so that
// Reconfigure (Kafka's dynamic SSL update: an AlterConfigs of a listener's
// keystore, or of the same path whose file changed) takes effect for new
// connections without a restart, after Kafka's checks that a keystore is
// neither added nor removed and that its certificates keep their subject
// and subject alternative names unless ssl.allow.dn.changes or
// ssl.allow.san.changes says otherwise, and, for the inter-broker listener,
// a trial handshake between the new settings' client and server sides.
//
// Passwords and inline keys are Secrets, whose String never shows them, so
// neither a log line nor an error carries one.
//
// What it does not own: which listener is TLS, the principal a client
// certificate maps to (ssl.principal.mapping.rules), and the connections
// themselves; the broker does those.
//
// Differences from Kafka, which Go's crypto/tls imposes: the enabled
// protocols become a range from the lowest to the highest named (Java can
// enable TLSv1.1 and TLSv1.3 without TLSv1.2); ssl.cipher.suites restricts
// the TLS 1.2 and lower suites only, since Go always offers its TLS 1.3
// suites; ssl.provider, ssl.keymanager.algorithm,
// ssl.trustmanager.algorithm and ssl.secure.random.implementation are
// accepted and have no effect.
//
// Imports: nothing of this project; software.sslmate.com/src/go-pkcs12
// (PKCS12 stores), github.com/pavlo-v-chernykh/keystore-go/v4 (JKS) and
// github.com/youmark/pkcs8 (encrypted PEM keys).
//
// Goroutines and locks: a Factory's stores are swapped atomically;
// Reconfigure is serialized by the Factory's mutex, and the tls.Configs
// it handed out read the current stores on each handshake.
package ssl

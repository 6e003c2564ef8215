// Package principal names the client of a connection as Apache Kafka
// 4.4.0 does: a KafkaPrincipal (type "User" and a name, printed
// "User:name"). On an SSL listener the name comes from the client
// certificate's subject, formatted as Java's X500Principal.getName()
// (RFC 2253) formats it (FormatDN), then rewritten by
// ssl.principal.mapping.rules as Kafka's SslPrincipalMapper does (Mapper).
// On a SASL listener the name is the mechanism's authorization id
// (SASLPrincipal); for PLAIN, which Kafka requires to name the
// authenticated user, ParsePlain and PlainPrincipal read and check it.
// SCRAM's server, a package of its own, settles its id itself.
//
// The rules' patterns are Java regular expressions; they run here on Go's
// regexp package with Java's matching and replacement semantics added
// around it (Java's "." and find loop, replaceAll's $n, ${name} and \
// escapes, and SslPrincipalMapper's own rewriting of $n past the last
// group). A pattern using Java syntax that Go's RE2 lacks (lookaround,
// backreferences, possessive quantifiers, class intersection) is refused
// rather than run differently.
//
// A refusal is an *Error holding the Java exception Kafka throws and its
// message, word for word. testdata/cases.txt holds the inputs whose
// answers compat-tests/kafkaconfig/run took from Kafka and the JDK.
//
// Imports: nothing of this project.
package principal

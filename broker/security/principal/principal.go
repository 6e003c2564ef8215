package principal

import (
	"crypto/x509"
	"fmt"
	"strings"
)

// KafkaPrincipal is Kafka's KafkaPrincipal: who a connection acts as.
type KafkaPrincipal struct {
	Type string // "User" for every principal this package makes
	Name string
}

// UserType is KafkaPrincipal.USER_TYPE.
const UserType = "User"

// Anonymous is KafkaPrincipal.ANONYMOUS, the principal of a PLAINTEXT
// connection and of an SSL connection without a client certificate.
var Anonymous = KafkaPrincipal{Type: UserType, Name: "ANONYMOUS"}

// String is Kafka's toString, "User:alice", the form ACLs and super.users
// name principals in.
func (p KafkaPrincipal) String() string { return p.Type + ":" + p.Name }

// Error is a refusal as Kafka makes it: the Java exception and its
// message.
type Error struct {
	Exception string
	Message   string
}

func (e *Error) Error() string { return e.Message }

// SSLPrincipal is DefaultKafkaPrincipalBuilder's principal for an SSL
// connection whose client presented cert: the subject in RFC 2253 form,
// mapped by m. A certificate no rule maps is refused with Kafka's
// KafkaException message. A nil cert is the anonymous principal.
func SSLPrincipal(cert *x509.Certificate, m *Mapper) (KafkaPrincipal, error) {
	if cert == nil {
		return Anonymous, nil
	}
	dn, err := FormatDN(cert.RawSubject)
	if err != nil {
		return KafkaPrincipal{}, err
	}
	name, err := m.Name(dn)
	if err != nil {
		return KafkaPrincipal{}, &Error{Exception: "KafkaException",
			Message: fmt.Sprintf("Failed to map name for '%s' based on SSL principal mapping rules.", dn)}
	}
	return KafkaPrincipal{Type: UserType, Name: name}, nil
}

const errAuthzID = "Authentication failed: Client requested an authorization id that is different from username"

// PlainPrincipal is PlainSaslServer's authorization id once the password
// checked out: the username, unless the client asked for another
// authorization id, which Kafka refuses.
func PlainPrincipal(authzID, username string) (KafkaPrincipal, error) {
	if authzID != "" && authzID != username {
		return KafkaPrincipal{}, &Error{Exception: "SaslAuthenticationException", Message: errAuthzID}
	}
	return SASLPrincipal(username), nil
}

// SASLPrincipal is the principal of a SASL connection whose mechanism
// settled on authorizationID: Kafka's DefaultKafkaPrincipalBuilder makes
// User:<authorization id> for every mechanism. For SCRAM the id is the
// user the SCRAM package's server authenticated (which refuses an authzid
// other than that user, as Kafka's ScramSaslServer does); for PLAIN it is
// PlainPrincipal's.
func SASLPrincipal(authorizationID string) KafkaPrincipal {
	return KafkaPrincipal{Type: UserType, Name: authorizationID}
}

// ParsePlain splits a SASL/PLAIN message (RFC 4616: authzid NUL authcid
// NUL passwd) as Kafka's PlainSaslServer does: the bytes read as UTF-8
// (malformed input replaced as Java replaces it), exactly three
// NUL-separated tokens, a username and a password both non-empty. Then
// the caller checks the password, and PlainPrincipal gives the principal.
func ParsePlain(message []byte) (authzID, username, password string, err error) {
	s := fromUTF16(javaUTF16(message))
	var tokens []string
	for i := 0; i < 4; i++ {
		end := strings.IndexByte(s, 0)
		if end < 0 {
			tokens = append(tokens, s)
			break
		}
		tokens = append(tokens, s[:end])
		s = s[end+1:]
	}
	fail := func(msg string) (string, string, string, error) {
		return "", "", "", &Error{Exception: "SaslAuthenticationException", Message: msg}
	}
	if len(tokens) != 3 {
		return fail(fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(tokens)))
	}
	if tokens[1] == "" {
		return fail("Authentication failed: username not specified")
	}
	if tokens[2] == "" {
		return fail("Authentication failed: password not specified")
	}
	return tokens[0], tokens[1], tokens[2], nil
}

package sasl

import (
	"crypto/subtle"
	"fmt"
	"strings"
)

// A Mechanism is the server side of one SASL exchange, as Java's
// SaslServer: a new one for every authentication of a connection.
type Mechanism interface {
	// Evaluate takes the client's next token and returns the server's
	// challenge (nil for none) and whether the exchange is complete. An
	// *AuthenticationError is a refused login whose message the client
	// may see (Kafka's SaslAuthenticationException); any other error is
	// answered with Kafka's generic message, since it may say more than a
	// client should learn. The token is the mechanism's to keep.
	Evaluate(token []byte) (challenge []byte, done bool, err error)
	// AuthorizationID is the authenticated identity once Evaluate has
	// said done: the name of the principal User:<id>.
	AuthorizationID() string
	// CredentialExpiryMs is the time, in milliseconds since the epoch, at
	// which the credential the client authenticated with expires, when
	// it does (Kafka's CREDENTIAL.LIFETIME.MS negotiated property, which
	// OAUTHBEARER sets): the session then ends no later than that.
	CredentialExpiryMs() (ms int64, ok bool)
}

// AuthenticationError is a refused authentication with the message Kafka
// sends the client in SaslAuthenticate's ErrorMessage. It never holds a
// secret.
type AuthenticationError struct{ Message string }

func (e *AuthenticationError) Error() string { return e.Message }

func authFailed(format string, args ...any) *AuthenticationError {
	return &AuthenticationError{Message: fmt.Sprintf(format, args...)}
}

// PlainMechanism is the name of SASL/PLAIN.
const PlainMechanism = "PLAIN"

// PlainUsers are the users of PLAIN on a listener: the user_NAME options of
// the PlainLoginModule entries of its JAAS configuration, as Kafka's
// PlainServerCallbackHandler reads them.
type PlainUsers struct {
	entries []JAASEntry
}

// NewPlainUsers takes the users from the entries of a JAAS configuration.
func NewPlainUsers(entries []JAASEntry) *PlainUsers { return &PlainUsers{entries: entries} }

// Len is the number of distinct users the entries name (for the startup
// log).
func (u *PlainUsers) Len() int {
	names := map[string]bool{}
	for _, e := range u.entries {
		if e.LoginModule != PlainLoginModule {
			continue
		}
		for k := range e.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				names[name] = true
			}
		}
	}
	return len(names)
}

// password is Kafka's JaasContext.configEntryOption for user_NAME: the
// first PlainLoginModule entry that has the option.
func (u *PlainUsers) password(username string) (string, bool) {
	for _, e := range u.entries {
		if e.LoginModule != PlainLoginModule {
			continue
		}
		if p, ok := e.Options["user_"+username]; ok {
			return p, true
		}
	}
	return "", false
}

// authenticate reports whether password is username's, comparing in time
// independent of where the two differ, as Kafka's Utils.isEqualConstantTime.
func (u *PlainUsers) authenticate(username, password string) bool {
	want, ok := u.password(username)
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(password), []byte(want)) == 1
}

// NewPlain returns the server side of one PLAIN exchange against users.
func NewPlain(users *PlainUsers) Mechanism { return &plainServer{users: users} }

// plainServer is Kafka's PlainSaslServer.
type plainServer struct {
	users    *PlainUsers
	authzID  string
	complete bool
}

func (p *plainServer) Evaluate(token []byte) ([]byte, bool, error) {
	if p.complete {
		// Java's SaslServer: no further tokens once complete. The
		// authenticator never passes one.
		return nil, true, authFailed("Authentication failed: exchange already complete")
	}
	authzID, username, password, err := ParsePlain(token)
	if err != nil {
		return nil, false, err
	}
	if username == "" {
		return nil, false, authFailed("Authentication failed: username not specified")
	}
	if password == "" {
		return nil, false, authFailed("Authentication failed: password not specified")
	}
	if !p.users.authenticate(username, password) {
		return nil, false, authFailed("Authentication failed: Invalid username or password")
	}
	if authzID != "" && authzID != username {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	p.authzID, p.complete = username, true
	return []byte{}, true, nil
}

func (p *plainServer) AuthorizationID() string { return p.authzID }

func (p *plainServer) CredentialExpiryMs() (int64, bool) { return 0, false }

// ParsePlain splits a PLAIN message, authzid NUL authcid NUL passwd (RFC
// 4616), as Kafka's PlainSaslServer: the bytes are read as UTF-8 (an
// invalid sequence becomes U+FFFD), and anything but exactly three
// NUL-separated tokens is refused with Kafka's message. The password is a
// secret: never log it.
func ParsePlain(msg []byte) (authzID, username, password string, err error) {
	s := strings.ToValidUTF8(string(msg), "\uFFFD")
	var tokens [4]string
	n, start := 0, 0
	for n < 4 {
		i := strings.IndexByte(s[start:], 0)
		if i < 0 {
			tokens[n] = s[start:]
			n++
			break
		}
		tokens[n] = s[start : start+i]
		n++
		start += i + 1
	}
	if n != 3 {
		return "", "", "", authFailed("Invalid SASL/PLAIN response: expected 3 tokens, got %d", n)
	}
	return tokens[0], tokens[1], tokens[2], nil
}

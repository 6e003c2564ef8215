package scram

import (
	"crypto/subtle"
	"strconv"
)

// A Lookup finds the stored credential of a user for a mechanism. It must
// not be slow or block on the peer: it runs inside the exchange.
type Lookup func(username string, m Mechanism) (Credential, bool)

// An ErrorKind says how Kafka's SaslServerAuthenticator answers a failed
// SCRAM exchange.
type ErrorKind int

const (
	// KindAuthFailed is a SaslException: the client gets
	// SASL_AUTHENTICATION_FAILED and only the generic message
	// (ClientMessage), whatever the check was, so that it cannot tell an
	// unknown user from a wrong password by the answer.
	KindAuthFailed ErrorKind = iota
	// KindAuthorizationID is Kafka's SaslAuthenticationException for an
	// authzid that is not the user: the client gets
	// SASL_AUTHENTICATION_FAILED with the error's own message.
	KindAuthorizationID
	// KindIllegalState is Kafka's IllegalSaslStateException: a message in
	// a state that expects none (ILLEGAL_SASL_STATE).
	KindIllegalState
	// KindProofLength is a proof whose length is not the hash's. Kafka's
	// xor throws an unchecked IllegalArgumentException there, which no
	// SASL handler catches: the connection closes without an answer.
	KindProofLength
)

// Error codes of the answers (Kafka's Errors).
const (
	CodeIllegalSaslState       int16 = 34
	CodeSaslAuthenticationFail int16 = 58
)

// An Error is a failed exchange step. Its message is Kafka's, for the
// broker's log; it never holds a password, key, proof or message text.
// What the client is told is ClientMessage.
type Error struct {
	Kind ErrorKind
	Msg  string
}

func (e *Error) Error() string { return "scram: " + e.Msg }

// Code is the error code of the SaslAuthenticate answer; 0 for
// KindProofLength, which Kafka answers by closing the connection.
func (e *Error) Code() int16 {
	switch e.Kind {
	case KindAuthFailed, KindAuthorizationID:
		return CodeSaslAuthenticationFail
	case KindIllegalState:
		return CodeIllegalSaslState
	}
	return 0
}

// ClientMessage is the error message of the SaslAuthenticate answer, as
// Kafka's SaslServerAuthenticator words it; reauth is a re-authentication
// (KIP-368).
func (e *Error) ClientMessage(m Mechanism, reauth bool) string {
	switch e.Kind {
	case KindAuthFailed:
		what := "authentication"
		if reauth {
			what = "re-authentication"
		}
		return "Authentication failed during " + what + " due to invalid credentials with SASL mechanism " + m.Name()
	case KindAuthorizationID, KindIllegalState:
		return e.Msg
	}
	return ""
}

// ServerState is where a Server's exchange is (Kafka's
// ScramSaslServer.State).
type ServerState int

// The states, with Kafka's names as their String.
const (
	ReceiveClientFirst ServerState = iota
	ReceiveClientFinal
	Complete
	Failed
)

func (s ServerState) String() string {
	switch s {
	case ReceiveClientFirst:
		return "RECEIVE_CLIENT_FIRST_MESSAGE"
	case ReceiveClientFinal:
		return "RECEIVE_CLIENT_FINAL_MESSAGE"
	case Complete:
		return "COMPLETE"
	case Failed:
		return "FAILED"
	}
	return "UNKNOWN"
}

// A Server is the server side of one SCRAM exchange, Kafka's
// ScramSaslServer as a state machine: Start takes the client-first
// message and returns the server-first, Finish takes the client-final and
// returns the server-final. Any failure leaves it Failed. It is not safe
// for concurrent use; a connection drives its own.
type Server struct {
	// Nonce makes the server's part of the nonce; RandomString when nil.
	// Tests set it to replay a recorded exchange.
	Nonce func() string

	mech   Mechanism
	lookup Lookup
	state  ServerState

	clientFirst ClientFirst
	serverFirst ServerFirst
	cred        Credential
	username    string
}

// NewServer starts an exchange for mechanism m (which must be valid),
// finding credentials with lookup.
func NewServer(m Mechanism, lookup Lookup) *Server {
	return &Server{mech: m, lookup: lookup}
}

// State is the exchange's state.
func (s *Server) State() ServerState { return s.state }

// Mechanism is the exchange's mechanism.
func (s *Server) Mechanism() Mechanism { return s.mech }

// Username is the authenticated user (Kafka's authorization id) once the
// exchange is Complete, and "" before.
func (s *Server) Username() string {
	if s.state != Complete {
		return ""
	}
	return s.username
}

// TokenAuth reports whether the client-first message asked for
// delegation-token authentication (tokenauth=true). Kafka then takes the
// user name as a token id and the token's credential; this package does
// not: the Lookup is asked for the name either way, and a caller that does
// not support tokens refuses the exchange when TokenAuth is set.
func (s *Server) TokenAuth() bool { return s.clientFirst.TokenAuth() }

// Extensions are the client-first message's extensions (Kafka reports
// only tokenauth, its one supported extension, and ignores the others).
func (s *Server) Extensions() []Extension { return s.clientFirst.Extensions }

func (s *Server) fail(kind ErrorKind, msg string) ([]byte, error) {
	s.state = Failed
	s.cred = Credential{}
	return nil, &Error{Kind: kind, Msg: msg}
}

// Start takes the client-first message and returns the server-first. The
// checks come in Kafka's order: the message's format, the user name, the
// credential (an unknown user fails here, with the same answer to the
// client as a wrong proof), the authzid, the credential's iterations.
func (s *Server) Start(clientFirst []byte) ([]byte, error) {
	if s.state != ReceiveClientFirst {
		return s.illegalState()
	}
	c, err := ParseClientFirst(clientFirst)
	if err != nil {
		return s.fail(KindAuthFailed, "Invalid SCRAM client first message format")
	}
	s.clientFirst = c
	nonce := RandomString
	if s.Nonce != nil {
		nonce = s.Nonce
	}
	serverNonce := nonce()
	username, err := Username(c.SaslName)
	if err != nil {
		return s.fail(KindAuthFailed, "Authentication failed: Credentials could not be obtained")
	}
	cred, ok := s.lookup(username, s.mech)
	if !ok {
		return s.fail(KindAuthFailed, "Authentication failed: Invalid user credentials")
	}
	if c.AuthzID != "" && c.AuthzID != username {
		return s.fail(KindAuthorizationID, "Authentication failed: Client requested an authorization id that is different from username")
	}
	if cred.Iterations < MinIterations {
		return s.fail(KindAuthFailed, "Iterations "+strconv.Itoa(int(cred.Iterations))+" is less than the minimum "+
			strconv.Itoa(MinIterations)+" for "+s.mech.enumName())
	}
	s.cred = cred
	s.username = username
	s.serverFirst = ServerFirst{Nonce: c.Nonce + serverNonce, Salt: cred.Salt, Iterations: cred.Iterations}
	s.state = ReceiveClientFinal
	return []byte(s.serverFirst.String()), nil
}

// Finish takes the client-final message and returns the server-final
// ("v=" and the server signature). The nonce must be the server-first's
// whole nonce, and the proof must verify against the stored key.
func (s *Server) Finish(clientFinal []byte) ([]byte, error) {
	if s.state != ReceiveClientFinal {
		return s.illegalState()
	}
	c, err := ParseClientFinal(clientFinal)
	if err != nil {
		return s.fail(KindAuthFailed, "Invalid SCRAM client final message format")
	}
	if c.Nonce != s.serverFirst.Nonce {
		return s.fail(KindAuthFailed, "Invalid client nonce in the final client message.")
	}
	auth := AuthMessage(s.clientFirst.Bare(), s.serverFirst.String(), c.WithoutProof())
	sig := s.mech.ClientSignature(s.cred.StoredKey, auth)
	if len(c.Proof) != len(sig) {
		// Kafka's state stays RECEIVE_CLIENT_FINAL_MESSAGE, but the
		// connection is closed; nothing can continue the exchange.
		return s.fail(KindProofLength, "Argument arrays must be of the same length")
	}
	if subtle.ConstantTimeCompare(s.mech.StoredKey(xor(sig, c.Proof)), s.cred.StoredKey) != 1 {
		return s.fail(KindAuthFailed, "Invalid client credentials")
	}
	final := ServerFinal{Signature: s.mech.ServerSignature(s.cred.ServerKey, auth)}
	s.cred = Credential{}
	s.state = Complete
	return []byte(final.String()), nil
}

func (s *Server) illegalState() ([]byte, error) {
	// Kafka's IllegalSaslStateException fails the exchange as well.
	return s.fail(KindIllegalState, "Unexpected challenge in Sasl server state "+s.state.String())
}

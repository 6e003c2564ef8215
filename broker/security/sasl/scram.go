package sasl

import (
	"errors"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

// ErrCloseConnection, wrapped in a Mechanism's error, closes the connection
// at once without an answer, as Kafka does when its SaslServer throws an
// unchecked exception (the channel is closed, nothing is written).
var ErrCloseConnection = errors.New("sasl: exchange aborted")

// NewScram returns the server side of one SCRAM exchange for mechanism m
// (scram.SHA256 or scram.SHA512), finding credentials with lookup: Kafka's
// ScramSaslServer. The authorization id is the user name. Delegation
// tokens are not served, so a client-first message with tokenauth=true is
// refused as Kafka refuses a token it does not know.
func NewScram(m scram.Mechanism, lookup scram.Lookup) Mechanism {
	return &scramServer{server: scram.NewServer(m, lookup)}
}

// scramServer adapts scram.Server to a Mechanism.
type scramServer struct {
	server *scram.Server
}

func (s *scramServer) Evaluate(token []byte) ([]byte, bool, error) {
	switch s.server.State() {
	case scram.ReceiveClientFirst:
		if first, err := scram.ParseClientFirst(token); err == nil && first.TokenAuth() {
			// Kafka's "Token Authentication failed: Invalid tokenId" is
			// a SaslException: the client sees the generic message.
			return nil, false, errors.New("sasl: delegation token authentication is not served")
		}
		out, err := s.server.Start(token)
		return out, false, scramError(err)
	default:
		// ReceiveClientFinal; the Authenticator passes nothing after
		// complete or failed, and the server refuses it as Kafka's
		// IllegalSaslStateException if it did.
		out, err := s.server.Finish(token)
		if err != nil {
			return nil, false, scramError(err)
		}
		return out, true, nil
	}
}

// scramError maps a failed step to what the Authenticator answers: the
// generic SASL_AUTHENTICATION_FAILED message for a bad message, unknown
// user or wrong proof (a plain error, so no user enumeration); Kafka's own
// message for an authorization id that is not the user; a closed
// connection for a proof of the wrong length. (An illegal state cannot
// happen: the Authenticator stops calling once done or failed.)
func scramError(err error) error {
	if err == nil {
		return nil
	}
	var se *scram.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Kind {
	case scram.KindAuthorizationID:
		return &AuthenticationError{Message: se.Msg}
	case scram.KindProofLength:
		return errors.Join(ErrCloseConnection, err)
	}
	return err
}

func (s *scramServer) AuthorizationID() string { return s.server.Username() }

func (s *scramServer) CredentialExpiryMs() (int64, bool) { return 0, false }

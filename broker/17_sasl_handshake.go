package broker

// SaslHandshake (key 17), v0-v1, as a request on a connection that is not
// authenticating.
//
// Behavior:
//   - the handshake itself is the SASL authenticator's
//     (broker/security/sasl), which sees every frame of a SASL listener's
//     connection before it is authenticated, and a SaslHandshake that
//     begins a re-authentication (KIP-368);
//   - any other SaslHandshake (on PLAINTEXT, on a session without an
//     expiry, or within a second of the last re-authentication) is
//     answered ILLEGAL_SASL_STATE with no mechanisms, as Kafka's KafkaApis.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(17, 0, 1, handleSASLHandshake) }

func handleSASLHandshake(_ *Broker, _ *request, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.SASLHandshakeResponse](req)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

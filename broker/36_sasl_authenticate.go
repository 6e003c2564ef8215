package broker

// SaslAuthenticate (key 36), v0-v2, as a request on an authenticated
// connection.
//
// Behavior:
//   - the exchange itself is the SASL authenticator's
//     (broker/security/sasl);
//   - a SaslAuthenticate once the connection is authenticated (or on
//     PLAINTEXT) is answered ILLEGAL_SASL_STATE with Kafka's message.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(36, 0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(_ *Broker, _ *request, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.SASLAuthenticateResponse](req)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp, nil
}

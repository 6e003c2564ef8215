package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// State is where an authentication stands, as Kafka's
// SaslServerAuthenticator.SaslState.
type State uint8

// The states, in Kafka's order.
const (
	// InitialRequest: nothing read yet.
	InitialRequest State = iota
	// HandshakeOrVersionsRequest: a Kafka request header was read;
	// ApiVersions or SaslHandshake may come.
	HandshakeOrVersionsRequest
	// HandshakeRequest: ApiVersions was answered; SaslHandshake must come.
	HandshakeRequest
	// Authenticate: the mechanism's tokens are exchanged.
	Authenticate
	// Complete: authenticated; frames are ordinary requests.
	Complete
	// Failed: the connection is closing.
	Failed
	// ReauthProcessHandshake: a SaslHandshake on an authenticated
	// connection began a re-authentication.
	ReauthProcessHandshake
	// ReauthBadMechanism: the re-authentication asked for another
	// mechanism; its next frame fails it.
	ReauthBadMechanism
)

var stateNames = [...]string{"INITIAL_REQUEST", "HANDSHAKE_OR_VERSIONS_REQUEST", "HANDSHAKE_REQUEST",
	"AUTHENTICATE", "COMPLETE", "FAILED", "REAUTH_PROCESS_HANDSHAKE", "REAUTH_BAD_MECHANISM"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// Kafka's defaults.
const (
	// DefaultMaxReceiveSize is sasl.server.max.receive.size: the largest
	// frame read before authentication completes.
	DefaultMaxReceiveSize = 524288
	// minReauthInterval is the least time between two re-authentications
	// of a connection (KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS);
	// a SaslHandshake sooner is an ordinary request.
	minReauthInterval = time.Second
)

// Config is a listener's SASL configuration.
type Config struct {
	// Mechanisms are sasl.enabled.mechanisms, in their order, which
	// SaslHandshake responses list.
	Mechanisms []string
	// New returns the server side of one exchange of an enabled
	// mechanism.
	New func(mechanism string) Mechanism
	// MaxReauthMs is connections.max.reauth.ms: when above 0, a session
	// lasts that long and the client must re-authenticate. 0 means
	// sessions do not expire (unless the credential does).
	MaxReauthMs int64
	// MaxReceiveSize is sasl.server.max.receive.size. 0 means
	// DefaultMaxReceiveSize.
	MaxReceiveSize int32
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// APIVersionsFunc answers an ApiVersions request that arrives before the
// handshake, with the broker's own handler, writing the response itself.
// It returns whether the request was answered without an error code: only
// then does Kafka move on to expect the handshake (an UNSUPPORTED_VERSION
// answer lets the client retry, KIP-511). An error closes the connection.
type APIVersionsFunc func(hdr protocol.RequestHeader, body []byte) (ok bool, err error)

// Principal is an authenticated identity, as Kafka's KafkaPrincipal.
type Principal struct {
	Type, Name string
}

// String is Kafka's form, Type:Name.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// Result says what to do after a frame.
type Result struct {
	// Write is what to send now: size-prefixed frames.
	Write []byte
	// Err, when not nil, ends the connection: at once, or when Delayed,
	// after the failed authentication delay
	// (connection.failed.authentication.delay.ms), having first sent
	// FailWrite. Its message is Kafka's and never holds a secret.
	Err error
	// Delayed: Err is an authentication failure, and the connection
	// closes after the delay, as Kafka's delayed close.
	Delayed bool
	// FailWrite is the response sent when the delay has passed, if any.
	FailWrite []byte
}

// Authenticator is the SASL server of one connection.
type Authenticator struct {
	cfg         *Config
	apiVersions APIVersionsFunc

	state     State
	mechName  string
	mech      Mechanism
	v1Headers bool // SaslHandshake v1: tokens come in SaslAuthenticate
	principal Principal
	// sessionExpiry is when the session ends (valid when hasExpiry).
	sessionExpiry time.Time
	hasExpiry     bool
	// clientReauth: the client sent SaslAuthenticate v1+, which means it
	// knows KIP-368.
	clientReauth bool
	lastReauth   time.Time

	// Set while re-authenticating: the previous session's mechanism and
	// principal, and the message of a mechanism change.
	reauth        bool
	prevMechanism string
	prevPrincipal Principal
	badMechanism  string
}

// New returns the authenticator of a new connection. apiVersions answers
// ApiVersions requests before the handshake.
func New(cfg *Config, apiVersions APIVersionsFunc) *Authenticator {
	return &Authenticator{cfg: cfg, apiVersions: apiVersions}
}

func (a *Authenticator) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// State is the current state.
func (a *Authenticator) State() State { return a.state }

// Complete reports whether the connection is authenticated and its frames
// are ordinary requests.
func (a *Authenticator) Complete() bool { return a.state == Complete }

// Principal is the authenticated principal, once Complete.
func (a *Authenticator) Principal() Principal { return a.principal }

// Mechanism is the mechanism of the current session.
func (a *Authenticator) Mechanism() string { return a.mechName }

// MaxReceiveSize is the largest frame to read while not Complete.
func (a *Authenticator) MaxReceiveSize() int32 {
	if a.cfg.MaxReceiveSize > 0 {
		return a.cfg.MaxReceiveSize
	}
	return DefaultMaxReceiveSize
}

// InvalidReceive is the result of a frame whose size prefix is negative or
// above MaxReceiveSize while authenticating: Kafka fails the
// authentication without a response.
func (a *Authenticator) InvalidReceive() Result {
	a.state = Failed
	return Result{Err: &AuthenticationError{Message: "Failing SASL authentication due to invalid receive size"}, Delayed: true}
}

// SessionExpired reports whether the session has expired: Kafka then
// closes the connection when its next request arrives, without handling
// it (a SaslHandshake that begins a re-authentication excepted).
func (a *Authenticator) SessionExpired() bool {
	return a.state == Complete && a.hasExpiry && a.now().After(a.sessionExpiry)
}

// HasSessionExpiry reports whether the session ends at some time.
func (a *Authenticator) HasSessionExpiry() bool { return a.hasExpiry }

// BeginReauthentication starts a re-authentication with a SaslHandshake
// frame read on an authenticated connection, as Kafka's
// KafkaChannel.maybeBeginServerReauthentication: only when the session
// has an expiry and the last re-authentication began a second ago or
// more. Otherwise it returns false and the frame is an ordinary request
// (which the broker answers with ILLEGAL_SASL_STATE).
func (a *Authenticator) BeginReauthentication(frame []byte) (Result, bool) {
	if a.state != Complete || !a.hasExpiry {
		return Result{}, false
	}
	now := a.now()
	if !a.lastReauth.IsZero() && now.Sub(a.lastReauth) < minReauthInterval {
		return Result{}, false
	}
	a.lastReauth = now
	a.reauth = true
	a.prevMechanism, a.prevPrincipal = a.mechName, a.principal
	a.mech, a.mechName, a.v1Headers, a.badMechanism = nil, "", false, ""
	a.hasExpiry = false
	a.state = ReauthProcessHandshake
	return a.Step(frame), true
}

// Step takes the next frame (without its size prefix) of a connection that
// is not Complete.
func (a *Authenticator) Step(frame []byte) Result {
	switch a.state {
	case InitialRequest, HandshakeOrVersionsRequest, HandshakeRequest, ReauthProcessHandshake:
		return a.kafkaRequest(frame)
	case ReauthBadMechanism:
		return a.fail(&AuthenticationError{Message: a.badMechanism}, nil)
	case Authenticate:
		return a.token(frame)
	case Complete:
		return a.closeNow(errors.New("authentication is complete: the frame is a request"))
	default:
		return a.closeNow(errors.New("authentication failed"))
	}
}

func (a *Authenticator) closeNow(err error) Result {
	a.state = Failed
	return Result{Err: err}
}

// fail is an authentication failure: the connection closes after the
// delay, with resp (if any) sent first.
func (a *Authenticator) fail(err *AuthenticationError, resp []byte) Result {
	a.state = Failed
	return Result{Err: err, Delayed: true, FailWrite: resp}
}

// kafkaRequest is Kafka's handleKafkaRequest: ApiVersions or SaslHandshake.
func (a *Authenticator) kafkaRequest(frame []byte) Result {
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err == nil && hdr.APIKey != protocol.APIVersionsKey && hdr.APIKey != saslHandshakeKey {
		err = fmt.Errorf("Unexpected Kafka request of type %s during SASL handshake.", apiName(hdr.APIKey))
	}
	var hs *kmsg.SASLHandshakeRequest
	if err == nil && hdr.APIKey == saslHandshakeKey {
		if hdr.APIVersion < 0 || hdr.APIVersion > 1 {
			err = fmt.Errorf("Error getting request for apiKey: SASL_HANDSHAKE, apiVersion: %d", hdr.APIVersion)
		} else {
			hs = kmsg.NewPtrSASLHandshakeRequest()
			hs.Version = hdr.APIVersion
			if rerr := hs.ReadFrom(body); rerr != nil {
				err = fmt.Errorf("Error getting request for apiKey: SASL_HANDSHAKE, apiVersion: %d: %w", hdr.APIVersion, rerr)
			}
		}
	}
	if err != nil {
		// Kafka's InvalidRequestException: closed at once, unanswered; the
		// first frame of a connection gets Kafka's hint about the cause.
		if a.state == InitialRequest {
			return a.closeNow(fmt.Errorf("Invalid request, potential reasons: kafka client configured with the wrong security protocol, it does not support KIP-43 or it is not a kafka client.: %w", err))
		}
		return a.closeNow(err)
	}
	if a.state == InitialRequest {
		a.state = HandshakeOrVersionsRequest
	}
	if hs == nil {
		if a.state != HandshakeOrVersionsRequest {
			return a.closeNow(fmt.Errorf("Unexpected ApiVersions request received during SASL authentication state %s", a.state))
		}
		ok, err := a.apiVersions(hdr, body)
		if err != nil {
			return a.closeNow(err)
		}
		if ok {
			a.state = HandshakeRequest
		}
		return Result{}
	}
	return a.handshake(hdr, hs)
}

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// handshake is Kafka's handleHandshakeRequest and what follows it.
func (a *Authenticator) handshake(hdr protocol.RequestHeader, req *kmsg.SASLHandshakeRequest) Result {
	if req.Version >= 1 {
		a.v1Headers = true
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = req.Version
	resp.SupportedMechanisms = slices.Clone(a.cfg.Mechanisms)
	if !slices.Contains(a.cfg.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return a.fail(&AuthenticationError{Message: "Unsupported SASL mechanism " + req.Mechanism},
			protocol.AppendResponse(nil, hdr.CorrelationID, resp))
	}
	out := protocol.AppendResponse(nil, hdr.CorrelationID, resp)
	if a.reauth && req.Mechanism != a.prevMechanism {
		a.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			req.Mechanism, a.prevMechanism)
		a.state = ReauthBadMechanism
		return Result{Write: out}
	}
	a.mechName = req.Mechanism
	a.mech = a.cfg.New(req.Mechanism)
	a.state = Authenticate
	return Result{Write: out}
}

// token is Kafka's handleSaslToken: a raw token after SaslHandshake v0, a
// SaslAuthenticate request after v1.
func (a *Authenticator) token(frame []byte) Result {
	if !a.v1Headers {
		challenge, done, err := a.mech.Evaluate(slices.Clone(frame))
		if err != nil {
			var ae *AuthenticationError
			if errors.As(err, &ae) {
				return a.fail(ae, nil)
			}
			return a.closeNow(err) // Java's SaslException is an IOException: closed at once
		}
		if done {
			a.completeSession()
			if r, failed := a.checkPrincipal(); failed {
				return a.fail(r, nil)
			}
		}
		var out []byte
		if challenge != nil {
			out = binary.BigEndian.AppendUint32(nil, uint32(len(challenge)))
			out = append(out, challenge...)
		}
		if done {
			a.finish()
		}
		return Result{Write: out}
	}

	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return a.closeNow(err)
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	if req == nil || hdr.APIVersion < 0 || hdr.APIVersion > req.MaxVersion() {
		return a.closeNow(fmt.Errorf("Error getting request for apiKey: %s, apiVersion: %d", apiName(hdr.APIKey), hdr.APIVersion))
	}
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return a.closeNow(fmt.Errorf("Error getting request for apiKey: %s, apiVersion: %d: %w", apiName(hdr.APIKey), hdr.APIVersion, err))
	}
	if hdr.APIKey != saslAuthenticateKey {
		return a.fail(&AuthenticationError{Message: fmt.Sprintf("Unexpected Kafka request of type %s during SASL authentication.", apiName(hdr.APIKey))},
			illegalStateResponse(hdr, req))
	}
	if hdr.APIVersion > 2 {
		return a.closeNow(fmt.Errorf("Version %d is not supported for apiKey SASL_AUTHENTICATE", hdr.APIVersion))
	}
	auth := req.(*kmsg.SASLAuthenticateRequest)
	if !a.clientReauth {
		a.clientReauth = hdr.APIVersion > 0
	}
	failed := func(msg string) Result {
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = hdr.APIVersion
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return a.fail(&AuthenticationError{Message: msg}, protocol.AppendResponse(nil, hdr.CorrelationID, resp))
	}
	challenge, done, err := a.mech.Evaluate(slices.Clone(auth.SASLAuthBytes))
	if err != nil {
		var ae *AuthenticationError
		if errors.As(err, &ae) {
			return failed(ae.Message)
		}
		if errors.Is(err, ErrCloseConnection) {
			return a.closeNow(err)
		}
		return failed(fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", a.phase(), a.mechName))
	}
	if done && a.reauth {
		if ae, bad := a.principalChanged(); bad {
			return failed(ae.Message)
		}
	}
	var lifetime int64
	if done {
		lifetime = a.completeSession()
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = hdr.APIVersion
	resp.SASLAuthBytes = challenge
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = lifetime
	out := protocol.AppendResponse(nil, hdr.CorrelationID, resp)
	if done {
		a.finish()
	}
	return Result{Write: out}
}

// phase is Kafka's authenticationOrReauthenticationText.
func (a *Authenticator) phase() string {
	if a.reauth {
		return "re-authentication"
	}
	return "authentication"
}

// principalChanged is Kafka's ensurePrincipalUnchanged, for a completed
// re-authentication.
func (a *Authenticator) principalChanged() (*AuthenticationError, bool) {
	p := Principal{Type: "User", Name: a.mech.AuthorizationID()}
	if p == a.prevPrincipal {
		return nil, false
	}
	return &AuthenticationError{Message: fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s",
		a.prevPrincipal.Type, a.prevPrincipal.Name, p.Type, p.Name)}, true
}

// checkPrincipal is principalChanged after a v0 exchange, which Kafka
// checks after computing the session.
func (a *Authenticator) checkPrincipal() (*AuthenticationError, bool) {
	if !a.reauth {
		return nil, false
	}
	return a.principalChanged()
}

// completeSession sets the principal and the session's expiry and
// returns the session lifetime to send, as Kafka's
// calcCompletionTimesAndReturnSessionLifetimeMs.
func (a *Authenticator) completeSession() int64 {
	now := a.now()
	nowMs := now.UnixMilli()
	credMs, hasCred := a.mech.CredentialExpiryMs()
	maxReauth := a.cfg.MaxReauthMs > 0
	var lifetime int64
	a.hasExpiry = false
	if hasCred || maxReauth {
		switch {
		case !hasCred:
			lifetime = max(0, a.cfg.MaxReauthMs)
		case !maxReauth:
			lifetime = max(0, credMs-nowMs)
		default:
			lifetime = max(0, min(credMs-nowMs, a.cfg.MaxReauthMs))
		}
		a.sessionExpiry, a.hasExpiry = now.Add(time.Duration(lifetime)*time.Millisecond), true
	}
	a.principal = Principal{Type: "User", Name: a.mech.AuthorizationID()}
	if a.reauth {
		a.principal = a.prevPrincipal // checked equal before the session is kept
	}
	return lifetime
}

// finish completes the (re-)authentication.
func (a *Authenticator) finish() {
	a.state = Complete
	a.reauth, a.prevMechanism, a.prevPrincipal, a.badMechanism = false, "", Principal{}, ""
}

// illegalStateResponse is Kafka's getErrorResponse of req with
// ILLEGAL_SASL_STATE, for a request other than SaslAuthenticate after a
// v1 handshake: the response of the request's key and version with its
// top-level error code set. A response without a top-level error code
// gets none, and the connection closes after the delay without it.
func illegalStateResponse(hdr protocol.RequestHeader, req kmsg.Request) []byte {
	resp := req.ResponseKind()
	resp.SetVersion(hdr.APIVersion)
	v := reflect.ValueOf(resp).Elem()
	f := v.FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil
	}
	f.SetInt(int64(kerr.IllegalSaslState.Code))
	return protocol.AppendResponse(nil, hdr.CorrelationID, resp)
}

// apiName is Kafka's ApiKeys name of key, for messages.
func apiName(key int16) string {
	if kmsg.RequestForKey(key) != nil {
		return upperSnake(kmsg.NameForKey(key))
	}
	return fmt.Sprintf("%d", key)
}

// upperSnake turns kmsg's "SASLHandshake"-style names into Kafka's enum
// names, "SASL_HANDSHAKE".
func upperSnake(s string) string {
	if n, ok := kafkaAPINames[s]; ok {
		return n
	}
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' && i > 0 {
			prevLower := s[i-1] >= 'a' && s[i-1] <= 'z'
			nextLower := i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z'
			if prevLower || (nextLower && s[i-1] >= 'A' && s[i-1] <= 'Z') {
				out = append(out, '_')
			}
		}
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// kafkaAPINames are the names upperSnake would get wrong.
var kafkaAPINames = map[string]string{
	"SASLHandshake":             "SASL_HANDSHAKE",
	"SASLAuthenticate":          "SASL_AUTHENTICATE",
	"ApiVersions":               "API_VERSIONS",
	"DescribeACLs":              "DESCRIBE_ACLS",
	"CreateACLs":                "CREATE_ACLS",
	"DeleteACLs":                "DELETE_ACLS",
	"AllocateProducerIDs":       "ALLOCATE_PRODUCER_IDS",
	"AlterPartitionAssignments": "ALTER_PARTITION_REASSIGNMENTS",
}

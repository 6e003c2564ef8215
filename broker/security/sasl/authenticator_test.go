package sasl

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// twoStep is a mechanism that takes "hello" then "user:NAME" (two
// rounds), or "fail" (an authentication error), or "boom" (another error).
type twoStep struct {
	round   int
	id      string
	credExp int64
	hasCred bool
}

func (m *twoStep) Evaluate(token []byte) ([]byte, bool, error) {
	s := string(token)
	switch {
	case s == "fail":
		return nil, false, &AuthenticationError{Message: "Authentication failed: test"}
	case s == "boom":
		return nil, false, errors.New("internal detail")
	case m.round == 0 && s == "hello":
		m.round++
		return []byte("who?"), false, nil
	case m.round == 1 && strings.HasPrefix(s, "user:"):
		m.id = strings.TrimPrefix(s, "user:")
		return nil, true, nil
	}
	return nil, false, &AuthenticationError{Message: "Authentication failed: out of order"}
}
func (m *twoStep) AuthorizationID() string           { return m.id }
func (m *twoStep) CredentialExpiryMs() (int64, bool) { return m.credExp, m.hasCred }

// request encodes a request frame (without its size prefix).
func request(req kmsg.Request, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 'c')
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func handshake(v int16, mech string) []byte {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = v, mech
	return request(r, 1)
}

func authenticate(v int16, token string) []byte {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = v, []byte(token)
	return request(r, 2)
}

func apiVersions(v int16) []byte {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = v
	return request(r, 3)
}

func metadata() []byte {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 9
	return request(r, 4)
}

// decode decodes one size-prefixed response frame of out into resp.
func decode(t *testing.T, out []byte, resp kmsg.Response) {
	t.Helper()
	if len(out) < 8 {
		t.Fatalf("response %q too short", out)
	}
	if n := int(binary.BigEndian.Uint32(out)); n != len(out)-4 {
		t.Fatalf("response frame of %d bytes holds %d", len(out)-4, n)
	}
	body := out[8:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
}

type harness struct {
	a          *Authenticator
	clk        *clock
	avCalls    int
	avOK       bool
	mechanisms []*twoStep
}

func newHarness(maxReauthMs int64) *harness {
	h := &harness{clk: &clock{t: time.Unix(1_700_000_000, 0)}, avOK: true}
	cfg := &Config{
		Mechanisms: []string{"TWO", "OTHER"},
		New: func(string) Mechanism {
			m := &twoStep{}
			h.mechanisms = append(h.mechanisms, m)
			return m
		},
		MaxReauthMs: maxReauthMs,
		Now:         h.clk.now,
	}
	h.a = New(cfg, func(hdr protocol.RequestHeader, body []byte) (bool, error) {
		h.avCalls++
		return h.avOK, nil
	})
	return h
}

// authenticateV1 runs a whole v1 exchange as user and returns the final
// SaslAuthenticate response.
func (h *harness) authenticateV1(t *testing.T, user string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if r := h.a.Step(handshake(1, "TWO")); r.Err != nil {
		t.Fatalf("handshake: %v", r.Err)
	}
	if r := h.a.Step(authenticate(1, "hello")); r.Err != nil {
		t.Fatalf("first token: %v", r.Err)
	}
	r := h.a.Step(authenticate(1, "user:"+user))
	if r.Err != nil {
		t.Fatalf("second token: %v", r.Err)
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	decode(t, r.Write, resp)
	return resp
}

// TestAuthenticatorTransitions: each state with each kind of frame, as
// Kafka's SaslServerAuthenticator.
func TestAuthenticatorTransitions(t *testing.T) {
	type step struct {
		frame     []byte
		state     State  // after the frame
		closeNow  bool   // Err, not Delayed
		delayed   bool   // Err, Delayed
		errSubstr string // in Err
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"v1 exchange", []step{
			{frame: handshake(1, "TWO"), state: Authenticate},
			{frame: authenticate(0, "hello"), state: Authenticate},
			{frame: authenticate(0, "user:alice"), state: Complete},
		}},
		{"api versions first", []step{
			{frame: apiVersions(3), state: HandshakeRequest},
			{frame: handshake(1, "TWO"), state: Authenticate},
		}},
		{"api versions twice", []step{
			{frame: apiVersions(3), state: HandshakeRequest},
			{frame: apiVersions(3), state: Failed, closeNow: true, errSubstr: "Unexpected ApiVersions request received during SASL authentication state HANDSHAKE_REQUEST"},
		}},
		{"metadata first", []step{
			{frame: metadata(), state: Failed, closeNow: true, errSubstr: "Invalid request, potential reasons: kafka client configured with the wrong security protocol"},
		}},
		{"metadata after api versions", []step{
			{frame: apiVersions(0), state: HandshakeRequest},
			{frame: metadata(), state: Failed, closeNow: true, errSubstr: "Unexpected Kafka request of type METADATA during SASL handshake."},
		}},
		{"garbage first", []step{
			{frame: []byte{1, 2, 3}, state: Failed, closeNow: true, errSubstr: "Invalid request, potential reasons"},
		}},
		{"handshake v2", []step{
			{frame: handshake(2, "TWO"), state: Failed, closeNow: true, errSubstr: "apiVersion: 2"},
		}},
		{"unknown mechanism", []step{
			{frame: handshake(1, "NOPE"), state: Failed, delayed: true, errSubstr: "Unsupported SASL mechanism NOPE"},
		}},
		{"authentication error", []step{
			{frame: handshake(1, "TWO"), state: Authenticate},
			{frame: authenticate(1, "fail"), state: Failed, delayed: true, errSubstr: "Authentication failed: test"},
		}},
		{"other mechanism error gets Kafka's generic message", []step{
			{frame: handshake(1, "TWO"), state: Authenticate},
			{frame: authenticate(1, "boom"), state: Failed, delayed: true, errSubstr: "Authentication failed during authentication due to invalid credentials with SASL mechanism TWO"},
		}},
		{"other request during authenticate", []step{
			{frame: handshake(1, "TWO"), state: Authenticate},
			{frame: metadata(), state: Failed, delayed: true, errSubstr: "Unexpected Kafka request of type METADATA during SASL authentication."},
		}},
		{"authenticate v3", []step{
			{frame: handshake(1, "TWO"), state: Authenticate},
			{frame: append(authenticate(2, "hello")[:2:2], append([]byte{0, 3}, authenticate(2, "hello")[4:]...)...), state: Failed, closeNow: true},
		}},
		{"v0 raw tokens", []step{
			{frame: handshake(0, "TWO"), state: Authenticate},
			{frame: []byte("hello"), state: Authenticate},
			{frame: []byte("user:bob"), state: Complete},
		}},
		{"v0 authentication error: no response", []step{
			{frame: handshake(0, "TWO"), state: Authenticate},
			{frame: []byte("fail"), state: Failed, delayed: true, errSubstr: "Authentication failed: test"},
		}},
		{"v0 other error closes at once", []step{
			{frame: handshake(0, "TWO"), state: Authenticate},
			{frame: []byte("boom"), state: Failed, closeNow: true},
		}},
		{"frame after failure", []step{
			{frame: handshake(1, "NOPE"), state: Failed, delayed: true},
			{frame: handshake(1, "TWO"), state: Failed, closeNow: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(0)
			for i, s := range tc.steps {
				r := h.a.Step(s.frame)
				if got := h.a.State(); got != s.state {
					t.Fatalf("step %d: state %s, want %s", i, got, s.state)
				}
				switch {
				case s.closeNow && (r.Err == nil || r.Delayed):
					t.Fatalf("step %d: %+v, want an immediate close", i, r)
				case s.delayed && (r.Err == nil || !r.Delayed):
					t.Fatalf("step %d: %+v, want a delayed close", i, r)
				case !s.closeNow && !s.delayed && r.Err != nil:
					t.Fatalf("step %d: %v", i, r.Err)
				}
				if s.errSubstr != "" && !strings.Contains(r.Err.Error(), s.errSubstr) {
					t.Fatalf("step %d: error %q, want %q", i, r.Err, s.errSubstr)
				}
			}
		})
	}
}

// TestAuthenticatorResponses checks what goes on the wire.
func TestAuthenticatorResponses(t *testing.T) {
	t.Run("handshake lists the mechanisms in order", func(t *testing.T) {
		h := newHarness(0)
		r := h.a.Step(handshake(1, "OTHER"))
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		decode(t, r.Write, resp)
		if resp.ErrorCode != 0 || strings.Join(resp.SupportedMechanisms, ",") != "TWO,OTHER" {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("unsupported mechanism after the delay", func(t *testing.T) {
		h := newHarness(0)
		r := h.a.Step(handshake(0, "NOPE"))
		if len(r.Write) != 0 {
			t.Fatal("answered before the delay")
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		decode(t, r.FailWrite, resp)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "TWO,OTHER" {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("challenge and completion", func(t *testing.T) {
		h := newHarness(0)
		h.a.Step(handshake(1, "TWO"))
		r := h.a.Step(authenticate(2, "hello"))
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 2
		decode(t, r.Write, resp)
		if string(resp.SASLAuthBytes) != "who?" || resp.SessionLifetimeMillis != 0 || resp.ErrorCode != 0 {
			t.Fatalf("%+v", resp)
		}
		if resp := h.authenticateFinal(t, "carol"); resp.SessionLifetimeMillis != 0 {
			t.Fatalf("lifetime %d without connections.max.reauth.ms", resp.SessionLifetimeMillis)
		}
		if p := h.a.Principal(); p.String() != "User:carol" {
			t.Fatalf("principal %s", p)
		}
		if h.a.HasSessionExpiry() {
			t.Fatal("a session without max reauth expires")
		}
	})
	t.Run("failure message", func(t *testing.T) {
		h := newHarness(0)
		h.a.Step(handshake(1, "TWO"))
		r := h.a.Step(authenticate(1, "fail"))
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		decode(t, r.FailWrite, resp)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: test" {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("illegal state response of the request's own kind", func(t *testing.T) {
		h := newHarness(0)
		h.a.Step(handshake(1, "TWO"))
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 2
		r := h.a.Step(request(fc, 9))
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.Version = 2
		decode(t, r.FailWrite, resp)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("v0 raw challenge", func(t *testing.T) {
		h := newHarness(0)
		h.a.Step(handshake(0, "TWO"))
		r := h.a.Step([]byte("hello"))
		if string(r.Write) != "\x00\x00\x00\x04who?" {
			t.Fatalf("raw challenge %q", r.Write)
		}
		if r := h.a.Step([]byte("user:x")); len(r.Write) != 0 || !h.a.Complete() {
			t.Fatalf("a nil challenge sends %q", r.Write)
		}
	})
	t.Run("api versions not ok stays", func(t *testing.T) {
		h := newHarness(0)
		h.avOK = false
		h.a.Step(apiVersions(9))
		if h.a.State() != HandshakeOrVersionsRequest || h.avCalls != 1 {
			t.Fatalf("state %s after an ApiVersions answered with an error", h.a.State())
		}
		h.avOK = true
		h.a.Step(apiVersions(3))
		if h.a.State() != HandshakeRequest {
			t.Fatalf("state %s", h.a.State())
		}
	})
	t.Run("invalid receive", func(t *testing.T) {
		h := newHarness(0)
		r := h.a.InvalidReceive()
		if !r.Delayed || r.FailWrite != nil || r.Err.Error() != "Failing SASL authentication due to invalid receive size" {
			t.Fatalf("%+v", r)
		}
		if h.a.MaxReceiveSize() != DefaultMaxReceiveSize {
			t.Fatalf("max receive %d", h.a.MaxReceiveSize())
		}
		if a := New(&Config{MaxReceiveSize: 10}, nil); a.MaxReceiveSize() != 10 {
			t.Fatalf("configured max receive %d", a.MaxReceiveSize())
		}
	})
}

func (h *harness) authenticateFinal(t *testing.T, user string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	r := h.a.Step(authenticate(1, "user:"+user))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	decode(t, r.Write, resp)
	return resp
}

// TestSessionLifetime is Kafka's calcCompletionTimesAndReturnSessionLifetimeMs.
func TestSessionLifetime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxReauth int64
		credIn    int64 // credential expiry, ms from now; 0: none
		want      int64
	}{
		{"neither", 0, 0, 0},
		{"max reauth", 5000, 0, 5000},
		{"credential", 0, 3000, 3000},
		{"credential sooner", 5000, 3000, 3000},
		{"max reauth sooner", 2000, 3000, 2000},
		{"credential expired", 5000, -100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(tc.maxReauth)
			h.a.Step(handshake(1, "TWO"))
			h.a.Step(authenticate(1, "hello"))
			if tc.credIn != 0 {
				m := h.mechanisms[0]
				m.credExp, m.hasCred = h.clk.t.UnixMilli()+tc.credIn, true
			}
			resp := h.authenticateFinal(t, "u")
			if resp.SessionLifetimeMillis != tc.want {
				t.Fatalf("lifetime %d, want %d", resp.SessionLifetimeMillis, tc.want)
			}
			if h.a.HasSessionExpiry() != (tc.maxReauth > 0 || tc.credIn != 0) {
				t.Fatalf("expiry %v", h.a.HasSessionExpiry())
			}
		})
	}
}

// TestReauthentication: KIP-368 as Kafka's KafkaChannel and
// SaslServerAuthenticator.ReauthInfo.
func TestReauthentication(t *testing.T) {
	t.Run("expiry", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.clk.t = h.clk.t.Add(1000 * time.Millisecond)
		if h.a.SessionExpired() {
			t.Fatal("expired at its lifetime: Kafka needs now past the expiry")
		}
		h.clk.t = h.clk.t.Add(time.Millisecond)
		if !h.a.SessionExpired() {
			t.Fatal("not expired after its lifetime")
		}
	})
	t.Run("no expiry, no re-authentication", func(t *testing.T) {
		h := newHarness(0)
		h.authenticateV1(t, "alice")
		if _, ok := h.a.BeginReauthentication(handshake(1, "TWO")); ok {
			t.Fatal("re-authentication began without a session expiry")
		}
	})
	t.Run("same principal", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.clk.t = h.clk.t.Add(900 * time.Millisecond)
		r, ok := h.a.BeginReauthentication(handshake(1, "TWO"))
		if !ok || r.Err != nil || h.a.State() != Authenticate {
			t.Fatalf("begin: %v %+v %s", ok, r, h.a.State())
		}
		if resp := h.authenticateV1Tokens(t, "alice"); resp.SessionLifetimeMillis != 1000 {
			t.Fatalf("lifetime %d", resp.SessionLifetimeMillis)
		}
		h.clk.t = h.clk.t.Add(1000 * time.Millisecond)
		if h.a.SessionExpired() || !h.a.Complete() {
			t.Fatal("the new session expired early")
		}
		// A second after the last start: a re-authentication again.
		if _, ok := h.a.BeginReauthentication(handshake(1, "TWO")); !ok {
			t.Fatal("re-authentication a second after the last refused")
		}
	})
	t.Run("within a second", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.a.BeginReauthentication(handshake(1, "TWO"))
		h.authenticateV1Tokens(t, "alice")
		h.clk.t = h.clk.t.Add(500 * time.Millisecond)
		if _, ok := h.a.BeginReauthentication(handshake(1, "TWO")); ok {
			t.Fatal("re-authentication began within a second of the last")
		}
	})
	t.Run("other principal", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.a.BeginReauthentication(handshake(1, "TWO"))
		h.a.Step(authenticate(1, "hello"))
		r := h.a.Step(authenticate(1, "user:bob"))
		want := "Cannot change principals during re-authentication from User.alice: User.bob"
		if !r.Delayed || r.Err == nil || r.Err.Error() != want {
			t.Fatalf("%+v", r)
		}
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		decode(t, r.FailWrite, resp)
		if resp.ErrorMessage == nil || *resp.ErrorMessage != want || resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("other principal over v0", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.a.BeginReauthentication(handshake(0, "TWO"))
		h.a.Step([]byte("hello"))
		r := h.a.Step([]byte("user:bob"))
		if !r.Delayed || r.FailWrite != nil || !strings.Contains(r.Err.Error(), "Cannot change principals") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("mechanism error during re-authentication", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.a.BeginReauthentication(handshake(1, "TWO"))
		r := h.a.Step(authenticate(1, "boom"))
		want := "Authentication failed during re-authentication due to invalid credentials with SASL mechanism TWO"
		if !r.Delayed || r.Err == nil || r.Err.Error() != want || h.a.Mechanism() != "TWO" {
			t.Fatalf("%+v, mechanism %q, want %q", r, h.a.Mechanism(), want)
		}
	})
	t.Run("other mechanism", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		r, _ := h.a.BeginReauthentication(handshake(1, "OTHER"))
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		decode(t, r.Write, resp)
		if resp.ErrorCode != 0 || h.a.State() != ReauthBadMechanism {
			t.Fatalf("handshake %+v, state %s: Kafka accepts it and fails the next frame", resp, h.a.State())
		}
		r = h.a.Step(authenticate(1, "hello"))
		want := "SASL mechanism 'OTHER' requested by client is not supported for re-authentication of mechanism 'TWO'"
		if !r.Delayed || r.FailWrite != nil || r.Err.Error() != want {
			t.Fatalf("%+v, want %q", r, want)
		}
	})
	t.Run("api versions during re-authentication", func(t *testing.T) {
		h := newHarness(1000)
		h.authenticateV1(t, "alice")
		h.a.BeginReauthentication(handshake(1, "TWO"))
		// BeginReauthentication took the handshake; an ApiVersions
		// next is a request other than SaslAuthenticate, as in Kafka.
		r := h.a.Step(apiVersions(3))
		if r.Err == nil || !r.Delayed || len(r.FailWrite) == 0 ||
			r.Err.Error() != "Unexpected Kafka request of type API_VERSIONS during SASL authentication." {
			t.Fatalf("%+v", r)
		}
	})
}

func (h *harness) authenticateV1Tokens(t *testing.T, user string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if r := h.a.Step(authenticate(1, "hello")); r.Err != nil {
		t.Fatal(r.Err)
	}
	return h.authenticateFinal(t, user)
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{InitialRequest: "INITIAL_REQUEST", ReauthBadMechanism: "REAUTH_BAD_MECHANISM", State(99): "State(99)"} {
		if s.String() != want {
			t.Errorf("%d: %s, want %s", s, s, want)
		}
	}
	for key, want := range map[int16]string{3: "METADATA", 17: "SASL_HANDSHAKE", 29: "DESCRIBE_ACLS", 22: "INIT_PRODUCER_ID", 999: "999"} {
		if got := apiName(key); got != want {
			t.Errorf("apiName(%d) = %s, want %s", key, got, want)
		}
	}
}

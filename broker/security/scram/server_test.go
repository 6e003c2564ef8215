package scram

import (
	"bytes"
	"errors"
	"testing"
)

// rfc7677 is RFC 7677's SCRAM-SHA-256 example: user "user", password
// "pencil".
var rfc7677 = struct {
	salt                                               []byte
	clientFirst, serverFirst, clientFinal, serverFinal string
	serverNonce                                        string
}{
	salt:        mustB64("W22ZaJ0SNY7soEsUEjb6gQ=="),
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
}

func mustB64(s string) []byte {
	b, err := javaBase64(s)
	if err != nil {
		panic(err)
	}
	return b
}

// users is a Lookup over a fixed table.
func users(creds map[string]Credential) Lookup {
	return func(name string, m Mechanism) (Credential, bool) {
		c, ok := creds[m.Name()+"/"+name]
		return c, ok
	}
}

func rfcServer(t *testing.T) *Server {
	t.Helper()
	cred, err := NewCredential(SHA256, "pencil", rfc7677.salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(SHA256, users(map[string]Credential{"SCRAM-SHA-256/user": cred}))
	s.Nonce = func() string { return rfc7677.serverNonce }
	return s
}

func TestServerRFC7677(t *testing.T) {
	s := rfcServer(t)
	sf, err := s.Start([]byte(rfc7677.clientFirst))
	if err != nil {
		t.Fatal(err)
	}
	if string(sf) != rfc7677.serverFirst {
		t.Fatalf("server-first %q, want %q", sf, rfc7677.serverFirst)
	}
	if s.State() != ReceiveClientFinal || s.Username() != "" {
		t.Fatalf("after Start: state %v, username %q", s.State(), s.Username())
	}
	fin, err := s.Finish([]byte(rfc7677.clientFinal))
	if err != nil {
		t.Fatal(err)
	}
	if string(fin) != rfc7677.serverFinal {
		t.Fatalf("server-final %q, want %q", fin, rfc7677.serverFinal)
	}
	if s.State() != Complete || s.Username() != "user" || s.TokenAuth() {
		t.Fatalf("after Finish: state %v, username %q, token %v", s.State(), s.Username(), s.TokenAuth())
	}
	// The client's side of the same exchange: its proof from the
	// password, and the server signature it checks.
	salted, err := SHA256.SaltedPassword("pencil", rfc7677.salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := ParseClientFirst([]byte(rfc7677.clientFirst))
	cfin, _ := ParseClientFinal([]byte(rfc7677.clientFinal))
	auth := AuthMessage(cf.Bare(), rfc7677.serverFirst, cfin.WithoutProof())
	if got := SHA256.ClientProof(salted, auth); !bytes.Equal(got, cfin.Proof) {
		t.Errorf("client proof %x, want %x", got, cfin.Proof)
	}
	sfin, _ := ParseServerFinal([]byte(rfc7677.serverFinal))
	if got := SHA256.ServerSignature(SHA256.ServerKey(salted), auth); !bytes.Equal(got, sfin.Signature) {
		t.Errorf("server signature %x, want %x", got, sfin.Signature)
	}
}

func TestServerRefusals(t *testing.T) {
	lowIter, _ := NewCredential(SHA256, "pencil", rfc7677.salt, 4095)
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	tests := []struct {
		name        string
		clientFirst string
		clientFinal string // "" stops after Start
		kind        ErrorKind
		msg         string // Kafka's message (Error.Msg)
		client      string // what the client is told
	}{
		{"bad client-first", "n,,n=user", "", KindAuthFailed, "Invalid SCRAM client first message format", generic},
		{"channel binding asked", "p=tls-unique,,n=user,r=abc", "", KindAuthFailed, "Invalid SCRAM client first message format", generic},
		{"unknown user", "n,,n=nobody,r=abc", "", KindAuthFailed, "Authentication failed: Invalid user credentials", generic},
		{"other authzid", "n,a=admin,n=user,r=abc", "", KindAuthorizationID,
			"Authentication failed: Client requested an authorization id that is different from username",
			"Authentication failed: Client requested an authorization id that is different from username"},
		{"unknown user before authzid", "n,a=admin,n=nobody,r=abc", "", KindAuthFailed, "Authentication failed: Invalid user credentials", generic},
		{"too few iterations", "n,,n=low,r=abc", "", KindAuthFailed, "Iterations 4095 is less than the minimum 4096 for SCRAM_SHA_256", generic},
		{"bad client-final", rfc7677.clientFirst, "c=biws,r=x", KindAuthFailed, "Invalid SCRAM client final message format", generic},
		{"nonce not extended", rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			KindAuthFailed, "Invalid client nonce in the final client message.", generic},
		{"wrong proof", rfc7677.clientFirst,
			"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
			KindAuthFailed, "Invalid client credentials", generic},
		{"short proof", rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA",
			KindProofLength, "Argument arrays must be of the same length", ""},
		{"channel binding changes the proof", rfc7677.clientFirst,
			"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			KindAuthFailed, "Invalid client credentials", generic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rfcServer(t)
			base := s.lookup
			s.lookup = func(name string, m Mechanism) (Credential, bool) {
				if name == "low" {
					return lowIter, true
				}
				return base(name, m)
			}
			_, err := s.Start([]byte(tt.clientFirst))
			if tt.clientFinal != "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				_, err = s.Finish([]byte(tt.clientFinal))
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want an *Error", err)
			}
			if e.Kind != tt.kind || e.Msg != tt.msg {
				t.Errorf("error kind %d %q, want %d %q", e.Kind, e.Msg, tt.kind, tt.msg)
			}
			if got := e.ClientMessage(SHA256, false); got != tt.client {
				t.Errorf("client message %q, want %q", got, tt.client)
			}
			if s.State() != Failed || s.Username() != "" {
				t.Errorf("state %v username %q, want FAILED and none", s.State(), s.Username())
			}
			// A failed exchange takes nothing more.
			_, err = s.Finish([]byte(rfc7677.clientFinal))
			if !errors.As(err, &e) || e.Kind != KindIllegalState || e.Msg != "Unexpected challenge in Sasl server state FAILED" {
				t.Errorf("after failure: %v", err)
			}
		})
	}
}

func TestServerStateErrors(t *testing.T) {
	s := rfcServer(t)
	_, err := s.Finish([]byte(rfc7677.clientFinal))
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindIllegalState || e.Code() != CodeIllegalSaslState ||
		e.Msg != "Unexpected challenge in Sasl server state RECEIVE_CLIENT_FIRST_MESSAGE" {
		t.Fatalf("Finish first: %v", err)
	}
	s = rfcServer(t)
	if _, err := s.Start([]byte(rfc7677.clientFirst)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start([]byte(rfc7677.clientFirst)); !errors.As(err, &e) ||
		e.Msg != "Unexpected challenge in Sasl server state RECEIVE_CLIENT_FINAL_MESSAGE" {
		t.Fatalf("Start twice: %v", err)
	}
	s = rfcServer(t)
	s.Start([]byte(rfc7677.clientFirst))
	s.Finish([]byte(rfc7677.clientFinal))
	if _, err := s.Start([]byte(rfc7677.clientFirst)); !errors.As(err, &e) ||
		e.Msg != "Unexpected challenge in Sasl server state COMPLETE" {
		t.Fatalf("Start after completion: %v", err)
	}
}

func TestErrorAnswers(t *testing.T) {
	tests := []struct {
		e      Error
		reauth bool
		m      Mechanism
		code   int16
		client string
	}{
		{Error{KindAuthFailed, "Invalid client credentials"}, false, SHA512, 58,
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{Error{KindAuthFailed, "Invalid client credentials"}, true, SHA256, 58,
			"Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{Error{KindAuthorizationID, "m"}, false, SHA256, 58, "m"},
		{Error{KindIllegalState, "s"}, false, SHA256, 34, "s"},
		{Error{KindProofLength, "p"}, false, SHA256, 0, ""},
	}
	for _, tt := range tests {
		if got := tt.e.Code(); got != tt.code {
			t.Errorf("%v: code %d, want %d", tt.e, got, tt.code)
		}
		if got := tt.e.ClientMessage(tt.m, tt.reauth); got != tt.client {
			t.Errorf("%v: client message %q, want %q", tt.e, got, tt.client)
		}
	}
}

func TestServerTokenAuthReported(t *testing.T) {
	s := rfcServer(t)
	cf := "n,,n=user,r=rOprNGfwEbeRWgbNEkqO,tokenauth=TRUE,other=x"
	if _, err := s.Start([]byte(cf)); err != nil {
		t.Fatal(err)
	}
	if !s.TokenAuth() {
		t.Error("TokenAuth false for tokenauth=TRUE")
	}
	if got := s.Extensions(); len(got) != 2 || got[1] != (Extension{"other", "x"}) {
		t.Errorf("extensions %v", got)
	}
}

func TestRandomString(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := RandomString()
		if len(s) == 0 || len(s) > 26 || seen[s] {
			t.Fatalf("nonce %q (len %d, seen %v)", s, len(s), seen[s])
		}
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
				t.Fatalf("nonce %q has %q", s, c)
			}
		}
		seen[s] = true
	}
}

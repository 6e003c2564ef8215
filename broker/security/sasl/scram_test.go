package sasl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

// scramUsers is a Lookup over one user's credentials.
func scramUsers(t *testing.T, name, password string, m scram.Mechanism) scram.Lookup {
	t.Helper()
	cred, err := scram.NewCredential(m, password, []byte("salt-of-"+name), scram.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return func(user string, mech scram.Mechanism) (scram.Credential, bool) {
		if user != name || mech != m {
			return scram.Credential{}, false
		}
		return cred, true
	}
}

// scramClientFinal is the client-final answering serverFirst for first,
// with the proof of password.
func scramClientFinal(t *testing.T, m scram.Mechanism, first scram.ClientFirst, serverFirst []byte, password string) scram.ClientFinal {
	t.Helper()
	sf, err := scram.ParseServerFirst(serverFirst)
	if err != nil {
		t.Fatalf("server-first %q: %v", serverFirst, err)
	}
	salted, err := m.SaltedPassword(password, sf.Salt, int(sf.Iterations))
	if err != nil {
		t.Fatal(err)
	}
	final := scram.ClientFinal{ChannelBinding: []byte("n,,"), Nonce: sf.Nonce}
	final.Proof = m.ClientProof(salted, scram.AuthMessage(first.Bare(), sf.String(), final.WithoutProof()))
	return final
}

// TestScramMechanism drives the adapter through whole exchanges and checks
// what each failure becomes for the Authenticator: a plain error (the
// generic SASL_AUTHENTICATION_FAILED message, so an unknown user and a
// wrong password look alike), an *AuthenticationError with Kafka's own
// message, or ErrCloseConnection.
func TestScramMechanism(t *testing.T) {
	const (
		generic = iota
		ownMessage
		closeNow
		ok
	)
	for _, m := range scram.Mechanisms {
		for _, tc := range []struct {
			name     string
			first    scram.ClientFirst
			password string
			mangle   func(*scram.ClientFinal)
			atFirst  bool // the failure comes at the client-first
			want     int
			message  string
		}{
			{name: "right password", first: scram.ClientFirst{SaslName: "alice", Nonce: "cn"}, password: "alice-secret", want: ok},
			{name: "authzid of the user", first: scram.ClientFirst{AuthzID: "alice", SaslName: "alice", Nonce: "cn"}, password: "alice-secret", want: ok},
			{name: "wrong password", first: scram.ClientFirst{SaslName: "alice", Nonce: "cn"}, password: "wrong", want: generic},
			{name: "unknown user", first: scram.ClientFirst{SaslName: "mallory", Nonce: "cn"}, atFirst: true, want: generic},
			{name: "bad saslname", first: scram.ClientFirst{SaslName: "al=ice", Nonce: "cn"}, atFirst: true, want: generic},
			{name: "tokenauth", first: scram.ClientFirst{SaslName: "alice", Nonce: "cn", Extensions: []scram.Extension{{Key: "tokenauth", Value: "true"}}},
				atFirst: true, want: generic},
			{name: "other authzid", first: scram.ClientFirst{AuthzID: "bob", SaslName: "alice", Nonce: "cn"}, atFirst: true, want: ownMessage,
				message: "Authentication failed: Client requested an authorization id that is different from username"},
			{name: "bad nonce", first: scram.ClientFirst{SaslName: "alice", Nonce: "cn"}, password: "alice-secret",
				mangle: func(f *scram.ClientFinal) { f.Nonce += "x" }, want: generic},
			{name: "proof of the wrong length", first: scram.ClientFirst{SaslName: "alice", Nonce: "cn"}, password: "alice-secret",
				mangle: func(f *scram.ClientFinal) { f.Proof = f.Proof[:8] }, want: closeNow},
		} {
			t.Run(m.Name()+"/"+tc.name, func(t *testing.T) {
				mech := NewScram(m, scramUsers(t, "alice", "alice-secret", m))
				check := func(err error) {
					t.Helper()
					var ae *AuthenticationError
					switch tc.want {
					case generic:
						if err == nil || errors.As(err, &ae) || errors.Is(err, ErrCloseConnection) {
							t.Fatalf("error %v, want a plain one (the generic message)", err)
						}
					case ownMessage:
						if !errors.As(err, &ae) || ae.Message != tc.message {
							t.Fatalf("error %v, want the AuthenticationError %q", err, tc.message)
						}
					case closeNow:
						if !errors.Is(err, ErrCloseConnection) {
							t.Fatalf("error %v, want ErrCloseConnection", err)
						}
					}
					if mech.AuthorizationID() != "" {
						t.Errorf("authorization id %q after a failure", mech.AuthorizationID())
					}
				}
				serverFirst, done, err := mech.Evaluate([]byte(tc.first.String()))
				if tc.atFirst {
					check(err)
					return
				}
				if err != nil || done {
					t.Fatalf("client-first: done %v, error %v", done, err)
				}
				final := scramClientFinal(t, m, tc.first, serverFirst, tc.password)
				if tc.mangle != nil {
					tc.mangle(&final)
				}
				serverFinal, done, err := mech.Evaluate([]byte(final.String()))
				if tc.want != ok {
					check(err)
					return
				}
				if err != nil || !done {
					t.Fatalf("client-final: done %v, error %v", done, err)
				}
				sf, _ := scram.ParseServerFirst(serverFirst)
				salted, _ := m.SaltedPassword("alice-secret", sf.Salt, int(sf.Iterations))
				auth := scram.AuthMessage(tc.first.Bare(), sf.String(), final.WithoutProof())
				want := scram.ServerFinal{Signature: m.ServerSignature(m.ServerKey(salted), auth)}.String()
				if !bytes.Equal(serverFinal, []byte(want)) {
					t.Errorf("server-final %q, want %q", serverFinal, want)
				}
				if mech.AuthorizationID() != "alice" {
					t.Errorf("authorization id %q, want alice", mech.AuthorizationID())
				}
				if _, exp := mech.CredentialExpiryMs(); exp {
					t.Error("a SCRAM credential has no expiry")
				}
			})
		}
	}
}

package sasl

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/broker/security/scram"
	"github.com/gregor-broker/gregor/protocol"
)

// FuzzAuthenticatorFrames feeds the authenticator a sequence of frames
// (each 2-byte length-prefixed in the input), with a real PLAIN behind
// it, then a re-authentication: it must never panic, and its writes must
// be whole size-prefixed frames.
func FuzzAuthenticatorFrames(f *testing.F) {
	seq := func(frames ...[]byte) []byte {
		var b []byte
		for _, fr := range frames {
			b = binary.BigEndian.AppendUint16(b, uint16(len(fr)))
			b = append(b, fr...)
		}
		return b
	}
	f.Add(seq(apiVersions(3), handshake(1, "PLAIN"), authenticate(1, "\x00a\x00b"), handshake(1, "PLAIN"), authenticate(2, "\x00a\x00b")))
	f.Add(seq(handshake(0, "PLAIN"), []byte("\x00a\x00b"), handshake(0, "PLAIN"), []byte("\x00a\x00c")))
	f.Add(seq(handshake(1, "X"), metadata()))
	f.Add(seq(metadata()))
	f.Add(seq(handshake(1, "PLAIN"), metadata()))
	users := NewPlainUsers([]JAASEntry{{LoginModule: PlainLoginModule, Options: map[string]string{"user_a": "b"}}})
	f.Fuzz(func(t *testing.T, in []byte) {
		now := time.Unix(1_700_000_000, 0)
		cfg := &Config{Mechanisms: []string{"PLAIN"}, New: func(string) Mechanism { return NewPlain(users) },
			MaxReauthMs: 1000, Now: func() time.Time { return now }}
		a := New(cfg, func(_ protocol.RequestHeader, body []byte) (bool, error) { return len(body)%2 == 0, nil })
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			frame := in[:n]
			in = in[n:]
			var r Result
			if a.Complete() {
				now = now.Add(1100 * time.Millisecond)
				var ok bool
				if r, ok = a.BeginReauthentication(frame); !ok {
					continue
				}
			} else {
				r = a.Step(frame)
			}
			for _, w := range [][]byte{r.Write, r.FailWrite} {
				if len(w) != 0 && (len(w) < 4 || int(binary.BigEndian.Uint32(w)) != len(w)-4) {
					t.Fatalf("write %x is not one size-prefixed frame", w)
				}
			}
			if r.Err != nil {
				if a.State() != Failed {
					t.Fatalf("state %s after %v", a.State(), r.Err)
				}
				return
			}
		}
	})
}

// FuzzScramMechanism feeds the SCRAM adapter a client-first and a
// client-final of any bytes: it must never panic, and never complete but
// as the one user whose credential the lookup has.
func FuzzScramMechanism(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("n,a=bob,n=alice,r=abc"), []byte(""))
	f.Add([]byte("n,,n=alice,r=abc,tokenauth=true"), []byte("c=biws,r=abcd,p=AAAA"))
	f.Add([]byte("y,,n=al=2Cice,r=x"), []byte("c=biws,r=x,p="))
	cred, err := scram.NewCredential(scram.SHA256, "secret", []byte("salt"), scram.MinIterations)
	if err != nil {
		f.Fatal(err)
	}
	lookup := func(user string, m scram.Mechanism) (scram.Credential, bool) { return cred, user == "alice" }
	f.Fuzz(func(t *testing.T, first, final []byte) {
		m := NewScram(scram.SHA256, lookup)
		for _, tok := range [][]byte{first, final} {
			_, done, err := m.Evaluate(tok)
			if err != nil {
				return
			}
			if done {
				if m.AuthorizationID() != "alice" {
					t.Fatalf("completed as %q", m.AuthorizationID())
				}
				return
			}
		}
	})
}

package scram

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzParseClientFirst: ParseClientFirst never panics, and what it
// accepts formats to a message that parses to the same value.
func FuzzParseClientFirst(f *testing.F) {
	for _, s := range []string{rfc7677.clientFirst, "n,a=u,m=x,n=u=2C,r=abc,tokenauth=true,k=a=b", "n,,n=u,r=x,k=1,k=2", "y,,n=u,r=x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseClientFirst(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		back, err := ParseClientFirst([]byte(c.String()))
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%q formats to %q, which parses to %+v, %v", b, c.String(), back, err)
		}
		Username(c.SaslName)
	})
}

// FuzzParseServerFirst: never panics; an accepted message round-trips.
func FuzzParseServerFirst(f *testing.F) {
	for _, s := range []string{rfc7677.serverFirst, "m=x,r=a,s=,i=1,e=x", "r=a,s=c2FsdA==,i=2147483648"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseServerFirst(b)
		if err != nil {
			return
		}
		if s.Iterations <= 0 {
			t.Fatalf("%q: iterations %d accepted", b, s.Iterations)
		}
		back, err := ParseServerFirst([]byte(s.String()))
		if err != nil || back.Nonce != s.Nonce || !bytes.Equal(back.Salt, s.Salt) || back.Iterations != s.Iterations {
			t.Fatalf("%q formats to %q: %+v, %v", b, s.String(), back, err)
		}
	})
}

// FuzzParseClientFinal: never panics; an accepted message round-trips.
func FuzzParseClientFinal(f *testing.F) {
	for _, s := range []string{rfc7677.clientFinal, "c=,r=a,x=y,p=", "c=biwt,r=a,p=AAAB"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseClientFinal(b)
		if err != nil {
			return
		}
		back, err := ParseClientFinal([]byte(c.String()))
		if err != nil || back.Nonce != c.Nonce || !bytes.Equal(back.Proof, c.Proof) || !bytes.Equal(back.ChannelBinding, c.ChannelBinding) {
			t.Fatalf("%q formats to %q: %+v, %v", b, c.String(), back, err)
		}
	})
}

// FuzzParseServerFinal: never panics; an accepted message round-trips.
func FuzzParseServerFinal(f *testing.F) {
	for _, s := range []string{rfc7677.serverFinal, "e=invalid-proof", "v=,a=b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseServerFinal(b)
		if err != nil {
			return
		}
		back, err := ParseServerFinal([]byte(s.String()))
		if err != nil || back.Error != s.Error || !bytes.Equal(back.Signature, s.Signature) {
			t.Fatalf("%q formats to %q: %+v, %v", b, s.String(), back, err)
		}
	})
}

// FuzzParseCredential: never panics; an accepted string formats to one
// that parses to the same credential.
func FuzzParseCredential(f *testing.F) {
	for _, s := range []string{"salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=4096",
		"salt=c2FsdA,stored_key=,server_key=AQI,iterations=-1,,", "salt=a=b,salt=YQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCredential(s)
		if err != nil {
			if !errors.Is(err, ErrCredentialString) {
				t.Fatalf("error %v is not ErrCredentialString", err)
			}
			return
		}
		back, err := ParseCredential(FormatCredential(c))
		if err != nil || FormatCredential(back) != FormatCredential(c) {
			t.Fatalf("%q: %+v does not come back: %+v, %v", s, c, back, err)
		}
	})
}

// FuzzDecodeRecord: DecodeRecord and DecodeRemoveRecord never panic and
// never allocate more than the input holds (every length is checked
// against what remains); what decodes encodes to bytes that decode to the
// same record.
func FuzzDecodeRecord(f *testing.F) {
	r := Record{Name: "alice", Mechanism: 1, Credential: Credential{Salt: []byte("s"), StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}}
	f.Add(must(r.Encode()))
	f.Add(must(RemoveRecord{Name: "bob", Mechanism: 2}.Encode()))
	f.Add([]byte{1, 11, 0, 0x81, 0x80, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeRecord(b); err == nil {
			enc, err := r.Encode()
			if err != nil {
				t.Fatalf("%+v does not encode: %v", r, err)
			}
			back, err := DecodeRecord(enc)
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Fatalf("%+v encodes to %x: %+v, %v", r, enc, back, err)
			}
		} else if !errors.Is(err, ErrRecord) {
			t.Fatalf("error %v is not ErrRecord", err)
		}
		if r, err := DecodeRemoveRecord(b); err == nil {
			enc, err := r.Encode()
			if back, err2 := DecodeRemoveRecord(enc); err != nil || err2 != nil || back != r {
				t.Fatalf("%+v encodes to %x: %+v, %v %v", r, enc, back, err, err2)
			}
		}
	})
}

// FuzzExchange drives a server with any client-first and client-final
// messages: it never panics, ends Failed with an *Error or moves on
// without one, and completes only with the RFC 7677 client's messages.
func FuzzExchange(f *testing.F) {
	cred, err := NewCredential(SHA256, "pencil", rfc7677.salt, 4096)
	if err != nil {
		f.Fatal(err)
	}
	lookup := users(map[string]Credential{"SCRAM-SHA-256/user": cred})
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO,tokenauth=true"), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,,n=nobody,r=x"), []byte("c=biws,r=x,p=AAAA"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewServer(SHA256, lookup)
		s.Nonce = func() string { return rfc7677.serverNonce }
		check := func(step string, out []byte, err error, next ServerState) {
			var e *Error
			switch {
			case err == nil && s.State() != next:
				t.Fatalf("%s: no error but state %v", step, s.State())
			case err == nil && len(out) == 0:
				t.Fatalf("%s: no error and no message", step)
			case err != nil && (!errors.As(err, &e) || s.State() != Failed || out != nil):
				t.Fatalf("%s: error %v, state %v, out %q", step, err, s.State(), out)
			}
		}
		out, err := s.Start(first)
		check("Start", out, err, ReceiveClientFinal)
		out, err = s.Finish(final)
		check("Finish", out, err, Complete)
		if s.State() == Complete && (s.Username() != "user" || string(out) != rfc7677.serverFinal) {
			t.Fatalf("completed as %q with %q", s.Username(), out)
		}
	})
}

// FuzzParseAddScram: any argument is parsed or refused with ErrAddScram,
// never a panic, and what it accepts is within Kafka's bounds.
func FuzzParseAddScram(f *testing.F) {
	for _, s := range []string{
		"SCRAM-SHA-512=[name=alice,password=alice-secret]",
		"SCRAM-SHA-256=[name=bob,salt=AAAA,saltedpassword=AAAA,iterations=4096]",
		"SCRAM-SHA-512=[]", "=", "SCRAM-SHA-512=[name=\"\"]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		got, err := ParseAddScram(arg)
		if err != nil {
			if !errors.Is(err, ErrAddScram) {
				t.Fatalf("error %v is not ErrAddScram", err)
			}
			return
		}
		if !got.Mechanism.Valid() || got.Credential.Iterations < MinIterations || got.Credential.Iterations > MaxIterations {
			t.Fatalf("accepted %+v", got)
		}
	})
}

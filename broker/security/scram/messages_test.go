package scram

import (
	"errors"
	"slices"
	"testing"
)

func TestParseClientFirst(t *testing.T) {
	tests := []struct {
		in   string
		want ClientFirst
	}{
		{"n,,n=user,r=abc", ClientFirst{SaslName: "user", Nonce: "abc"}},
		{"n,a=us=2Cer,n=us=2Cer,r=a!b~", ClientFirst{AuthzID: "us=2Cer", SaslName: "us=2Cer", Nonce: "a!b~"}},
		{"n,,m=whatever=,n=user,r=abc", ClientFirst{SaslName: "user", Nonce: "abc"}},
		{"n,,n=user,r=abc,tokenauth=true,x=a=b", ClientFirst{SaslName: "user", Nonce: "abc",
			Extensions: []Extension{{"tokenauth", "true"}, {"x", "a=b"}}}},
		{"n,,n=user,r=abc,k=1,k=2", ClientFirst{SaslName: "user", Nonce: "abc", Extensions: []Extension{{"k", "2"}}}},
		{"n,,n=\x01\x7f,r=abc", ClientFirst{SaslName: "\x01\x7f", Nonce: "abc"}},
	}
	for _, tt := range tests {
		got, err := ParseClientFirst([]byte(tt.in))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got.AuthzID != tt.want.AuthzID || got.SaslName != tt.want.SaslName || got.Nonce != tt.want.Nonce ||
			!slices.Equal(got.Extensions, tt.want.Extensions) {
			t.Errorf("%q: %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestParseRefusals lists what each parser refuses, with Kafka's message.
func TestParseRefusals(t *testing.T) {
	const (
		cFirst = "Invalid SCRAM client first message format"
		sFirst = "Invalid SCRAM server first message format"
		cFinal = "Invalid SCRAM client final message format"
		sFinal = "Invalid SCRAM server final message format"
	)
	parsers := map[string]func([]byte) error{
		"client-first": func(b []byte) error { _, err := ParseClientFirst(b); return err },
		"server-first": func(b []byte) error { _, err := ParseServerFirst(b); return err },
		"client-final": func(b []byte) error { _, err := ParseClientFinal(b); return err },
		"server-final": func(b []byte) error { _, err := ParseServerFinal(b); return err },
	}
	tests := []struct {
		parser, in, msg string
	}{
		{"client-first", "", cFirst},
		{"client-first", "y,,n=user,r=abc", cFirst},            // client supports channel binding
		{"client-first", "p=tls-unique,,n=user,r=abc", cFirst}, // client requires it
		{"client-first", "n,a=,n=user,r=abc", cFirst},          // empty authzid
		{"client-first", "n,a=a=b,n=user,r=abc", cFirst},       // bare '=' in authzid
		{"client-first", "n,,n=,r=abc", cFirst},                // empty name
		{"client-first", "n,,n=us=er,r=abc", cFirst},           // bare '='
		{"client-first", "n,,n=us=2c,r=abc", cFirst},           // lower-case escape
		{"client-first", "n,,n=us\x00er,r=abc", cFirst},        // NUL
		{"client-first", "n,,n=us\xc3\xa9r,r=abc", cFirst},     // not ASCII
		{"client-first", "n,,n=user,r=", cFirst},               // empty nonce
		{"client-first", "n,,n=user,r=a b", cFirst},            // space in nonce
		{"client-first", "n,,n=user,r=abc\x7f", cFirst},        // DEL in nonce
		{"client-first", "n,,n=user,r=abc,", cFirst},           // trailing comma
		{"client-first", "n,,n=user,r=abc,x=", cFirst},         // empty extension value
		{"client-first", "n,,n=user,r=abc,x1=y", cFirst},       // extension key not alphabetic
		{"client-first", "n,,n=user,r=abc\n", cFirst},          // trailing newline
		{"client-first", "n,,r=abc,n=user", cFirst},            // order
		{"client-first", "n,,m=,n=user,r=abc", cFirst},         // empty reserved value
		{"server-first", "r=abc,s=c2FsdA==", sFirst},           // no iterations
		{"server-first", "r=abc,s=c2FsdA=,i=1", sFirst},        // bad base64
		{"server-first", "r=abc,s=c2FsdA==,i=-1", sFirst},      // sign
		{"server-first", "r=abc,s=c2FsdA==,i=0", sFirst + ": invalid iterations 0"},
		{"server-first", "r=abc,s=c2FsdA==,i=00", sFirst + ": invalid iterations 0"}, // Kafka prints the int
		{"server-first", "r=abc,s=c2FsdA==,i=2147483648", sFirst + ": invalid iterations"},
		{"server-first", "r=abc,s=c2FsdA==,i=99999999999999999999999", sFirst + ": invalid iterations"},
		{"client-final", "c=biws,r=abc", cFinal},            // no proof
		{"client-final", "c=biws,p=AAAA", cFinal},           // no nonce
		{"client-final", "c=biw,r=abc,p=AAAA", cFinal},      // bad base64
		{"client-final", "c=biws,r=abc,p=AAAA,x=y", cFinal}, // extension after the proof
		{"client-final", "c=biws,r=abc,p=AAAA=", cFinal},    // bad padding
		{"server-final", "", sFinal},
		{"server-final", "e=", sFinal},
		{"server-final", "e=a=b", sFinal},
		{"server-final", "e=x,ext=1", sFinal},
		{"server-final", "v=AAA", sFinal},
		{"server-final", "x=AAAA", sFinal},
	}
	for _, tt := range tests {
		err := parsers[tt.parser]([]byte(tt.in))
		if !errors.Is(err, ErrFormat) || err.Error() != ErrFormat.Error()+": "+tt.msg {
			t.Errorf("%s %q: %v, want %q", tt.parser, tt.in, err, tt.msg)
		}
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	cf := ClientFirst{AuthzID: "bob", SaslName: SaslName("b=o,b"), Nonce: "xyz", Extensions: []Extension{{"tokenauth", "true"}}}
	if got, want := cf.String(), "n,a=bob,n=b=3Do=2Cb,r=xyz,tokenauth=true"; got != want {
		t.Errorf("client-first %q, want %q", got, want)
	}
	back, err := ParseClientFirst([]byte(cf.String()))
	if err != nil || back.String() != cf.String() || !back.TokenAuth() {
		t.Errorf("client-first back %+v, %v", back, err)
	}
	sf := ServerFirst{Nonce: "xyz123", Salt: []byte("salt"), Iterations: 4096}
	if got, want := sf.String(), "r=xyz123,s=c2FsdA==,i=4096"; got != want {
		t.Errorf("server-first %q, want %q", got, want)
	}
	cfin := ClientFinal{ChannelBinding: []byte("n,,"), Nonce: "xyz123", Proof: []byte{1, 2, 3}}
	if got, want := cfin.String(), "c=biws,r=xyz123,p=AQID"; got != want {
		t.Errorf("client-final %q, want %q", got, want)
	}
	for _, s := range []ServerFinal{{Signature: []byte{9, 9}}, {Error: "invalid-proof"}} {
		back, err := ParseServerFinal([]byte(s.String()))
		if err != nil || back.String() != s.String() {
			t.Errorf("server-final %q: %+v, %v", s.String(), back, err)
		}
	}
}

func TestUsernameEscapes(t *testing.T) {
	tests := []struct {
		sasl, user string
		ok         bool
	}{
		{"user", "user", true},
		{"a=2Cb=3Dc", "a,b=c", true},
		{"=3D2C", "=2C", true},
		{"=2C3D", ",3D", true},
		{"a=b", "", false},
		{"a=", "", false},
	}
	for _, tt := range tests {
		got, err := Username(tt.sasl)
		if (err == nil) != tt.ok || got != tt.user {
			t.Errorf("Username(%q) = %q, %v", tt.sasl, got, err)
		}
		if tt.ok {
			if back, _ := Username(SaslName(tt.user)); back != tt.user {
				t.Errorf("SaslName(%q) does not come back: %q", tt.user, back)
			}
		}
	}
}

func TestTokenAuthValues(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "True": true, "TRUE": true, "yes": false, "1": false, "truex": false} {
		c, err := ParseClientFirst([]byte("n,,n=u,r=n,tokenauth=" + v))
		if err != nil || c.TokenAuth() != want {
			t.Errorf("tokenauth=%s: %v, %v", v, c.TokenAuth(), err)
		}
	}
}

package scram

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestNewCredentialRefusals(t *testing.T) {
	if _, err := NewCredential(SHA256, "", []byte("salt"), 4096); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty password: %v", err)
	}
	if _, err := NewCredential(Mechanism(0), "pw", []byte("salt"), 4096); !errors.Is(err, ErrUnknownMechanism) {
		t.Errorf("mechanism 0: %v", err)
	}
	if _, err := CredentialFromSaltedPassword(SHA512, []byte("salt"), nil, 4096); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty salted password: %v", err)
	}
	if _, err := CredentialFromSaltedPassword(Mechanism(3), []byte("salt"), []byte("x"), 4096); !errors.Is(err, ErrUnknownMechanism) {
		t.Errorf("mechanism 3: %v", err)
	}
}

// TestSaltedPasswordIterationsBelowOne: Kafka's Hi runs its loop from 2,
// so 0 and -1 iterations give the single-iteration result.
func TestSaltedPasswordIterationsBelowOne(t *testing.T) {
	one, err := SHA256.SaltedPassword("pw", []byte("s"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []int{0, -1} {
		got, err := SHA256.SaltedPassword("pw", []byte("s"), it)
		if err != nil || !bytes.Equal(got, one) {
			t.Errorf("%d iterations: %x, %v; want %x", it, got, err, one)
		}
	}
}

func TestCredentialKeysAreSized(t *testing.T) {
	for _, m := range Mechanisms {
		c, err := NewCredential(m, "pw", RandomSalt(), 4096)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.StoredKey) != m.Size() || len(c.ServerKey) != m.Size() || len(c.Salt) == 0 {
			t.Errorf("%s: key sizes %d %d, salt %d", m, len(c.StoredKey), len(c.ServerKey), len(c.Salt))
		}
	}
}

func TestParseCredentialErrorsHoldNoSecret(t *testing.T) {
	const secret = "c2VjcmV0a2V5"
	for _, s := range []string{
		"salt=x,stored_key=" + secret + ",server_key=" + secret + ",iterations=1",
		"stored_key=" + secret,
		"salt=" + secret + ",stored_key=" + secret + ",server_key=" + secret + ",iterations=" + secret,
		secret,
	} {
		_, err := ParseCredential(s)
		if !errors.Is(err, ErrCredentialString) {
			t.Errorf("%q: %v", s, err)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: error %q holds the key", s, err)
		}
	}
}

func TestJavaBase64(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" with ok false: refused
		ok   bool
	}{
		{"", "", true},
		{"YQ==", "a", true},
		{"YQ", "a", true},
		{"YWI=", "ab", true},
		{"YWI", "ab", true},
		{"YR==", "a", true}, // unused bits ignored
		{"Y", "", false},
		{"YQ=", "", false},
		{"YQ===", "", false},
		{"YWI==", "", false},
		{"YWJj=", "", false},
		{"=", "", false},
		{"YQ==YQ==", "", false},
		{"Y Q==", "", false},
		{"YQ\n==", "", false},
		{"-_==", "", false},
	}
	for _, tt := range tests {
		got, err := javaBase64(tt.in)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("javaBase64(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestJavaParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int32
		ok   bool
	}{
		{"4096", 4096, true}, {"+1", 1, true}, {"-1", -1, true}, {"007", 7, true},
		{"2147483647", 2147483647, true}, {"-2147483648", -2147483648, true},
		{"2147483648", 0, false}, {"", 0, false}, {"+", 0, false}, {"-", 0, false},
		{"+-1", 0, false}, {"1_000", 0, false}, {" 1", 0, false}, {"0x10", 0, false},
	}
	for _, tt := range tests {
		got, err := javaParseInt(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("javaParseInt(%q) = %d, %v", tt.in, got, err)
		}
	}
}

func TestMechanisms(t *testing.T) {
	for _, m := range Mechanisms {
		back, ok := MechanismByName(m.Name())
		if !ok || back != m || !m.Valid() {
			t.Errorf("%v: by name %v %v", m, back, ok)
		}
	}
	for _, name := range []string{"SCRAM-SHA-1", "scram-sha-256", "PLAIN", ""} {
		if _, ok := MechanismByName(name); ok {
			t.Errorf("%q is a mechanism", name)
		}
	}
	if Mechanism(0).Valid() || Mechanism(0).String() != "UNKNOWN" || Mechanism(3).Name() != "" {
		t.Error("type 0 or 3 taken for a mechanism")
	}
	if SHA256.Size() != 32 || SHA512.Size() != 64 {
		t.Error("hash sizes")
	}
}

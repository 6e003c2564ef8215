package scram

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

// TestParseAddScramRefusals: each malformed --add-scram argument gets
// Kafka's ScramParser message.
func TestParseAddScramRefusals(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"SCRAM-SHA-512", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-512'"},
		{"  SCRAM-SHA-512  ", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-512'"},
		{"SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."},
		{"scram-sha-512=[name=a,password=b]", "The add-scram mechanism scram-sha-512 is not supported."},
		{"SCRAM-SHA-512=name=a,password=b]", "Expected configuration string to start with ["},
		{"SCRAM-SHA-512=[name=a,password=b", "Expected configuration string to end with ]"},
		{"SCRAM-SHA-512=[", "Expected configuration string to end with ]"},
		{"SCRAM-SHA-512=[]", "No equals sign found in SCRAM component: "},
		{"SCRAM-SHA-512=[name=a,,password=b]", "No equals sign found in SCRAM component: "},
		{"SCRAM-SHA-512=[name=a,password]", "No equals sign found in SCRAM component: password"},
		{"SCRAM-SHA-512=[password=b]", "You must supply 'name' to add-scram"},
		{"SCRAM-SHA-512=[name=a,salt=!!!,password=b]", "Failed to decode given salt: !!!"},
		{"SCRAM-SHA-512=[name=a,iterations=many,password=b]", "Failed to parse iterations count: many"},
		{"SCRAM-SHA-512=[name=a,iterations=99999999999,password=b]", "Failed to parse iterations count: 99999999999"},
		{"SCRAM-SHA-512=[name=a]", "You must supply one of 'password' or 'saltedpassword' to add-scram"},
		{"SCRAM-SHA-512=[name=a,saltedpassword=AAAA]", "You must supply 'salt' with 'saltedpassword' to add-scram"},
		{"SCRAM-SHA-512=[name=a,salt=AAAA,saltedpassword=!!!]", "Failed to decode given saltedPassword"},
		{"SCRAM-SHA-512=[name=a,password=b,color=red,age=3]", "Unknown SCRAM configurations: age, color"},
		// The components are not trimmed: " password" is another key.
		{"SCRAM-SHA-512=[name=a, password=b]", "You must supply one of 'password' or 'saltedpassword' to add-scram"},
		{"SCRAM-SHA-512=[name=a,password=b,iterations=4095]", "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_512"},
		{"SCRAM-SHA-256=[name=a,password=b,iterations=16385]", "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_256"},
		{"SCRAM-SHA-256=[name=a,password=]", "Empty key"},
		{"SCRAM-SHA-256=[name=a,salt=AAAA,saltedpassword=]", "Empty key"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			_, err := ParseAddScram(tc.arg)
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if !errors.Is(err, ErrAddScram) {
				t.Errorf("error %v is not ErrAddScram", err)
			}
		})
	}
}

// TestParseAddScram: the accepted forms and the credentials they derive.
func TestParseAddScram(t *testing.T) {
	salt := []byte("pinch-of-salt")
	salt64 := base64.StdEncoding.EncodeToString(salt)
	want512, err := NewCredential(SHA512, "alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := SHA256.SaltedPassword("bob-secret", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	want256, err := CredentialFromSaltedPassword(SHA256, salt, salted, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg  string
		mech Mechanism
		name string
		want Credential
	}{
		{"SCRAM-SHA-512=[name=alice,password=alice-secret,salt=" + salt64 + ",iterations=8192]", SHA512, "alice", want512},
		{" SCRAM-SHA-512=[iterations=8192,salt=" + salt64 + ",password=\"alice-secret\",name=\"alice\"]\n", SHA512, "alice", want512},
		// A repeated key keeps its last value; unpadded base64 decodes.
		{"SCRAM-SHA-512=[name=bob,name=alice,password=x,password=alice-secret,salt=" + base64.RawStdEncoding.EncodeToString(salt) + ",iterations=8192]", SHA512, "alice", want512},
		{"SCRAM-SHA-256=[name=bob,salt=" + salt64 + ",saltedpassword=" + base64.StdEncoding.EncodeToString(salted) + "]", SHA256, "bob", want256},
		// A trailing comma is dropped, as Java's split drops it; a
		// password with '=' in it keeps everything after the first.
		{"SCRAM-SHA-512=[name=alice,password=alice-secret,salt=" + salt64 + ",iterations=8192,]", SHA512, "alice", want512},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := ParseAddScram(tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			if got.Mechanism != tc.mech || got.Name != tc.name {
				t.Fatalf("got %s %q, want %s %q", got.Mechanism, got.Name, tc.mech, tc.name)
			}
			c := got.Credential
			if !bytes.Equal(c.Salt, tc.want.Salt) || !bytes.Equal(c.StoredKey, tc.want.StoredKey) ||
				!bytes.Equal(c.ServerKey, tc.want.ServerKey) || c.Iterations != tc.want.Iterations {
				t.Errorf("credential %s, want %s", FormatCredential(c), FormatCredential(tc.want))
			}
		})
	}
}

// TestParseAddScramDefaults: no salt is a random one, no iterations 4096;
// '=' inside a password is kept.
func TestParseAddScramDefaults(t *testing.T) {
	a, err := ParseAddScram("SCRAM-SHA-256=[name=carol,password=a=b=c]")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseAddScram("SCRAM-SHA-256=[name=carol,password=a=b=c]")
	if err != nil {
		t.Fatal(err)
	}
	if a.Credential.Iterations != DefaultAddScramIterations {
		t.Errorf("iterations %d, want %d", a.Credential.Iterations, DefaultAddScramIterations)
	}
	if len(a.Credential.Salt) == 0 || bytes.Equal(a.Credential.Salt, b.Credential.Salt) {
		t.Errorf("salts %q and %q: want random ones", a.Credential.Salt, b.Credential.Salt)
	}
	want, err := NewCredential(SHA256, "a=b=c", a.Credential.Salt, DefaultAddScramIterations)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Credential.StoredKey, want.StoredKey) {
		t.Error("the stored key is not the password's")
	}
}

package sasl

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// fixture is one line of testdata/kafka-fixtures.txt: an input and what
// Kafka 4.4's own classes made of it (compat-tests/jaas).
type fixture struct {
	kind   string // jaas or plain
	input  []byte
	result string
}

func readFixtures(t *testing.T) []fixture {
	t.Helper()
	f, err := os.Open("testdata/kafka-fixtures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fixture
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, result, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("fixture line %q has no result", sc.Text())
		}
		kind, h, _ := strings.Cut(line, " ")
		in, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fixture{kind, in, result})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("only %d fixtures", len(out))
	}
	return out
}

// jaasResult renders entries as the fixture generator does, without the
// null keys Java keeps and Gregor drops (no user_ lookup can find them).
func jaasResult(entries []JAASEntry) string {
	var b strings.Builder
	b.WriteString("ok")
	for _, e := range entries {
		fmt.Fprintf(&b, " %x:%s", e.LoginModule, e.Flag)
		keys := make([]string, 0, len(e.Options))
		for k := range e.Options {
			keys = append(keys, hex.EncodeToString([]byte(k)))
		}
		slices.Sort(keys)
		for _, k := range keys {
			raw, _ := hex.DecodeString(k)
			fmt.Fprintf(&b, ":%s=%x", k, e.Options[string(raw)])
		}
	}
	return b.String()
}

// dropNullKeys removes Java's null-keyed options ("-=...") from a result.
func dropNullKeys(result string) string {
	parts := strings.Split(result, ":")
	out := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, "-=") {
			out = append(out, p)
			continue
		}
		// "-=HEX" may end an entry followed by " next:FLAG".
		if _, rest, ok := strings.Cut(p, " "); ok {
			out[len(out)-1] += " " + rest
		}
	}
	return strings.Join(out, ":")
}

// TestJAASAndPlainMatchKafka compares ParseJAAS and PLAIN with what Kafka's
// JaasConfig and PlainSaslServer did with the same inputs.
func TestJAASAndPlainMatchKafka(t *testing.T) {
	users := NewPlainUsers([]JAASEntry{{LoginModule: PlainLoginModule, Flag: "REQUIRED",
		Options: map[string]string{"user_alice": "alice-secret", "user_é": "pé"}}})
	for _, f := range readFixtures(t) {
		var got string
		switch f.kind {
		case "jaas":
			entries, err := ParseJAAS(string(f.input))
			if err != nil {
				got = "error " + err.Error()
			} else {
				got = jaasResult(entries)
			}
			want := dropNullKeys(f.result)
			if want == "error null" && err != nil && err.Error() == "login module name not specified in JAAS config" {
				continue // Java's IllegalArgumentException without a message
			}
			if got != want {
				t.Errorf("ParseJAAS(%q):\n got %s\nwant %s", f.input, got, want)
			}
		case "plain":
			m := NewPlain(users)
			_, done, err := m.Evaluate(f.input)
			switch {
			case err != nil:
				got = "error " + err.Error()
			case done:
				got = fmt.Sprintf("ok %x", m.AuthorizationID())
			}
			if got != f.result {
				t.Errorf("PLAIN %q:\n got %s\nwant %s", f.input, got, f.result)
			}
		default:
			t.Fatalf("fixture kind %q", f.kind)
		}
	}
}

func TestServerJAAS(t *testing.T) {
	for _, tc := range []struct {
		text, err string
	}{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`, ""},
		{`a required; b required;`, "JAAS config property contains 2 login modules, should be 1 module"},
		{` com.sun.security.auth.module.JndiLoginModule required;`, "com.sun.security.auth.module.JndiLoginModule is not allowed."},
		{`com.sun.security.auth.module.LdapLoginModule required;`, "LdapLoginModule is not allowed."},
		{``, "Login module not specified in JAAS config"},
	} {
		_, err := ServerJAAS(tc.text)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.text, err, tc.err)
		}
	}
}

func TestPlainUsers(t *testing.T) {
	entries, err := ParseJAAS(`other.Module required user_eve="x"; ` + PlainLoginModule + ` required user_alice="a1" user_bob="b1" username="admin" password="p";` +
		PlainLoginModule + ` optional user_alice="second" user_carol="c1";`)
	if err != nil {
		t.Fatal(err)
	}
	u := NewPlainUsers(entries)
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"alice", "a1", true},
		{"alice", "second", false}, // the first entry with the option wins
		{"carol", "c1", true},
		{"bob", "b1", true},
		{"bob", "b2", false},
		{"bob", "b1 ", false},
		{"eve", "x", false}, // not a PlainLoginModule option
		{"admin", "p", false},
		{"nobody", "", false},
	} {
		if got := u.authenticate(tc.user, tc.pass); got != tc.ok {
			t.Errorf("authenticate(%q, %q) = %v, want %v", tc.user, tc.pass, got, tc.ok)
		}
	}
	if n := u.Len(); n != 3 {
		t.Errorf("Len %d, want 3 (alice, bob, carol)", n)
	}
}

func TestPlainIsOneShot(t *testing.T) {
	m := NewPlain(NewPlainUsers([]JAASEntry{{LoginModule: PlainLoginModule, Options: map[string]string{"user_a": "b"}}}))
	c, done, err := m.Evaluate([]byte("\x00a\x00b"))
	if err != nil || !done || c == nil || len(c) != 0 || m.AuthorizationID() != "a" {
		t.Fatalf("%q %v %v %q", c, done, err, m.AuthorizationID())
	}
	if _, _, err := m.Evaluate([]byte("\x00a\x00b")); err == nil {
		t.Fatal("a second token accepted")
	}
	if _, ok := m.CredentialExpiryMs(); ok {
		t.Fatal("PLAIN credentials expire")
	}
}

func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{`a required k="v";`, `a required k='x\101\n' /* c */ b optional;`, `// x`, `a "`, `a required k="\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := ParseJAAS(s)
		if err == nil && len(entries) == 0 {
			t.Fatal("no entries and no error")
		}
		for _, e := range entries {
			if e.LoginModule == "" || e.Flag == "" {
				t.Fatalf("entry %+v", e)
			}
		}
		ServerJAAS(s)
	})
}

func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00a\x00b", "a\x00a\x00b", "", "\x00\x00\x00", "\xff\x00\xfe\x00\xfd"} {
		f.Add([]byte(s))
	}
	users := NewPlainUsers([]JAASEntry{{LoginModule: PlainLoginModule, Options: map[string]string{"user_a": "b"}}})
	f.Fuzz(func(t *testing.T, msg []byte) {
		authz, user, pass, err := ParsePlain(msg)
		if err == nil {
			joined := authz + "\x00" + user + "\x00" + pass
			if strings.Count(joined, "\x00") != 2 {
				t.Fatalf("tokens %q %q %q", authz, user, pass)
			}
		}
		m := NewPlain(users)
		_, done, err := m.Evaluate(msg)
		if done && (err != nil || m.AuthorizationID() != "a") {
			t.Fatalf("done as %q with %v", m.AuthorizationID(), err)
		}
		if err != nil && strings.Contains(err.Error(), "b") && !strings.HasPrefix(err.Error(), "Authentication failed") && !strings.HasPrefix(err.Error(), "Invalid SASL/PLAIN") {
			t.Fatalf("error %q", err)
		}
	})
}

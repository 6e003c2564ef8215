package principal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"slices"
	"testing"
	"time"
	"unicode/utf16"
)

func TestSSLPrincipalFromCertificate(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject: pkix.Name{Country: []string{"US"}, Organization: []string{"Acme, Inc"},
			OrganizationalUnit: []string{"Eng"}, CommonName: "alice"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rules, want string
	}{
		{"DEFAULT", `User:CN=alice,OU=Eng,O=Acme\, Inc,C=US`},
		{"RULE:^CN=([^,]*),.*$/$1/U", "User:ALICE"},
		{"RULE:^CN=([^,]*),OU=([^,]*),.*$/$2-$1/,DEFAULT", "User:Eng-alice"},
	} {
		m, err := ParseRules(tc.rules)
		if err != nil {
			t.Fatal(err)
		}
		p, err := SSLPrincipal(cert, m)
		if err != nil || p.String() != tc.want {
			t.Errorf("rules %q: %v, %v; want %s", tc.rules, p, err, tc.want)
		}
	}
	m, _ := ParseRules("RULE:^OU=.*$/x/")
	_, err = SSLPrincipal(cert, m)
	if e, ok := err.(*Error); !ok || e.Exception != "KafkaException" ||
		e.Message != `Failed to map name for 'CN=alice,OU=Eng,O=Acme\, Inc,C=US' based on SSL principal mapping rules.` {
		t.Errorf("unmapped certificate: %v", err)
	}
	if p, err := SSLPrincipal(nil, m); err != nil || p != Anonymous || p.String() != "User:ANONYMOUS" {
		t.Errorf("no certificate: %v, %v", p, err)
	}
}

func TestEscapeLiteralBackReferences(t *testing.T) {
	for _, tc := range []struct {
		rep    string
		groups int
		want   string
	}{
		{"$1", 0, "$1"},
		{"$1", 1, "$1"},
		{"$2", 1, `\$2`},
		{"$1$2$3", 1, `$1\$\2$3`}, // the second insertion lands one early, as Kafka's
		{"$12", 1, "$12"},
		{"$12", 12, "$12"},
		{"$0", 1, "$0"},
		{"$09", 1, "$09"},
		{"x$5y", 2, `x\$5y`},
	} {
		got, err := escapeLiteralBackReferences(tc.rep, tc.groups)
		if err != nil || got != tc.want {
			t.Errorf("escapeLiteralBackReferences(%q, %d) = %q, %v; want %q", tc.rep, tc.groups, got, err, tc.want)
		}
	}
	if _, err := escapeLiteralBackReferences("$99999999999", 1); err == nil || err.Error() != `For input string: "99999999999"` {
		t.Errorf("overflowing reference: %v", err)
	}
}

func TestJavaUTF8Decoding(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"abc", "abc"},
		{"\xe2\x82", "\ufffd"},                 // one replacement for a truncated sequence
		{"\xe2\x82x", "\ufffdx"},               // and for a broken one
		{"\xff\xfe", "\ufffd\ufffd"},           // one per byte that starts none
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // a surrogate's encoding
		{"\xf0\x9f\x98\x80", "😀"},
		{"\xc0\x80", "\ufffd\ufffd"},
	} {
		got := string(utf16.Decode(javaUTF16([]byte(tc.in))))
		if got != tc.want {
			t.Errorf("javaUTF16(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRulePatternsJavaLacksInGo(t *testing.T) {
	for _, rules := range []string{
		`RULE:^CN=(?=x).*$/$0/`,
		`RULE:^CN=(a)\1$/$1/`,
		`RULE:^CN=a*+$/x/`,
		`RULE:^CN=[a-z&&[^e]]*$/x/`,
		`RULE:^CN=\p{javaLowerCase}*$/x/`,
	} {
		_, err := ParseRules(rules)
		if e, ok := err.(*Error); !ok || e.Exception != "PatternSyntaxException" {
			t.Errorf("ParseRules(%q) = %v; want a PatternSyntaxException", rules, err)
		}
	}
}

func TestPlainTokens(t *testing.T) {
	for _, tc := range []struct {
		msg                  string
		authz, user, pass, e string
	}{
		{"\x00u\x00p", "", "u", "p", ""},
		{"z\x00u\x00p", "z", "u", "p", ""},
		{"u\x00p", "", "", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"},
		{"\x00u\x00p\x00", "", "", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00\x00p", "", "", "", "Authentication failed: username not specified"},
	} {
		a, u, p, err := ParsePlain([]byte(tc.msg))
		got := []string{a, u, p, ""}
		if err != nil {
			got[3] = err.Error()
		}
		if want := []string{tc.authz, tc.user, tc.pass, tc.e}; !slices.Equal(got, want) {
			t.Errorf("ParsePlain(%q) = %q, want %q", tc.msg, got, want)
		}
	}
}

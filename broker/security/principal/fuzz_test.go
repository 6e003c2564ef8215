package principal

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseRules feeds arbitrary ssl.principal.mapping.rules and DNs to
// ParseRules and Mapper.Name. Invariants: neither panics; refusals are
// *Error; a mapper's rule list reads back through String with one entry
// per RULE or DEFAULT; DEFAULT maps any DN to itself.
func FuzzParseRules(f *testing.F) {
	f.Add("DEFAULT", "CN=a,O=b")
	f.Add("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", "CN=x,OU=y")
	f.Add("RULE:(.*)/$1$2$12$999999999999/U", "CN=a")
	f.Add(`RULE:^CN=(?<u>[^,]*)\/.*$/${u}\\/,  ,DEFAULT`, `CN=a\,b/c`)
	f.Add("RULE:(?m)^\\b(x*)/[$1]/", "xx\nyx")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParseRules(rules)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		if !strings.HasPrefix(m.String(), "SslPrincipalMapper(rules = [") {
			t.Fatalf("String %q", m.String())
		}
		name, err := m.Name(dn)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		if len(m.rules) > 0 && m.rules[0].isDefault && name != dn {
			t.Fatalf("DEFAULT mapped %q to %q", dn, name)
		}
	})
}

// FuzzFormatDN feeds arbitrary bytes, as a peer's certificate subject, to
// FormatDN. Invariants: it never panics; a refusal is *Error; the result
// is valid UTF-8 and never longer than the input allows (each input byte
// yields at most a few output bytes: an escape, a replacement character or
// two hex digits, plus separators).
func FuzzFormatDN(f *testing.F) {
	for _, h := range []string{
		"303a310b3009060355040613025553310d300b060355040a130441636d65310c300a060355040b1303456e67310e300c06035504031305616c696365",
		"3021311f300806035504030c01673008060355040b0c01683009060355040613024445",
		"3011310f300d06035504030c0661e28262ff63",
		"300f310d300b06035504031e0400480069",
		"3000",
	} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		dn, err := FormatDN(der)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		if !utf8.ValidString(dn) {
			t.Fatalf("%q is not UTF-8", dn)
		}
		if len(dn) > 8*len(der)+64 {
			t.Fatalf("%d bytes of DN from %d of DER", len(dn), len(der))
		}
	})
}

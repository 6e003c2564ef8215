package principal

import (
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// rfc2253Keywords are the attribute types Java's X500Principal names in
// RFC 2253 form; any other type is written as its dotted OID with the
// value in #hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// The ASN.1 string tags whose values Java writes as text (AVA.isDerString,
// non-canonical): UTF8String, PrintableString, T61String, IA5String,
// GeneralString and BMPString.
var textTags = map[int]bool{12: true, 19: true, 20: true, 22: true, 27: true, 30: true}

// rfc2253Escaped are the characters Java's AVA escapes with a backslash.
const rfc2253Escaped = ",=+<>#;\"\\"

// errBadName is X500Principal's refusal of DER it cannot parse.
var errBadName = &Error{Exception: "IllegalArgumentException", Message: "improperly specified input name"}

// FormatDN formats a DER-encoded X.501 Name (a certificate's RawSubject)
// as Java's X500Principal.getName() does, the string Kafka's principal
// mapping rules see: the RDNs last first, joined by commas; the values of
// a multi-valued RDN joined by + in their encoded order; each value
// KEYWORD=text for the types RFC 2253 names and string-typed values, else
// OID=#hex of the value's DER. Text escapes ,=+<>#;"\ with a backslash, a
// NUL as \00, and leading and trailing spaces and carriage returns. The
// value's bytes are read as UTF-8 whatever the string type, as Java's
// does (so a BMPString comes out as Java garbles it).
func FormatDN(der []byte) (string, error) {
	var name asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &name); err != nil || len(rest) != 0 ||
		name.Class != asn1.ClassUniversal || name.Tag != asn1.TagSequence || !name.IsCompound {
		return "", errBadName
	}
	var rdns []string
	for body := name.Bytes; len(body) > 0; {
		var set asn1.RawValue
		rest, err := asn1.Unmarshal(body, &set)
		if err != nil || set.Class != asn1.ClassUniversal || set.Tag != asn1.TagSet || !set.IsCompound {
			return "", errBadName
		}
		body = rest
		var avas []string
		for inner := set.Bytes; len(inner) > 0; {
			var seq asn1.RawValue
			rest, err := asn1.Unmarshal(inner, &seq)
			if err != nil || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
				return "", errBadName
			}
			inner = rest
			ava, err := formatAVA(seq.Bytes)
			if err != nil {
				return "", err
			}
			avas = append(avas, ava)
		}
		if len(avas) == 0 {
			return "", errBadName
		}
		rdns = append(rdns, strings.Join(avas, "+"))
	}
	// Last RDN first.
	for i, j := 0, len(rdns)-1; i < j; i, j = i+1, j-1 {
		rdns[i], rdns[j] = rdns[j], rdns[i]
	}
	return strings.Join(rdns, ","), nil
}

func formatAVA(b []byte) (string, error) {
	var oid asn1.ObjectIdentifier
	rest, err := asn1.Unmarshal(b, &oid)
	if err != nil {
		return "", errBadName
	}
	var value asn1.RawValue
	rest, err = asn1.Unmarshal(rest, &value)
	if err != nil || len(rest) != 0 {
		return "", errBadName
	}
	keyword, known := rfc2253Keywords[oid.String()]
	if !known {
		keyword = oid.String()
	}
	if !known || value.Class != asn1.ClassUniversal || value.IsCompound || !textTags[value.Tag] {
		return keyword + "=#" + hex.EncodeToString(value.FullBytes), nil
	}
	return keyword + "=" + escapeValue(javaUTF16(value.Bytes)), nil
}

// escapeValue is the escaping of AVA.toRFC2253String over a value's UTF-16
// code units.
func escapeValue(units []uint16) string {
	var esc []uint16
	for _, c := range units {
		switch {
		case c < 0x80 && strings.IndexByte(rfc2253Escaped, byte(c)) >= 0:
			esc = append(esc, '\\', c)
		case c == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, c)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	var out []uint16
	for i, c := range esc {
		if i < lead || i > trail {
			out = append(out, '\\')
		}
		out = append(out, c)
	}
	return fromUTF16(out)
}

// javaUTF16 decodes b as Java's new String(b, UTF_8) does: malformed
// input becomes U+FFFD, one for each maximal prefix of a well-formed
// sequence (or for a single byte that starts none).
func javaUTF16(b []byte) []uint16 {
	var out []uint16
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			n = maximalSubpart(b)
			r = utf8.RuneError
		}
		b = b[n:]
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

// maximalSubpart is the length of the longest prefix of b that starts a
// well-formed UTF-8 sequence without completing one (at least 1).
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		need, lo = 2, 0xa0
	case c >= 0xe1 && c <= 0xec, c == 0xee, c == 0xef:
		need = 2
	case c == 0xed:
		need, hi = 2, 0x9f
	case c == 0xf0:
		need, lo = 3, 0x90
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	case c == 0xf4:
		need, hi = 3, 0x8f
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xbf
	}
	return n
}

func fromUTF16(units []uint16) string {
	var b strings.Builder
	for i := 0; i < len(units); i++ {
		c := rune(units[i])
		if c >= 0xd800 && c < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000 {
			c = 0x10000 + (c-0xd800)<<10 + rune(units[i+1]-0xdc00)
			i++
		}
		b.WriteRune(c)
	}
	return b.String()
}

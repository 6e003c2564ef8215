package scram

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The grammar of the four messages, Kafka's ScramMessages patterns with
// Java's class intersections ([\x01-\x7F&&[^=,]]) spelled out as ranges.
// All of it is ASCII: a byte of 0x80 or above never matches, as in Kafka,
// where such a byte decodes to a non-ASCII character.
const (
	reValueSafe = `[\x01-\x2B\x2D-\x3C\x3E-\x7F]+`             // no '=' or ','
	reValue     = `[\x01-\x2B\x2D-\x7F]+`                      // no ','
	rePrintable = `[\x21-\x2B\x2D-\x7E]+`                      // printable, no ','
	reSaslName  = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+` // '=' only in =2C and =3D
	reBase64    = `(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?`
	reReserved  = `(?:m=` + reValue + `,)?`
	reExts      = `(?:,[A-Za-z]+=` + reValue + `)*`
)

var (
	clientFirstRE = regexp.MustCompile(`\An,(?:a=(?P<authzid>` + reSaslName + `))?,` + reReserved +
		`n=(?P<saslname>` + reSaslName + `),r=(?P<nonce>` + rePrintable + `)(?P<extensions>` + reExts + `)\z`)
	serverFirstRE = regexp.MustCompile(`\A` + reReserved + `r=(?P<nonce>` + rePrintable + `),s=(?P<salt>` + reBase64 +
		`),i=(?P<iterations>[0-9]+)` + reExts + `\z`)
	clientFinalRE = regexp.MustCompile(`\Ac=(?P<channel>` + reBase64 + `),r=(?P<nonce>` + rePrintable + `)` + reExts +
		`,p=(?P<proof>` + reBase64 + `)\z`)
	serverFinalRE = regexp.MustCompile(`\A(?:e=(?P<error>` + reValueSafe + `)|v=(?P<signature>` + reBase64 + `)` + reExts + `)\z`)
)

// ErrFormat marks a message that does not parse; the error's text is
// Kafka's SaslException message without the message itself, which may
// hold a proof.
var ErrFormat = errors.New("scram: malformed message")

func formatError(msg string) error { return fmt.Errorf("%w: %s", ErrFormat, msg) }

// group returns the named submatch of m, and whether it took part in the
// match.
func group(re *regexp.Regexp, m []int, b []byte, name string) (string, bool) {
	i := re.SubexpIndex(name)
	if m[2*i] < 0 {
		return "", false
	}
	return string(b[m[2*i]:m[2*i+1]]), true
}

// An Extension is one key=value attribute after the nonce of a
// client-first message, such as tokenauth=true.
type Extension struct{ Key, Value string }

// ClientFirst is a client-first message: "n," (no channel binding, the
// only gs2 header Kafka accepts), an optional authzid, the user's saslname
// and the client nonce, and extensions.
type ClientFirst struct {
	AuthzID    string      // "" when the header has none
	SaslName   string      // the user name as sent, =2C and =3D escaped
	Nonce      string      // the client's nonce
	Extensions []Extension // in the client's order, each key once
}

// ParseClientFirst parses a client-first message as Kafka's
// ClientFirstMessage does. A reserved "m=" attribute is accepted and
// dropped. Extensions repeating a key keep the last value, as Kafka's map
// does.
func ParseClientFirst(b []byte) (ClientFirst, error) {
	m := clientFirstRE.FindSubmatchIndex(b)
	if m == nil {
		return ClientFirst{}, formatError("Invalid SCRAM client first message format")
	}
	var c ClientFirst
	c.AuthzID, _ = group(clientFirstRE, m, b, "authzid")
	c.SaslName, _ = group(clientFirstRE, m, b, "saslname")
	c.Nonce, _ = group(clientFirstRE, m, b, "nonce")
	exts, _ := group(clientFirstRE, m, b, "extensions")
	c.Extensions = parseExtensions(exts)
	return c, nil
}

// parseExtensions splits ",k=v,k=v" (already matched by reExts) into
// its pairs, a repeated key keeping its first place and its last value.
func parseExtensions(s string) []Extension {
	if s == "" {
		return nil
	}
	var exts []Extension
next:
	for _, kv := range strings.Split(s[1:], ",") {
		k, v, _ := strings.Cut(kv, "=")
		for i := range exts {
			if exts[i].Key == k {
				exts[i].Value = v
				continue next
			}
		}
		exts = append(exts, Extension{k, v})
	}
	return exts
}

// Extension returns the value of the extension key and whether it was
// sent.
func (c ClientFirst) Extension(key string) (string, bool) {
	for _, e := range c.Extensions {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// TokenAuth reports whether the client asked to authenticate with a
// delegation token (tokenauth=true, any case, as Java's
// Boolean.parseBoolean).
func (c ClientFirst) TokenAuth() bool {
	v, _ := c.Extension("tokenauth")
	return strings.EqualFold(v, "true")
}

// Bare is client-first-message-bare as Kafka rebuilds it for the
// AuthMessage: "n=saslname,r=nonce" and the extensions. Kafka writes the
// extensions from a map, whose order for two or more is a JVM's own; here
// they keep the client's order.
func (c ClientFirst) Bare() string {
	var sb strings.Builder
	sb.WriteString("n=")
	sb.WriteString(c.SaslName)
	sb.WriteString(",r=")
	sb.WriteString(c.Nonce)
	for _, e := range c.Extensions {
		sb.WriteString(",")
		sb.WriteString(e.Key)
		sb.WriteString("=")
		sb.WriteString(e.Value)
	}
	return sb.String()
}

// String is the whole message: the gs2 header ("n,," or "n,a=authzid,")
// and Bare.
func (c ClientFirst) String() string {
	if c.AuthzID != "" {
		return "n,a=" + c.AuthzID + "," + c.Bare()
	}
	return "n,," + c.Bare()
}

// Username unescapes a saslname (=2C to ',', =3D to '='), refusing any
// other '=' as Kafka's ScramFormatter.username does.
func Username(saslName string) (string, error) {
	s := strings.ReplaceAll(saslName, "=2C", ",")
	if strings.Contains(strings.ReplaceAll(s, "=3D", ""), "=") {
		return "", errors.New("scram: invalid username")
	}
	return strings.ReplaceAll(s, "=3D", "="), nil
}

// SaslName escapes a user name for a client-first message.
func SaslName(username string) string {
	return strings.ReplaceAll(strings.ReplaceAll(username, "=", "=3D"), ",", "=2C")
}

// ServerFirst is a server-first message: the combined nonce (the client's
// followed by the server's), the salt and the iteration count.
type ServerFirst struct {
	Nonce      string
	Salt       []byte
	Iterations int32
}

// ParseServerFirst parses a server-first message as Kafka's
// ServerFirstMessage does: iterations must be a positive int32.
func ParseServerFirst(b []byte) (ServerFirst, error) {
	m := serverFirstRE.FindSubmatchIndex(b)
	if m == nil {
		return ServerFirst{}, formatError("Invalid SCRAM server first message format")
	}
	var s ServerFirst
	it, _ := group(serverFirstRE, m, b, "iterations")
	n, err := strconv.ParseInt(it, 10, 32)
	if err != nil {
		return ServerFirst{}, formatError("Invalid SCRAM server first message format: invalid iterations")
	}
	if n <= 0 {
		return ServerFirst{}, formatError("Invalid SCRAM server first message format: invalid iterations " + strconv.FormatInt(n, 10))
	}
	s.Iterations = int32(n)
	s.Nonce, _ = group(serverFirstRE, m, b, "nonce")
	salt, _ := group(serverFirstRE, m, b, "salt")
	s.Salt, _ = base64.StdEncoding.DecodeString(salt) // the pattern admits only valid base64
	return s, nil
}

// String formats the message: "r=nonce,s=salt,i=iterations".
func (s ServerFirst) String() string {
	return "r=" + s.Nonce + ",s=" + base64.StdEncoding.EncodeToString(s.Salt) + ",i=" + strconv.Itoa(int(s.Iterations))
}

// ClientFinal is a client-final message: the channel binding (base64 of
// the gs2 header, "biws" for "n,,"), the combined nonce and the proof.
// Extensions before the proof are accepted and dropped, as Kafka does.
type ClientFinal struct {
	ChannelBinding []byte
	Nonce          string
	Proof          []byte
}

// ParseClientFinal parses a client-final message as Kafka's
// ClientFinalMessage does. Kafka does not compare the channel binding
// with the gs2 header; it only takes part in the AuthMessage.
func ParseClientFinal(b []byte) (ClientFinal, error) {
	m := clientFinalRE.FindSubmatchIndex(b)
	if m == nil {
		return ClientFinal{}, formatError("Invalid SCRAM client final message format")
	}
	var c ClientFinal
	cb, _ := group(clientFinalRE, m, b, "channel")
	proof, _ := group(clientFinalRE, m, b, "proof")
	c.Nonce, _ = group(clientFinalRE, m, b, "nonce")
	c.ChannelBinding, _ = base64.StdEncoding.DecodeString(cb)
	c.Proof, _ = base64.StdEncoding.DecodeString(proof)
	return c, nil
}

// WithoutProof is client-final-message-without-proof as Kafka rebuilds it
// for the AuthMessage: "c=channel,r=nonce".
func (c ClientFinal) WithoutProof() string {
	return "c=" + base64.StdEncoding.EncodeToString(c.ChannelBinding) + ",r=" + c.Nonce
}

// String formats the message: WithoutProof and ",p=proof".
func (c ClientFinal) String() string {
	return c.WithoutProof() + ",p=" + base64.StdEncoding.EncodeToString(c.Proof)
}

// ServerFinal is a server-final message: the server signature ("v=") or
// an error ("e="). Kafka's server sends only the first; a failure is a
// SaslAuthenticate error instead.
type ServerFinal struct {
	Error     string // set for "e="
	Signature []byte // set for "v="
}

// ParseServerFinal parses a server-final message as Kafka's
// ServerFinalMessage does.
func ParseServerFinal(b []byte) (ServerFinal, error) {
	m := serverFinalRE.FindSubmatchIndex(b)
	if m == nil {
		return ServerFinal{}, formatError("Invalid SCRAM server final message format")
	}
	if e, ok := group(serverFinalRE, m, b, "error"); ok {
		return ServerFinal{Error: e}, nil
	}
	sig, _ := group(serverFinalRE, m, b, "signature")
	s, _ := base64.StdEncoding.DecodeString(sig)
	return ServerFinal{Signature: s}, nil
}

// String formats the message.
func (s ServerFinal) String() string {
	if s.Error != "" {
		return "e=" + s.Error
	}
	return "v=" + base64.StdEncoding.EncodeToString(s.Signature)
}

package sasl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// JAASEntry is one login module of a JAAS configuration: its class name,
// control flag and options.
type JAASEntry struct {
	// LoginModule is the module's class name as written.
	LoginModule string
	// Flag is REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL (upper case).
	Flag string
	// Options are the module's key="value" pairs; a later duplicate key
	// wins, as in Kafka's HashMap.
	Options map[string]string
}

// PlainLoginModule is the class name of Kafka's PLAIN login module, whose
// user_NAME options are the PLAIN users of a listener.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ParseJAAS parses the text of a sasl.jaas.config as Kafka's JaasConfig
// does: a sequence of entries "ModuleClass flag key=value ... ;", read with
// the rules of Java's StreamTokenizer as Kafka configures it (// and /* */
// comments, words of letters, digits, '.', '-', '_' and '$', values quoted
// with " or ' and Java's escapes). The error messages are Kafka's. The
// returned entries may hold secrets: never log them.
func ParseJAAS(text string) ([]JAASEntry, error) {
	t := &jaasTokenizer{s: text, peek: needChar}
	var entries []JAASEntry
	for t.next() != ttEOF {
		e, err := parseJAASEntry(t)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("Login module not specified in JAAS config")
	}
	return entries, nil
}

// ServerJAAS parses a listener's <mechanism>.sasl.jaas.config as Kafka's
// JaasContext.loadServerContext does: exactly one login module, and not
// one of the modules Kafka disallows by default.
func ServerJAAS(text string) (JAASEntry, error) {
	entries, err := ParseJAAS(text)
	if err != nil {
		return JAASEntry{}, err
	}
	if len(entries) != 1 {
		return JAASEntry{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	name := strings.TrimSpace(entries[0].LoginModule)
	for _, d := range disallowedLoginModules {
		if name == d {
			return JAASEntry{}, fmt.Errorf("%s is not allowed. The system property 'org.apache.kafka.disallowed.login.modules' is deprecated. Use the org.apache.kafka.allowed.login.modules to allow this module. e.g.,-Dorg.apache.kafka.allowed.login.modules=%s", name, name)
		}
	}
	return entries[0], nil
}

// disallowedLoginModules are the modules Kafka refuses unless a system
// property allows them (JaasContext.throwIfLoginModuleIsNotAllowed).
var disallowedLoginModules = []string{"com.sun.security.auth.module.JndiLoginModule", "com.sun.security.auth.module.LdapLoginModule"}

func parseJAASEntry(t *jaasTokenizer) (JAASEntry, error) {
	module, hasModule := t.sval, t.hasSval
	if t.next() == ttEOF {
		return JAASEntry{}, errors.New("Login module control flag not specified in JAAS config")
	}
	if !t.hasSval {
		return JAASEntry{}, errors.New("Login module control flag is not available in the JAAS config")
	}
	flag := strings.ToUpper(t.sval) // Locale.ROOT: ASCII-only upper-casing of these names
	switch flag {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
	default:
		return JAASEntry{}, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", t.sval)
	}
	options := map[string]string{}
	for t.next() != ttEOF && t.ttype != ';' {
		key, hasKey := t.sval, t.hasSval
		if t.next() != '=' || t.next() == ttEOF || !t.hasSval {
			if !hasKey {
				key = "null" // Java's string of a null key
			}
			return JAASEntry{}, fmt.Errorf("Value not specified for key '%s' in JAAS config", key)
		}
		if hasKey {
			options[key] = t.sval
		}
	}
	if t.ttype != ';' {
		return JAASEntry{}, errors.New("JAAS config entry not terminated by semi-colon")
	}
	if !hasModule || module == "" {
		// javax.security.auth.login.AppConfigurationEntry refuses it with
		// an IllegalArgumentException that has no message.
		return JAASEntry{}, errors.New("login module name not specified in JAAS config")
	}
	return JAASEntry{LoginModule: module, Flag: flag, Options: options}, nil
}

// Token types of jaasTokenizer, as java.io.StreamTokenizer's; any other
// value is an ordinary character or a quote character.
const (
	ttEOF    = -1
	ttNumber = -2
	ttWord   = -3
	needChar = -4 // no character peeked
)

// jaasTokenizer is the subset of java.io.StreamTokenizer that JaasConfig
// uses: its default syntax table plus // and /* */ comments and the word
// characters '-', '_' and '$'. Characters are runes; Java's chars above
// 255 are all word characters, as every rune above 255 is here.
type jaasTokenizer struct {
	s       string
	pos     int
	peek    int // the peeked character, needChar, or noChar
	ttype   int
	sval    string
	hasSval bool // false where Java's sval is null
}

func (t *jaasTokenizer) read() int {
	if t.pos >= len(t.s) {
		return ttEOF
	}
	r, n := utf8.DecodeRuneInString(t.s[t.pos:])
	t.pos += n
	return int(r)
}

func isJAASWhitespace(c int) bool { return c >= 0 && c <= ' ' }
func isJAASDigit(c int) bool      { return c >= '0' && c <= '9' || c == '.' || c == '-' }
func isJAASAlpha(c int) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xA0 && c <= 0xFF || c > 0xFF ||
		c == '-' || c == '_' || c == '$'
}

// next reads the next token, as StreamTokenizer.nextToken.
func (t *jaasTokenizer) next() int {
	t.sval, t.hasSval = "", false
	c := t.peek
	if c == needChar {
		c = t.read()
	}
	t.peek = needChar
	for {
		if c < 0 {
			t.ttype = ttEOF
			return t.ttype
		}
		if !isJAASWhitespace(c) {
			break
		}
		c = t.read()
	}
	if isJAASDigit(c) {
		neg := false
		if c == '-' {
			c = t.read()
			if c != '.' && (c < '0' || c > '9') {
				t.peek = c
				t.ttype = '-'
				return t.ttype
			}
			neg = true
		}
		_ = neg // the value is of no use to JaasConfig: a number has no sval
		seenDot := false
		for {
			if c == '.' && !seenDot {
				seenDot = true
			} else if c < '0' || c > '9' {
				break
			}
			c = t.read()
		}
		t.peek = c
		t.ttype = ttNumber
		return t.ttype
	}
	if isJAASAlpha(c) {
		var b strings.Builder
		for isJAASAlpha(c) || isJAASDigit(c) {
			b.WriteRune(rune(c))
			c = t.read()
		}
		t.peek = c
		t.sval, t.hasSval = b.String(), true
		t.ttype = ttWord
		return t.ttype
	}
	if c == '"' || c == '\'' {
		t.ttype = c
		var b strings.Builder
		d := t.read()
		for d >= 0 && d != t.ttype && d != '\n' && d != '\r' {
			if d == '\\' {
				c = t.read()
				first := c
				if c >= '0' && c <= '7' {
					c -= '0'
					c2 := t.read()
					if c2 >= '0' && c2 <= '7' {
						c = c<<3 + (c2 - '0')
						c2 = t.read()
						if c2 >= '0' && c2 <= '7' && first <= '3' {
							c = c<<3 + (c2 - '0')
							d = t.read()
						} else {
							d = c2
						}
					} else {
						d = c2
					}
				} else {
					switch c {
					case 'a':
						c = 0x7
					case 'b':
						c = '\b'
					case 'f':
						c = 0xC
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'v':
						c = 0xB
					case ttEOF:
						c = 0xFFFF // Java's (char) -1
					}
					d = t.read()
				}
			} else {
				c = d
				d = t.read()
			}
			b.WriteRune(rune(c))
		}
		if d == t.ttype {
			t.peek = needChar
		} else {
			t.peek = d
		}
		t.sval, t.hasSval = b.String(), true
		return t.ttype
	}
	if c == '/' {
		c = t.read()
		switch c {
		case '*':
			prev := 0
			for {
				c = t.read()
				if c == '/' && prev == '*' {
					break
				}
				if c < 0 {
					t.ttype = ttEOF
					return t.ttype
				}
				prev = c
			}
			return t.next()
		default:
			// "//" and, '/' being StreamTokenizer's default comment
			// character, a lone '/' too: a comment to the end of the line.
			// The character after the '/' is part of the comment, even a
			// line end.
			for {
				c = t.read()
				if c == '\n' || c == '\r' || c < 0 {
					break
				}
			}
			t.peek = c
			return t.next()
		}
	}
	t.ttype = c
	return t.ttype
}

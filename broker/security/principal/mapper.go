package principal

import (
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Java's "." matches anything but a line terminator; Go's only excludes
// \n. javaDot stands in for it in the patterns below and in rules'.
const javaDot = `[^\n\r\x{85}\x{2028}\x{2029}]`

// javaSpace is Java's \s.
const javaSpace = `[ \t\n\x0B\f\r]`

// ruleSyntax is SslPrincipalMapper's RULE_PATTERN.
var ruleSyntax = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?)` + javaDot + `*?|(` + javaDot + `*?)`

var (
	// ruleSplitter is RULE_SPLITTER: one rule and the comma after it.
	ruleSplitter = regexp.MustCompile(javaSpace + `*(` + ruleSyntax + `)` + javaSpace + `*(,` + javaSpace + `*|$)`)
	// ruleParser is RULE_PARSER, anchored as lookingAt anchors it.
	ruleParser = regexp.MustCompile(`^(?:` + ruleSyntax + `)`)
)

// DefaultRules is ssl.principal.mapping.rules' default.
const DefaultRules = "DEFAULT"

// Mapper is Kafka's SslPrincipalMapper: ssl.principal.mapping.rules
// parsed. It is immutable and safe for concurrent use.
type Mapper struct {
	rules []rule
}

type rule struct {
	isDefault bool
	pattern   string // as written in the rule, for String
	re        *regexp.Regexp
	whole     *regexp.Regexp // re anchored at both ends: Matcher.matches
	from      *regexp.Regexp // re searched for after one character of context
	groups    int
	names     map[string]int
	replace   string
	lower     bool
	upper     bool
}

// ParseRules parses ssl.principal.mapping.rules as SslPrincipalMapper
// does: comma-separated RULE:pattern/replacement/ (optionally followed by
// L or U) or DEFAULT; a backslash escapes a / or \ in a pattern or
// replacement; spaces around rules are dropped and empty rules ignored.
func ParseRules(rules string) (*Mapper, error) {
	var parts []string
	for _, m := range ruleSplitter.FindAllStringSubmatch(javaTrim(rules), -1) {
		parts = append(parts, m[1])
	}
	m := &Mapper{}
	for _, part := range parts {
		loc := ruleParser.FindStringSubmatchIndex(part)
		if loc[1] != len(part) {
			return nil, &Error{Exception: "IllegalArgumentException",
				Message: "Invalid rule: `" + part + "`, unmatched substring: `" + part[loc[1]:] + "`"}
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return part[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule
		}
		replace, _ := group(4)
		flag, _ := group(6)
		r, err := compileRule(pattern)
		if err != nil {
			return nil, err
		}
		r.replace, r.lower, r.upper = replace, flag == "L", flag == "U"
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// compileRule compiles a rule's Java pattern for Go's regexp, with Java's
// ".", refusing the Java constructs RE2 would read differently or not at
// all.
func compileRule(pattern string) (rule, error) {
	refuse := func(why string) (rule, error) {
		return rule{}, &Error{Exception: "PatternSyntaxException",
			Message: "ssl.principal.mapping.rules: pattern " + strconv.Quote(pattern) + " " + why}
	}
	if strings.Contains(pattern, "&&") {
		return refuse("uses character class intersection, which is not supported")
	}
	for _, q := range []string{"*+", "++", "?+", "}+"} {
		if strings.Contains(pattern, q) {
			return refuse("uses a possessive quantifier, which is not supported")
		}
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return refuse("is not supported: " + err.Error())
	}
	walk(tree, func(re *syntax.Regexp) {
		if re.Op == syntax.OpAnyCharNotNL {
			*re = syntax.Regexp{Op: syntax.OpCharClass, Flags: re.Flags,
				Rune: []rune{0, '\n' - 1, '\n' + 1, '\r' - 1, '\r' + 1, 0x84, 0x86, 0x2027, 0x202a, unicode.MaxRune}}
		}
	})
	src := tree.String()
	re, err := regexp.Compile(src)
	if err != nil {
		return refuse("is not supported: " + err.Error())
	}
	// A search from a later position: one character of left context
	// (for \b and (?m)^; \A and ^ cannot match after it), then the
	// shortest run to the leftmost start, then the pattern with its own
	// preferences, which is Java's find from that position.
	from, err := regexp.Compile(`\A(?s:.)(?s:.*?)(` + src + `)`)
	if err != nil {
		return refuse("is not supported: " + err.Error())
	}
	names := map[string]int{}
	for i, n := range re.SubexpNames() {
		if n != "" {
			names[n] = i
		}
	}
	return rule{
		pattern: pattern,
		re:      re,
		whole:   regexp.MustCompile(`\A(?:` + src + `)\z`),
		from:    from,
		groups:  re.NumSubexp(),
		names:   names,
	}, nil
}

func walk(re *syntax.Regexp, f func(*syntax.Regexp)) {
	f(re)
	for _, sub := range re.Sub {
		walk(sub, f)
	}
}

// Name is SslPrincipalMapper.getName: the first rule that maps dn decides
// the principal name. No rule mapping dn is Kafka's NoMatchingRule.
func (m *Mapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", &Error{Exception: "NoMatchingRule", Message: "No rules apply to " + dn + ", rules " + m.list()}
}

func (m *Mapper) list() string {
	items := make([]string, len(m.rules))
	for i, r := range m.rules {
		items[i] = r.String()
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// String is SslPrincipalMapper's toString.
func (m *Mapper) String() string { return "SslPrincipalMapper(rules = " + m.list() + ")" }

// String is Rule.toString: DEFAULT or RULE:pattern/replacement with /L or
// /U.
func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replace
	if r.lower {
		s += "/L"
	} else if r.upper {
		s += "/U"
	}
	return s
}

// apply is Rule.apply: a rule whose pattern matches all of dn gives
// dn.replaceAll(pattern, replacement), lower- or upper-cased.
func (r rule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	rep, err := escapeLiteralBackReferences(r.replace, r.groups)
	if err != nil {
		return "", false, err
	}
	out, err := r.replaceAll(dn, rep)
	if err != nil {
		return "", false, err
	}
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// backReference is Rule.BACK_REFERENCE_PATTERN.
var backReference = regexp.MustCompile(`\$([0-9]+)`)

// escapeLiteralBackReferences is SslPrincipalMapper's: a $n that names no
// group, after dropping trailing digits while n is above the group count
// and at least 10, gets a backslash so that it stays literal. It finds the
// references in the replacement as written but inserts into the string as
// rewritten so far, so a second insertion lands one character early, as
// Kafka's does.
func escapeLiteralBackReferences(replacement string, groups int) (string, error) {
	if groups == 0 {
		return replacement, nil
	}
	value := replacement
	for _, loc := range backReference.FindAllStringSubmatchIndex(replacement, -1) {
		num := replacement[loc[2]:loc[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		idx, err := strconv.ParseInt(num, 10, 32)
		if err != nil {
			return "", &Error{Exception: "NumberFormatException", Message: `For input string: "` + num + `"`}
		}
		for idx > int64(groups) && idx >= 10 {
			idx /= 10
		}
		if idx > int64(groups) {
			start := loc[2]
			value = value[:start-1] + `\` + value[start-1:]
		}
	}
	return value, nil
}

// replaceAll is String.replaceAll with Java's find loop (an empty match
// right after a match counts, unlike in Go) and Java's replacement syntax.
func (r rule) replaceAll(s, replacement string) (string, error) {
	var b strings.Builder
	last, pos := 0, 0
	for pos <= len(s) {
		var loc []int
		if pos == 0 {
			loc = r.re.FindStringSubmatchIndex(s)
		} else {
			_, w := utf8.DecodeLastRuneInString(s[:pos])
			start := pos - w
			if sub := r.from.FindStringSubmatchIndex(s[start:]); sub != nil {
				loc = make([]int, len(sub)-2) // without the whole wrapper's match
				for i, v := range sub[2:] {
					if v >= 0 {
						v += start
					}
					loc[i] = v
				}
			}
		}
		if loc == nil {
			break
		}
		b.WriteString(s[last:loc[0]])
		if err := r.expand(&b, replacement, s, loc); err != nil {
			return "", err
		}
		last = loc[1]
		if loc[1] == loc[0] {
			if loc[1] >= len(s) {
				break
			}
			_, w := utf8.DecodeRuneInString(s[loc[1]:])
			pos = loc[1] + w
		} else {
			pos = loc[1]
		}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// expand is Matcher.appendReplacement's expansion of replacement.
func (r rule) expand(b *strings.Builder, rep, s string, loc []int) error {
	illegal := func(msg string) error {
		return &Error{Exception: "IllegalArgumentException", Message: msg}
	}
	for i := 0; i < len(rep); {
		c := rep[i]
		switch c {
		case '\\':
			i++
			if i == len(rep) {
				return illegal("character to be escaped is missing")
			}
			_, w := utf8.DecodeRuneInString(rep[i:])
			b.WriteString(rep[i : i+w])
			i += w
		case '$':
			i++
			if i == len(rep) {
				return illegal("Illegal group reference: group index is missing")
			}
			var ref int
			if rep[i] == '{' {
				i++
				start := i
				for i < len(rep) && isASCIIAlnum(rep[i]) {
					i++
				}
				name := rep[start:i]
				if name == "" {
					return illegal("named capturing group has 0 length name")
				}
				if i == len(rep) || rep[i] != '}' {
					return illegal("named capturing group is missing trailing '}'")
				}
				if name[0] >= '0' && name[0] <= '9' {
					return illegal("capturing group name {" + name + "} starts with digit character")
				}
				n, ok := r.names[name]
				if !ok {
					return illegal("No group with name {" + name + "}")
				}
				ref = n
				i++
			} else {
				if rep[i] < '0' || rep[i] > '9' {
					return illegal("Illegal group reference")
				}
				ref = int(rep[i] - '0')
				i++
				for i < len(rep) && rep[i] >= '0' && rep[i] <= '9' {
					next := ref*10 + int(rep[i]-'0')
					if next > r.groups {
						break
					}
					ref = next
					i++
				}
			}
			if ref > r.groups {
				return &Error{Exception: "IndexOutOfBoundsException", Message: "No group " + strconv.Itoa(ref)}
			}
			if loc[2*ref] >= 0 {
				b.WriteString(s[loc[2*ref]:loc[2*ref+1]])
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// javaTrim is String.trim.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

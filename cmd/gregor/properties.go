package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// property is one key=value setting and where it came from, for messages.
type property struct {
	key, value string
	origin     string // "server.properties:12", "KAFKA_LOG_DIRS", "--override"
}

// parseProperties reads a Java properties file as Kafka's server.properties
// files use it: `key=value`, `key: value` or `key value`; `#` and `!`
// comment lines; blank lines; a line ending in an odd number of backslashes
// continues on the next (whose leading whitespace is dropped); and the
// escapes \t \n \r \f \uXXXX, with a backslash before any other character
// standing for that character (so \\ \= \: and "\ " work). Values keep
// their trailing whitespace, as in Java; the config layer trims them. name
// prefixes the origin of each property.
func parseProperties(r io.Reader, name string) ([]property, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var out []property
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for endsInEscape(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(sc.Text(), " \t\f")
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, start, err)
		}
		out = append(out, property{key: key, value: value, origin: fmt.Sprintf("%s:%d", name, start)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// readPropertiesFile parses the properties file at path.
func readPropertiesFile(path string) ([]property, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseProperties(f, path)
}

// endsInEscape reports whether line ends in an odd number of backslashes,
// which makes it continue on the next line.
func endsInEscape(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its unescaped key and value: the
// key ends at the first unescaped '=', ':' or whitespace, then whitespace
// and at most one '=' or ':' separate it from the value.
func splitProperty(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash, as Java drops it
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape in %q`, s)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape in %q`, s)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// kafkaEnvExcluded are the KAFKA_* variables that configure the JVM or the
// launch scripts rather than the broker; the apache/kafka image skips them
// too, and so does Gregor.
var kafkaEnvExcluded = map[string]bool{
	"KAFKA_VERSION":              true,
	"KAFKA_HOME":                 true,
	"KAFKA_DEBUG":                true,
	"KAFKA_HEAP_OPTS":            true,
	"KAFKA_OPTS":                 true,
	"KAFKA_JMX_OPTS":             true,
	"KAFKA_JMX_HOSTNAME":         true,
	"KAFKA_JMX_PORT":             true,
	"KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS":          true,
	"KAFKA_LOG4J_OPTS":           true,
	"KAFKA_LOG4J_ROOT_LOGLEVEL":  true,
	"KAFKA_LOG4J_LOGGERS":        true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
}

// envProperties maps KAFKA_* variables of environ (os.Environ's form) to
// properties as the apache/kafka container image does: drop KAFKA_,
// lower-case, then `_` is `.`, `__` is `_` and `___` is `-`
// (KAFKA_LOG_DIRS is log.dirs). Variables in kafkaEnvExcluded are skipped.
func envProperties(environ []string) []property {
	var out []property
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "KAFKA_") || kafkaEnvExcluded[name] {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "KAFKA_"), "_", "."))
		key = strings.ReplaceAll(key, "...", "-")
		key = strings.ReplaceAll(key, "..", "_")
		if key == "" {
			continue
		}
		out = append(out, property{key: key, value: value, origin: name})
	}
	return out
}

// overrideProperties parses --override key=value arguments.
func overrideProperties(args []string) ([]property, error) {
	out := make([]property, 0, len(args))
	for _, arg := range args {
		key, value, ok := strings.Cut(arg, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("--override %q: expected key=value, as in --override num.partitions=3", arg)
		}
		out = append(out, property{key: key, value: value, origin: "--override"})
	}
	return out, nil
}

package principal

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

type testCase struct {
	name  string
	lines []string
}

// readBlocks reads "case NAME" ... "end" blocks, skipping comments.
func readBlocks(t testing.TB, path string) []testCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []testCase
	var cur *testCase
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "#") || cur == nil && strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "case "):
			cur = &testCase{name: line[len("case "):]}
		case line == "end":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

// esc is the harness's: one result stays on one line.
func esc(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "\x00", `\0`).Replace(s)
}

func errLine(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("error (not *Error) %v", err)
	}
	return "error " + e.Exception + ": " + esc(e.Message)
}

// run performs a case and prints it as the harness prints Kafka's.
func run(t *testing.T, c testCase) string {
	var b strings.Builder
	var mapper *Mapper
	mapName := func(dn string) {
		fmt.Fprintf(&b, "name\t%s\t", esc(dn))
		if mapper == nil {
			b.WriteString("no mapper\n")
			return
		}
		if name, err := mapper.Name(dn); err != nil {
			b.WriteString(errLine(err) + "\n")
		} else {
			b.WriteString("User:" + esc(name) + "\n")
		}
	}
	for _, line := range c.lines {
		kind, arg, _ := strings.Cut(line, " ")
		switch kind {
		case "rules", "rules-null":
			rules := arg
			if kind == "rules-null" {
				rules = DefaultRules
			}
			m, err := ParseRules(rules)
			if err != nil {
				mapper = nil
				b.WriteString(errLine(err) + "\n")
				continue
			}
			mapper = m
			fmt.Fprintf(&b, "mapper\t%s\n", m)
		case "dn":
			der, err := hex.DecodeString(arg)
			if err != nil {
				t.Fatal(err)
			}
			dn, err := FormatDN(der)
			if err != nil {
				fmt.Fprintf(&b, "dn\t%s\t%s\n", arg, errLine(err))
				continue
			}
			fmt.Fprintf(&b, "dn\t%s\t%s\n", arg, esc(dn))
			mapName(dn)
		case "name":
			mapName(arg)
		case "namehex":
			raw, err := hex.DecodeString(arg)
			if err != nil {
				t.Fatal(err)
			}
			mapName(string(raw))
		case "plain":
			raw, err := hex.DecodeString(arg)
			if err != nil {
				t.Fatal(err)
			}
			authz, user, _, err := ParsePlain(raw)
			var p KafkaPrincipal
			if err == nil {
				p, err = PlainPrincipal(authz, user)
			}
			if err != nil {
				fmt.Fprintf(&b, "plain\t%s\t%s\n", arg, errLine(err))
			} else {
				fmt.Fprintf(&b, "plain\t%s\t%s\n", arg, esc(p.String()))
			}
		default:
			t.Fatalf("unknown line %q", line)
		}
	}
	return b.String()
}

// TestPrincipalsMatchKafka runs every case of testdata/cases.txt and
// compares with what Kafka 4.4.0 and the JDK made of it
// (testdata/kafka.txt, written by compat-tests/kafkaconfig/run).
func TestPrincipalsMatchKafka(t *testing.T) {
	want := map[string]string{}
	for _, c := range readBlocks(t, "testdata/kafka.txt") {
		want[c.name] = strings.Join(c.lines, "\n") + "\n"
	}
	for _, c := range readBlocks(t, "testdata/cases.txt") {
		t.Run(c.name, func(t *testing.T) {
			w, ok := want[c.name]
			if !ok {
				t.Fatalf("no Kafka answer for %q: rerun compat-tests/kafkaconfig/run", c.name)
			}
			if got := run(t, c); got != w {
				t.Errorf("got:\n%s\nKafka:\n%s", got, w)
			}
		})
	}
}

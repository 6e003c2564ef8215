package listeners

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// baseConfig is the combined-mode base every case of testdata/cases.txt
// starts from (compat-tests/kafkaconfig/Harness.java has the same).
func baseConfig() map[string]string {
	return map[string]string{
		"process.roles":             "broker,controller",
		"node.id":                   "1",
		"controller.quorum.voters":  "1@localhost:9093",
		"controller.listener.names": "CONTROLLER",
		"listeners":                 "PLAINTEXT://:9092,CONTROLLER://:9093",
		"log.dirs":                  "/var/lib/kafka/data",
	}
}

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

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// run applies a case to the base configuration and prints the result as
// the harness prints Kafka's.
func run(c testCase) string {
	props := baseConfig()
	var gets [][]string
	for _, line := range c.lines {
		switch {
		case strings.HasPrefix(line, "get "):
			gets = append(gets, strings.Split(line[len("get "):], " "))
		case strings.HasPrefix(line, "-"):
			delete(props, line[1:])
		default:
			k, v, _ := strings.Cut(line, "=")
			props[k] = v
		}
	}
	var b strings.Builder
	cfg, err := Parse(lookupIn(props))
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return fmt.Sprintf("error (not *Error) %v\n", err)
		}
		fmt.Fprintf(&b, "error %s: %s\n", e.Exception, e.Message)
		return b.String()
	}
	ep := func(kind string, e Endpoint) {
		host := e.Host
		if host == "" {
			host = "<null>"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\n", kind, e.Listener, e.Protocol, host, e.Port)
	}
	for _, e := range cfg.Listeners {
		ep("listener", e)
	}
	for _, e := range cfg.Advertised {
		ep("advertised", e)
	}
	for _, e := range cfg.AdvertisedControllers {
		ep("advertised-controller", e)
	}
	fmt.Fprintf(&b, "inter-broker\t%s\t%s\n", cfg.InterBrokerListener, cfg.InterBrokerProtocol)
	fmt.Fprintf(&b, "controller-names\t%s\n", strings.Join(cfg.ControllerListenerNames, ","))
	var names []string
	for n := range cfg.Protocols {
		names = append(names, n)
	}
	slices.Sort(names)
	var pairs []string
	for _, n := range names {
		pairs = append(pairs, n+":"+string(cfg.Protocols[n]))
	}
	fmt.Fprintf(&b, "protocol-map\t%s\n", strings.Join(pairs, ","))
	for _, g := range gets {
		var v string
		var ok bool
		if len(g) == 3 {
			v, ok = cfg.GetMechanism(g[0], g[1], g[2])
		} else {
			v, ok = cfg.Get(g[0], g[1])
		}
		if !ok {
			v = "<unset>"
		}
		fmt.Fprintf(&b, "get\t%s\t%s\n", strings.Join(g, " "), v)
	}
	return b.String()
}

// TestParseMatchesKafka runs every case of testdata/cases.txt and compares
// the result with Kafka 4.4.0's (testdata/kafka.txt, written by
// compat-tests/kafkaconfig/run).
func TestParseMatchesKafka(t *testing.T) {
	cases := readBlocks(t, "testdata/cases.txt")
	want := map[string]string{}
	for _, c := range readBlocks(t, "testdata/kafka.txt") {
		want[c.name] = strings.Join(c.lines, "\n") + "\n"
	}
	if len(cases) < 80 {
		t.Errorf("%d cases; the fixtures should cover at least 80", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ok := want[c.name]
			if !ok {
				t.Fatalf("no Kafka answer for %q: rerun compat-tests/kafkaconfig/run", c.name)
			}
			if got := run(c); got != w {
				t.Errorf("got:\n%s\nKafka:\n%s", got, w)
			}
		})
	}
}

// TestLookup: the per-listener lookup without a parsed configuration, as
// gregor serve reads a TLS listener's keys.
func TestLookup(t *testing.T) {
	keys := map[string]string{
		"ssl.client.auth":                         "required",
		"listener.name.clients.ssl.client.auth":   " requested ",
		"ssl.keystore.location":                   "/k.p12",
		"listener.name.CLIENTS.ssl.keystore.type": "PEM", // Kafka ignores an upper-case prefix
		"listener.name.clients.not.a.kafka.key":   "x",
	}
	get := func(k string) (string, bool) { v, ok := keys[k]; return v, ok }
	for _, tc := range []struct {
		listener, key, want string
		ok                  bool
	}{
		{"CLIENTS", "ssl.client.auth", "requested", true},
		{"clients", "ssl.client.auth", "requested", true},
		{"OTHER", "ssl.client.auth", "required", true},
		{"CLIENTS", "ssl.keystore.location", "/k.p12", true},
		{"CLIENTS", "ssl.keystore.type", "", false},
		{"CLIENTS", "not.a.kafka.key", "", false},
	} {
		v, ok := Lookup(get, tc.listener, tc.key)
		if v != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%s, %s) = %q, %v; want %q, %v", tc.listener, tc.key, v, ok, tc.want, tc.ok)
		}
	}
}

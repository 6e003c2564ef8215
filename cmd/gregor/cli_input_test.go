package main

import (
	"bufio"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestBadInputIsRefusedAndNothingHalfApplied runs each command with input
// that must be refused, then checks that the cluster is as it was.
func TestBadInputIsRefusedAndNothingHalfApplied(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "orders", "--partitions", "2", "--config", "retention.ms=3600000")
	mustRun(t, addr, strings.NewReader("a\nb\n"), "produce", "orders", "--partition", "0")
	mustRun(t, addr, nil, "consume", "orders", "--group", "g", "--from-beginning", "--max-messages", "2", "--timeout", "30s")
	before := mustRun(t, addr, nil, "topic", "describe", "orders").stdout
	groupBefore := mustRun(t, addr, nil, "group", "describe", "g").stdout

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"create without a name", "", []string{"topic", "create"}, "name at least one topic"},
		{"create with a config without '='", "", []string{"topic", "create", "fresh", "--config", "retention.ms"}, `--config "retention.ms": want KEY=VALUE`},
		{"create with an empty config key", "", []string{"topic", "create", "fresh", "--config", "=1"}, "the key is empty"},
		{"create with a config twice", "", []string{"topic", "create", "fresh", "--config", "a=1", "--config", "a=2"}, "a is given twice"},
		{"create with an unknown config", "", []string{"topic", "create", "fresh", "--config", "retention.ms=1", "--config", "no.such.config=1"}, "INVALID_CONFIG"},
		{"create with a bad config value", "", []string{"topic", "create", "fresh", "--config", "retention.ms=soon"}, "INVALID_CONFIG"},
		{"create with zero partitions", "", []string{"topic", "create", "fresh", "--partitions", "0"}, "--partitions 0: must be at least 1"},
		{"create with a bad replication factor", "", []string{"topic", "create", "fresh", "--replication-factor", "0"}, "--replication-factor 0"},
		{"create an existing topic", "", []string{"topic", "create", "orders"}, "TOPIC_ALREADY_EXISTS"},
		{"create with an invalid name", "", []string{"topic", "create", "no/slashes"}, "INVALID_TOPIC_EXCEPTION"},
		{"an unknown flag after the name", "", []string{"topic", "create", "fresh", "--partitons", "3"}, "flag provided but not defined: --partitons"},
		{"a timeout that is not positive", "", []string{"topic", "list", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{"list with an argument", "", []string{"topic", "list", "orders"}, `unexpected argument "orders"`},
		{"describe an unknown topic", "", []string{"topic", "describe", "nope"}, "topic nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"alter an unknown topic", "", []string{"topic", "alter", "nope", "--config", "retention.ms=1"}, "topic nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"alter with nothing to change", "", []string{"topic", "alter", "orders"}, "nothing to change"},
		{"alter with a config without '='", "", []string{"topic", "alter", "orders", "--config", "retention.ms"}, "want KEY=VALUE"},
		{"alter setting and deleting a config", "", []string{"topic", "alter", "orders", "--config", "retention.ms=1", "--delete-config", "retention.ms"}, "retention.ms is both set and deleted"},
		{"alter with a bad value and more partitions", "", []string{"topic", "alter", "orders", "--config", "retention.ms=soon", "--partitions", "4"}, "INVALID_CONFIG"},
		{"alter with an unknown config and more partitions", "", []string{"topic", "alter", "orders", "--config", "no.such.config=1", "--partitions", "4"}, "INVALID_CONFIG"},
		{"alter with fewer partitions and a config", "", []string{"topic", "alter", "orders", "--config", "retention.ms=1000", "--partitions", "1"}, "INVALID_PARTITIONS"},
		{"delete an unknown topic", "", []string{"topic", "delete", "nope"}, "topic nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"delete one unknown topic of two", "", []string{"topic", "delete", "nope", "nope2"}, "2 of 2 topics failed"},

		{"produce without a topic", "", []string{"produce"}, "name exactly one topic"},
		{"produce with bad acks", "x\n", []string{"produce", "orders", "--acks", "2"}, `--acks "2"`},
		{"produce with an unknown codec", "x\n", []string{"produce", "orders", "--compression", "brotli"}, `--compression "brotli"`},
		{"produce with a header without '='", "x\n", []string{"produce", "orders", "--header", "source"}, `--header "source": want KEY=VALUE`},
		{"produce with an empty key separator", "x\n", []string{"produce", "orders", "--key-separator", ""}, "the separator is empty"},
		{"produce to a negative partition", "x\n", []string{"produce", "orders", "--partition", "-2"}, "--partition -2"},

		{"consume an unknown topic", "", []string{"consume", "nope"}, "topic nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"consume an unknown partition", "", []string{"consume", "orders", "--partition", "9"}, "partition 9 of topic orders (it has 2): UNKNOWN_TOPIC_OR_PARTITION"},
		{"consume from a negative offset", "", []string{"consume", "orders", "--offset", "-5"}, `--offset "-5"`},
		{"consume from a word", "", []string{"consume", "orders", "--offset", "middle"}, `--offset "middle"`},
		{"consume from a bad time", "", []string{"consume", "orders", "--timestamp", "yesterday"}, `--timestamp "yesterday"`},
		{"consume from two positions", "", []string{"consume", "orders", "--from-beginning", "--offset", "1"}, "give only one of"},
		{"consume a partition with a group", "", []string{"consume", "orders", "--group", "g2", "--partition", "0"}, "--partition cannot be used with --group"},
		{"consume in an unknown format", "", []string{"consume", "orders", "--format", "xml"}, `--format "xml"`},
		{"consume with negative max-messages", "", []string{"consume", "orders", "--max-messages", "-1"}, "--max-messages -1"},

		{"reset without a scenario", "", []string{"group", "reset-offsets", "g", "--topic", "orders"}, "give exactly one of"},
		{"reset with two scenarios", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--to-earliest", "--to-latest"}, "give exactly one of"},
		{"reset to a negative offset", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--to-offset", "-1", "--execute"}, `--to-offset "-1"`},
		{"reset to a bad time", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--to-datetime", "noon", "--execute"}, `--to-datetime "noon"`},
		{"reset by a bad shift", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--shift-by", "back", "--execute"}, `--shift-by "back"`},
		{"reset a bad partition list", "", []string{"group", "reset-offsets", "g", "--topic", "orders:x", "--to-earliest", "--execute"}, `"x" is not a partition number`},
		{"reset without topics", "", []string{"group", "reset-offsets", "g", "--to-earliest", "--execute"}, "give either --topic"},
		{"reset an unknown topic", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--topic", "nope", "--to-earliest", "--execute"}, "topic nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"reset an unknown partition", "", []string{"group", "reset-offsets", "g", "--topic", "orders:0,7", "--to-earliest", "--execute"}, "partition 7 of topic orders"},
		{"shift without a committed offset", "", []string{"group", "reset-offsets", "g", "--topic", "orders", "--shift-by", "-1", "--execute"}, "cannot shift the offset of orders-1"},
		{"reset two groups", "", []string{"group", "reset-offsets", "g", "h", "--topic", "orders", "--to-earliest"}, "name exactly one group"},
		{"describe an unknown group", "", []string{"group", "describe", "nope"}, "group nope: GROUP_ID_NOT_FOUND"},
		{"delete an unknown group", "", []string{"group", "delete", "nope"}, "group nope: GROUP_ID_NOT_FOUND"},
		{"cluster info with an argument", "", []string{"cluster", "info", "now"}, `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, addr, strings.NewReader(tc.stdin), tc.want, tc.args...)
		})
	}

	// Nothing follows the flag here, not even --bootstrap-server.
	mustFail(t, "", nil, "flag needs an argument: --partitions", "topic", "create", "fresh", "--partitions")

	if r := mustRun(t, addr, nil, "topic", "list"); r.stdout != "orders\n" {
		t.Fatalf("refused commands created topics: %q", r.stdout)
	}
	if after := mustRun(t, addr, nil, "topic", "describe", "orders").stdout; after != before {
		t.Fatalf("refused commands changed the topic:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := mustRun(t, addr, nil, "group", "describe", "g").stdout; after != groupBefore {
		t.Fatalf("refused commands changed the group:\nbefore:\n%s\nafter:\n%s", groupBefore, after)
	}
}

func TestProduceStopsAtABadLineAndReportsWhatWasProduced(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "t")
	r := mustFail(t, addr, strings.NewReader("k:1\nno separator\nk:3\n"), `line 2: no key separator ":"`, "produce", "t", "--key-separator", ":")
	if !strings.Contains(r.stderr, "Produced 1 records") {
		t.Fatalf("produce reported %q", r.stderr)
	}
	r = mustFail(t, addr, strings.NewReader("ok\n"+strings.Repeat("x", 100)+"\n"), "line 2: longer than 10 bytes", "produce", "t", "--max-line-bytes", "10")
	if !strings.Contains(r.stderr, "Produced 1 records") {
		t.Fatalf("produce reported %q", r.stderr)
	}
	r = mustRun(t, addr, nil, "consume", "t", "--from-beginning", "--timeout", "1s", "--print-key")
	if r.stdout != "k\t1\nnull\tok\n" {
		t.Fatalf("the topic holds %q", r.stdout)
	}
}

func TestFlagsMayFollowArguments(t *testing.T) {
	addr := startTestBroker(t)
	// Flags before, after and between the names; "--" ends the flags.
	mustRun(t, addr, nil, "topic", "create", "--partitions", "2", "a", "b", "--config", "retention.ms=1000", "--", "-dash")
	r := mustRun(t, addr, nil, "topic", "describe", "a", "--", "-dash")
	if r := mustRun(t, addr, nil, "topic", "describe", "--", "-dash"); !strings.Contains(r.stdout, "Topic: -dash") {
		t.Fatalf("describe -- -dash:\n%s", r.stdout)
	}
	if strings.Count(r.stdout, "PartitionCount: 2") != 2 || strings.Count(r.stdout, "retention.ms=1000") != 2 {
		t.Fatalf("flags after the names were not applied:\n%s", r.stdout)
	}
	r = runCLI(t, "", nil, "topic", "create", "x", "--help")
	if r.err != nil || !strings.Contains(r.stdout, "gregor topic create orders --partitions 6") {
		t.Fatalf("--help after a name: %v\n%s", r.err, r.stdout)
	}
}

func TestEveryClientCommandHasExamples(t *testing.T) {
	app := newApp()
	for _, cmd := range app.Commands {
		if cmd.Name == "serve" {
			continue
		}
		leaves := cmd.Subcommands
		if len(leaves) == 0 {
			leaves = append(leaves, cmd)
		}
		for _, leaf := range leaves {
			if !strings.Contains(leaf.UsageText, "gregor "+cmd.Name) {
				t.Errorf("gregor %s %s: --help has no example", cmd.Name, leaf.Name)
			}
			if leaf.Name != cmd.Name && !strings.Contains(leaf.UsageText, "gregor "+cmd.Name+" "+leaf.Name) {
				t.Errorf("gregor %s %s: the examples do not use the command", cmd.Name, leaf.Name)
			}
		}
	}
}

func TestParseKeyValues(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    [][2]string
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"a=1", "b="}, [][2]string{{"a", "1"}, {"b", ""}}, ""},
		{[]string{"a=b=c"}, [][2]string{{"a", "b=c"}}, ""},
		{[]string{" a =1"}, [][2]string{{"a", "1"}}, ""},
		{[]string{"a"}, nil, "want KEY=VALUE"},
		{[]string{"=1"}, nil, "the key is empty"},
		{[]string{"a=1", "a=2"}, nil, "a is given twice"},
	} {
		got, err := parseKeyValues("config", tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	local := time.Date(2026, 11, 29, 18, 0, 0, 500e6, time.Local).UnixMilli()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1795981324301", 1795981324301, true},
		{"2026-11-29T18:00:00Z", 1795975200000, true},
		{"2026-11-29T19:00:00+01:00", 1795975200000, true},
		{"2026-11-29T18:00:00.25Z", 1795975200250, true},
		{"2026-11-29T18:00:00.500", local, true},
		{"-1", 0, false},
		{"2026-11-29", 0, false},
		{"tomorrow", 0, false},
		{"", 0, false},
	} {
		got, err := parseTime(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseTime(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseTopicPartitions(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    map[string][]int32
		wantErr bool
	}{
		{[]string{"a"}, map[string][]int32{"a": nil}, false},
		{[]string{"a:0,2", "b"}, map[string][]int32{"a": {0, 2}, "b": nil}, false},
		{[]string{"a:1", "a:3"}, map[string][]int32{"a": {1, 3}}, false},
		{[]string{":1"}, nil, true},
		{[]string{"a:"}, nil, true},
		{[]string{"a:-1"}, nil, true},
		{[]string{"a:1,,2"}, nil, true},
		{[]string{"a:99999999999"}, nil, true},
	} {
		got, err := parseTopicPartitions(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%q: %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("y", 200)
	in := bufio.NewReaderSize(strings.NewReader("a\r\n\nb\r\r\n"+long+"\nlast"), 16)
	for _, want := range []string{"a", "", "b\r", long, "last"} {
		got, err := readLine(in, 300)
		if err != nil || string(got) != want {
			t.Fatalf("readLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := readLine(in, 300); err != io.EOF {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
	in = bufio.NewReaderSize(strings.NewReader(long+"\n"), 16)
	if _, err := readLine(in, 100); err == nil || !strings.Contains(err.Error(), "longer than 100 bytes") {
		t.Fatalf("a line over the limit: %v", err)
	}
	// Exactly the limit is allowed, with either line ending.
	for _, end := range []string{"\n", "\r\n", ""} {
		in = bufio.NewReaderSize(strings.NewReader(long+end), 16)
		if got, err := readLine(in, 200); err != nil || string(got) != long {
			t.Fatalf("a line of exactly the limit ending %q: %d bytes, %v", end, len(got), err)
		}
	}
}

func TestJSONBytes(t *testing.T) {
	for _, tc := range []struct {
		in       []byte
		want     *string
		encoding string
	}{
		{nil, nil, ""},
		{[]byte{}, ptr(""), ""},
		{[]byte("héllo"), ptr("héllo"), ""},
		{[]byte{0xff, 0x00}, ptr("/wA="), "base64"},
		{[]byte("a\xc3"), ptr("YcM="), "base64"}, // a truncated UTF-8 sequence
	} {
		got, enc := jsonBytes(tc.in)
		if !reflect.DeepEqual(got, tc.want) || enc != tc.encoding {
			t.Errorf("jsonBytes(%q) = %v, %q", tc.in, got, enc)
		}
	}
}

func ptr(s string) *string { return &s }

func TestGroupViewsOfBothProtocolsAgree(t *testing.T) {
	instance := "i-1"
	classic := kadm.DescribedGroup{Group: "old", State: "Stable", ProtocolType: "consumer", Protocol: "range",
		Members: []kadm.DescribedGroupMember{{
			// Assigned cannot be built outside kadm; the integration
			// tests cover classic assignments.
			MemberID: "m1", InstanceID: &instance, ClientID: "c1", ClientHost: "/10.0.0.1",
		}},
	}
	modern := kadm.DescribedConsumerGroup{Group: "new", State: "Reconciling", AssignorName: "uniform",
		Members: []kadm.ConsumerGroupMember{{
			MemberID: "m1", InstanceID: &instance, ClientID: "c1", ClientHost: "/10.0.0.1",
			Assignment: kadm.TopicsSet{"b": {1: {}, 3: {}}, "a": {0: {}}},
		}},
	}
	for _, tc := range []struct {
		v                                  groupView
		typ, state, protocolType, protocol string
		assignment                         string
	}{
		{classicView(classic), "classic", "Stable", "consumer", "range", "-"},
		{consumerView(modern), "consumer", "Reconciling", "consumer", "uniform", "a:0 b:1,3"},
	} {
		v := tc.v
		if v.groupType != tc.typ || v.state != tc.state || v.protocolType != tc.protocolType || v.protocol != tc.protocol {
			t.Errorf("%s: %+v", tc.typ, v)
		}
		if len(v.members) != 1 {
			t.Fatalf("%s: %d members", tc.typ, len(v.members))
		}
		m := v.members[0]
		if m.id != "m1" || m.instance != "i-1" || m.clientID != "c1" || m.host != "/10.0.0.1" || m.assignment() != tc.assignment {
			t.Errorf("%s: member %+v, assignment %q", tc.typ, m, m.assignment())
		}
		if o := v.owners(); tc.typ == "consumer" && (o["b"][3] != "m1" || o["a"][0] != "m1" || len(o["b"]) != 2) {
			t.Errorf("%s: owners %v", tc.typ, o)
		}
	}
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicCommandsCreateListDescribeAlterDelete(t *testing.T) {
	addr := startTestBroker(t)

	r := mustRun(t, addr, nil, "topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact")
	if !strings.Contains(r.stdout, "Created topic orders (3 partitions, replication factor 1).") {
		t.Fatalf("create printed %q", r.stdout)
	}
	mustRun(t, addr, nil, "topic", "create", "audit")
	mustFail(t, addr, nil, "TOPIC_ALREADY_EXISTS", "topic", "create", "orders")

	r = mustRun(t, addr, nil, "topic", "list")
	if r.stdout != "audit\norders\n" {
		t.Fatalf("topic list printed %q", r.stdout)
	}

	// Offsets in describe follow what was produced.
	mustRun(t, addr, strings.NewReader("a:1\nb:2\nc:3\n"), "produce", "orders", "--partition", "1", "--key-separator", ":")
	r = mustRun(t, addr, nil, "topic", "describe", "orders")
	for _, want := range []string{"Topic: orders", "PartitionCount: 3", "ReplicationFactor: 1", "retention.ms=3600000\t(topic config)", "cleanup.policy=compact"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("describe lacks %q:\n%s", want, r.stdout)
		}
	}
	parts := rows(r.stdout, "1")
	if len(parts) != 1 || strings.Join(parts[0][:6], " ") != "1 0 0 0 0 3" {
		t.Fatalf("partition 1 row %v, want leader 0, replicas 0, ISR 0, offsets 0 to 3:\n%s", parts, r.stdout)
	}
	if strings.Contains(r.stdout, "segment.bytes") {
		t.Fatalf("describe shows configs at their defaults:\n%s", r.stdout)
	}

	r = mustRun(t, addr, nil, "topic", "alter", "orders", "--config", "retention.ms=60000", "--delete-config", "cleanup.policy", "--partitions", "5")
	if !strings.Contains(r.stdout, "now has 5 partitions (was 3)") {
		t.Fatalf("alter printed %q", r.stdout)
	}
	r = mustRun(t, addr, nil, "topic", "describe", "orders")
	if !strings.Contains(r.stdout, "PartitionCount: 5") || !strings.Contains(r.stdout, "retention.ms=60000") || strings.Contains(r.stdout, "cleanup.policy") {
		t.Fatalf("describe after alter:\n%s", r.stdout)
	}

	r = mustRun(t, addr, nil, "topic", "delete", "orders", "audit")
	if r.stdout != "Deleted topic audit.\nDeleted topic orders.\n" {
		t.Fatalf("delete printed %q", r.stdout)
	}
	waitFor(t, "the topics to be gone", func() bool {
		return runCLI(t, addr, nil, "topic", "list").stdout == ""
	})

	// Internal topics only with --internal: __consumer_offsets exists once
	// a group has been used.
	mustRun(t, addr, strings.NewReader("x\n"), "produce", "events")
	mustRun(t, addr, nil, "consume", "events", "--group", "g", "--from-beginning", "--max-messages", "1", "--timeout", "30s")
	if r := mustRun(t, addr, nil, "topic", "list"); strings.Contains(r.stdout, "__consumer_offsets") {
		t.Fatalf("topic list shows internal topics:\n%s", r.stdout)
	}
	if r := mustRun(t, addr, nil, "topic", "list", "--internal"); !strings.Contains(r.stdout, "__consumer_offsets\n") {
		t.Fatalf("topic list --internal lacks __consumer_offsets:\n%s", r.stdout)
	}
}

func TestProduceAndConsumeWithKeysAndHeadersAsTextAndJSON(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "scores", "--partitions", "1")

	input := "alice:1\r\nbob:2\n:empty key\nbin:\xff\xfe\ncarol:3" // the last line has no newline
	r := mustRun(t, addr, strings.NewReader(input), "produce", "scores", "--key-separator", ":", "--header", "source=test", "--header", "run=1")
	if !strings.Contains(r.stderr, "Produced 5 records") {
		t.Fatalf("produce reported %q", r.stderr)
	}

	r = mustRun(t, addr, nil, "consume", "scores", "--from-beginning", "--max-messages", "5", "--print-key", "--key-separator", "=", "--timeout", "30s")
	want := "alice=1\nbob=2\n=empty key\nbin=\xff\xfe\ncarol=3\n"
	if r.stdout != want {
		t.Fatalf("text consume printed %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "Consumed 5 records") {
		t.Fatalf("consume reported %q", r.stderr)
	}

	r = mustRun(t, addr, nil, "consume", "scores", "--from-beginning", "--max-messages", "2", "--print-headers", "--timeout", "30s")
	if r.stdout != "source:test,run:1\t1\nsource:test,run:1\t2\n" {
		t.Fatalf("--print-headers printed %q", r.stdout)
	}

	r = mustRun(t, addr, nil, "consume", "scores", "--from-beginning", "--max-messages", "5", "--format", "json", "--timeout", "30s")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("json consume printed %d lines:\n%s", len(lines), r.stdout)
	}
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		recs = append(recs, m)
	}
	first := recs[0]
	if first["topic"] != "scores" || first["partition"] != 0.0 || first["offset"] != 0.0 || first["key"] != "alice" || first["value"] != "1" {
		t.Fatalf("first record %v", first)
	}
	if ts, _ := first["timestamp"].(float64); time.Since(time.UnixMilli(int64(ts))) > time.Hour {
		t.Fatalf("timestamp %v is not a recent time in milliseconds", first["timestamp"])
	}
	headers, _ := first["headers"].([]any)
	if len(headers) != 2 || fmt.Sprint(headers[0]) != "map[key:source value:test]" || fmt.Sprint(headers[1]) != "map[key:run value:1]" {
		t.Fatalf("headers %v", first["headers"])
	}
	if _, has := first["value_encoding"]; has {
		t.Fatalf("UTF-8 value marked as encoded: %v", first)
	}
	if recs[2]["key"] != "" {
		t.Fatalf("empty key printed as %v", recs[2]["key"])
	}
	bin := recs[3]
	if bin["value"] != base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}) || bin["value_encoding"] != "base64" || bin["key"] != "bin" {
		t.Fatalf("binary value printed as %v", bin)
	}

	// --offset, --partition and --timestamp choose where to start.
	r = mustRun(t, addr, nil, "consume", "scores", "--partition", "0", "--offset", "3", "--max-messages", "2", "--timeout", "30s")
	if r.stdout != "\xff\xfe\n3\n" {
		t.Fatalf("--offset 3 printed %q", r.stdout)
	}
	r = mustRun(t, addr, nil, "consume", "scores", "--timestamp", fmt.Sprint(time.Now().Add(-time.Hour).UnixMilli()), "--max-messages", "1", "--timeout", "30s")
	if r.stdout != "1\n" {
		t.Fatalf("--timestamp an hour ago printed %q", r.stdout)
	}
	// After the last record: nothing, and --timeout ends the wait.
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	r = mustRun(t, addr, nil, "consume", "scores", "--timestamp", future, "--timeout", "500ms")
	if r.stdout != "" || !strings.Contains(r.stderr, "Consumed 0 records") {
		t.Fatalf("--timestamp in the future printed %q, %q", r.stdout, r.stderr)
	}
}

func TestProduceOptionsReachTheRecords(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "p", "--partitions", "4")
	for _, args := range [][]string{
		{"--acks", "1", "--compression", "gzip"},
		{"--acks", "0", "--compression", "lz4"},
		{"--acks", "all", "--compression", "zstd"},
		{"--acks", "-1", "--compression", "snappy"},
	} {
		mustRun(t, addr, strings.NewReader("one\ntwo\n"), append([]string{"produce", "p", "--partition", "2"}, args...)...)
	}
	cl := newTestClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// acks=0 gets no answer: wait until its records are there.
	waitFor(t, "8 records in partition 2", func() bool {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "p")
		o, _ := ends.Lookup("p", 2)
		return err == nil && o.Offset == 8
	})
	ends, _ := kadm.NewClient(cl).ListEndOffsets(ctx, "p")
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition != 2 && o.Offset != 0 {
			t.Errorf("partition %d has %d records; --partition 2 was given", o.Partition, o.Offset)
		}
	})
}

func TestProduceShowsProgressEverySecond(t *testing.T) {
	addr := startTestBroker(t)
	in, feed := io.Pipe()
	var stdout, stderr syncBuffer
	done := make(chan result, 1)
	go func() {
		done <- runCLIWith(t, addr, in, &stdout, &stderr, "produce", "slow", "--progress")
	}()
	if _, err := io.WriteString(feed, "first\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a progress line", func() bool { return strings.Contains(stderr.String(), "produced 1 records") })
	feed.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("produce: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "Produced 1 records") || !strings.Contains(r.stderr, "records/s") {
		t.Fatalf("produce reported %q", r.stderr)
	}
}

func TestConsumeShowsProgressEverySecond(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, strings.NewReader("first\n"), "produce", "ticks")
	var stdout, stderr syncBuffer
	done := make(chan result, 1)
	go func() {
		done <- runCLIWith(t, addr, nil, &stdout, &stderr, "consume", "ticks", "--from-beginning", "--max-messages", "2", "--progress")
	}()
	waitFor(t, "a progress line", func() bool { return strings.Contains(stderr.String(), "consumed 1 records") })
	mustRun(t, addr, strings.NewReader("second\n"), "produce", "ticks")
	r := <-done
	if r.err != nil || r.stdout != "first\nsecond\n" || !strings.Contains(r.stderr, "Consumed 2 records") {
		t.Fatalf("consume: %v, %q, %q", r.err, r.stdout, r.stderr)
	}
}

func TestGroupLagDescribeResetAndDelete(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "orders", "--partitions", "2")
	var lines strings.Builder
	for i := range 10 {
		fmt.Fprintf(&lines, "k%d:v%d\n", i, i)
	}
	mustRun(t, addr, strings.NewReader(lines.String()), "produce", "orders", "--key-separator", ":")

	r := mustRun(t, addr, nil, "consume", "orders", "--group", "billing", "--from-beginning", "--max-messages", "10", "--timeout", "30s")
	if n := strings.Count(r.stdout, "\n"); n != 10 {
		t.Fatalf("consumed %d records, want 10", n)
	}

	r = mustRun(t, addr, nil, "group", "list")
	if g := rows(r.stdout, "billing"); len(g) != 1 || strings.Join(g[0][1:4], " ") != "classic consumer Empty" {
		t.Fatalf("group list:\n%s", r.stdout)
	}
	if r := mustRun(t, addr, nil, "group", "list", "--state", "Stable"); len(rows(r.stdout, "billing")) != 0 {
		t.Fatalf("group list --state Stable shows the Empty group:\n%s", r.stdout)
	}
	if r := mustRun(t, addr, nil, "group", "list", "--type", "consumer"); len(rows(r.stdout, "billing")) != 0 {
		t.Fatalf("group list --type consumer shows the classic group:\n%s", r.stdout)
	}

	committed := func() map[string][]string {
		t.Helper()
		r := mustRun(t, addr, nil, "group", "describe", "billing")
		out := make(map[string][]string)
		for _, row := range rows(r.stdout, "orders") {
			out[row[1]] = row[2:5] // committed, end, lag
		}
		if len(out) != 2 {
			t.Fatalf("describe shows %d partitions:\n%s", len(out), r.stdout)
		}
		out["total"] = []string{strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, "Total lag:")+len("Total lag:"):])}
		return out
	}
	c := committed()
	if c["total"][0] != "0" || c["0"][0] != c["0"][1] || c["1"][0] != c["1"][1] {
		t.Fatalf("after consuming everything: %v, want zero lag", c)
	}

	mustRun(t, addr, strings.NewReader("x\ny\nz\n"), "produce", "orders", "--partition", "1")
	c = committed()
	if c["total"][0] != "3" || c["1"][2] != "3" || c["0"][2] != "0" {
		t.Fatalf("after producing 3 to partition 1: %v, want lag 3 there", c)
	}

	// A dry run shows the offsets and commits nothing.
	r = mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--topic", "orders", "--to-earliest")
	if len(rows(r.stdout, "billing")) != 2 || !strings.Contains(r.stderr, "Dry run") {
		t.Fatalf("dry run printed %q, %q", r.stdout, r.stderr)
	}
	if c2 := committed(); c2["total"][0] != "3" {
		t.Fatalf("a dry run changed the offsets: %v", c2)
	}

	mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--topic", "orders", "--to-earliest", "--execute")
	c = committed()
	if c["0"][0] != "0" || c["1"][0] != "0" || c["total"][0] != "13" {
		t.Fatalf("after --to-earliest: %v, want committed 0 and lag 13", c)
	}

	mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--topic", "orders:1", "--shift-by", "2", "--execute")
	if c = committed(); c["1"][0] != "2" || c["0"][0] != "0" {
		t.Fatalf("after --shift-by 2 on partition 1: %v", c)
	}
	r = mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--all-topics", "--to-offset", "1000", "--execute")
	if !strings.Contains(r.stderr, "past the end") {
		t.Fatalf("--to-offset past the end did not warn: %q", r.stderr)
	}
	if c = committed(); c["total"][0] != "0" {
		t.Fatalf("after --to-offset 1000 (clamped to the end): %v", c)
	}
	mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--topic", "orders", "--to-datetime", "1970-01-01T00:00:00Z", "--execute")
	if c = committed(); c["0"][0] != "0" || c["1"][0] != "0" {
		t.Fatalf("after --to-datetime 1970: %v", c)
	}
	mustRun(t, addr, nil, "group", "reset-offsets", "billing", "--topic", "orders", "--to-latest", "--execute")
	if c = committed(); c["total"][0] != "0" {
		t.Fatalf("after --to-latest: %v", c)
	}

	// While a member is in the group, reset and delete are refused.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for !cl.PollFetches(context.Background()).IsClientClosed() {
		}
	}()
	waitFor(t, "the group to be Stable", func() bool {
		r := runCLI(t, addr, nil, "group", "describe", "billing")
		return strings.Contains(r.stdout, "State: Stable") && strings.Contains(r.stdout, "orders:0,1")
	})
	mustFail(t, addr, nil, "assignments can only be reset if the group 'billing' is inactive, but the current state is Stable",
		"group", "reset-offsets", "billing", "--topic", "orders", "--to-earliest", "--execute")
	mustFail(t, addr, nil, "NON_EMPTY_GROUP", "group", "delete", "billing")
	cl.Close()

	waitFor(t, "the group to be Empty", func() bool {
		return strings.Contains(runCLI(t, addr, nil, "group", "describe", "billing").stdout, "State: Empty")
	})
	r = mustRun(t, addr, nil, "group", "delete", "billing")
	if r.stdout != "Deleted group billing.\n" {
		t.Fatalf("delete printed %q", r.stdout)
	}
	mustFail(t, addr, nil, "GROUP_ID_NOT_FOUND", "group", "describe", "billing")
	mustFail(t, addr, nil, "GROUP_ID_NOT_FOUND", "group", "delete", "billing")
}

func TestClusterInfo(t *testing.T) {
	addr := startTestBroker(t)
	r := mustRun(t, addr, nil, "cluster", "info")
	for _, want := range []string{"Cluster ID: ", "Controller: 0", "Brokers:", addr} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("cluster info lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "API versions") {
		t.Fatalf("API versions without --api-versions:\n%s", r.stdout)
	}
	r = mustRun(t, addr, nil, "cluster", "info", "--api-versions")
	for _, want := range []string{"API versions of broker 0:", "Produce", "ApiVersions"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("cluster info --api-versions lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestCommandsNameBrokersThatCannotBeReached(t *testing.T) {
	dead := freePort(t) // nothing listens there
	for _, args := range [][]string{
		{"topic", "list"},
		{"cluster", "info"},
		{"group", "list"},
		{"consume", "t"},
	} {
		mustFail(t, dead, nil, "cannot reach "+dead, append(args, "--timeout", "5s")...)
	}
	mustFail(t, dead, strings.NewReader("x\n"), "cannot reach "+dead, "produce", "t", "--timeout", "2s")
}

// TestGroupCommandsFollowAGroupOfWhicheverProtocol drives a group whose
// member asks for the consumer protocol (KIP-848). A broker that does not
// serve ConsumerGroupHeartbeat gets a classic group from the same client;
// either way describe shows the member and its lag, and reset-offsets is
// refused while it is there.
func TestGroupCommandsFollowAGroupOfWhicheverProtocol(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, addr, nil, "topic", "create", "jobs", "--partitions", "2")
	mustRun(t, addr, strings.NewReader("a\nb\nc\nd\n"), "produce", "jobs")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("workers"), kgo.ConsumeTopics("jobs"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for n := 0; n < 4; {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 4 records: %v", n, err)
		}
		n += f.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		for !cl.PollFetches(context.Background()).IsClientClosed() {
		}
	}()

	r := mustRun(t, addr, nil, "group", "describe", "workers")
	if !strings.Contains(r.stdout, "State: Stable") || !strings.Contains(r.stdout, "jobs:0,1") || !strings.Contains(r.stdout, "Total lag: 0") {
		t.Fatalf("describe of the live group:\n%s", r.stdout)
	}
	mustFail(t, addr, nil, "is inactive, but the current state is Stable",
		"group", "reset-offsets", "workers", "--topic", "jobs", "--to-earliest", "--execute")

	cl.Close()
	<-polling
	waitFor(t, "the group to be Empty", func() bool {
		return strings.Contains(runCLI(t, addr, nil, "group", "describe", "workers").stdout, "State: Empty")
	})
	mustRun(t, addr, nil, "group", "reset-offsets", "workers", "--topic", "jobs", "--to-earliest", "--execute")
	r = mustRun(t, addr, nil, "group", "describe", "workers")
	if !strings.Contains(r.stdout, "Total lag: 4") {
		t.Fatalf("describe after the reset:\n%s", r.stdout)
	}
}

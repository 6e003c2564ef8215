package main

// The scenarios of compat-tests/scenarios.md, written once on top of Adapter.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// Observed is the "observed" object of the result line.
type Observed map[string]any

type scenarioFunc func(ctx context.Context, a Adapter, topic string, o *Outcome) error

// Outcome collects observations and failed checks; a scenario reports what
// it observed even when a check fails.
type Outcome struct {
	mu       sync.Mutex
	Observed Observed
	Failures []string
}

func (o *Outcome) Put(k string, v any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Observed[k] = v
}

// Snapshot copies the observations (for the timeout backstop).
func (o *Outcome) Snapshot() Observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := Observed{}
	for k, v := range o.Observed {
		c[k] = v
	}
	return c
}

// Expect records a failed check when got differs from want.
func (o *Outcome) Expect(what string, want, got any) {
	if !sameJSON(want, got) {
		o.Failures = append(o.Failures, fmt.Sprintf("%s: got %v, want %v", what, show(got), show(want)))
	}
}

// Check records a failure message when ok is false.
func (o *Outcome) Check(ok bool, msg string, a ...any) {
	if !ok {
		o.Failures = append(o.Failures, fmt.Sprintf(msg, a...))
	}
}

func show(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}

// sameJSON compares values the way they would compare as JSON (ints of any width).
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		switch x := v.(type) {
		case int:
			return int64(x)
		case int32:
			return int64(x)
		case []int:
			out := make([]int64, len(x))
			for i, e := range x {
				out[i] = int64(e)
			}
			return out
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

const waitFor = 30 * time.Second

func scenarios() map[string]scenarioFunc {
	m := map[string]scenarioFunc{
		"admin-topics":              scAdminTopics,
		"offsets-by-timestamp":      scOffsetsByTimestamp,
		"consumer-group":            scConsumerGroup,
		"consumer-group-848":        scConsumerGroup848,
		"idempotent-producer":       scIdempotent,
		"transactions":              scTransactions,
		"configs":                   scConfigs,
		"delete-records":            scDeleteRecords,
		"leader-failover":           scLeaderFailover,
		"consume-transform-produce": scConsumeTransformProduce,
	}
	for _, c := range Codecs {
		codec := c
		m["produce-consume-"+codec] = func(ctx context.Context, a Adapter, topic string, o *Outcome) error {
			return produceConsume(ctx, a, topic, o, ProduceOpts{Codec: codec})
		}
	}
	return m
}

// createTopic creates topic and waits until it is described with its partitions.
func createTopic(ctx context.Context, a Adapter, topic string, partitions int32) error {
	if err := a.CreateTopic(ctx, topic, partitions); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		n, err := a.TopicPartitions(ctx, topic)
		if err == nil && n == int(partitions) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("topic %s: %d partitions described, error %v", topic, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readToEnd reads partition from its earliest offset up to its end offset
// (the last stable offset under read_committed). Offsets past the last record
// that never arrive (control markers) end the read after 2 s without records.
func readToEnd(ctx context.Context, a Adapter, topic string, partition int32, readCommitted bool) ([]Record, error) {
	end, err := a.ListOffset(ctx, topic, partition, -1, readCommitted)
	if err != nil {
		return nil, fmt.Errorf("end offset: %w", err)
	}
	start, err := a.ListOffset(ctx, topic, partition, -2, false)
	if err != nil {
		return nil, fmt.Errorf("earliest offset: %w", err)
	}
	if start >= end {
		return nil, nil
	}
	r, err := a.OpenReader(ctx, topic, partition, readCommitted)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Record
	deadline := time.Now().Add(waitFor)
	lastProgress := time.Now()
	for {
		recs, err := r.Poll(ctx, 200*time.Millisecond)
		if err != nil {
			return out, err
		}
		if len(recs) > 0 {
			out = append(out, recs...)
			lastProgress = time.Now()
		}
		if len(out) > 0 && out[len(out)-1].Offset+1 >= end {
			return out, nil
		}
		if len(out) > 0 && time.Since(lastProgress) > 2*time.Second {
			return out, nil
		}
		if time.Now().After(deadline) {
			return out, fmt.Errorf("reading %s[%d] stalled after %d records (end offset %d)", topic, partition, len(out), end)
		}
	}
}

// verifyAndDigest checks records against the generator (record i at offset
// i, timestamp base+tsStep*i, CreateTime) and reports count, offsets and digests.
func verifyAndDigest(o *Outcome, recs []Record, want int, tsStep int64) {
	bad, firstBad := 0, ""
	for n, r := range recs {
		g := GenRecord(n, tsStep, 1)
		var why string
		switch {
		case r.Offset != int64(n):
			why = fmt.Sprintf("offset %d at position %d", r.Offset, n)
		case string(r.Key) != string(g.Key):
			why = fmt.Sprintf("key at offset %d: %q", n, r.Key)
		case string(r.Value) != string(g.Value):
			why = fmt.Sprintf("value at offset %d", n)
		case HeaderText(r.Headers) != HeaderText(g.Headers):
			why = fmt.Sprintf("headers at offset %d: %s", n, HeaderText(r.Headers))
		case r.Timestamp != g.Timestamp:
			why = fmt.Sprintf("timestamp at offset %d: %d", n, r.Timestamp)
		case r.TimestampType != "" && r.TimestampType != "CreateTime":
			why = fmt.Sprintf("timestamp type %s at offset %d", r.TimestampType, n)
		}
		if why != "" {
			if bad == 0 {
				firstBad = why
			}
			bad++
		}
	}
	full, kvh := Digests(recs)
	o.Put("count", len(recs))
	if len(recs) > 0 {
		o.Put("first_offset", recs[0].Offset)
		o.Put("last_offset", recs[len(recs)-1].Offset)
	} else {
		o.Put("first_offset", nil)
		o.Put("last_offset", nil)
	}
	o.Put("sha256", full)
	o.Put("sha256_kvh", kvh)
	o.Expect("count", want, len(recs))
	o.Check(bad == 0, "%d records differ from what was produced (first: %s)", bad, firstBad)
}

// timestampType is "CreateTime" when every record says so, null when the
// client does not tell, else the first other type seen.
func timestampType(recs []Record) any {
	var t any = "CreateTime"
	for _, r := range recs {
		if r.TimestampType == "" {
			return nil
		}
		if r.TimestampType != "CreateTime" {
			return r.TimestampType
		}
	}
	return t
}

func scAdminTopics(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	err := a.CreateTopic(ctx, topic, 3)
	o.Put("create", NameOf(err))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	listed, partitions := false, -1
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		names, err := a.ListTopics(ctx)
		listed = err == nil && contains(names, topic)
		n, err := a.TopicPartitions(ctx, topic)
		if err != nil {
			n = -1
		}
		partitions = n
		if listed && partitions == 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.Put("listed", listed)
	o.Put("partitions", partitions)
	o.Expect("listed", true, listed)
	o.Expect("partitions", 3, partitions)
	o.Put("create_again_error", NameOf(a.CreateTopic(ctx, topic, 3)))
	o.Put("create_invalid_error", NameOf(a.CreateTopic(ctx, "bad/name", 1)))
	o.Put("delete", NameOf(a.DeleteTopic(ctx, topic)))
	after := "NONE"
	deadline = time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		_, err := a.TopicPartitions(ctx, topic)
		after = NameOf(err)
		var ce *CodeError
		if errors.As(err, &ce) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.Put("describe_after_delete_error", after)
	o.Expect("create_again_error", "TOPIC_ALREADY_EXISTS", o.Observed["create_again_error"])
	o.Expect("create_invalid_error", "INVALID_TOPIC_EXCEPTION", o.Observed["create_invalid_error"])
	o.Expect("delete", "NONE", o.Observed["delete"])
	o.Expect("describe_after_delete_error", "UNKNOWN_TOPIC_OR_PARTITION", after)
	return nil
}

func contains(xs []string, x string) bool {
	for _, e := range xs {
		if e == x {
			return true
		}
	}
	return false
}

func produceConsume(ctx context.Context, a Adapter, topic string, o *Outcome, opts ProduceOpts) error {
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	if err := a.Produce(ctx, topic, GenRecords(0, 1000, 1, 1), opts); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	recs, err := readToEnd(ctx, a, topic, 0, false)
	verifyAndDigest(o, recs, 1000, 1)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !opts.Idempotent {
		tt := timestampType(recs)
		o.Put("timestamp_type", tt)
		if tt != nil {
			o.Expect("timestamp_type", "CreateTime", tt)
		}
		if end, err := a.ListOffset(ctx, topic, 0, -1, false); err == nil {
			o.Put("end_offset", end)
			o.Expect("end_offset", 1000, end)
		}
	}
	o.Expect("first_offset", 0, o.Observed["first_offset"])
	o.Expect("last_offset", 999, o.Observed["last_offset"])
	return nil
}

// leader-failover (scenarios.md): records produced in rounds with a pause between them, while run.py
// kills the partition's leader.
const (
	failoverRecords = 2000
	failoverRound   = 50
	failoverPause   = 100 * time.Millisecond
)

// failoverClients are the clients whose idempotent producer the scenario runs (kafka-go has none).
var failoverClients = map[string]bool{"franz-go": true, "sarama": true, "confluent-kafka-go": true}

// scLeaderFailover produces idempotent acks=all rounds while the partition's leader is killed, then
// reads every record back: exactly once and in order (verifyAndDigest wants record i at offset i).
func scLeaderFailover(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	if topology != "cluster" {
		return &NotApplicable{Reason: "leader-failover needs a cluster (run.py --topology cluster)"}
	}
	if client, _ := info["client"].(string); !failoverClients[client] {
		return &NotApplicable{Reason: "leader-failover needs an idempotent producer, which this client lacks"}
	}
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	for first := 0; first < failoverRecords; first += failoverRound {
		if err := a.Produce(ctx, topic, GenRecords(first, failoverRound, 1, 1),
			ProduceOpts{Codec: "none", Idempotent: true, Failover: true}); err != nil {
			return fmt.Errorf("produce of records %d..%d: %w", first, first+failoverRound-1, err)
		}
		time.Sleep(failoverPause)
	}
	// Read back with a fresh adapter: what is checked is the producer's recovery, not how an admin
	// client made before the failover handles a restarted node that no longer leads (librdkafka's
	// ListOffsets hands NOT_LEADER_OR_FOLLOWER to the application).
	client, _ := info["client"].(string)
	fresh, err := clients[client].mk(bootstrapAddrs)
	if err != nil {
		return fmt.Errorf("a fresh client for reading: %w", err)
	}
	defer fresh.Close()
	recs, err := readToEnd(ctx, fresh, topic, 0, false)
	verifyAndDigest(o, recs, failoverRecords, 1)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

func scIdempotent(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	return produceConsume(ctx, a, topic, o, ProduceOpts{Codec: "none", Idempotent: true})
}

func scOffsetsByTimestamp(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	if err := a.Produce(ctx, topic, GenRecords(0, 100, 10, 1), ProduceOpts{Codec: "none"}); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	queries := []struct {
		name string
		ts   int64
		want int64
	}{
		{"earliest", -2, 0},
		{"latest", -1, 100},
		{"by_timestamp", BaseTimestamp + 505, 51},
		{"max_timestamp", -3, 99},
		{"past_end", BaseTimestamp + 10000, -1},
	}
	for _, q := range queries {
		off, err := a.ListOffset(ctx, topic, 0, q.ts, false)
		if q.name == "max_timestamp" && errors.Is(err, ErrUnsupported) {
			o.Put(q.name, nil)
			continue
		}
		if err != nil {
			return fmt.Errorf("list offsets %s: %w", q.name, err)
		}
		o.Put(q.name, off)
		o.Expect(q.name, q.want, off)
	}
	return nil
}

func scConfigs(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	v, src, err := a.DescribeTopicConfig(ctx, topic, "retention.ms")
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	o.Put("before", v)
	o.Put("before_source", src)
	if err := a.AlterTopicConfig(ctx, topic, "retention.ms", "3600000"); err != nil {
		return fmt.Errorf("alter: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, src, err = a.DescribeTopicConfig(ctx, topic, "retention.ms")
		if err != nil {
			return fmt.Errorf("describe after alter: %w", err)
		}
		if v == "3600000" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.Put("after", v)
	o.Put("after_source", src)
	o.Expect("before", "604800000", o.Observed["before"])
	o.Expect("before_source", "DEFAULT_CONFIG", o.Observed["before_source"])
	o.Expect("after", "3600000", o.Observed["after"])
	o.Expect("after_source", "DYNAMIC_TOPIC_CONFIG", o.Observed["after_source"])
	return nil
}

func scTransactions(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	if err := a.Transactions(ctx, topic, topic+"-tx", GenRecords(0, 100, 1, 1), GenRecords(100, 100, 1, 1)); err != nil {
		return err
	}
	rc, err := readToEnd(ctx, a, topic, 0, true)
	if err != nil {
		return fmt.Errorf("read_committed: %w", err)
	}
	ru, err := readToEnd(ctx, a, topic, 0, false)
	if err != nil {
		return fmt.Errorf("read_uncommitted: %w", err)
	}
	committedOK, aborted := 0, 0
	for _, r := range rc {
		if i := IndexOf(r.Key); i >= 0 && i < 100 {
			committedOK++
		} else {
			aborted++
		}
	}
	end, err := a.ListOffset(ctx, topic, 0, -1, false)
	if err != nil {
		return fmt.Errorf("end offset: %w", err)
	}
	lso, err := a.ListOffset(ctx, topic, 0, -1, true)
	if err != nil {
		return fmt.Errorf("last stable offset: %w", err)
	}
	o.Put("committed_seen", len(rc))
	o.Put("aborted_seen", aborted)
	o.Put("read_uncommitted_seen", len(ru))
	o.Put("end_offset", end)
	o.Put("last_stable_offset", lso)
	o.Expect("committed_seen", 100, len(rc))
	o.Expect("committed records are records 0..99", 100, committedOK)
	o.Expect("aborted_seen", 0, aborted)
	o.Expect("read_uncommitted_seen", 200, len(ru))
	o.Expect("end_offset", 202, end)
	o.Expect("last_stable_offset", 202, lso)
	return nil
}

func scDeleteRecords(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	if err := createTopic(ctx, a, topic, 1); err != nil {
		return err
	}
	if err := a.Produce(ctx, topic, GenRecords(0, 100, 1, 1), ProduceOpts{Codec: "none"}); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	low, err := a.DeleteRecords(ctx, topic, 0, 40)
	switch {
	case errors.Is(err, ErrUnsupported):
		o.Put("low_watermark", nil)
	case err != nil:
		return fmt.Errorf("delete records: %w", err)
	default:
		o.Put("low_watermark", low)
		o.Expect("low_watermark", 40, low)
	}
	for _, q := range []struct {
		name string
		ts   int64
		want int64
	}{{"earliest", -2, 40}, {"latest", -1, 100}} {
		off, err := a.ListOffset(ctx, topic, 0, q.ts, false)
		if err != nil {
			return fmt.Errorf("list offsets %s: %w", q.name, err)
		}
		o.Put(q.name, off)
		o.Expect(q.name, q.want, off)
	}
	recs, err := readToEnd(ctx, a, topic, 0, false)
	if len(recs) > 0 {
		o.Put("first_consumed", recs[0].Offset)
	} else {
		o.Put("first_consumed", nil)
	}
	o.Put("consumed", len(recs))
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	o.Expect("first_consumed", 40, o.Observed["first_consumed"])
	o.Expect("consumed", 60, len(recs))
	return nil
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		if x > 0 {
			s += x
		}
	}
	return s
}

func scConsumerGroup(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	return consumerGroup(ctx, a, a.NewGroupConsumer, topic, o)
}

// ConsumerProtocolAdapter is an Adapter whose client speaks the KIP-848
// consumer group protocol.
type ConsumerProtocolAdapter interface {
	NewConsumerProtocolGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error)
}

// scConsumerGroup848 is consumer-group with group.protocol=consumer.
func scConsumerGroup848(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	cp, ok := a.(ConsumerProtocolAdapter)
	if !ok {
		return na("the client has no KIP-848 consumer group protocol")
	}
	return consumerGroup(ctx, a, cp.NewConsumerProtocolGroupConsumer, topic, o)
}

func consumerGroup(ctx context.Context, a Adapter, newConsumer func(ctx context.Context, group, topic string) (GroupConsumer, error),
	topic string, o *Outcome) error {
	const partitions = 6
	group := topic + "-g"
	if err := createTopic(ctx, a, topic, partitions); err != nil {
		return err
	}
	// Phase 1: three members, Stable with 2 partitions each, then 600 records between them.
	var cs []GroupConsumer
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := 0; i < 3; i++ {
		c, err := newConsumer(ctx, group, topic)
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
		cs = append(cs, c)
	}
	seen := map[int]bool{}
	per := make([]int, 3)
	// poll drives every member once; members commit after each poll that returned records.
	poll := func(d time.Duration) error {
		for n, c := range cs {
			recs, err := c.Poll(ctx, d)
			if err != nil {
				return fmt.Errorf("member %d poll: %w", n, err)
			}
			for _, r := range recs {
				seen[IndexOf(r.Key)] = true
				per[n]++
			}
			if len(recs) > 0 {
				_ = c.Commit(ctx) // a rebalance may get in the way; the next owner re-reads
			}
		}
		return nil
	}
	until := func(cond func() bool) (bool, error) {
		deadline := time.Now().Add(waitFor)
		for time.Now().Before(deadline) {
			if err := poll(50 * time.Millisecond); err != nil {
				return false, err
			}
			if cond() {
				return true, nil
			}
		}
		return false, nil
	}
	var lastState string
	var lastSizes []int
	stable, err := until(func() bool {
		st, sizes, err := a.DescribeGroup(ctx, group, topic)
		if err != nil {
			return false
		}
		lastState, lastSizes = st, sizes
		if st != "Stable" || len(sizes) != 3 {
			return false
		}
		for _, s := range sizes {
			if s != 2 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if stable {
		o.Put("members_stable", 3)
	} else {
		o.Put("members_stable", 0)
	}
	o.Check(stable, "the group never became Stable with 3 members of 2 partitions each (last: %s %v)", lastState, lastSizes)
	if err := a.Produce(ctx, topic, GenRecords(0, 600, 1, partitions), ProduceOpts{Codec: "none"}); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	all, err := until(func() bool { return len(seen) >= 600 })
	if err != nil {
		return err
	}
	o.Check(all, "the members consumed only %d of 600 records", len(seen))
	var committed []int64
	if _, err := until(func() bool {
		committed, _ = a.CommittedOffsets(ctx, group, topic, partitions)
		return sum(committed) >= 600
	}); err != nil {
		return err
	}
	for _, c := range cs {
		_ = c.Commit(ctx)
		c.Close()
	}
	cs = nil
	sorted := append([]int(nil), per...)
	sort.Ints(sorted)
	o.Put("distinct_consumed", len(seen))
	o.Put("per_consumer", sorted)
	committed, err = a.CommittedOffsets(ctx, group, topic, partitions)
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}
	o.Put("committed", committed)
	o.Expect("distinct_consumed", 600, len(seen))
	o.Expect("per_consumer", []int{200, 200, 200}, sorted)
	o.Expect("committed", []int64{100, 100, 100, 100, 100, 100}, committed)

	// Phase 2: a new member resumes from the commits: nothing old, then exactly the 10 new records.
	r, err := newConsumer(ctx, group, topic)
	if err != nil {
		return fmt.Errorf("new member: %w", err)
	}
	cs = []GroupConsumer{r}
	old, fresh := 0, 0
	count := func(recs []Record) {
		for _, rec := range recs {
			if IndexOf(rec.Key) >= 600 {
				fresh++
			} else {
				old++
			}
		}
	}
	deadline := time.Now().Add(waitFor)
	for r.Assigned() < partitions && time.Now().Before(deadline) {
		recs, err := r.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("new member poll: %w", err)
		}
		count(recs)
	}
	o.Check(r.Assigned() == partitions, "the new member got %d partitions", r.Assigned())
	quiet := time.Now().Add(2 * time.Second)
	for time.Now().Before(quiet) {
		recs, err := r.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("new member poll: %w", err)
		}
		count(recs)
	}
	if err := a.Produce(ctx, topic, GenRecords(600, 10, 1, partitions), ProduceOpts{Codec: "none"}); err != nil {
		return fmt.Errorf("produce new: %w", err)
	}
	deadline = time.Now().Add(waitFor)
	for fresh < 10 && time.Now().Before(deadline) {
		recs, err := r.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("new member poll: %w", err)
		}
		count(recs)
	}
	if err := r.Commit(ctx); err != nil {
		return fmt.Errorf("new member commit: %w", err)
	}
	r.Close()
	cs = nil
	o.Put("resumed_old", old)
	o.Put("new_seen", fresh)
	after, err := a.CommittedOffsets(ctx, group, topic, partitions)
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}
	o.Put("committed_after", after)
	o.Expect("resumed_old", 0, old)
	o.Expect("new_seen", 10, fresh)
	o.Expect("committed_after", []int64{102, 102, 102, 102, 101, 101}, after)
	return nil
}

// consume-transform-produce (scenarios.md): the input's records, at most ctpMaxPoll a poll (and a
// transaction); the late member joins once ctpJoinAt records are committed (fewer than 1000 by then: the check
// follows a round, in which the two members commit at most 800; so no partition of 1000 is done); the busier of
// members 0 and 1 leaves once the late member has committed records.
const (
	ctpRecords    = 3000
	ctpPartitions = 3
	ctpMaxPoll    = 200
	ctpJoinAt     = 200
	ctpLoop       = 40 * time.Second
	// ctpBackToBackPoll is the poll of a turn's second transaction, which follows the first at once.
	ctpBackToBackPoll = 10 * time.Millisecond
)

// ctpStart is when the process started; ctpLog prefixes its lines with the time since, so that a log
// shows where a slow run spent its time.
var ctpStart = time.Now()

func ctpLog(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "ctp: +%.3fs "+format, append([]any{time.Since(ctpStart).Seconds()}, a...)...)
}

// TransformMember is one member of consume-transform-produce's group: a read_committed consumer and a
// transactional producer of its own.
type TransformMember interface {
	// Step polls once (about d) and, if records came, runs one transaction with their transforms and the
	// consumed offsets. It returns the records committed (0 when none came or the transaction was
	// aborted: then aborted is true and the member reads again from its committed offsets); an error is
	// fatal for the member.
	Step(ctx context.Context, d time.Duration) (committed int, aborted bool, err error)
	// Hold pauses (true) or resumes fetching; a paused member still takes part in rebalances.
	Hold(pause bool)
	// Assigned is the number of input partitions the member holds.
	Assigned() int
	Close()
}

// TransformAdapter is an Adapter whose client runs consume-transform-produce.
type TransformAdapter interface {
	NewTransformMember(ctx context.Context, group, input, output, txnID string) (TransformMember, error)
}

// Transform is the scenario's transform of a value: upper-cased (the generator writes lower-case letters).
func Transform(v []byte) []byte {
	out := make([]byte, len(v))
	for i, b := range v {
		if b >= 'a' && b <= 'z' {
			b -= 'a' - 'A'
		}
		out[i] = b
	}
	return out
}

type ctpMember struct {
	m                        TransformMember
	committed, txns, aborted int
	closed                   bool
}

func (c *ctpMember) close() {
	if !c.closed {
		c.closed = true
		c.m.Close()
	}
}

func scConsumeTransformProduce(ctx context.Context, a Adapter, topic string, o *Outcome) error {
	ta, ok := a.(TransformAdapter)
	if !ok {
		return na("consume-transform-produce is not written for this client")
	}
	in, out, group := topic, topic+"-out", topic+"-g"
	for _, t := range []string{in, out} {
		if err := createTopic(ctx, a, t, ctpPartitions); err != nil {
			return err
		}
	}
	if err := a.Produce(ctx, in, GenRecords(0, ctpRecords, 1, ctpPartitions), ProduceOpts{Codec: "none"}); err != nil {
		return fmt.Errorf("produce the input: %w", err)
	}
	ends := make([]int64, ctpPartitions)
	for p := range ends {
		end, err := a.ListOffset(ctx, in, int32(p), -1, false)
		if err != nil {
			return fmt.Errorf("input end offset: %w", err)
		}
		ends[p] = end
	}
	o.Put("input_end_offsets", ends)

	var members []*ctpMember
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	join := func(n int) error {
		m, err := ta.NewTransformMember(ctx, group, in, out, fmt.Sprintf("%s-tx-%d", topic, n))
		if err != nil {
			return fmt.Errorf("member %d: %w", n, err)
		}
		members = append(members, &ctpMember{m: m})
		return nil
	}
	// A member that joins holds the others (they poll, so that they rejoin, but fetch nothing) until it has
	// partitions: else the members already there may do all the work before it is in.
	hold := func(pause bool) {
		for _, m := range members {
			if !m.closed {
				m.m.Hold(pause)
			}
		}
	}
	joiner := 1
	for n := 0; n < 2; n++ {
		if err := join(n); err != nil {
			return err
		}
	}
	members[0].m.Hold(true)
	committed, left, leftMidWay := 0, false, false
	var fatal []string
	var groupCommitted []int64
	deadline := time.Now().Add(ctpLoop)
	var nextCheck time.Time
loop:
	for time.Now().Before(deadline) && ctx.Err() == nil {
		live := 0
		for n, m := range members {
			if m.closed {
				continue
			}
			live++
			// a turn is up to two transactions back to back: the second begins as soon as the first is
			// committed, as a member that does not wait between transactions does
			for _, d := range []time.Duration{100 * time.Millisecond, ctpBackToBackPoll} {
				c, aborted, err := m.m.Step(ctx, d)
				if err != nil {
					ctpLog("member %d failed: %v\n", n, err)
					fatal = append(fatal, fmt.Sprintf("member %d: %s (%v)", n, NameOf(err), err))
					m.close()
					break
				}
				committed += c
				m.committed += c
				if aborted {
					m.aborted++
				}
				if c == 0 {
					break
				}
				m.txns++
			}
		}
		if live == 0 {
			break
		}
		if joiner >= 0 && (members[joiner].closed || members[joiner].m.Assigned() > 0) {
			ctpLog("member %d has %d partitions at %d committed; the others resume\n",
				joiner, members[joiner].m.Assigned(), committed)
			hold(false)
			joiner = -1
		}
		if len(members) == 2 && committed >= ctpJoinAt {
			ctpLog("member 2 joins at %d committed\n", committed)
			hold(true)
			if err := join(2); err != nil {
				return err
			}
			joiner = 2
		}
		if !left && len(members) == 3 && members[2].committed > 0 {
			// the one of members 0 and 1 that has done more leaves, handing its partitions on
			leaver := 0
			if members[1].committed > members[0].committed {
				leaver = 1
			}
			ctpLog("member %d leaves at %d committed\n", leaver, committed)
			left, leftMidWay = true, committed < ctpRecords
			members[leaver].close()
		}
		if committed >= ctpRecords && time.Now().After(nextCheck) {
			groupCommitted, _ = a.CommittedOffsets(ctx, group, in, ctpPartitions)
			if sameJSON(groupCommitted, ends) {
				break loop
			}
			nextCheck = time.Now().Add(500 * time.Millisecond)
		}
	}
	for _, m := range members {
		m.close()
	}
	groupCommitted, err := a.CommittedOffsets(ctx, group, in, ctpPartitions)
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}

	seen := make([]int, ctpRecords)
	count, bad, firstBad := 0, 0, ""
	for p := int32(0); p < ctpPartitions; p++ {
		recs, err := readToEnd(ctx, a, out, p, true)
		if err != nil {
			return fmt.Errorf("read the output: %w", err)
		}
		for _, r := range recs {
			count++
			i := IndexOf(r.Key)
			var why string
			if i < 0 || i >= ctpRecords {
				why = fmt.Sprintf("key %q", r.Key)
			} else {
				g := GenRecord(i, 1, ctpPartitions)
				switch {
				case r.Partition != g.Partition:
					why = fmt.Sprintf("record %d in partition %d", i, r.Partition)
				case string(r.Value) != string(Transform(g.Value)):
					why = fmt.Sprintf("value of record %d", i)
				case HeaderText(r.Headers) != HeaderText(g.Headers):
					why = fmt.Sprintf("headers of record %d", i)
				case r.Timestamp != g.Timestamp:
					why = fmt.Sprintf("timestamp of record %d", i)
				}
			}
			if why != "" {
				if bad == 0 {
					firstBad = why
				}
				bad++
				continue
			}
			seen[i]++
		}
	}
	distinct, duplicates := 0, 0
	for _, s := range seen {
		if s > 0 {
			distinct++
		}
		if s > 1 {
			duplicates += s - 1
		}
	}
	missing := ctpRecords - distinct
	per := make([]int, len(members))
	txns, aborted := 0, 0
	for n, m := range members {
		per[n] = m.committed
		txns += m.txns
		aborted += m.aborted
	}
	late := len(members) == 3 && members[2].committed > 0
	o.Put("output_count", count)
	o.Put("distinct", distinct)
	o.Put("duplicates", duplicates)
	o.Put("missing", missing)
	o.Put("transformed_ok", bad == 0)
	o.Put("exactly_once", duplicates == 0 && missing == 0 && bad == 0)
	o.Put("committed", groupCommitted)
	o.Put("members", len(members))
	o.Put("late_member_processed", late)
	o.Put("left_mid_way", leftMidWay)
	o.Put("per_member", per)
	o.Put("transactions", txns)
	o.Put("aborted_transactions", aborted)
	o.Check(len(fatal) == 0, "fatal member errors: %s", strings.Join(fatal, "; "))
	o.Expect("input_end_offsets", []int64{1000, 1000, 1000}, ends)
	o.Expect("output_count", ctpRecords, count)
	o.Expect("duplicates", 0, duplicates)
	o.Expect("missing", 0, missing)
	o.Check(bad == 0, "%d output records are not the transform of an input record (first: %s)", bad, firstBad)
	o.Expect("committed", ends, groupCommitted)
	o.Expect("members", 3, len(members))
	o.Check(late, "the late member committed no records")
	o.Check(leftMidWay, "no member left while records remained")
	return nil
}

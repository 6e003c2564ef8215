package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnTestCtx bounds a transaction test; generous, as the machine is shared.
func txnTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTxnProducer returns a franz-go transactional producer for topic.
func newTxnProducer(t *testing.T, addr, txnID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(txnID),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopics creates topics with n partitions each.
func createTopics(t *testing.T, ctx context.Context, addr string, n int32, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, n, 1, nil, topics...)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Error(); err != nil {
		t.Fatal(err)
	}
}

// runTxn produces values in one transaction and commits or aborts it.
func runTxn(t *testing.T, ctx context.Context, cl *kgo.Client, commit bool, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, kgo.StringRecord(v))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing in a transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending a transaction (commit %v): %v", commit, err)
	}
}

// consumeUntilSentinel produces a plain record "sentinel" to each of
// topic's partitions, then consumes topic from the start at isolation
// until it has read every sentinel, and returns the other values read,
// sorted. The sentinels come after everything produced before, so the
// answer is exactly what the isolation level makes visible.
func consumeUntilSentinel(t *testing.T, ctx context.Context, addr, topic string, partitions int32, level kgo.IsolationLevel) []string {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range partitions {
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: i, Value: []byte("sentinel")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	sentinels := int32(0)
	for sentinels < partitions {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %v; read %d sentinels and %q", topic, err, sentinels, got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "sentinel" {
				sentinels++
			} else {
				got = append(got, string(r.Value))
			}
		})
	}
	sort.Strings(got)
	return got
}

func seq(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%03d", prefix, i))
	}
	return out
}

func sorted(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.Strings(out)
	return out
}

func TestTxnFranzGoCommitAndAbort(t *testing.T) {
	b := startBroker(t, Config{})
	ctx := txnTestCtx(t)
	createTopics(t, ctx, b.Addr(), 3, "t")
	cl := newTxnProducer(t, b.Addr(), "tx-1", "t")
	runTxn(t, ctx, cl, true, seq("c1", 10)...)
	runTxn(t, ctx, cl, false, seq("a1", 10)...)
	runTxn(t, ctx, cl, true, seq("c2", 10)...)
	runTxn(t, ctx, cl, false, seq("a2", 5)...)

	if got, want := consumeUntilSentinel(t, ctx, b.Addr(), "t", 3, kgo.ReadCommitted()), sorted(seq("c1", 10), seq("c2", 10)); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}
	all := sorted(seq("c1", 10), seq("a1", 10), seq("c2", 10), seq("a2", 5))
	if got := consumeUntilSentinel(t, ctx, b.Addr(), "t", 3, kgo.ReadUncommitted()); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %q, want %q", got, all)
	}
}

// describeTxn returns the coordinator's view of id through kadm.
func describeTxn(t *testing.T, ctx context.Context, addr, id string) kadm.DescribedTransaction {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := d[id]
	if !ok {
		t.Fatalf("no description of %s", id)
	}
	if got.Err != nil && !errors.Is(got.Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("describing %s: %v", id, got.Err)
	}
	return got
}

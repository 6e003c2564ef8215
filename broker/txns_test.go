package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
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
// until it has read a sentinel in every partition, and returns the other
// values read before each partition's first sentinel, sorted. The
// sentinels come after everything produced before, so the answer is
// exactly what the isolation level makes visible (a second call finds the
// first call's sentinels first, which come after the same records).
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
	sentinels := map[int32]bool{} // partitions whose (first) sentinel was read
	for int32(len(sentinels)) < partitions {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %v; read the sentinels of %d partitions and %q", topic, err, len(sentinels), got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "sentinel" {
				sentinels[r.Partition] = true
			} else if !sentinels[r.Partition] {
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
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts []kgo.Opt
		// epoch after the four transactions: V2 bumps it at each end.
		epoch int16
	}{
		{"transactions V2", nil, 4},
		{"transactions V1 (requests capped at Kafka 3.9's versions)", []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) { testTxnFranzGoCommitAndAbort(t, tt.opts, tt.epoch) })
	}
}

func testTxnFranzGoCommitAndAbort(t *testing.T, opts []kgo.Opt, epoch int16) {
	b := startBroker(t, Config{})
	ctx := txnTestCtx(t)
	createTopics(t, ctx, b.Addr(), 3, "t")
	cl := newTxnProducer(t, b.Addr(), "tx-1", "t", opts...)
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
	// Uncapped, franz-go sees transaction.version 2 finalized and runs
	// transactions V2, where each of the four ends bumps the epoch.
	if d := describeTxn(t, ctx, b.Addr(), "tx-1"); d.State != "CompleteAbort" || d.ProducerEpoch != epoch {
		t.Fatalf("described %+v; want CompleteAbort at epoch %d", d, epoch)
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

// TestTxnSecondProducerFencesTheFirst starts a second franz-go producer
// with the same transactional id while the first is inside a
// transaction: the first's transaction is aborted, its commit is refused
// as fenced, and only the second's records are committed.
func TestTxnSecondProducerFencesTheFirst(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	ctx := txnTestCtx(t)
	createTopics(t, ctx, b.Addr(), 2, "t")
	first := newTxnProducer(t, b.Addr(), "shared", "t")
	runTxn(t, ctx, first, true, seq("first-committed", 4)...)
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("zombie-0"), kgo.StringRecord("zombie-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	second := newTxnProducer(t, b.Addr(), "shared", "t")
	runTxn(t, ctx, second, true, seq("second", 6)...)

	err := first.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	want := sorted(seq("first-committed", 4), seq("second", 6))
	if got := consumeUntilSentinel(t, ctx, b.Addr(), "t", 2, kgo.ReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}
	d := describeTxn(t, ctx, b.Addr(), "shared")
	if d.State != "CompleteCommit" || d.ProducerEpoch < 2 {
		t.Fatalf("described %+v; want CompleteCommit with the epoch bumped twice (fence, then the second's init)", d)
	}
}

// TestTxnRandomizedExactReadCommitted runs several franz-go transactional
// producers at once, each committing or aborting transactions at random,
// and checks that read_committed returns exactly the committed records.
func TestTxnRandomizedExactReadCommitted(t *testing.T) {
	t.Parallel()
	const producers, txnsEach, partitions = 4, 12, 3
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	b := startBroker(t, Config{})
	ctx := txnTestCtx(t)
	createTopics(t, ctx, b.Addr(), partitions, "r")
	type result struct {
		committed, all []string
		err            error
	}
	results := make(chan result, producers)
	for p := range producers {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(p)))
		cl := newTxnProducer(t, b.Addr(), fmt.Sprintf("rand-%d", p), "r")
		go func() {
			var res result
			defer func() { results <- res }()
			for i := range txnsEach {
				commit := rng.IntN(2) == 0
				if err := cl.BeginTransaction(); err != nil {
					res.err = err
					return
				}
				var recs []*kgo.Record
				var values []string
				for j := range 1 + rng.IntN(6) {
					v := fmt.Sprintf("p%d-t%02d-r%d-%v", p, i, j, commit)
					values = append(values, v)
					recs = append(recs, kgo.StringRecord(v))
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					res.err = err
					return
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					res.err = err
					return
				}
				res.all = append(res.all, values...)
				if commit {
					res.committed = append(res.committed, values...)
				}
			}
		}()
	}
	var committed, all []string
	for range producers {
		res := <-results
		if res.err != nil {
			t.Fatal(res.err)
		}
		committed, all = append(committed, res.committed...), append(all, res.all...)
	}
	sort.Strings(committed)
	sort.Strings(all)
	if got := consumeUntilSentinel(t, ctx, b.Addr(), "r", partitions, kgo.ReadCommitted()); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %d records %q, want the %d committed %q", len(got), got, len(committed), committed)
	}
	if got := consumeUntilSentinel(t, ctx, b.Addr(), "r", partitions, kgo.ReadUncommitted()); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %d records, want all %d", len(got), len(all))
	}
}

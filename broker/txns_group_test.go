package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnGroupTransactSessionExactlyOnce runs franz-go's
// GroupTransactSession (consume, transform, produce, with the consumed
// offsets committed in the transaction through AddOffsetsToTxn and
// TxnOffsetCommit): the first transaction is aborted, so its records are
// consumed again, and in the end read_committed sees every input
// transformed exactly once and the group's committed offsets are the ends
// of the input.
func TestTxnGroupTransactSessionExactlyOnce(t *testing.T) {
	t.Parallel()
	const n = 40
	zero := int64(0)
	b := startBroker(t, Config{GroupInitialRebalanceDelayMs: &zero})
	ctx := txnTestCtx(t)
	createTopics(t, ctx, b.Addr(), 2, "in", "out")
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want []string
	for i := range n {
		v := fmt.Sprintf("v-%03d", i)
		want = append(want, "t-"+v)
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("ctp"),
		kgo.ConsumerGroup("ctp-group"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic("out"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	transactAbortingTheFirst(t, ctx, s, n)
	if got := consumeUntilSentinel(t, ctx, b.Addr(), "out", 2, kgo.ReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed output %q, want each input once %q", got, want)
	}
	wantCommittedAtEnd(t, ctx, kadm.NewClient(p), "ctp-group", "in")
}

// wantCommittedAtEnd checks that group has committed the end offset of every
// partition of topic that holds records.
func wantCommittedAtEnd(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) {
	t.Helper()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if e.Offset == 0 {
			return // nothing consumed there, nothing committed
		}
		if o, ok := offs.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("%s-%d: committed %+v, end %d", topic, e.Partition, o, e.Offset)
		}
	})
}

// transactAbortingTheFirst consumes from s and produces each record, with
// "t-" before its value, in one transaction per poll until n records are
// committed: the first transaction is aborted, the rest are committed.
func transactAbortingTheFirst(t *testing.T, ctx context.Context, s *kgo.GroupTransactSession, n int) {
	t.Helper()
	done, aborted := 0, false
	for done < n {
		fs := s.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", done, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		if fs.NumRecords() == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { out = append(out, kgo.StringRecord("t-"+string(r.Value))) })
		if err := s.ProduceSync(ctx, out...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		commit := aborted // abort the first transaction, commit the rest
		committed, err := s.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil {
			t.Fatalf("End(commit %v): %v", commit, err)
		}
		if committed {
			done += len(out)
		}
		aborted = true
	}
}

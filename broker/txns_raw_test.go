package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/vfs"
)

// The transaction APIs driven with raw requests, for versions and
// contents that client libraries would not send.

func rawInitTxn(t testing.TB, c *rawConn, version int16, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(version)
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return c.do(req).(*kmsg.InitProducerIDResponse)
}

// rawInitTxnOK initializes id (retrying while an old transaction is
// aborted) and returns its producer id and epoch.
func rawInitTxnOK(t testing.TB, c *rawConn, id string, timeoutMs int32) (int64, int16) {
	t.Helper()
	var resp *kmsg.InitProducerIDResponse
	waitFor(t, "InitProducerId of "+id, func() bool {
		resp = rawInitTxn(t, c, 5, id, timeoutMs, -1, -1)
		return resp.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId %s: %v", id, err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// rawAddPartitions adds topic's partitions with AddPartitionsToTxn v0-v3
// and returns each partition's code.
func rawAddPartitions(t testing.TB, c *rawConn, version int16, id string, pid int64, epoch int16, topic string, parts ...int32) map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.AddPartitionsToTxnResponse)
	out := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = rp.ErrorCode
		}
	}
	return out
}

func rawEndTxn(t testing.TB, c *rawConn, version int16, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return c.do(req).(*kmsg.EndTxnResponse).ErrorCode
}

// rawProduce sends one batch to partition 0 of topic and returns the
// partition's answer.
func rawProduce(t testing.TB, c *rawConn, version int16, txnID *string, topic string, one []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = one
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

func wantTxnCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got == 0 || want != nil && got == want.Code {
		return
	}
	t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
}

func TestTxnRawBadInput(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopics(t, txnTestCtx(t), b.Addr(), 2, "t")

	// Unknown transactional id.
	wantTxnCode(t, "EndTxn of an unknown id", rawEndTxn(t, c, 4, "nobody", 5, 0, true), kerr.InvalidProducerIDMapping)
	wantTxnCode(t, "AddPartitionsToTxn of an unknown id", rawAddPartitions(t, c, 3, "nobody", 5, 0, "t", 0)[0], kerr.InvalidProducerIDMapping)
	wantTxnCode(t, "EndTxn of an empty id", rawEndTxn(t, c, 4, "", 5, 0, true), kerr.InvalidRequest)
	// Timeouts.
	r := rawInitTxn(t, c, 4, "x", 900_001, -1, -1)
	wantTxnCode(t, "timeout above transaction.max.timeout.ms", r.ErrorCode, kerr.InvalidTransactionTimeout)
	if r.ProducerID != -1 || r.ProducerEpoch != -1 {
		t.Fatalf("refused InitProducerId carries producer id %d epoch %d", r.ProducerID, r.ProducerEpoch)
	}
	wantTxnCode(t, "zero timeout", rawInitTxn(t, c, 4, "x", 0, -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	wantTxnCode(t, "empty transactional id", rawInitTxn(t, c, 4, "", 1000, -1, -1).ErrorCode, kerr.InvalidRequest)

	pid, epoch := rawInitTxnOK(t, c, "x", 60000)
	if epoch != 0 {
		t.Fatalf("a new transactional id got epoch %d", epoch)
	}
	wantTxnCode(t, "EndTxn with no transaction", rawEndTxn(t, c, 4, "x", pid, epoch, true), kerr.InvalidTxnState)
	// Wrong epoch: INVALID_PRODUCER_EPOCH below v2, PRODUCER_FENCED from v2.
	wantTxnCode(t, "EndTxn v1 with a wrong epoch", rawEndTxn(t, c, 1, "x", pid, epoch+1, true), kerr.InvalidProducerEpoch)
	wantTxnCode(t, "EndTxn v2 with a wrong epoch", rawEndTxn(t, c, 2, "x", pid, epoch+1, true), kerr.ProducerFenced)
	wantTxnCode(t, "AddPartitionsToTxn v1 with a wrong epoch", rawAddPartitions(t, c, 1, "x", pid, epoch+1, "t", 0)[0], kerr.InvalidProducerEpoch)
	wantTxnCode(t, "AddPartitionsToTxn v2 with a wrong epoch", rawAddPartitions(t, c, 2, "x", pid, epoch+1, "t", 0)[0], kerr.ProducerFenced)
	wantTxnCode(t, "AddPartitionsToTxn with another producer id", rawAddPartitions(t, c, 3, "x", pid+1, epoch, "t", 0)[0], kerr.InvalidProducerIDMapping)

	// A partition that does not exist refuses the whole addition.
	codes := rawAddPartitions(t, c, 3, "x", pid, epoch, "t", 0, 7)
	wantTxnCode(t, "unknown partition", codes[7], kerr.UnknownTopicOrPartition)
	wantTxnCode(t, "the other partition", codes[0], kerr.OperationNotAttempted)
	wantTxnCode(t, "a client adding __consumer_offsets", rawAddPartitions(t, c, 3, "x", pid, epoch, "__consumer_offsets", 0)[0], kerr.TopicAuthorizationFailed)

	// A marker for a partition never added: transactional produce to it is
	// refused, and the partition is not left behind an open transaction.
	wantTxnCode(t, "add t-1", rawAddPartitions(t, c, 3, "x", pid, epoch, "t", 1)[1], nil)
	sp := rawProduce(t, c, 10, kmsg.StringPtr("x"), "t", txnBatch(t, pid, epoch, 0, 2, "never-added"))
	wantTxnCode(t, "Produce v10 to a partition never added", sp.ErrorCode, kerr.InvalidTxnState)
	sp = rawProduce(t, c, 11, kmsg.StringPtr("x"), "t", txnBatch(t, pid, epoch, 0, 2, "never-added"))
	wantTxnCode(t, "Produce v11 to a partition never added", sp.ErrorCode, kerr.TransactionAbortable)
	sp = rawProduce(t, c, 11, nil, "t", txnBatch(t, pid, epoch, 0, 2, "no-id"))
	wantTxnCode(t, "Produce of a transactional batch without a transactional id", sp.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	sp = rawProduce(t, c, 11, kmsg.StringPtr("x"), "t", txnBatch(t, pid, epoch+1, 0, 2, "fenced"))
	wantTxnCode(t, "Produce with another epoch", sp.ErrorCode, kerr.InvalidProducerEpoch)
	if lso, hw := listCommitted(t, c, "t"), b2p(b, "t")[0].HighWatermark(); lso != hw || hw != 0 {
		t.Fatalf("t-0: LSO %d, high watermark %d after refused transactional produce", lso, hw)
	}

	// EndTxn twice: the same end is a retry, the other is INVALID_TXN_STATE.
	wantTxnCode(t, "commit", rawEndTxn(t, c, 4, "x", pid, epoch, true), nil)
	waitFor(t, "the commit to complete", func() bool {
		return rawEndTxn(t, c, 4, "x", pid, epoch, true) == 0
	})
	wantTxnCode(t, "abort after commit", rawEndTxn(t, c, 4, "x", pid, epoch, false), kerr.InvalidTxnState)

	// Admin.
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{"nobody", "x", ""}
	dr := c.do(d).(*kmsg.DescribeTransactionsResponse)
	wantTxnCode(t, "describe an unknown id", dr.TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound)
	wantTxnCode(t, "describe x", dr.TransactionStates[1].ErrorCode, nil)
	wantTxnCode(t, "describe an empty id", dr.TransactionStates[2].ErrorCode, kerr.InvalidRequest)
	if s := dr.TransactionStates[1]; s.State != "CompleteCommit" || s.ProducerID != pid || s.ProducerEpoch != epoch || s.TimeoutMillis != 60000 || len(s.Topics) != 0 {
		t.Fatalf("describe x: %+v", s)
	}
	l := kmsg.NewPtrListTransactionsRequest()
	l.SetVersion(2)
	l.TransactionalIDPattern = kmsg.StringPtr("(")
	wantTxnCode(t, "ListTransactions with a bad pattern", c.do(l).(*kmsg.ListTransactionsResponse).ErrorCode, kerr.InvalidRegularExpression)
	l.TransactionalIDPattern, l.StateFilters = kmsg.StringPtr("x|y"), []string{"CompleteCommit", "Nonsense"}
	lr := c.do(l).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "x" ||
		len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Nonsense" {
		t.Fatalf("ListTransactions: %+v", lr)
	}
}

// TestTxnAbandonedProducerIsAbortedOnTimeout drops a producer inside its
// transaction: the coordinator aborts it once it is past its timeout,
// bumping the epoch, so the partition's LSO moves on and the producer, if
// it comes back, is fenced. The producer here is a transactions V1 client
// (AddPartitionsToTxn v3, Produce v9).
func TestTxnAbandonedProducerIsAbortedOnTimeout(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{TransactionAbortTimedOutTransactionCleanupIntervalMs: 20})
	createTopics(t, txnTestCtx(t), b.Addr(), 1, "t")
	c := dialRaw(t, b.Addr())
	pid, epoch := rawInitTxnOK(t, c, "gone", 200)
	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "gone", pid, epoch, "t", 0)[0], nil)
	wantTxnCode(t, "produce", rawProduce(t, c, 9, kmsg.StringPtr("gone"), "t", txnBatch(t, pid, epoch, 0, 3, "doomed")).ErrorCode, nil)
	if lso := listCommitted(t, c, "t"); lso != 0 {
		t.Fatalf("LSO %d with the transaction open", lso)
	}
	// The producer is gone; nothing else is sent for it.
	waitFor(t, "the timed out transaction to be aborted", func() bool {
		return listCommitted(t, c, "t") == 4 // three records and the abort marker
	})
	sp, _ := fetchCommitted(t, c, "t", 0)
	if len(sp.AbortedTransactions) != 1 || sp.AbortedTransactions[0].ProducerID != pid {
		t.Fatalf("aborted transactions %+v", sp.AbortedTransactions)
	}
	waitFor(t, "CompleteAbort", func() bool {
		d := kmsg.NewPtrDescribeTransactionsRequest()
		d.TransactionalIDs = []string{"gone"}
		s := c.do(d).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		// The fence bumps the epoch, and the abort, at the cluster's
		// transaction.version 2, once more.
		return s.State == "CompleteAbort" && s.ProducerEpoch == epoch+2
	})
	// The zombie comes back.
	wantTxnCode(t, "the zombie commits", rawEndTxn(t, c, 4, "gone", pid, epoch, true), kerr.ProducerFenced)
	wantTxnCode(t, "the zombie produces", rawProduce(t, c, 9, kmsg.StringPtr("gone"), "t", txnBatch(t, pid, epoch, 3, 1, "zombie")).ErrorCode, kerr.InvalidProducerEpoch)
}

// TestTxnRestartInsideTransaction closes the broker with a transaction
// open and restarts it on the same data: the coordinator replays
// __transaction_state, and the producer commits its transaction.
func TestTxnRestartInsideTransaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	createTopics(t, txnTestCtx(t), b.Addr(), 2, "t")
	c := dialRaw(t, b.Addr())
	pid, epoch := rawInitTxnOK(t, c, "r", 60000)
	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "r", pid, epoch, "t", 0, 1)[0], nil)
	wantTxnCode(t, "produce", rawProduce(t, c, 9, kmsg.StringPtr("r"), "t", txnBatch(t, pid, epoch, 0, 3, "kept")).ErrorCode, nil)
	// A second id whose commit was answered before the restart.
	pid2, epoch2 := rawInitTxnOK(t, c, "done", 60000)
	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "done", pid2, epoch2, "t", 0)[0], nil)
	wantTxnCode(t, "commit", rawEndTxn(t, c, 4, "done", pid2, epoch2, true), nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, Config{DataDir: dir})
	c = dialRaw(t, b.Addr())
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{"r"}
	s := c.do(d).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	if s.State != "Ongoing" || s.ProducerID != pid || s.ProducerEpoch != epoch || len(s.Topics) != 1 || len(s.Topics[0].Partitions) != 2 {
		t.Fatalf("after restart: %+v", s)
	}
	if lso := listCommitted(t, c, "t"); lso != 0 {
		t.Fatalf("LSO %d after restart with the transaction open", lso)
	}
	wantTxnCode(t, "commit after restart", rawEndTxn(t, c, 4, "r", pid, epoch, true), nil)
	waitFor(t, "the commit's marker", func() bool { return listCommitted(t, c, "t") == b2p(b, "t")[0].HighWatermark() })
	// t-0 holds r's three records, the marker of "done" (which added it
	// without producing) and r's commit marker, all visible.
	sp, hs := fetchCommitted(t, c, "t", 0)
	if len(sp.AbortedTransactions) != 0 || len(hs) != 3 || hs[0].RecordCount != 3 || hs[0].Control() || !hs[1].Control() || !hs[2].Control() ||
		hs[2].ProducerID != pid {
		t.Fatalf("read_committed after the commit: aborted %v, batches %+v", sp.AbortedTransactions, hs)
	}
	// Another InitProducerId for "r" bumps the epoch the log recorded.
	if _, e := rawInitTxnOK(t, c, "r", 60000); e != epoch+1 {
		t.Fatalf("epoch after restart and re-init %d, want %d", e, epoch+1)
	}
}

// TestTxnV2RawProduceAddsAndEndBumps drives transactions V2 by hand:
// Produce v12 adds its partition to the transaction, EndTxn v5 bumps the
// epoch and answers the new one, a retry with the old epoch succeeds, and
// the old epoch is fenced afterwards.
func TestTxnV2RawProduceAddsAndEndBumps(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	createTopics(t, txnTestCtx(t), b.Addr(), 1, "t")
	c := dialRaw(t, b.Addr())
	pid, epoch := rawInitTxnOK(t, c, "v2", 60000)
	end := func(epoch int16, commit bool) *kmsg.EndTxnResponse {
		req := kmsg.NewPtrEndTxnRequest()
		req.SetVersion(5)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "v2", pid, epoch, commit
		return c.do(req).(*kmsg.EndTxnResponse)
	}
	wantTxnCode(t, "produce v12 without AddPartitionsToTxn", rawProduce(t, c, 12, kmsg.StringPtr("v2"), "t", txnBatch(t, pid, epoch, 0, 2, "one")).ErrorCode, nil)
	if lso := listCommitted(t, c, "t"); lso != 0 {
		t.Fatalf("LSO %d with the transaction open", lso)
	}
	e := end(epoch, true)
	if e.ErrorCode != 0 || e.ProducerID != pid || e.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %+v, want producer %d epoch %d", e, pid, epoch+1)
	}
	if e := end(epoch, true); e.ErrorCode != 0 || e.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 retried: %+v", e)
	}
	wantTxnCode(t, "commit again at the new epoch", end(epoch+1, true).ErrorCode, kerr.InvalidTxnState)
	wantTxnCode(t, "produce at the new epoch", rawProduce(t, c, 12, kmsg.StringPtr("v2"), "t", txnBatch(t, pid, epoch+1, 0, 1, "two")).ErrorCode, nil)
	if e := end(epoch+1, false); e.ErrorCode != 0 || e.ProducerEpoch != epoch+2 {
		t.Fatalf("abort: %+v", e)
	}
	// EndTxn answers once the abort is decided; the marker reaches the
	// partition after. Until it does the transaction is still open there
	// and, as in Kafka, a batch of it is appended without verification.
	waitFor(t, "the abort marker", func() bool { return listCommitted(t, c, "t") == b2p(b, "t")[0].HighWatermark() })
	wantTxnCode(t, "produce at an old epoch", rawProduce(t, c, 12, kmsg.StringPtr("v2"), "t", txnBatch(t, pid, epoch+1, 1, 1, "old")).ErrorCode, kerr.InvalidProducerEpoch)
	if lso, hw := listCommitted(t, c, "t"), b2p(b, "t")[0].HighWatermark(); lso != hw || hw != 5 {
		t.Fatalf("LSO %d, high watermark %d; want both 5 (two records, a commit, a record, an abort)", lso, hw)
	}
	sp, _ := fetchCommitted(t, c, "t", 0)
	if len(sp.AbortedTransactions) != 1 || sp.AbortedTransactions[0].FirstOffset != 3 {
		t.Fatalf("aborted transactions %+v", sp.AbortedTransactions)
	}
}

// TestTxnVerifyTxnOffsetCommit checks the answers the transaction
// coordinator gives TxnOffsetCommit about a group's __consumer_offsets
// partition: verified once AddOffsetsToTxn added it, added by the V2
// form, and Kafka's errors otherwise.
func TestTxnVerifyTxnOffsetCommit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	ctx := txnTestCtx(t)
	pid, epoch := rawInitTxnOK(t, c, "o", 60000)
	verify := b.txns.verifyTxnOffsetCommit
	if e := verify(ctx, "o", pid, epoch, "g", false); e != kerr.TransactionAbortable {
		t.Fatalf("before AddOffsetsToTxn: %v, want TRANSACTION_ABORTABLE", e)
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "o", pid, epoch, "g"
	wantTxnCode(t, "AddOffsetsToTxn", c.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	for _, tt := range []struct {
		name  string
		tid   string
		pid   int64
		epoch int16
		group string
		add   bool
		want  *kerr.Error
	}{
		{"added", "o", pid, epoch, "g", false, nil},
		{"another group's partition", "o", pid, epoch, "another-group-entirely", false, kerr.TransactionAbortable},
		{"unknown transactional id", "nobody", pid, epoch, "g", false, kerr.InvalidProducerIDMapping},
		{"another producer id", "o", pid + 1, epoch, "g", false, kerr.InvalidProducerIDMapping},
		{"another epoch", "o", pid, epoch + 1, "g", false, kerr.ProducerFenced},
		{"v5 adds", "o", pid, epoch, "h", true, nil},
		{"then verified", "o", pid, epoch, "h", false, nil},
	} {
		if e := verify(ctx, tt.tid, tt.pid, tt.epoch, tt.group, tt.add); e != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, e, tt.want)
		}
	}
}

// TestTxnProduceWhileTheLastTransactionCompletes checks what a
// transactional produce gets while the producer's previous transaction is
// still writing its markers (held here by a marker that cannot be written
// into partition 1 until the fault is lifted), as Kafka's ReplicaManager
// answers it: Produce v12+ (transactions V2, which adds its partition)
// asks again every add.partitions.to.txn.retry.backoff.ms and answers
// CONCURRENT_TRANSACTIONS once add.partitions.to.txn.retry.backoff.max.ms
// has passed, or succeeds if the markers are written by then; Produce v11
// (verification only) is NOT_ENOUGH_REPLICAS at once.
func TestTxnProduceWhileTheLastTransactionCompletes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		tv2     bool
		maxMs   int64
		lift    bool // lift the fault while the produce waits
		want    *kerr.Error
		minWait time.Duration
	}{
		{name: "v12 past the retry max", tv2: true, maxMs: 100, want: kerr.ConcurrentTransactions, minWait: 100 * time.Millisecond},
		{name: "v12 without retries", tv2: true, maxMs: 0, want: kerr.ConcurrentTransactions},
		{name: "v12 until the markers are written", tv2: true, maxMs: 5000, lift: true},
		{name: "v11", tv2: false, maxMs: 5000, want: kerr.NotEnoughReplicas},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
			maxMs := tt.maxMs
			b := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler),
				AddPartitionsToTxnRetryBackoffMaxMs: &maxMs})
			c := dialRaw(t, b.Addr())
			createTopic(t, c, "t", 2, nil)
			pid, epoch := rawInitTxnOK(t, c, "busy", 60000)
			produceVersion, endVersion := int16(12), int16(5)
			if !tt.tv2 {
				produceVersion, endVersion = 11, 4
				for _, p := range []int32{0, 1} {
					wantTxnCode(t, "AddPartitionsToTxn", rawAddPartitions(t, c, 3, "busy", pid, epoch, "t", p)[p], nil)
				}
			}
			id := kmsg.StringPtr("busy")
			for _, p := range []int32{0, 1} {
				req := produceRequest(produceVersion, -1, "t", p, txnBatch(t, pid, epoch, 0, 1, "first"))
				req.TransactionID = id
				wantTxnCode(t, fmt.Sprintf("produce to t-%d", p), c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, nil)
			}
			ffs.Arm(faultsUnder("/data/t-1", vfs.ErrInjected, vfs.OpWrite))
			wantTxnCode(t, "EndTxn", rawEndTxn(t, c, endVersion, "busy", pid, epoch, true), nil)
			next := epoch
			if tt.tv2 {
				next++ // V2 bumps the epoch at every end
			}
			seq := int32(0)
			if !tt.tv2 {
				seq = 1
			}
			req := produceRequest(produceVersion, -1, "t", 0, txnBatch(t, pid, next, seq, 1, "second"))
			req.TransactionID = id
			if tt.lift {
				time.AfterFunc(50*time.Millisecond, func() { ffs.Arm(nil) })
			}
			start := time.Now()
			got := c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			waited := time.Since(start)
			wantTxnCode(t, "produce of the next transaction", got.ErrorCode, tt.want)
			if waited < tt.minWait {
				t.Errorf("answered after %v, before the retry max %v", waited, tt.minWait)
			}
			if tt.want == kerr.NotEnoughReplicas {
				if want := "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS"; got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, want) {
					t.Errorf("message %v, want it to contain %q", got.ErrorMessage, want)
				}
			}
			ffs.Arm(nil)
		})
	}
}

package broker

import (
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/vfs"
)

func describeRaw(t *testing.T, c *rawConn, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{id}
	return c.do(d).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

// TestTxnOnAFullDisk fills the disk under the transaction coordinator:
// a transition whose record cannot be appended to __transaction_state is
// answered NOT_COORDINATOR and does not stand; a commit marker that cannot
// be written leaves the transaction in PrepareCommit (the producer gets
// CONCURRENT_TRANSACTIONS) and is written once the disk has room, which
// completes the commit and moves the partition's LSO.
func TestTxnOnAFullDisk(t *testing.T) {
	t.Parallel()
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	b := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	c := dialRaw(t, b.Addr())
	createTopics(t, txnTestCtx(t), b.Addr(), 1, "t")
	pid, epoch := rawInitTxnOK(t, c, "full", 60000)

	stateDir := fmt.Sprintf("/data/%s-%d", txnStateTopic, group.PartitionFor("full", b.cfg.TransactionStateLogNumPartitions))
	ffs.Arm(faultsUnder(stateDir, &fs.PathError{Op: "write", Path: stateDir, Err: syscall.ENOSPC}, vfs.OpWrite))
	wantTxnCode(t, "AddPartitionsToTxn on a full disk", rawAddPartitions(t, c, 3, "full", pid, epoch, "t", 0)[0], kerr.NotCoordinator)
	ffs.Arm(nil)
	if s := describeRaw(t, c, "full"); s.State != "Empty" || len(s.Topics) != 0 {
		t.Fatalf("after the failed append: %+v, want the Empty state the log holds", s)
	}

	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "full", pid, epoch, "t", 0)[0], nil)
	wantTxnCode(t, "produce", rawProduce(t, c, 9, kmsg.StringPtr("full"), "t", txnBatch(t, pid, epoch, 0, 2, "x")).ErrorCode, nil)
	dataDir := "/data/t-0"
	ffs.Arm(faultsUnder(dataDir, &fs.PathError{Op: "write", Path: dataDir, Err: syscall.ENOSPC}, vfs.OpWrite))
	wantTxnCode(t, "commit", rawEndTxn(t, c, 4, "full", pid, epoch, true), nil)
	if s := describeRaw(t, c, "full"); s.State != "PrepareCommit" {
		t.Fatalf("with the marker unwritten: %s, want PrepareCommit", s.State)
	}
	wantTxnCode(t, "commit again while the marker waits", rawEndTxn(t, c, 4, "full", pid, epoch, true), kerr.ConcurrentTransactions)
	if lso := listCommitted(t, c, "t"); lso != 0 {
		t.Fatalf("LSO %d before the marker", lso)
	}
	ffs.Arm(nil)
	waitFor(t, "the marker to be retried", func() bool { return describeRaw(t, c, "full").State == "CompleteCommit" })
	if lso, hw := listCommitted(t, c, "t"), b2p(b, "t")[0].HighWatermark(); lso != hw || hw != 3 {
		t.Fatalf("LSO %d, high watermark %d after the commit; want 3 and 3", lso, hw)
	}
}

// TestTxnPrepareCommitSurvivesRestart closes the broker while a commit's
// marker cannot be written: the restarted coordinator finds the
// transaction in PrepareCommit in __transaction_state and writes the
// marker before the listener opens, completing the commit.
func TestTxnPrepareCommitSurvivesRestart(t *testing.T) {
	t.Parallel()
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	cfg := Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)}
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	createTopics(t, txnTestCtx(t), b.Addr(), 1, "t")
	pid, epoch := rawInitTxnOK(t, c, "restart", 60000)
	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "restart", pid, epoch, "t", 0)[0], nil)
	wantTxnCode(t, "produce", rawProduce(t, c, 9, kmsg.StringPtr("restart"), "t", txnBatch(t, pid, epoch, 0, 2, "x")).ErrorCode, nil)
	// Only the segment file is full, so that the close still writes the
	// indexes.
	ffs.Arm(func(op vfs.Op, name string, _ int) vfs.Fault {
		if op == vfs.OpWrite && strings.HasPrefix(name, "/data/t-0/") && strings.HasSuffix(name, ".log") {
			return vfs.Fault{Err: &fs.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}}
		}
		return vfs.Fault{}
	})
	wantTxnCode(t, "commit", rawEndTxn(t, c, 4, "restart", pid, epoch, true), nil)
	if s := describeRaw(t, c, "restart"); s.State != "PrepareCommit" {
		t.Fatalf("with the marker unwritten: %s, want PrepareCommit", s.State)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ffs.Arm(nil)

	b = startBroker(t, cfg)
	c = dialRaw(t, b.Addr())
	if s := describeRaw(t, c, "restart"); s.State != "CompleteCommit" || s.ProducerID != pid || s.ProducerEpoch != epoch {
		t.Fatalf("after the restart: %+v, want CompleteCommit for producer %d epoch %d", s, pid, epoch)
	}
	if lso, hw := listCommitted(t, c, "t"), b2p(b, "t")[0].HighWatermark(); lso != hw || hw != 3 {
		t.Fatalf("LSO %d, high watermark %d after the restart; want 3 and 3", lso, hw)
	}
	sp, hs := fetchCommitted(t, c, "t", 0)
	if len(sp.AbortedTransactions) != 0 || len(hs) != 2 || !hs[1].Control() {
		t.Fatalf("read_committed: aborted %v, batches %+v", sp.AbortedTransactions, hs)
	}
}

package broker

import (
	"fmt"
	"io/fs"
	"log/slog"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/storage"
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
	ffs := storage.NewFaultFS(storage.NewMemFS(), nil)
	b := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	c := dialRaw(t, b.Addr())
	createTopics(t, txnTestCtx(t), b.Addr(), 1, "t")
	pid, epoch := rawInitTxnOK(t, c, "full", 60000)

	stateDir := fmt.Sprintf("/data/%s-%d", txnStateTopic, group.PartitionFor("full", b.cfg.TransactionStateLogNumPartitions))
	ffs.Arm(faultsUnder(stateDir, &fs.PathError{Op: "write", Path: stateDir, Err: syscall.ENOSPC}, storage.OpWrite))
	wantTxnCode(t, "AddPartitionsToTxn on a full disk", rawAddPartitions(t, c, 3, "full", pid, epoch, "t", 0)[0], kerr.NotCoordinator)
	ffs.Arm(nil)
	if s := describeRaw(t, c, "full"); s.State != "Empty" || len(s.Topics) != 0 {
		t.Fatalf("after the failed append: %+v, want the Empty state the log holds", s)
	}

	wantTxnCode(t, "add", rawAddPartitions(t, c, 3, "full", pid, epoch, "t", 0)[0], nil)
	wantTxnCode(t, "produce", rawProduce(t, c, 9, kmsg.StringPtr("full"), "t", txnBatch(t, pid, epoch, 0, 2, "x")).ErrorCode, nil)
	dataDir := "/data/t-0"
	ffs.Arm(faultsUnder(dataDir, &fs.PathError{Op: "write", Path: dataDir, Err: syscall.ENOSPC}, storage.OpWrite))
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
	if lso, hw := listCommitted(t, c, "t"), b2p(b, "t")[0].highWatermark(); lso != hw || hw != 3 {
		t.Fatalf("LSO %d, high watermark %d after the commit; want 3 and 3", lso, hw)
	}
}

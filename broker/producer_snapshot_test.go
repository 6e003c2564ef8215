package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// snapshotOffsetOf returns where p's producer state was last snapshotted
// or loaded from (the log start when no snapshot was found).
func snapshotOffsetOf(b *Broker, topic string) int64 {
	p := b.partition(b.lookupTopic(topic), 0)
	return p.SnapshotOffset()
}

// produceIdempotent sends n batches of 3 records from pid, sequence 0 on,
// with values of valueSize bytes, and returns their base offsets.
func produceIdempotent(t *testing.T, c *rawConn, topic string, pid int64, epoch int16, n, valueSize int) []int64 {
	t.Helper()
	now := time.Now().UnixMilli()
	var offsets []int64
	for i := range n {
		b := idempotentBatch(t, pid, epoch, int32(3*i), 3, now)
		if valueSize > 0 {
			b = bigIdempotentBatch(t, pid, epoch, int32(3*i), valueSize, now)
		}
		got := produceRaw(c, 9, -1, topic, 0, b)
		if got.ErrorCode != 0 {
			t.Fatalf("batch %d: %v", i, kerr.ErrorForCode(got.ErrorCode))
		}
		offsets = append(offsets, got.BaseOffset)
	}
	return offsets
}

// expectRetries resends batches first..n-1 of produceIdempotent's and
// checks each is answered as a duplicate at its original offset, without
// appending; batch first-1, older than the five retained, is refused.
func expectRetries(t *testing.T, c *rawConn, topic string, pid int64, epoch int16, offsets []int64, valueSize int) {
	t.Helper()
	now := time.Now().UnixMilli()
	n := len(offsets)
	for i := n - partition.ProducerBatchesRetained; i < n; i++ {
		b := idempotentBatch(t, pid, epoch, int32(3*i), 3, now)
		if valueSize > 0 {
			b = bigIdempotentBatch(t, pid, epoch, int32(3*i), valueSize, now)
		}
		if got := produceRaw(c, 9, -1, topic, 0, b); got.ErrorCode != 0 || got.BaseOffset != offsets[i] {
			t.Fatalf("retry of batch %d: %v at offset %d, want its original offset %d", i, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, offsets[i])
		}
	}
	old := idempotentBatch(t, pid, epoch, int32(3*(n-partition.ProducerBatchesRetained-1)), 3, now)
	if got := produceRaw(c, 9, -1, topic, 0, old); got.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("retry of a batch older than the last five: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

// bigIdempotentBatch is idempotentBatch of three records with values of
// size bytes.
func bigIdempotentBatch(t *testing.T, pid int64, epoch int16, seq int32, size int, ts int64) []byte {
	t.Helper()
	recs := make([]batch.Record, 3)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: make([]byte, size)}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceAndClose starts a broker on dir, produces eight idempotent batches
// of three records to a new topic t and closes the broker, which snapshots
// the producer state at the log end. It returns the producer, the batches'
// offsets and the path of the snapshot Close should have written.
func produceAndClose(t *testing.T, dir string) (pid int64, epoch int16, offsets []int64, snapshot string) {
	t.Helper()
	b := startBroker(t, Config{DataDir: dir})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	pid, epoch = initProducerID(t, c, 4)
	offsets = produceIdempotent(t, c, "t", pid, epoch, 8, 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	end := offsets[len(offsets)-1] + 3
	return pid, epoch, offsets, filepath.Join(dir, "t-0", fmt.Sprintf("%020d.snapshot", end))
}

// TestRetriesAfterCleanRestartUseTheSnapshot closes the broker (which
// snapshots every partition's producer state at its log end), restarts it,
// and retries each of the producer's last five batches: every one is
// answered with its original offset, from the snapshot, without reading
// the log.
func TestRetriesAfterCleanRestartUseTheSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pid, epoch, offsets, snapshot := produceAndClose(t, dir)
	end := offsets[len(offsets)-1] + 3
	if _, err := os.Stat(snapshot); err != nil {
		t.Fatalf("no snapshot at the log end after Close: %v", err)
	}

	second := startBroker(t, Config{DataDir: dir})
	if got := snapshotOffsetOf(second, "t"); got != end {
		t.Fatalf("producer state loaded from offset %d, want the snapshot at %d", got, end)
	}
	expectRetries(t, dialRaw(t, second.Addr()), "t", pid, epoch, offsets, 0)
}

// TestCorruptSnapshotIsRebuiltFromTheLog damages the snapshot written at
// Close: the restarted broker deletes it, rebuilds the state from the log,
// and still answers retries with their original offsets.
func TestCorruptSnapshotIsRebuiltFromTheLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pid, epoch, offsets, path := produceAndClose(t, dir)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-3] ^= 0x40
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	second := startBroker(t, Config{DataDir: dir})
	if got := snapshotOffsetOf(second, "t"); got != 0 {
		t.Fatalf("producer state loaded from offset %d, want a rebuild from the log", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("corrupt snapshot still there: %v", err)
	}
	expectRetries(t, dialRaw(t, second.Addr()), "t", pid, epoch, offsets, 0)
}

// TestSnapshotsAtSegmentRollBoundACrashRestart produces across several
// segment rolls, each of which snapshots the producer state, then restarts
// from a copy of the files taken while the broker ran (a crash: no
// snapshot at close). The state comes from the last roll's snapshot plus
// the batches after it, and retries still get their original offsets.
// Only the last two snapshots are kept.
func TestSnapshotsAtSegmentRollBoundACrashRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, map[string]string{"segment.bytes": "1048576"})
	pid, epoch := initProducerID(t, c, 4)
	const valueSize = 40 << 10 // three per batch: 8 batches a segment
	offsets := produceIdempotent(t, c, "t", pid, epoch, 30, valueSize)
	lastRoll := b.partition(b.lookupTopic("t"), 0).Log().ActiveSegmentBase()
	if lastRoll == 0 {
		t.Fatal("no segment rolled")
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "t-0", "*.snapshot"))
	if len(snaps) != 2 || filepath.Base(snaps[1]) != fmt.Sprintf("%020d.snapshot", lastRoll) {
		t.Fatalf("snapshots %v, want the two latest rolls ending with %d", snaps, lastRoll)
	}

	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	second := startBroker(t, Config{DataDir: crashed})
	if got := snapshotOffsetOf(second, "t"); got != lastRoll {
		t.Fatalf("producer state loaded from offset %d, want the roll snapshot at %d", got, lastRoll)
	}
	expectRetries(t, dialRaw(t, second.Addr()), "t", pid, epoch, offsets, valueSize)
}

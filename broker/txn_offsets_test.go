package broker

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/vfs"
)

// txnCommitReq builds a TxnOffsetCommit of partition offsets ("topic/p" ->
// offset) of one topic per call.
func txnCommitReq(version int16, groupID string, pid int64, epoch int16, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(version)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", groupID, pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 64; p++ {
		off, ok := offsets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, off, 0, kmsg.StringPtr("md")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// txnCommitCodes sends req and returns "topic-p" -> error code.
func txnCommitCodes(t testing.TB, c *rawConn, req *kmsg.TxnOffsetCommitRequest) map[string]int16 {
	t.Helper()
	out := map[string]int16{}
	for _, rt := range c.do(req).(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	return out
}

func mustTxnCommit(t testing.TB, c *rawConn, req *kmsg.TxnOffsetCommitRequest) {
	t.Helper()
	for tp, code := range txnCommitCodes(t, c, req) {
		if code != 0 {
			t.Fatalf("TxnOffsetCommit v%d %s: %v", req.Version, tp, kerr.ErrorForCode(code))
		}
	}
}

// fetchOffset answers OffsetFetch v7 for one partition: offset and error.
func fetchOffset(t testing.TB, c *rawConn, groupID, topic string, partition int32, requireStable bool) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group, req.RequireStable = groupID, requireStable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		return -1, resp.ErrorCode
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func wantFetched(t testing.TB, c *rawConn, groupID, topic string, partition int32, requireStable bool, offset int64, e *kerr.Error) {
	t.Helper()
	var want int16
	if e != nil {
		want = e.Code
	}
	got, code := fetchOffset(t, c, groupID, topic, partition, requireStable)
	if got != offset || code != want {
		t.Fatalf("%s %s-%d (require_stable=%v): offset %d %v, want %d %v", groupID, topic, partition, requireStable,
			got, kerr.ErrorForCode(code), offset, e)
	}
}

// endTxn writes pid's marker in groupID's __consumer_offsets partition
// with WriteTxnMarkers, as the transaction coordinator does.
func endTxn(t testing.TB, b *Broker, c *rawConn, groupID string, pid int64, epoch int16, commit bool) {
	t.Helper()
	p := group.PartitionFor(groupID, int32(len(b2p(b, offsetsTopic))))
	resp := writeMarkers(t, c, 1, wireMarker(pid, epoch, 0, commit, offsetsTopic, p))
	if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("marker for %d in %s-%d: %v", pid, offsetsTopic, p, kerr.ErrorForCode(code))
	}
}

// offsetsPartitionOf is the __consumer_offsets partition of groupID.
func offsetsPartitionOf(b *Broker, groupID string) *partition.Partition {
	parts := b2p(b, offsetsTopic)
	return parts[group.PartitionFor(groupID, int32(len(parts)))]
}

// TestTxnOffsetCommitShowsAfterTheCommitMarker drives the whole path over
// the wire: an idempotent producer id from InitProducerId, TxnOffsetCommit
// (twice in the transaction, at v3 and v5), OffsetFetch answering the old
// offset (require_stable: UNSTABLE_OFFSET_COMMIT) while the
// __consumer_offsets partition's LSO stays at the transaction, then
// WriteTxnMarkers commit: the new offsets show and the LSO moves. An
// aborted transaction's offsets never show.
func TestTxnOffsetCommitShowsAfterTheCommitMarker(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	b.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 3, nil)
	pid, epoch := initProducerID(t, c, 4)

	if code := c.do(commitReq(8, "g", "", -1, "t", 5)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("OffsetCommit: %v", kerr.ErrorForCode(code))
	}

	mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 10}))
	mustTxnCommit(t, c, txnCommitReq(5, "g", pid, epoch, "t", map[int32]int64{1: 20}))
	wantFetched(t, c, "g", "t", 0, false, 5, nil)
	wantFetched(t, c, "g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	wantFetched(t, c, "g", "t", 1, true, -1, kerr.UnstableOffsetCommit)
	wantFetched(t, c, "g", "t", 2, true, -1, nil)

	op := offsetsPartitionOf(b, "g")
	if lso, hw := op.LastStableOffset(), op.HighWatermark(); lso >= hw {
		t.Fatalf("%s-%d: LSO %d, high watermark %d with a transaction open", offsetsTopic, op.Index(), lso, hw)
	}
	endTxn(t, b, c, "g", pid, epoch, true)
	wantFetched(t, c, "g", "t", 0, true, 10, nil)
	wantFetched(t, c, "g", "t", 1, true, 20, nil)
	if lso, hw := op.LastStableOffset(), op.HighWatermark(); lso != hw {
		t.Fatalf("%s-%d: LSO %d, high watermark %d after the commit", offsetsTopic, op.Index(), lso, hw)
	}

	// The next transaction aborts.
	mustTxnCommit(t, c, txnCommitReq(4, "g", pid, epoch, "t", map[int32]int64{0: 11, 2: 30}))
	endTxn(t, b, c, "g", pid, epoch, false)
	wantFetched(t, c, "g", "t", 0, true, 10, nil)
	wantFetched(t, c, "g", "t", 2, true, -1, nil)

	// The log holds what Kafka's would: the offset commits in
	// transactional batches of the producer, each followed in time by its
	// marker.
	var kinds []string
	data, err := op.Log().Read(op.Log().StartOffset(), 1<<20, op.HighWatermark())
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Split(data, func(one []byte) error {
		h, err := batch.ParseHeader(one)
		if err != nil {
			return err
		}
		switch {
		case h.Control():
			kinds = append(kinds, "marker")
		case h.Transactional():
			if h.ProducerID != pid || h.ProducerEpoch != epoch || h.BaseSequence != -1 {
				t.Errorf("transactional batch of %d/%d seq %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
			}
			kinds = append(kinds, "txn")
		default:
			kinds = append(kinds, "plain")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(kinds), "[plain txn txn marker txn marker]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}

// TestTxnOffsetCommitErrors: the refusals, each with Kafka's code.
func TestTxnOffsetCommitErrors(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	b := startBroker(t, Config{GroupInitialRebalanceDelayMs: &zero})
	b.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	pid, _ := initProducerID(t, c, 4)

	// A classic group with one member, in CompletingRebalance.
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3) // no MEMBER_ID_REQUIRED round trip
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "cg", 30000, 30000, "consumer"
	join.MemberID = ""
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", []byte{0}
	join.Protocols = append(join.Protocols, jp)
	jr := c.do(join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	member, gen := jr.MemberID, jr.Generation

	withMember := func(version int16, groupID string, gen int32, memberID string, instance *string) *kmsg.TxnOffsetCommitRequest {
		req := txnCommitReq(version, groupID, pid, 3, "t", map[int32]int64{0: 1})
		req.Generation, req.MemberID, req.InstanceID = gen, memberID, instance
		return req
	}
	unknown := txnCommitReq(3, "g", pid, 3, "t", map[int32]int64{0: 1, 9: 1})
	unknown.Topics = append(unknown.Topics, txnCommitReq(3, "g", pid, 3, "nope", map[int32]int64{0: 1}).Topics...)
	long := txnCommitReq(3, "g", pid, 3, "t", map[int32]int64{0: 1})
	long.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(string(make([]byte, 4097)))
	for _, tc := range []struct {
		name string
		req  *kmsg.TxnOffsetCommitRequest
		want map[string]int16
	}{
		{"unknown topic and partition", unknown, map[string]int16{"t-0": 0, "t-9": kerr.UnknownTopicOrPartition.Code, "nope-0": kerr.UnknownTopicOrPartition.Code}},
		{"empty group id", txnCommitReq(3, "", pid, 3, "t", map[int32]int64{0: 1}), map[string]int16{"t-0": kerr.InvalidGroupID.Code}},
		{"metadata too large", long, map[string]int16{"t-0": kerr.OffsetMetadataTooLarge.Code}},
		{"member in CompletingRebalance", withMember(3, "cg", gen, member, nil), map[string]int16{"t-0": 0}},
		{"wrong generation", withMember(3, "cg", gen+1, member, nil), map[string]int16{"t-0": kerr.IllegalGeneration.Code}},
		{"unknown member", withMember(3, "cg", gen, "bogus", nil), map[string]int16{"t-0": kerr.UnknownMemberID.Code}},
		{"no member (v2)", withMember(2, "cg", -1, "", nil), map[string]int16{"t-0": 0}},
		{"unknown group with a generation", withMember(3, "nope", 1, "m", nil), map[string]int16{"t-0": kerr.IllegalGeneration.Code}},
		{"older producer epoch", txnCommitReq(0, "g", pid, 2, "t", map[int32]int64{0: 1}), map[string]int16{"t-0": kerr.InvalidProducerEpoch.Code}},
	} {
		if got := txnCommitCodes(t, c, tc.req); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTxnOffsetCommitVerification: the transaction coordinator's answer,
// through the verifier the integrator connects, mapped per version as
// Kafka 4.2 maps it; v5 asks it to add the partition.
func TestTxnOffsetCommitVerification(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	b.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	pid, epoch := initProducerID(t, c, 4)
	var mu sync.Mutex
	var answer *kerr.Error
	var calls []string
	b.setTxnOffsetCommitVerifier(func(_ context.Context, tid string, gotPID int64, gotEpoch int16, groupID string, add bool) *kerr.Error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, fmt.Sprintf("%s/%d/%d/%s/add=%v", tid, gotPID, gotEpoch, groupID, add))
		return answer
	})
	for _, tc := range []struct {
		answer  *kerr.Error
		version int16
		want    *kerr.Error
	}{
		{nil, 3, nil},
		{kerr.TransactionAbortable, 3, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 4, kerr.TransactionAbortable},
		{kerr.TransactionAbortable, 5, kerr.TransactionAbortable},
		{kerr.ProducerFenced, 4, kerr.InvalidProducerEpoch},
		{kerr.InvalidProducerIDMapping, 4, kerr.InvalidProducerIDMapping},
		{kerr.ConcurrentTransactions, 5, kerr.ConcurrentTransactions},
		{kerr.NetworkException, 3, kerr.CoordinatorLoadInProgress},
		{kerr.NetworkException, 1, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, 4, kerr.NotCoordinator},
		{kerr.RequestTimedOut, 4, kerr.CoordinatorNotAvailable},
	} {
		mu.Lock()
		answer, calls = tc.answer, nil
		mu.Unlock()
		got := txnCommitCodes(t, c, txnCommitReq(tc.version, "g", pid, epoch, "t", map[int32]int64{0: 1}))
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		if got["t-0"] != want {
			t.Errorf("coordinator says %v at v%d: %v, want %v", tc.answer, tc.version, kerr.ErrorForCode(got["t-0"]), tc.want)
		}
		mu.Lock()
		wantCall := fmt.Sprintf("tx/%d/%d/g/add=%v", pid, epoch, tc.version >= 5)
		if len(calls) != 1 || calls[0] != wantCall {
			t.Errorf("v%d: verifier called %q, want [%s]", tc.version, calls, wantCall)
		}
		mu.Unlock()
	}
	// A refused verification wrote nothing: the one accepted commit is
	// the only pending offset.
	endTxn(t, b, c, "g", pid, epoch, true)
	wantFetched(t, c, "g", "t", 0, true, 1, nil)
}

// TestTxnOffsetsSurviveRestart: after a restart, a committed
// transaction's offsets are there, an aborted one's are not, and one
// still open stays pending (UNSTABLE_OFFSET_COMMIT) until its marker,
// written after the restart, commits it.
func TestTxnOffsetsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	first.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, first.Addr())
	createTopic(t, c, "t", 1, nil)
	committed, e1 := initProducerID(t, c, 4)
	aborted, e2 := initProducerID(t, c, 4)
	open, e3 := initProducerID(t, c, 4)
	mustTxnCommit(t, c, txnCommitReq(3, "g", committed, e1, "t", map[int32]int64{0: 10}))
	mustTxnCommit(t, c, txnCommitReq(3, "g", aborted, e2, "t", map[int32]int64{0: 99}))
	endTxn(t, first, c, "g", committed, e1, true)
	endTxn(t, first, c, "g", aborted, e2, false)
	mustTxnCommit(t, c, txnCommitReq(3, "g", open, e3, "t", map[int32]int64{0: 30}))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := startBroker(t, Config{DataDir: dir})
	second.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c = dialRaw(t, second.Addr())
	wantFetched(t, c, "g", "t", 0, false, 10, nil)
	wantFetched(t, c, "g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	// The partition's producer state came back too: the open transaction
	// holds the LSO, and an older epoch of its producer is refused.
	op := offsetsPartitionOf(second, "g")
	if op.LastStableOffset() >= op.HighWatermark() {
		t.Fatal("the open transaction does not hold the LSO after the restart")
	}
	endTxn(t, second, c, "g", open, e3, true)
	wantFetched(t, c, "g", "t", 0, true, 30, nil)
}

// TestTxnOffsetsOnAFullDisk: a TxnOffsetCommit whose records cannot be
// written is NOT_COORDINATOR, as a failed OffsetCommit, and leaves nothing
// pending; a marker that cannot be written is KAFKA_STORAGE_ERROR and
// commits nothing, and its retry, once there is space, does.
func TestTxnOffsetsOnAFullDisk(t *testing.T) {
	t.Parallel()
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	b := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	b.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	pid, epoch := initProducerID(t, c, 4)
	mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 1}))
	endTxn(t, b, c, "g", pid, epoch, true)
	dir := fmt.Sprintf("/data/%s-%d", offsetsTopic, offsetsPartitionOf(b, "g").Index())
	enospc := &fs.PathError{Op: "write", Path: dir, Err: syscall.ENOSPC}

	ffs.Arm(faultsUnder(dir, enospc, vfs.OpWrite))
	if got := txnCommitCodes(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 2})); got["t-0"] != kerr.NotCoordinator.Code {
		t.Fatalf("TxnOffsetCommit on a full disk: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got["t-0"]))
	}
	ffs.Arm(nil)
	wantFetched(t, c, "g", "t", 0, true, 1, nil)

	mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 3}))
	ffs.Arm(faultsUnder(dir, enospc, vfs.OpWrite))
	p := offsetsPartitionOf(b, "g").Index()
	resp := writeMarkers(t, c, 1, wireMarker(pid, epoch, 0, true, offsetsTopic, p))
	if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("marker on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	ffs.Arm(nil)
	wantFetched(t, c, "g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	endTxn(t, b, c, "g", pid, epoch, true)
	wantFetched(t, c, "g", "t", 0, true, 3, nil)
}

// TestTxnOffsetsCompactedAndReplayed: a producer commits and aborts many
// transactions of offsets, the log cleaner compacts __consumer_offsets
// (dropping the aborted ones' records, keeping the markers the rest
// need), and after a restart the replay finds the last committed offset,
// with the transaction left open at the end still pending.
func TestTxnOffsetsCompactedAndReplayed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	no := false
	cfg := Config{DataDir: dir, OffsetsTopicPartitions: 1, LogCleanerEnable: &no}
	b := startBroker(t, cfg)
	b.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	pid, epoch := initProducerID(t, c, 4)
	mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 0}))
	p := partitionOf(t, b, offsetsTopic, 0)
	shrinkSegments(t, p, 400)
	for i := int64(0); i < 30; i++ {
		mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: i}))
		endTxn(t, b, c, "g", pid, epoch, i%3 != 2) // every third aborts
	}
	wantFetched(t, c, "g", "t", 0, true, 28, nil)
	mustTxnCommit(t, c, txnCommitReq(3, "g", pid, epoch, "t", map[int32]int64{0: 100}))

	ref := partitionRef{p: p, cfg: b.lookupTopic(offsetsTopic).effective.Load()}
	sizeBefore := p.Log().Size()
	res, err := p.Log().Clean(context.Background(), b.logs.compactionPolicy(ref), b.logs.now())
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesOut >= res.BytesIn || p.Log().Size() >= sizeBefore {
		t.Fatalf("cleaning did not shrink __consumer_offsets: %+v", res)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, cfg)
	b2.setTxnOffsetCommitVerifier(nil) // the group side alone, without the transaction coordinator
	c = dialRaw(t, b2.Addr())
	wantFetched(t, c, "g", "t", 0, false, 28, nil)
	wantFetched(t, c, "g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	endTxn(t, b2, c, "g", pid, epoch, true)
	wantFetched(t, c, "g", "t", 0, true, 100, nil)
}

package group

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// offsetsPartitions is the __consumer_offsets partition count the tests
// pass to CompleteTransaction.
const offsetsPartitions = 50

func txnCommit(group string, pid int64, topic string, partition int32, offset int64) TxnCommitRequest {
	return TxnCommitRequest{GroupID: group, Producer: Producer{ID: pid, Epoch: 0}, Generation: -1,
		Topics: []CommitTopic{{Topic: topic, Partitions: []CommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: 3, Metadata: sp("txn")}}}}}
}

func (h *harness) txnCommit(req TxnCommitRequest) ReplyID {
	id := h.id()
	h.logf("#%d txn-commit group=%s pid=%d gen=%d member=%q", id, req.GroupID, req.Producer.ID, req.Generation, req.MemberID)
	h.c.CommitTxnOffsets(h.now, id, req)
	h.drain()
	return id
}

// complete writes the marker of pid for group's partition.
func (h *harness) complete(group string, pid int64, commit bool) {
	h.logf("marker pid=%d group=%s commit=%v", pid, group, commit)
	h.c.CompleteTransaction(h.now, pid, PartitionFor(group, offsetsPartitions), offsetsPartitions, commit)
	h.drain()
}

// offsetOf fetches one partition's committed offset and error code.
func (h *harness) offsetOf(group, topic string, partition int32, requireStable bool) (int64, int16) {
	r := h.c.fetchOffsets(FetchRequest{GroupID: group, RequireStable: requireStable,
		Topics: []FetchTopic{{Topic: topic, Partitions: []int32{partition}}}})
	if r.ErrorCode != 0 {
		return -1, r.ErrorCode
	}
	p := r.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func (h *harness) wantOffset(group, topic string, partition int32, requireStable bool, wantOffset int64, wantErr *kerr.Error) {
	h.t.Helper()
	off, code := h.offsetOf(group, topic, partition, requireStable)
	if off != wantOffset || code != errCode(wantErr) {
		h.t.Fatalf("%s %s-%d (require_stable=%v): offset %d %s, want %d %s", group, topic, partition, requireStable,
			off, errName(code), wantOffset, errName(errCode(wantErr)))
	}
}

// TestTxnOffsetsWaitForTheCommitMarker: a transactional commit is written
// at once, in the producer's transactional records, but OffsetFetch keeps
// the old offset (UNSTABLE_OFFSET_COMMIT under require_stable) until the
// commit marker; then the new one is committed.
func TestTxnOffsetsWaitForTheCommitMarker(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 5)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 10)), nil)
	last := h.records[len(h.records)-1]
	if last.Txn == nil || *last.Txn != (Producer{ID: 7, Epoch: 0}) || last.Value == nil {
		t.Fatalf("transactional record: %+v", last)
	}
	h.wantOffset("g", "t", 0, false, 5, nil)
	h.wantOffset("g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	h.wantOffset("g", "t", 1, true, -1, nil) // nothing pending there
	if !h.c.hasOpenTxns("g") {
		t.Fatal("no pending offsets")
	}
	// A marker of another producer, or for another partition, changes
	// nothing.
	h.complete("g", 8, true)
	h.c.CompleteTransaction(h.now, 7, PartitionFor("g", offsetsPartitions)+1, offsetsPartitions, true)
	h.wantOffset("g", "t", 0, true, -1, kerr.UnstableOffsetCommit)
	h.complete("g", 7, true)
	h.wantOffset("g", "t", 0, true, 10, nil)
	if h.c.hasOpenTxns("g") {
		t.Fatal("pending offsets after the marker")
	}
	// A second marker (a retry) is harmless.
	h.complete("g", 7, true)
	h.wantOffset("g", "t", 0, false, 10, nil)
}

// TestTxnOffsetsDroppedByTheAbortMarker: an aborted transaction's offsets
// never show.
func TestTxnOffsetsDroppedByTheAbortMarker(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 5)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 10)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 1, 20)), nil)
	h.complete("g", 7, false)
	h.wantOffset("g", "t", 0, true, 5, nil)
	h.wantOffset("g", "t", 1, true, -1, nil)
	// The producer's next transaction commits.
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 1, 21)), nil)
	h.complete("g", 7, true)
	h.wantOffset("g", "t", 1, true, 21, nil)
	h.wantOffset("g", "t", 0, true, 5, nil)
}

// TestTxnOffsetsTheNewerRecordWins: as Kafka, a transactional offset is
// committed only over an older record; an OffsetCommit written after it
// stays.
func TestTxnOffsetsTheNewerRecordWins(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 10)), nil)
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 12)), nil)
	h.complete("g", 7, true)
	h.wantOffset("g", "t", 0, true, 12, nil)

	// Two producers: each one's offset lands if it is the newest.
	h.wantCode(h.txnCommit(txnCommit("g", 8, "t", 1, 30)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 9, "t", 1, 31)), nil)
	h.complete("g", 9, true)
	h.wantOffset("g", "t", 1, true, -1, kerr.UnstableOffsetCommit) // 8 still open
	h.complete("g", 8, true)
	h.wantOffset("g", "t", 1, true, 31, nil)
}

// TestTxnOffsetsOfTwoGroupsInOneTransaction: a producer's transaction
// covering two groups in different __consumer_offsets partitions ends in
// each partition with its own marker.
func TestTxnOffsetsOfTwoGroupsInOneTransaction(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := "g", "group-b"
	if PartitionFor(a, offsetsPartitions) == PartitionFor(b, offsetsPartitions) {
		t.Fatal("pick groups in different partitions")
	}
	h.wantCode(h.txnCommit(txnCommit(a, 7, "t", 0, 1)), nil)
	h.wantCode(h.txnCommit(txnCommit(b, 7, "t", 0, 2)), nil)
	h.complete(a, 7, true)
	h.wantOffset(a, "t", 0, true, 1, nil)
	h.wantOffset(b, "t", 0, true, -1, kerr.UnstableOffsetCommit)
	h.complete(b, 7, true)
	h.wantOffset(b, "t", 0, true, 2, nil)
}

// TestTxnOffsetCommitValidation: the group checks of a transactional
// commit (Kafka's validateTransactionalOffsetCommit and
// ClassicGroup.validateOffsetCommit with isTransactional).
func TestTxnOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a", InstanceID: sp("ia")})).MemberID
	// CompletingRebalance: a transactional commit is not refused for it.
	member := func(gen int32, id string, instance *string) TxnCommitRequest {
		r := txnCommit("g", 7, "t", 0, 1)
		r.Generation, r.MemberID, r.InstanceID = gen, id, instance
		return r
	}
	long := string(make([]byte, 4097))
	tooLarge := txnCommit("g", 7, "t", 0, 1)
	tooLarge.Topics[0].Partitions = append(tooLarge.Topics[0].Partitions, CommitPartition{Partition: 1, Offset: 2, Metadata: &long})
	fenced := txnCommit("g", 7, "t", 0, 1)
	fenced.AppendError = kerr.InvalidProducerEpoch
	for _, tc := range []struct {
		name string
		req  TxnCommitRequest
		want []*kerr.Error
	}{
		{"member in CompletingRebalance", member(1, a, sp("ia")), []*kerr.Error{nil}},
		{"wrong generation", member(2, a, nil), []*kerr.Error{kerr.IllegalGeneration}},
		{"unknown member", member(1, "bogus", nil), []*kerr.Error{kerr.UnknownMemberID}},
		{"fenced instance", member(1, "bogus", sp("ia")), []*kerr.Error{kerr.FencedInstanceID}},
		{"no member (v0-v2)", member(-1, "", nil), []*kerr.Error{nil}},
		{"unknown group with a generation", TxnCommitRequest{GroupID: "nope", Generation: 1, MemberID: "m",
			Topics: []CommitTopic{{Topic: "t", Partitions: []CommitPartition{{Partition: 0}}}}}, []*kerr.Error{kerr.IllegalGeneration}},
		{"empty group id", txnCommit("", 7, "t", 0, 1), []*kerr.Error{kerr.InvalidGroupID}},
		{"metadata too large", tooLarge, []*kerr.Error{nil, kerr.OffsetMetadataTooLarge}},
		{"refused by the log", fenced, []*kerr.Error{kerr.InvalidProducerEpoch}},
	} {
		n := len(h.records)
		res := h.results[h.txnCommit(tc.req)].(*CommitResult)
		var wrote int
		for i, p := range res.Topics[0].Partitions {
			if p.ErrorCode != errCode(tc.want[i]) {
				t.Errorf("%s: partition %d %s, want %s", tc.name, p.Partition, errName(p.ErrorCode), errName(errCode(tc.want[i])))
			}
			if p.ErrorCode == 0 {
				wrote++
			}
		}
		if got := len(h.records) - n; got != wrote {
			t.Errorf("%s: %d records for %d accepted partitions", tc.name, got, wrote)
		}
	}
	// Neither refusal created a group.
	if d := h.describe("nope"); d[0].State != Dead.String() {
		t.Fatalf("unknown group created: %+v", d)
	}
	// An unknown group with generation -1 is created, as a simple group.
	h.wantCode(h.txnCommit(txnCommit("simple", 7, "t", 0, 1)), nil)
	if d := h.describe("simple"); d[0].State != Empty.String() {
		t.Fatalf("simple group: %+v", d)
	}
	h2 := newHarness(t, Config{})
	h2.wantCode(h2.txnCommit(fenced), kerr.InvalidProducerEpoch)
	if l := h2.c.ListGroups(nil, nil); len(l) != 0 || h2.c.hasOpenTxns("g") {
		t.Fatalf("a refused commit left state: %+v", l)
	}
}

// TestTxnOffsetCommitConsumerGroupMember: KIP-848 members commit with
// their member epoch as generation; a stale one is ILLEGAL_GENERATION for
// a transactional commit (Kafka maps STALE_MEMBER_EPOCH), and a producer
// that sends no member is accepted.
func TestTxnOffsetCommitConsumerGroupMember(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 1)
	r := ok(t, h.join("m1", "foo"))
	commit := func(member string, epoch int32) int16 {
		h.id++
		h.c.CommitTxnOffsets(h.now, h.id, TxnCommitRequest{GroupID: "g", Producer: Producer{ID: 3}, MemberID: member, Generation: epoch,
			Topics: []CommitTopic{{Topic: "foo", Partitions: []CommitPartition{{Partition: 0, Offset: 7}}}}})
		return h.c.Ready().Replies[0].Result.(*CommitResult).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		member string
		epoch  int32
		want   *kerr.Error
	}{
		{"m1", r.MemberEpoch, nil},
		{"m1", r.MemberEpoch + 1, kerr.IllegalGeneration},
		{"nobody", 1, kerr.UnknownMemberID},
		{"", -1, nil},
		{"", 0, kerr.UnknownMemberID},
	} {
		if got := commit(tc.member, tc.epoch); got != errCode(tc.want) {
			t.Errorf("commit(%q, %d) = %s, want %s", tc.member, tc.epoch, errName(got), errName(errCode(tc.want)))
		}
	}
	h.c.CompleteTransaction(h.now, 3, PartitionFor("g", offsetsPartitions), offsetsPartitions, true)
	if f := h.c.fetchOffsets(FetchRequest{GroupID: "g", RequireStable: true, Topics: []FetchTopic{{Topic: "foo", Partitions: []int32{0}}}}); f.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("after commit: %+v", f)
	}
}

// TestTxnOffsetsAndDeletion: OffsetDelete and DeleteGroups write
// tombstones for partitions with only a pending offset and drop it; a
// later commit marker brings nothing back.
func TestTxnOffsetsAndDeletion(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 10)), nil)
	n := len(h.records)
	id := h.id()
	h.c.DeleteOffsets(h.now, id, OffsetDeleteRequest{GroupID: "g", Topics: []FetchTopic{{Topic: "t", Partitions: []int32{0, 1}}}})
	h.drain()
	if got := h.records[n:]; len(got) != 1 || got[0].Value != nil || describeRecord(got[0]) != "offset g/t-0 tombstone" {
		t.Fatalf("OffsetDelete wrote %v", got)
	}
	h.wantOffset("g", "t", 0, true, -1, nil)
	h.complete("g", 7, true)
	h.wantOffset("g", "t", 0, true, -1, nil)

	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 1)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 8, "t", 0, 2)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 8, "t", 5, 3)), nil)
	n = len(h.records)
	id = h.id()
	h.c.DeleteGroups(h.now, id, []string{"g"})
	h.drain()
	var got []string
	for _, r := range h.records[n:] {
		got = append(got, describeRecord(r))
	}
	if want := []string{"offset g/t-0 tombstone", "offset g/t-5 tombstone", "group g tombstone"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DeleteGroups wrote %q, want %q", got, want)
	}
	h.complete("g", 8, true)
	if l := h.c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("the commit marker brought back %+v", l)
	}
}

// TestTxnOffsetsHoldOffExpiry: an offset with a transactional one pending
// does not expire, nor does a group with an open transaction go.
func TestTxnOffsetsHoldOffExpiry(t *testing.T) {
	h := newHarness(t, Config{OffsetsRetentionMs: 1000, OffsetsRetentionCheckIntervalMs: 100})
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 5)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 6)), nil)
	h.wantCode(h.txnCommit(txnCommit("lonely", 7, "t", 0, 6)), nil)
	h.advance(5000)
	h.wantOffset("g", "t", 0, false, 5, nil)
	if d := h.describe("lonely"); d[0].State != Empty.String() {
		t.Fatalf("a group with an open transaction expired: %+v", d)
	}
	h.complete("g", 7, false)
	h.complete("lonely", 7, false)
	h.advance(5000)
	h.wantOffset("g", "t", 0, false, -1, nil)
	if l := h.c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("groups left after expiry: %+v", l)
	}
}

// TestTxnOffsetsReplay: records loaded from a log, transactional ones
// with their producer and the markers where they fell, rebuild the
// committed offsets, and a transaction open at the end of the log stays
// pending.
func TestTxnOffsetsReplay(t *testing.T) {
	h := newHarness(t, Config{})
	type marker struct {
		after int // records before it
		pid   int64
		group string
		ok    bool
	}
	var markers []marker
	mark := func(group string, pid int64, commit bool) {
		markers = append(markers, marker{after: len(h.records), pid: pid, group: group, ok: commit})
		h.complete(group, pid, commit)
	}
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 0, 1)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 7, "t", 0, 2)), nil)
	h.wantCode(h.txnCommit(txnCommit("g", 8, "t", 1, 2)), nil)
	h.wantCode(h.commit(commitOne("g", -1, "", "t", 1, 3)), nil)
	mark("g", 7, true)
	mark("g", 8, true) // older than the plain commit of t-1: not applied
	h.wantCode(h.txnCommit(txnCommit("g", 9, "t", 2, 4)), nil)
	mark("g", 9, false)
	h.wantCode(h.txnCommit(txnCommit("g", 10, "t", 3, 5)), nil) // open at the end

	c2 := New(Config{})
	m := 0
	for i, r := range h.records {
		for ; m < len(markers) && markers[m].after == i; m++ {
			c2.CompleteTransaction(h.now, markers[m].pid, PartitionFor(markers[m].group, offsetsPartitions), offsetsPartitions, markers[m].ok)
		}
		var err error
		if r.Txn != nil {
			err = c2.LoadTransactional(h.now, r.Txn.ID, r.Key, r.Value)
		} else {
			err = c2.Load(h.now, r.Key, r.Value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for ; m < len(markers); m++ {
		c2.CompleteTransaction(h.now, markers[m].pid, PartitionFor(markers[m].group, offsetsPartitions), offsetsPartitions, markers[m].ok)
	}
	all := FetchRequest{GroupID: "g", RequireStable: true, Topics: []FetchTopic{{Topic: "t", Partitions: []int32{0, 1, 2, 3}}}}
	got, want := c2.fetchOffsets(all), h.c.fetchOffsets(all)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %s, want %s", describeResult(got), describeResult(want))
	}
	for p, wantOff := range []int64{2, 3, -1, -1} {
		fp := got.Topics[0].Partitions[p]
		wantCode := int16(0)
		if p == 3 {
			wantCode = kerr.UnstableOffsetCommit.Code
		}
		if fp.Offset != wantOff || fp.ErrorCode != wantCode {
			t.Fatalf("t-%d: %d %s, want %d %s", p, fp.Offset, errName(fp.ErrorCode), wantOff, errName(wantCode))
		}
	}
	c2.CompleteTransaction(h.now, 10, PartitionFor("g", offsetsPartitions), offsetsPartitions, true)
	if off, _ := (&harness{c: c2}).offsetOf("g", "t", 3, true); off != 5 {
		t.Fatalf("the open transaction, committed after the replay: %d", off)
	}
}

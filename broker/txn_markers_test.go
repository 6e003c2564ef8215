package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// txnBatch builds a transactional batch of n records from pid at epoch
// and sequence seq, values "<tag>-<i>".
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: seq, Transactional: true}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendDirect appends b to p as the produce path does once a batch is
// accepted, without the transaction coordinator's verification, so that
// these tests exercise the partition side alone.
func appendDirect(t testing.TB, p *partition.Partition, b []byte) partition.AppendOutcome {
	t.Helper()
	out, err := p.AppendBuilt(partition.OriginClient, b, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if out.Refused == nil {
		p.Appended()
	}
	return out
}

func marker(t testing.TB, p *partition.Partition, pid int64, epoch int16, coordEpoch int32, commit bool) partition.MarkerOutcome {
	t.Helper()
	return markerTV(t, p, partition.TxnMarker{PID: pid, Epoch: epoch, CoordinatorEpoch: coordEpoch, Commit: commit})
}

func markerTV(t testing.TB, p *partition.Partition, m partition.TxnMarker) partition.MarkerOutcome {
	t.Helper()
	out, err := p.WriteTxnMarker(m, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fetchCommitted fetches partition 0 of topic from offset at
// read_committed and returns the partition's answer and its batches'
// headers.
func fetchCommitted(t testing.TB, c *rawConn, topic string, offset int64) (kmsg.FetchResponseTopicPartition, []batch.Header) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.IsolationLevel, req.MaxBytes, req.MaxWaitMillis = 1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	var hs []batch.Header
	if err := batch.Split(sp.RecordBatches, func(one []byte) error {
		h, err := batch.ParseHeader(one)
		hs = append(hs, h)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return sp, hs
}

func listCommitted(t testing.TB, c *rawConn, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		t.Fatal(err)
	}
	return sp.Offset
}

type lsoStep struct {
	name      string
	do        func()
	lso, hw   int64
	lastBatch int64 // base offset of the last batch a read_committed fetch from 0 returns, -1 none
	aborted   []int64
}

func checkLSO(t *testing.T, c *rawConn, p *partition.Partition, s lsoStep) {
	t.Helper()
	if got := p.LastStableOffset(); got != s.lso {
		t.Fatalf("%s: LSO %d, want %d", s.name, got, s.lso)
	}
	if got := listCommitted(t, c, p.Topic()); got != s.lso {
		t.Fatalf("%s: ListOffsets latest read_committed %d, want %d", s.name, got, s.lso)
	}
	sp, hs := fetchCommitted(t, c, p.Topic(), 0)
	if sp.ErrorCode != 0 || sp.HighWatermark != s.hw || sp.LastStableOffset != s.lso {
		t.Fatalf("%s: fetch error %d, HW %d, LSO %d; want HW %d, LSO %d", s.name, sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, s.hw, s.lso)
	}
	last := int64(-1)
	if len(hs) > 0 {
		last = hs[len(hs)-1].BaseOffset
	}
	if last != s.lastBatch {
		t.Fatalf("%s: last batch read at %d, want %d", s.name, last, s.lastBatch)
	}
	var aborted []int64
	for _, a := range sp.AbortedTransactions {
		aborted = append(aborted, a.FirstOffset)
	}
	if !slices.Equal(aborted, s.aborted) {
		t.Fatalf("%s: aborted transactions at %v, want %v", s.name, aborted, s.aborted)
	}
}

// TestTxnMarkersMoveTheLastStableOffset walks two interleaved transactions
// and a plain batch through their markers, checking after each step the
// LSO, ListOffsets and a read_committed fetch (which stops at the LSO and
// lists the aborted transaction), and finally that franz-go's
// read_committed consumer sees exactly the committed and plain records
// while a read_uncommitted one sees everything.
func TestTxnMarkersMoveTheLastStableOffset(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	p := partitionOf(t, b, "t", 0)
	const pidA, pidB = 1000, 2000
	for _, s := range []lsoStep{
		{name: "empty", do: func() {}, lso: 0, hw: 0, lastBatch: -1},
		{name: "A opens at 0", do: func() { appendDirect(t, p, txnBatch(t, pidA, 0, 0, 2, "aborted")) }, lso: 0, hw: 2, lastBatch: -1},
		{name: "B opens at 2", do: func() { appendDirect(t, p, txnBatch(t, pidB, 0, 0, 1, "committed")) }, lso: 0, hw: 3, lastBatch: -1},
		{name: "plain at 3", do: func() { appendDirect(t, p, idempotentBatch(t, -1, 0, 0, 1, time.Now().UnixMilli())) }, lso: 0, hw: 4, lastBatch: -1},
		{name: "A more at 4", do: func() { appendDirect(t, p, txnBatch(t, pidA, 0, 2, 1, "aborted-too")) }, lso: 0, hw: 5, lastBatch: -1},
		{name: "A aborts at 5", do: func() { marker(t, p, pidA, 0, 0, false) }, lso: 2, hw: 6, lastBatch: 0, aborted: []int64{0}},
		{name: "B commits at 6", do: func() { marker(t, p, pidB, 0, 0, true) }, lso: 7, hw: 7, lastBatch: 6, aborted: []int64{0}},
		{name: "empty transaction of A commits at 7", do: func() { marker(t, p, pidA, 0, 0, true) }, lso: 8, hw: 8, lastBatch: 7, aborted: []int64{0}},
	} {
		s.do()
		checkLSO(t, c, p, s)
	}

	consume := func(level kgo.IsolationLevel, want int) []string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []string
		for len(got) < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %v, want %d records", got, want)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	plain := "p-1-e-1-s-1"
	if got := consume(kgo.ReadCommitted(), 2); !slices.Equal(got, []string{"committed-0", plain}) {
		t.Fatalf("read_committed consumed %q", got)
	}
	if got := consume(kgo.ReadUncommitted(), 5); !slices.Equal(got, []string{"aborted-0", "aborted-1", "committed-0", plain, "aborted-too-0"}) {
		t.Fatalf("read_uncommitted consumed %q", got)
	}
}

// TestTxnStateRefusals: Kafka's checks on markers and on a producer's
// batches while its transaction is open.
func TestTxnStateRefusals(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	p := partitionOf(t, b, "t", 0)
	const pid = 77
	appendDirect(t, p, txnBatch(t, pid, 3, 0, 1, "x"))
	if out := appendDirect(t, p, idempotentBatch(t, pid, 3, 1, 1, time.Now().UnixMilli())); out.Refused != kerr.InvalidTxnState {
		t.Fatalf("non-transactional batch inside a transaction: %v", out.Refused)
	}
	if out := marker(t, p, pid, 2, 5, false); out.Refused != kerr.InvalidProducerEpoch {
		t.Fatalf("marker of an older epoch: %v", out.Refused)
	}
	if out := marker(t, p, pid, 3, 5, true); out.Refused != nil || out.Offset != 1 {
		t.Fatalf("commit: %+v", out)
	}
	if out := marker(t, p, pid, 3, 4, true); out.Refused != kerr.TransactionCoordinatorFenced {
		t.Fatalf("marker of an older coordinator epoch: %v", out.Refused)
	}
	// A bumped epoch (TV2 markers carry epoch+1) is accepted, and the
	// producer then continues at sequence 0 of it.
	if out := marker(t, p, pid, 4, 5, false); out.Refused != nil {
		t.Fatalf("marker with a bumped epoch: %v", out.Refused)
	}
	if out := appendDirect(t, p, txnBatch(t, pid, 4, 0, 1, "y")); out.Refused != nil {
		t.Fatalf("new transaction at the bumped epoch: %v", out.Refused)
	}
	if p.LastStableOffset() != 3 {
		t.Fatalf("LSO %d, want 3", p.LastStableOffset())
	}
	// Transaction version 2 (Kafka 4.2's checkProducerEpoch): the marker's
	// epoch must be above the producer's while its transaction is open; the
	// same epoch once the transaction is over is a retry, written again.
	tv2 := partition.TxnMarker{PID: pid, Epoch: 4, CoordinatorEpoch: 5, Commit: true, TransactionVersion: 2}
	if out := markerTV(t, p, tv2); out.Refused != kerr.InvalidProducerEpoch {
		t.Fatalf("TV2 marker at the open transaction's epoch: %v", out.Refused)
	}
	tv2.Epoch = 5
	if out := markerTV(t, p, tv2); out.Refused != nil || out.Offset != 4 {
		t.Fatalf("TV2 marker with the bumped epoch: %+v", out)
	}
	if out := markerTV(t, p, tv2); out.Refused != nil || out.Offset != 5 {
		t.Fatalf("TV2 marker retried: %+v", out)
	}
	tv2.Epoch = 4
	if out := markerTV(t, p, tv2); out.Refused != kerr.InvalidProducerEpoch {
		t.Fatalf("TV2 marker of an older epoch: %v", out.Refused)
	}
	if p.LastStableOffset() != 6 {
		t.Fatalf("LSO %d, want 6", p.LastStableOffset())
	}
}

// TestTxnStateSurvivesRestart leaves one transaction open and one aborted,
// restarts (cleanly, and from a copy taken while running, without the
// .txnindex, which the replayed abort marker restores), and checks the LSO
// still stops at the open transaction, the abort is still listed, and the
// open transaction can then be committed.
func TestTxnStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "crash"}[crash], func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			first, err := Start(ctx, Config{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			c := dialRaw(t, first.Addr())
			createTopic(t, c, "t", 1, nil)
			p := partitionOf(t, first, "t", 0)
			appendDirect(t, p, txnBatch(t, 1, 0, 0, 1, "aborted"))    // 0
			appendDirect(t, p, txnBatch(t, 2, 0, 0, 1, "open"))       // 1
			if out := marker(t, p, 1, 0, 7, false); out.Offset != 2 { // 2
				t.Fatalf("abort: %+v", out)
			}
			dataDir := dir
			if crash {
				dataDir = t.TempDir()
				copyDir(t, dir, dataDir)
				txnIndex := filepath.Join(dataDir, "t-0", "00000000000000000000.txnindex")
				if err := os.Remove(txnIndex); err != nil {
					t.Fatal(err)
				}
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			second := startBroker(t, Config{DataDir: dataDir})
			c = dialRaw(t, second.Addr())
			p = partitionOf(t, second, "t", 0)
			checkLSO(t, c, p, lsoStep{name: "after restart", lso: 1, hw: 3, lastBatch: 0, aborted: []int64{0}})
			if got := p.Log().AbortedTxns(0, 3); !slices.Equal(got, []storage.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 1}}) {
				t.Fatalf("aborted transactions %+v", got)
			}
			if out := marker(t, p, 1, 0, 6, true); out.Refused != kerr.TransactionCoordinatorFenced {
				t.Fatalf("coordinator epoch not restored: %+v", out)
			}
			marker(t, p, 2, 0, 7, true) // 3
			checkLSO(t, c, p, lsoStep{name: "after commit", lso: 4, hw: 4, lastBatch: 3, aborted: []int64{0}})
		})
	}
}

func writeMarkers(t testing.TB, c *rawConn, version int16, markers ...kmsg.WriteTxnMarkersRequestMarker) *kmsg.WriteTxnMarkersResponse {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(version)
	req.Markers = markers
	return c.do(req).(*kmsg.WriteTxnMarkersResponse)
}

func wireMarker(pid int64, epoch int16, coordEpoch int32, commit bool, topic string, partitions ...int32) kmsg.WriteTxnMarkersRequestMarker {
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, partitions
	m.Topics = append(m.Topics, mt)
	return m
}

// TestWriteTxnMarkersOverTheWire ends transactions in two partitions with
// WriteTxnMarkers at both versions (v0, which Kafka 4.2 no longer serves,
// closes the connection as for any unsupported version) and checks each partition's error code:
// success (the LSO moves past the transaction), unknown topic and
// partition, an older producer epoch, an older coordinator epoch; markers
// of one producer id share a response entry.
func TestWriteTxnMarkersOverTheWire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 2, nil)
	p0, p1 := partitionOf(t, b, "t", 0), partitionOf(t, b, "t", 1)
	const pid = 500
	appendDirect(t, p0, txnBatch(t, pid, 2, 0, 1, "a"))
	appendDirect(t, p1, txnBatch(t, pid, 2, 0, 1, "b"))
	if p0.LastStableOffset() != 0 || p1.LastStableOffset() != 0 {
		t.Fatal("open transactions do not hold the LSO")
	}
	codes := func(resp *kmsg.WriteTxnMarkersResponse) map[string]int16 {
		out := map[string]int16{}
		for _, m := range resp.Markers {
			for _, mt := range m.Topics {
				for _, mp := range mt.Partitions {
					out[fmt.Sprintf("%d/%s-%d", m.ProducerID, mt.Topic, mp.Partition)] = mp.ErrorCode
				}
			}
		}
		return out
	}
	for _, version := range []int16{1, 2} {
		resp := writeMarkers(t, c, version, wireMarker(pid, 2, 3, version == 2, "t", int32(version-1), 7), wireMarker(pid, 2, 3, true, "nope", 0))
		if len(resp.Markers) != 1 {
			t.Fatalf("v%d: %d response entries for one producer id", version, len(resp.Markers))
		}
		want := map[string]int16{
			fmt.Sprintf("500/t-%d", version-1): 0,
			"500/t-7":                          kerr.UnknownTopicOrPartition.Code,
			"500/nope-0":                       kerr.UnknownTopicOrPartition.Code,
		}
		if got := codes(resp); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("v%d: codes %v, want %v", version, got, want)
		}
	}
	if p0.LastStableOffset() != 2 || p1.LastStableOffset() != 2 {
		t.Fatalf("LSOs %d and %d after the markers, want 2 and 2", p0.LastStableOffset(), p1.LastStableOffset())
	}
	if got := p0.Log().AbortedTxns(0, 2); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 1 {
		t.Fatalf("partition 0's abort indexed as %+v", got)
	}
	resp := writeMarkers(t, c, 1, wireMarker(pid, 1, 3, true, "t", 0), wireMarker(pid+1, 0, 0, true, "t", 1))
	want := map[string]int16{"500/t-0": kerr.InvalidProducerEpoch.Code, "501/t-1": 0}
	if got := codes(resp); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	resp = writeMarkers(t, c, 1, wireMarker(pid, 2, 2, true, "t", 0))
	if got := codes(resp); got["500/t-0"] != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("older coordinator epoch: %v", got)
	}
}

// TestOffsetsSurviveAMarkerInConsumerOffsets: a transaction marker written
// to __consumer_offsets is skipped when the group coordinator replays the
// topic, and committed offsets are still there after a restart.
func TestOffsetsSurviveAMarkerInConsumerOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, first.Addr())
	createTopic(t, c, "t", 1, nil)
	if code := c.do(commitReq(8, "g", "", -1, "t", 42)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	offsets := b2p(first, offsetsTopic)
	var markerPartitions []int32
	for i := range offsets {
		markerPartitions = append(markerPartitions, int32(i))
	}
	for _, mt := range writeMarkers(t, c, 1, wireMarker(9, 0, 0, true, offsetsTopic, markerPartitions...)).Markers[0].Topics {
		for _, mp := range mt.Partitions {
			if mp.ErrorCode != 0 {
				t.Fatalf("marker in %s-%d: %v", offsetsTopic, mp.Partition, kerr.ErrorForCode(mp.ErrorCode))
			}
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := startBroker(t, Config{DataDir: dir})
	c = dialRaw(t, second.Addr())
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(7)
	fetch.Group = "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	if got := c.do(fetch).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].Offset; got != 42 {
		t.Fatalf("offset after the restart: %d, want 42", got)
	}
}

// b2p returns the partitions of topic on b.
func b2p(b *Broker, topic string) []*partition.Partition {
	return b.partitions(b.lookupTopic(topic))
}

// TestTxnMarkerIsFlushedUnderFlushMessagesOne: with flush.messages=1 the
// high watermark is the durable offset, so a marker must be fsynced by the
// time WriteTxnMarker returns for the transaction to become readable.
func TestTxnMarkerIsFlushedUnderFlushMessagesOne(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, map[string]string{"flush.messages": "1"})
	p := partitionOf(t, b, "t", 0)
	appendDirect(t, p, txnBatch(t, 1, 0, 0, 1, "x"))
	if err := p.Log().FlushAfterAppend(p.Log().EndOffset()); err != nil {
		t.Fatal(err)
	}
	if out := marker(t, p, 1, 0, 0, true); out.Refused != nil || out.Offset != 1 {
		t.Fatalf("commit: %+v", out)
	}
	if hw, lso := p.HighWatermark(), p.LastStableOffset(); hw != 2 || lso != 2 {
		t.Fatalf("HW %d, LSO %d after the commit marker, want 2 and 2", hw, lso)
	}
}

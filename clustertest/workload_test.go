package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// The workload: idempotent acks=all producers writing unique values to an
// RF=3, min.insync.replicas=2 topic while consumers read every partition
// from the start, all recorded into a History.

const (
	topic      = "faults"
	partitions = 3
	// replicationFactor and minInsync are the topic's.
	replicationFactor = 3
	minInsync         = "2"
	producers         = 3
	consumers         = 2
)

// createTopic creates the test topic: RF=3, min.insync.replicas=2,
// placed by the controller.
func (c *cluster) createTopic() { c.createTopicAssigned(nil) }

// createTopicAssigned creates the test topic with the replicas of assign
// (partition: its replicas, the first the preferred leader), or placed by
// the controller if assign is nil.
func (c *cluster) createTopicAssigned(assign [][]int32) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, replicationFactor
	if assign != nil {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p, replicas := range assign {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(p), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	}
	minISR := minInsync
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", &minISR
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		c.t.Fatalf("creating %s (RF=%d, min.insync.replicas=%s, assignment %v): %v", topic, replicationFactor, minInsync, assign, err)
	}
	c.waitFullISR(topic, partitions)
}

// A workload is the producers and consumers of one run and what they saw.
type workload struct {
	t         *testing.T
	cancel    context.CancelFunc // ends the consumers
	stop      context.CancelFunc // producers stop sending
	producers sync.WaitGroup
	consumers sync.WaitGroup

	mu    sync.Mutex
	sends []*Send
	reads []Read
	acked int
	// ackedOn counts acknowledgements per partition.
	ackedOn map[int32]int
	// consumed is each consumer's next offset per partition.
	consumed map[string]map[int32]int64
}

// startWorkload starts the producers and consumers on c.
func startWorkload(t *testing.T, c *cluster, run string) *workload {
	ctx, cancel := context.WithCancel(context.Background())
	sending, stop := context.WithCancel(ctx)
	w := &workload{t: t, cancel: cancel, stop: stop, consumed: map[string]map[int32]int64{}, ackedOn: map[int32]int{}}
	t.Cleanup(func() { cancel(); w.producers.Wait(); w.consumers.Wait() })
	for i := range producers {
		name := fmt.Sprintf("%s-p%d", run, i)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...),
			kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent: franz-go's default with acks=all
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(2*time.Millisecond),
			kgo.MaxBufferedRecords(5000), // a stalled partition does not stop the others
			kgo.RequestTimeoutOverhead(5*time.Second),
			kgo.ProduceRequestTimeout(10*time.Second),
			kgo.MetadataMinAge(250*time.Millisecond),
			kgo.WithLogger(clientLogger(t, c, name)))
		if err != nil {
			t.Fatal(err)
		}
		w.producers.Go(func() { w.produce(ctx, sending, cl, name) })
	}
	for i := range consumers {
		name := fmt.Sprintf("%s-c%d", run, i)
		offsets := map[int32]kgo.Offset{}
		for p := range int32(partitions) {
			offsets[p] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
			kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.MetadataMinAge(250*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.consumed[name] = map[int32]int64{}
		w.mu.Unlock()
		w.consumers.Go(func() { w.consume(ctx, cl, name) })
	}
	return w
}

// clientLogger logs a client's warnings and errors (and with
// GREGOR_CLUSTER_LOG_LEVEL=debug everything) to name.log next to the
// nodes' logs.
func clientLogger(t *testing.T, c *cluster, name string) kgo.Logger {
	level := kgo.LogLevelWarn
	if logLevel() == "debug" {
		level = kgo.LogLevelDebug
	}
	f, err := os.Create(filepath.Join(c.logDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return kgo.BasicLogger(f, level, func() string { return time.Now().Format("15:04:05.000 ") })
}

// produce sends name's records, seq 0, 1, ..., seq to partition
// seq%partitions, up to 400 a second, until sending ends; then it waits
// for the outstanding ones (the cluster is healed by then) for up to two
// minutes, and fails what is left by closing the client. Records are
// produced with ctx, which ends only when the test does, so that the
// client retries each until it knows the outcome.
func (w *workload) produce(ctx, sending context.Context, cl *kgo.Client, name string) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	seq := 0
loop:
	for {
		select {
		case <-sending.Done():
			break loop
		case <-tick.C:
		}
		for range 2 {
			s := &Send{Producer: name, Seq: seq, Partition: int32(seq % partitions), Value: Value(name, seq)}
			seq++
			w.mu.Lock()
			w.sends = append(w.sends, s)
			w.mu.Unlock()
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: s.Partition, Value: []byte(s.Value)},
				func(r *kgo.Record, err error) {
					w.mu.Lock()
					defer w.mu.Unlock()
					if err == nil {
						s.Acked, s.Offset = true, r.Offset
						w.acked++
						w.ackedOn[r.Partition]++
					}
				})
		}
	}
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		w.t.Logf("producer %s: flush: %v (what is not acknowledged counts as unknown)", name, err)
	}
	cl.Close()
}

// consume records every record name sees until the context ends.
func (w *workload) consume(ctx context.Context, cl *kgo.Client, name string) {
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		var reads []Read
		fs.EachRecord(func(r *kgo.Record) {
			reads = append(reads, Read{Reader: name, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		w.mu.Lock()
		w.reads = append(w.reads, reads...)
		for _, r := range reads {
			w.consumed[name][r.Partition] = r.Offset + 1
		}
		w.mu.Unlock()
	}
}

// ackedCount is how many records have been acknowledged so far.
func (w *workload) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// waitAcks waits until n more records than now are acknowledged: the
// cluster takes writes.
func (w *workload) waitAcks(c *cluster, n int, why string) {
	c.t.Helper()
	from := w.ackedCount()
	c.waitFor(fmt.Sprintf("%d more acknowledged records (%s)", n, why), 120*time.Second, func() bool {
		return w.ackedCount() >= from+n
	})
}

// waitAcksOn waits until n more records of partition p than now are
// acknowledged: its leader takes writes.
func (w *workload) waitAcksOn(c *cluster, p int32, n int, why string) {
	c.t.Helper()
	count := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.ackedOn[p]
	}
	from := count()
	c.waitFor(fmt.Sprintf("%d more acknowledged records on partition %d (%s)", n, p, why), 120*time.Second, func() bool {
		return count() >= from+n
	})
}

// finish stops the producers and waits until each sent record is
// acknowledged or failed, waits for the consumers to reach the end
// offsets, stops them, and returns the history without the final logs.
func (w *workload) finish(c *cluster) History {
	c.t.Helper()
	w.stop()
	done := make(chan struct{})
	go func() { w.producers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		c.t.Fatal("the producers did not settle their records within 4 minutes")
	}
	ends := c.endOffsets()
	c.waitFor("the consumers to read to the end offsets", 120*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, next := range w.consumed {
			for p, end := range ends {
				if next[p] < end {
					return false
				}
			}
		}
		return true
	})
	w.cancel()
	w.consumers.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := History{Reads: w.reads}
	for _, s := range w.sends {
		h.Sends = append(h.Sends, *s)
	}
	return h
}

// endOffsets lists the topic's end offsets (high watermarks), retrying
// until every partition answers.
func (c *cluster) endOffsets() map[int32]int64 {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	var ends map[int32]int64
	c.waitFor("the end offsets of every partition", 90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		ends = map[int32]int64{}
		ok := true
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				ok = false
			}
			ends[o.Partition] = o.Offset
		})
		return ok && len(ends) == partitions
	})
	return ends
}

// finalLogs reads every partition from offset 0 to its end offset with a
// new consumer: the final logs the checker judges against.
func (c *cluster) finalLogs() (map[int32][]Entry, map[int32]int64) {
	c.t.Helper()
	ends := c.endOffsets()
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	final := map[int32][]Entry{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := func() bool {
		for p, end := range ends {
			es := final[p]
			if end > 0 && (len(es) == 0 || es[len(es)-1].Offset < end-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("reading the final logs up to %v: %v", ends, ctx.Err())
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.t.Logf("final read: %s[%d]: %v", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				final[r.Partition] = append(final[r.Partition], Entry{Offset: r.Offset, Value: string(r.Value)})
			}
		})
	}
	return final, ends
}

// checkHistory runs the checker and fails the test on any anomaly.
func checkHistory(t *testing.T, h History) Summary {
	t.Helper()
	anomalies, sum := Check(h)
	t.Logf("history: %v", sum)
	if len(anomalies) > 0 {
		shown := anomalies
		if len(shown) > 50 {
			shown = shown[:50]
		}
		for _, a := range shown {
			t.Errorf("%v", a)
		}
		t.Fatalf("the checker found %d anomalies (first %d above)", len(anomalies), len(shown))
	}
	if sum.Acked == 0 {
		t.Fatal("no record was acknowledged: the run checked nothing")
	}
	return sum
}

// compareReplicas opens every replica of every partition (replicas names
// their nodes) from the stopped nodes' data dirs and checks that they hold
// the same bytes below hw (the final high watermark), and the records of
// final.
func (c *cluster) compareReplicas(replicas map[int32][]int32, hw map[int32]int64, final map[int32][]Entry) {
	c.t.Helper()
	for p := range int32(partitions) {
		var (
			first     []byte
			firstNode int32
		)
		if len(replicas[p]) != replicationFactor {
			c.t.Fatalf("partition %d has replicas %v", p, replicas[p])
		}
		for _, id := range replicas[p] {
			n := c.node(id)
			dir := filepath.Join(n.dataDir, fmt.Sprintf("%s-%d", topic, p))
			l, err := storage.Open(vfs.OSFS{}, dir, storage.DefaultConfig())
			if err != nil {
				c.t.Fatalf("node %d: opening partition %d's replica: %v", n.id, p, err)
			}
			if l.EndOffset() < hw[p] {
				l.Close()
				c.t.Fatalf("node %d: partition %d's replica ends at %d, below the high watermark %d", n.id, p, l.EndOffset(), hw[p])
			}
			var b []byte
			for off := l.StartOffset(); off < hw[p]; {
				chunk, err := l.Read(off, 4<<20, hw[p])
				if err != nil {
					l.Close()
					c.t.Fatalf("node %d: reading partition %d at %d: %v", n.id, p, off, err)
				}
				if len(chunk) == 0 {
					break
				}
				if err := batch.Split(chunk, func(bt []byte) error {
					h, err := batch.Check(bt)
					off = h.LastOffset() + 1
					return err
				}); err != nil {
					l.Close()
					c.t.Fatalf("node %d: partition %d: %v", n.id, p, err)
				}
				b = append(b, chunk...)
			}
			l.Close()
			if first == nil {
				first, firstNode = b, n.id
				c.checkReplicaRecords(n, p, b, final[p])
				continue
			}
			if !slices.Equal(first, b) {
				at := 0
				for at < len(b) && at < len(first) && b[at] == first[at] {
					at++
				}
				c.t.Fatalf("partition %d: node %d's replica differs from node %d's below the high watermark %d (%d and %d bytes, first difference at byte %d)",
					p, n.id, firstNode, hw[p], len(b), len(first), at)
			}
		}
	}
}

// checkReplicaRecords checks that a replica's batches below the high
// watermark hold final's records.
func (c *cluster) checkReplicaRecords(n *node, p int32, b []byte, final []Entry) {
	c.t.Helper()
	var (
		scratch batch.Scratch
		got     []Entry
	)
	err := batch.Split(b, func(bt []byte) error {
		return batch.ForEachRecord(bt, &scratch, func(h *batch.Header, r *batch.Record) bool {
			got = append(got, Entry{Offset: h.BaseOffset + int64(r.OffsetDelta), Value: string(r.Value)})
			return true
		})
	})
	if err != nil {
		c.t.Fatalf("node %d: partition %d: %v", n.id, p, err)
	}
	if len(got) > len(final) {
		got = got[:len(final)] // the batch straddling the high watermark
	}
	if !slices.Equal(got, final) {
		c.t.Fatalf("node %d: partition %d's replica holds %d records below the high watermark, not the %d the final read saw", n.id, p, len(got), len(final))
	}
}

package broker

// The hostile-client suite (issue #19): the attacks that took the broker
// down, run at once against one broker while a normal client produces and
// reads back. The broker must stay within a memory bound, answer the
// normal client within 2 s, and lose nothing it acknowledged. make test
// runs it for a few seconds; make soak (GREGOR_SOAK=1) for a minute, with
// more attackers.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// soak reports whether the long version of the suite runs.
func soak() bool { return os.Getenv("GREGOR_SOAK") != "" }

// attack is one hostile client's loop: it runs until ctx ends, on
// connections of its own, and counts what it did.
type attack struct {
	name string
	n    int // how many run at once
	run  func(ctx context.Context, addr string) error
}

// sendFrames dials addr and writes frames, then holds the connection open
// until ctx ends, reading and dropping whatever the broker answers.
func sendFrames(ctx context.Context, addr string, frames ...[]byte) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	go func() { <-ctx.Done(); nc.Close() }()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}()
	for _, f := range frames {
		if _, err := nc.Write(f); err != nil {
			return nil // closed by the broker or by ctx: the attack goes on
		}
	}
	<-ctx.Done()
	return nil
}

// TestHostileClientsLeaveTheBrokerServing. It runs alone: it measures the
// process's heap.
func TestHostileClientsLeaveTheBrokerServing(t *testing.T) {
	duration, scale := 4*time.Second, 1
	if soak() {
		duration, scale = time.Minute, 4
	}
	// max.connections bounds how many connections the attacks can hold
	// at once: each holds little, but CPU-bound work (the bombs, two
	// decoder sets at a time) queues faster than it drains, and a queued
	// request keeps its connection.
	maxConns := int64(256)
	b := startBroker(t, Config{MaxConnections: &maxConns})
	admin := dialRaw(t, b.Addr())
	createTopic(t, admin, "target", 1, nil)
	createTopic(t, admin, "normal", 3, nil)

	// A zstd batch whose one record decompresses to 64 MiB, built before
	// the heap is measured.
	bomb, err := batch.AppendBatch(nil, batch.BuildOptions{Compression: batch.Zstd, BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1},
		[]batch.Record{{Key: []byte("k"), Value: make([]byte, 64<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	bombFrame := encodeRequest(produceRequest(9, 1, "target", 0, bomb), 1)
	claim := append(binary.BigEndian.AppendUint32(nil, uint32(protocol.DefaultMaxFrameBytes)), 0, 0, 0, 9, 0, 0, 0, 1)
	hugeTopics := kmsg.NewPtrCreateTopicsRequest()
	hugeTopics.SetVersion(7)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "huge", math.MaxInt32, 1
	hugeTopics.Topics = append(hugeTopics.Topics, ct)
	failingAcksZero := encodeRequest(produceRequest(9, 0, "missing", 0, makeBatch(t, batch.None, 1, time.Now().UnixMilli())), 1)
	longPoll := encodeRequest(fetchRequest(12, "target", 1<<40, 60000, 1), 1)
	padded := encodeRequest(paddedFetch("target", 0, 8<<20), 2)

	var attempts sync.Map // attack name -> *atomic.Int64
	attacks := []attack{
		{"claims of 100 MiB frames never sent", 25 * scale, func(ctx context.Context, addr string) error {
			return sendFrames(ctx, addr, claim)
		}},
		{"zstd batches decompressing to 64 MiB", 4 * scale, func(ctx context.Context, addr string) error {
			return sendFrames(ctx, addr, bombFrame, bombFrame, bombFrame)
		}},
		{"8 MiB frames behind a long poll", 2 * scale, func(ctx context.Context, addr string) error {
			frames := [][]byte{longPoll}
			for range 16 {
				frames = append(frames, padded)
			}
			return sendFrames(ctx, addr, frames...)
		}},
		{"CreateTopics of 2^31-1 partitions", scale, func(ctx context.Context, addr string) error {
			return sendFrames(ctx, addr, encodeRequest(hugeTopics, 1))
		}},
		{"failing acks=0 produces", scale, func(ctx context.Context, addr string) error {
			return sendFrames(ctx, addr, failingAcksZero)
		}},
	}

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, a := range attacks {
		counter := new(atomic.Int64)
		attempts.Store(a.name, counter)
		for range a.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					// Each round is a fresh connection: the broker may
					// have closed the last one.
					round, stop := context.WithTimeout(ctx, 500*time.Millisecond)
					a.run(round, b.Addr())
					stop()
					counter.Add(1)
				}
			}()
		}
	}

	// The normal client: every record it was acknowledged is there at
	// the end, and no request waits more than 2 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("normal"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var peakHeap uint64
	acked, slowest := 0, time.Duration(0)
	lastSample := time.Now()
	for ctx.Err() == nil {
		start := time.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.ProduceSync(rctx, &kgo.Record{Value: []byte(fmt.Sprint(acked))}).FirstErr()
		rcancel()
		if err != nil {
			t.Fatalf("the normal client's produce failed beside the attacks: %v", err)
		}
		acked++
		slowest = max(slowest, time.Since(start))
		if time.Since(lastSample) > 250*time.Millisecond {
			// The live heap: what the broker holds, not the garbage
			// the collector has yet to take (under GOGC=100 the
			// process may grow to twice it; GOMEMLIMIT bounds that).
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peakHeap = max(peakHeap, m.HeapAlloc)
			lastSample = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	// The broker's own bounds: 2 decoder sets and their windows, 16 MiB of
	// requests per connection read ahead, 64 KiB of each claim, 256
	// connections.
	bound := base.HeapAlloc + 512<<20
	if peakHeap > bound {
		t.Errorf("the live heap reached %d MiB during the attacks, over %d MiB", peakHeap>>20, bound>>20)
	}
	// Under the race detector the decompression the attacks cost is
	// several times slower; the latency bound is for the real thing.
	if slowest > 2*time.Second && !raceEnabled {
		t.Errorf("a normal produce took %v beside the attacks", slowest)
	}
	attempts.Range(func(k, v any) bool {
		if v.(*atomic.Int64).Load() == 0 {
			t.Errorf("attack %q never ran", k)
		}
		return true
	})
	if b.lookupTopic("huge") != nil {
		t.Error("the CreateTopics of 2^31-1 partitions created a topic")
	}
	var read int
	for p := range 3 {
		read += int(b.lookupTopic("normal").partitions[p].Log().EndOffset())
	}
	if read != acked {
		t.Fatalf("%d records acknowledged, %d in the log", acked, read)
	}
	t.Logf("%d acknowledged produces beside the attacks; slowest %v; live heap peak %d MiB over a base of %d MiB",
		acked, slowest, peakHeap>>20, base.HeapAlloc>>20)
}

package broker

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

func TestRequestMemoryReserveAndRelease(t *testing.T) {
	ctx := context.Background()
	m := newRequestMemory(100)
	for range 2 {
		if !m.reserve(ctx, 60) {
			t.Fatal("a reservation failed while the pool was not exhausted")
		}
	}
	if got := m.inUse(); got != 120 {
		t.Fatalf("in use %d, want 120 (the pool is not strict)", got)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if m.reserve(short, 1) {
		t.Fatal("reserved from an exhausted pool")
	}
	got := make(chan bool)
	go func() { got <- m.reserve(ctx, 10) }()
	select {
	case <-got:
		t.Fatal("reserved before anything was released")
	case <-time.After(50 * time.Millisecond):
	}
	m.release(30) // 90 in use: room again
	if !<-got {
		t.Fatal("the waiting reservation failed")
	}
	if got := m.inUse(); got != 100 {
		t.Fatalf("in use %d, want 100", got)
	}
	unbounded := newRequestMemory(-1)
	for range 3 {
		if !unbounded.reserve(short, 1<<30) {
			t.Fatal("an unbounded pool refused")
		}
	}
}

// TestClaimedFramesCostWhatArrives: connections that each claim a frame
// of socket.request.max.bytes and send ten bytes of it cost the broker
// about what they sent, not what they claimed (issue #19: 500 such
// connections OOM-killed it), and a normal client is answered meanwhile.
// It runs alone: it measures the process's heap.
func TestClaimedFramesCostWhatArrives(t *testing.T) {
	b := startBroker(t, Config{})
	const conns = 50
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range conns {
		nc, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		claim := binary.BigEndian.AppendUint32(nil, uint32(protocol.DefaultMaxFrameBytes))
		claim = append(claim, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0) // a Produce v12 header, begun
		if _, err := nc.Write(claim); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the claims to be read", func() bool { return b.requestMemory.inUse() >= conns*int64(protocol.DefaultMaxFrameBytes) })
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Fatalf("the heap grew by %d MiB for %d claims of 100 MiB that sent 10 bytes each", grew>>20, conns)
	}
	start := time.Now()
	c := dialRaw(t, b.Addr())
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	c.do(meta)
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("a normal client waited %v beside the claims", waited)
	}
}

// paddedFetch is a Fetch v12 of partition 0 of topic that waits maxWait
// for data, padded with a rack id of pad bytes (a flexible string, so any
// length) to make the frame large.
func paddedFetch(topic string, maxWait int32, pad int) *kmsg.FetchRequest {
	req := fetchRequest(12, topic, 0, maxWait, 1)
	req.Rack = strings.Repeat("r", pad)
	return req
}

// TestConnectionReadsAheadAtMost16MiB: behind a long-poll fetch, a
// connection's later requests are read only while they add up to 16 MiB
// (issue #19: one connection read 65 frames of 100 MiB behind a fetch, 6.5
// GiB); all are answered once the fetch is.
func TestConnectionReadsAheadAtMost16MiB(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)
	fetchCorr := c.send(fetchRequest(12, "t", 0, 1500, 1))
	const frames, pad = 8, 5 << 20
	corrs := make(chan int32, frames)
	go func() {
		for range frames {
			corrs <- c.send(paddedFetch("t", 0, pad)) // blocks once the broker stops reading
		}
		close(corrs)
	}()
	time.Sleep(700 * time.Millisecond)
	if got := b.requestMemory.inUse(); got > 16<<20+pad {
		t.Fatalf("%d MiB of requests read behind a waiting fetch, want at most %d", got>>20, (16<<20+pad)>>20)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.readResponse(fetchCorr, resp)
	for corr := range corrs {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		c.readResponse(corr, resp)
	}
	waitFor(t, "the pool to be empty", func() bool { return b.requestMemory.inUse() == 0 })
}

// TestQueuedMaxRequestBytesMutesOtherConnections: with
// queued.max.request.bytes set, a connection's request waits unread while
// the pool is spent on others' unanswered requests, and is read once they
// are answered.
func TestQueuedMaxRequestBytesMutesOtherConnections(t *testing.T) {
	t.Parallel()
	limit := int64(1 << 20)
	b := startBroker(t, Config{QueuedMaxRequestBytes: &limit})
	admin := dialRaw(t, b.Addr())
	createTopic(t, admin, "t", 1, nil)
	holder := dialRaw(t, b.Addr())
	holdCorr := holder.send(paddedFetch("t", 1500, 2<<20)) // 2 MiB, waiting 1.5 s
	waitFor(t, "the large fetch to be read", func() bool { return b.requestMemory.inUse() >= 2<<20 })
	start := time.Now()
	c := dialRaw(t, b.Addr())
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	c.do(meta)
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("answered after %v while the pool was spent", waited)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	holder.readResponse(holdCorr, resp)
	waitFor(t, "the pool to be empty", func() bool { return b.requestMemory.inUse() == 0 })
}

package broker

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// fillTopic produces about size bytes to partition 0 of topic, in batches
// of 256 records of 1000-byte values, and returns the log end offset.
func fillTopic(tb testing.TB, c *rawConn, topic string, size int64) int64 {
	tb.Helper()
	recs := make([]batch.Record, 256)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: make([]byte, 1000)}
	}
	one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		tb.Fatal(err)
	}
	req := produceRequest(9, 1, topic, 0, one)
	var end int64
	for written := int64(0); written < size; written += int64(len(one)) {
		resp := c.do(req).(*kmsg.ProduceResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			tb.Fatalf("produce: error %d", p.ErrorCode)
		} else {
			end = p.BaseOffset + int64(len(recs))
		}
	}
	return end
}

// fetchRaw sends a v12 fetch of one partition and reads the response frame
// into buf (grown as needed), returning it. It allocates nothing once buf is
// large enough, so allocations measured around it are the broker's.
func fetchRaw(tb testing.TB, c *rawConn, r *bufio.Reader, frame []byte, buf []byte) []byte {
	tb.Helper()
	if _, err := c.nc.Write(frame); err != nil {
		tb.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		tb.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		tb.Fatal(err)
	}
	return buf
}

// fetchFrame encodes a v12 fetch request for partition 0 of topic.
func fetchFrame(topic string, offset int64, partitionMax int32) []byte {
	req := fetchRequest(12, topic, offset, 0, 0)
	req.MaxBytes = 50 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = partitionMax
	return encodeRequest(req, 1)
}

// BenchmarkFetchPath fetches 64 KiB and 1 MiB from a topic on disk through
// a real connection, end to end: request decoding, the read, the response
// encoding and the socket write. The client reads responses into one reused
// buffer, so allocs/op are the broker's; they must not grow with the fetch
// size.
func BenchmarkFetchPath(b *testing.B) {
	br := startBroker(b, Config{DataDir: b.TempDir()})
	benchmarkFetchPath(b, dialRaw(b, br.Addr()))
}

// BenchmarkFetchPathTLS is BenchmarkFetchPath on an SSL listener, where
// the records are copied through the TLS connection's write buffer rather
// than sent by sendfile: the cost of encryption. Its allocs/op include the
// test client's: crypto/tls allocates as it reads the large responses
// (readFromUntil in a memory profile), while the broker's side stays flat.
func BenchmarkFetchPathTLS(b *testing.B) {
	p := newTestPKI(b)
	br := startTLSBroker(b, p, "none", nil)
	c, err := dialTLS(b, br, p.clientTLS())
	if err != nil {
		b.Fatal(err)
	}
	benchmarkFetchPath(b, c)
}

func benchmarkFetchPath(b *testing.B, c *rawConn) {
	createTopicB(b, c, "bench")
	end := fillTopic(b, c, "bench", 64<<20)
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	for _, size := range []int32{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			frames := make([][]byte, 64)
			for i := range frames {
				frames[i] = fetchFrame("bench", int64(i)*(end/int64(len(frames)+1)), size)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf = fetchRaw(b, c, r, frames[i%len(frames)], buf)
				i++
				if len(buf) < int(size)/2 {
					b.Fatalf("response of %d bytes", len(buf))
				}
			}
		})
	}
}

// BenchmarkConsumeTopic reads a whole topic (GREGOR_BENCH_TOPIC_MB, default
// 256) from disk with 1 MiB fetches, as a consumer with default settings
// would, and reports the broker's memory: bytes allocated per MiB read,
// the peak heap in use, and the process's peak RSS while consuming (VmHWM,
// reset after the topic is written; it includes the test client and the
// Go runtime's retained heap).
func BenchmarkConsumeTopic(b *testing.B) {
	mb := int64(256)
	if s := os.Getenv("GREGOR_BENCH_TOPIC_MB"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		mb = v
	}
	br := startBroker(b, Config{DataDir: b.TempDir()})
	c := dialRaw(b, br.Addr())
	createTopicB(b, c, "bench")
	end := fillTopic(b, c, "bench", mb<<20)
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		resetPeakRSS()
		var before, ms runtime.MemStats
		runtime.ReadMemStats(&before)
		var peakHeap uint64
		read, fetches := int64(0), 0
		for offset := int64(0); offset < end; fetches++ {
			buf = fetchRaw(b, c, r, fetchFrame("bench", offset, 1<<20), buf)
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(12)
			if err := resp.ReadFrom(buf[5:]); err != nil {
				b.Fatal(err)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				b.Fatalf("fetch at %d: error %d, %d bytes", offset, p.ErrorCode, len(p.RecordBatches))
			}
			read += int64(len(p.RecordBatches))
			var last int64
			if err := batch.Split(p.RecordBatches, func(one []byte) error {
				h, err := batch.ParseHeader(one)
				last = h.LastOffset()
				return err
			}); err != nil {
				b.Fatal(err)
			}
			offset = last + 1
			if fetches%32 == 0 {
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapInuse)
			}
		}
		runtime.ReadMemStats(&ms)
		b.SetBytes(read)
		// The test client's own decoding (kmsg, one buffer) is included;
		// it copies nothing but the response frame into buf.
		b.ReportMetric(float64(ms.TotalAlloc-before.TotalAlloc)/float64(read>>20), "B-alloc/MiB")
		b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(vmHWM())/(1<<10), "peak-RSS-MiB")
		b.Logf("read %d MiB in %d fetches", read>>20, fetches)
	}
}

// resetPeakRSS restarts the kernel's VmHWM count at the current RSS
// (Linux's clear_refs "5"); elsewhere it does nothing.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// vmHWM returns the process's peak resident set in KiB, 0 if unknown.
func vmHWM() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

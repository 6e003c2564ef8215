package protocol

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// repeatReader serves the same bytes over and over, so a benchmark can read
// frames without building b.N of them first.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

// BenchmarkReadFrame reads size-prefixed frames through a 64 KiB bufio.Reader
// as the broker's connection reader does: "fresh" allocates each frame (what
// the broker does today, passing no buffer), "reused" passes the previous
// frame back in.
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{128, 16 << 10, 1 << 20} {
		data := frame(bytes.Repeat([]byte{0x5a}, size))
		for _, mode := range []string{"fresh", "reused"} {
			b.Run(fmt.Sprintf("%dB/%s", size, mode), func(b *testing.B) {
				r := bufio.NewReaderSize(&repeatReader{data: data}, 64<<10)
				var buf []byte
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					f, err := ReadFrame(r, DefaultMaxFrameBytes, buf)
					if err != nil || len(f) != size {
						b.Fatalf("ReadFrame: %d bytes, %v", len(f), err)
					}
					if mode == "reused" {
						buf = f
					}
				}
			})
		}
	}
}

// BenchmarkParseRequestHeader parses the header of a flexible Produce v9
// request from franz-go's encoder (client id, empty tagged fields).
func BenchmarkParseRequestHeader(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 30000
	clientID := "bench-client"
	frameBytes := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 7)
	payload := frameBytes[4:]
	b.ReportAllocs()
	for b.Loop() {
		hdr, body, err := ParseRequestHeader(payload)
		if err != nil || hdr.CorrelationID != 7 || len(body) == 0 {
			b.Fatalf("ParseRequestHeader: %+v %v", hdr, err)
		}
	}
}

// BenchmarkAppendResponse encodes complete response frames into a reused
// buffer, as the connection writer does: a Produce v9 response for six
// partitions, and Fetch v12 responses carrying 64 KiB and 1 MiB of record
// bytes in one partition (the bytes are copied into the frame).
func BenchmarkAppendResponse(b *testing.B) {
	produce := kmsg.NewPtrProduceResponse()
	produce.SetVersion(9)
	pt := kmsg.NewProduceResponseTopic()
	pt.Topic = "bench"
	for p := range int32(6) {
		pp := kmsg.NewProduceResponseTopicPartition()
		pp.Partition, pp.BaseOffset, pp.LogAppendTime, pp.LogStartOffset = p, 1<<20, -1, 0
		pt.Partitions = append(pt.Partitions, pp)
	}
	produce.Topics = append(produce.Topics, pt)

	fetch := func(recordBytes int) kmsg.Response {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic = "bench"
		fp := kmsg.NewFetchResponseTopicPartition()
		fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = 1<<20, 1<<20, 0
		fp.RecordBatches = bytes.Repeat([]byte{1}, recordBytes)
		ft.Partitions = append(ft.Partitions, fp)
		resp.Topics = append(resp.Topics, ft)
		return resp
	}
	cases := []struct {
		name string
		resp kmsg.Response
	}{
		{"produce-v9-6p", produce},
		{"fetch-v12-64KiB", fetch(64 << 10)},
		{"fetch-v12-1MiB", fetch(1 << 20)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var out []byte
			b.ReportAllocs()
			for b.Loop() {
				out = AppendResponse(out[:0], 42, c.resp)
			}
			if len(out) < 4 {
				b.Fatal("empty frame")
			}
			b.SetBytes(int64(len(out)))
		})
	}
}

package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

func TestPooledFrameCap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ size, wantCap int }{
		{1, minPooledFrame},
		{minPooledFrame, minPooledFrame},
		{minPooledFrame + 1, 2 * minPooledFrame},
		{100_000, 128 << 10},
		{maxPooledFrame, maxPooledFrame},
	} {
		if got := pooledFrameCap(tc.size); got != tc.wantCap {
			t.Errorf("pooledFrameCap(%d) = %d, want %d", tc.size, got, tc.wantCap)
		}
		// Whether from the pool or new, the buffer holds the frame.
		if p := frameBuffer(tc.size); cap(*p) < tc.size || len(*p) != 0 {
			t.Errorf("frameBuffer(%d): len %d cap %d", tc.size, len(*p), cap(*p))
		}
	}
}

// TestPooledProduceFrames pipelines produce requests of varying sizes (up to
// 2.8 MB, above the old 1 MiB pooling limit), interleaved with other
// requests, over one connection, so that the pooled frame buffers are reused
// while earlier requests' records are in the log, and checks that every
// record reads back as it was sent.
func TestPooledProduceFrames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		disk bool
		acks int16
	}{
		{"memory acks=all", false, -1},
		{"memory acks=1", false, 1},
		{"memory acks=0", false, 0},
		{"disk acks=all", true, -1},
		{"disk acks=0", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.disk {
				cfg.DataDir = t.TempDir()
			}
			br := startBroker(t, cfg)
			c := dialRaw(t, br.Addr())
			createTopic(t, c, "pool", 1, map[string]string{"max.message.bytes": "4194304"})

			const requests = 120
			var want []string
			var frames [][]byte
			corr := int32(100)
			expect := map[int32]kmsg.Request{} // correlation id -> request answered
			for i := range requests {
				n := 1 + i%7
				size := []int{10, 300, 5000, 40_000}[i%4]
				if i%30 == 7 { // frames of 0.4, 1.2, 2 and 2.8 MB, as franz-go sends
					size = 400_000
				}
				recs := make([]batch.Record, n)
				for j := range recs {
					v := fmt.Sprintf("req %d rec %d ", i, j)
					v += strings.Repeat(string(rune('a'+i%26)), max(0, size-len(v)))
					want = append(want, v)
					recs[j] = batch.Record{OffsetDelta: int32(j), Value: []byte(v)}
				}
				one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(),
					ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
				if err != nil {
					t.Fatal(err)
				}
				req := kmsg.NewPtrProduceRequest()
				req.SetVersion(9)
				req.Acks = tc.acks
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "pool"
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = one
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				corr++
				frames = append(frames, encodeRequest(req, corr))
				if tc.acks != 0 {
					expect[corr] = req
				}
				if i%10 == 0 { // a request whose frame is not pooled
					md := kmsg.NewPtrMetadataRequest()
					md.SetVersion(12)
					corr++
					frames = append(frames, encodeRequest(md, corr))
					expect[corr] = md
				}
			}
			md := kmsg.NewPtrMetadataRequest() // answered after every produce
			md.SetVersion(12)
			corr++
			frames = append(frames, encodeRequest(md, corr))
			expect[corr] = md

			written := make(chan error, 1)
			go func() {
				for _, f := range frames {
					if _, err := c.nc.Write(f); err != nil {
						written <- err
						return
					}
				}
				written <- nil
			}()
			for id := int32(101); id <= corr; id++ {
				req, ok := expect[id]
				if !ok {
					continue // acks=0: no answer
				}
				resp := req.ResponseKind()
				resp.SetVersion(req.GetVersion())
				c.readResponse(id, resp)
				if pr, ok := resp.(*kmsg.ProduceResponse); ok {
					if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
						t.Fatalf("produce %d: error code %d", id, code)
					}
				}
			}
			if err := <-written; err != nil {
				t.Fatal(err)
			}
			got := consumeAll(t, br.Addr(), "pool")
			if len(got) != len(want) {
				t.Fatalf("read %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("record %d: %.40q, want %.40q", i, got[i], want[i])
				}
			}
		})
	}
}

// TestFrameTooShortForAPIKey checks that a frame too short to hold a request
// header closes the connection, rather than leaving the reader waiting for
// the api key it peeks at.
func TestFrameTooShortForAPIKey(t *testing.T) {
	t.Parallel()
	br := startBroker(t, Config{})
	for _, frame := range [][]byte{{0, 0, 0, 0}, {0, 0, 0, 1, 0}} {
		c := dialRaw(t, br.Addr())
		if _, err := c.nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		c.expectClosed()
	}
}

// TestFrameBuffered checks when the reader, having answered a Produce itself,
// keeps the response in its writer: only while a whole next frame is already
// buffered, so a client waiting for its answer is never kept waiting.
func TestFrameBuffered(t *testing.T) {
	t.Parallel()
	frame := func(size int32, body int) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(size))
		return append(b, make([]byte, body)...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"nothing", nil, false},
		{"part of a size", []byte{0, 0}, false},
		{"a size alone", frame(10, 0), false},
		{"part of a frame", frame(10, 9), false},
		{"a whole frame", frame(10, 10), true},
		{"a frame and more", frame(10, 15), true},
		{"an empty frame", frame(0, 0), true},
		{"a negative size", frame(-1, 8), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(bytes.NewReader(tc.in), 64)
			if len(tc.in) > 0 {
				if _, err := r.Peek(1); err != nil { // fill the buffer as a read would
					t.Fatal(err)
				}
			}
			if got := frameBuffered(r); got != tc.want {
				t.Errorf("frameBuffered with %d bytes buffered = %v, want %v", r.Buffered(), got, tc.want)
			}
		})
	}
}

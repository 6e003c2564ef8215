package broker

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// sliceSource is a log with some batches to take slices of.
type sliceSource struct {
	log *storage.Log
	end int64
}

func newSliceSource(t testing.TB, fsys vfs.FS, dir string) *sliceSource {
	t.Helper()
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 8 << 10 // several segments, so slices span files
	cfg.Logger = slog.New(slog.DiscardHandler)
	l, err := storage.Open(fsys, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range 40 {
		recs := make([]batch.Record, 1+i%7)
		for j := range recs {
			recs[j] = batch.Record{OffsetDelta: int32(j), Value: bytes.Repeat([]byte{byte(i)}, 50*(i%5))}
		}
		b, err := batch.AppendBatch(nil, batch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	return &sliceSource{log: l, end: l.EndOffset()}
}

// randomFetchReply builds a random Fetch response of the given version with
// records sliced from src, and the same response with the records in
// memory, as kmsg would encode it. Every field the version has is set,
// tagged fields and unknown tags included, so that the splice is checked
// against all of kmsg's layout.
func randomFetchReply(t testing.TB, rng *rand.Rand, version int16, src *sliceSource) (*fetchReply, *kmsg.FetchResponse) {
	t.Helper()
	mk := func() *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.SetVersion(version)
		return r
	}
	zc, want := mk(), mk()
	reply := &fetchReply{FetchResponse: zc}
	throttle, errCode, session := int32(rng.Intn(1000)), int16(rng.Intn(3)), rng.Int31()
	for _, r := range []*kmsg.FetchResponse{zc, want} {
		r.ThrottleMillis, r.ErrorCode, r.SessionID = throttle, errCode, session
	}
	if version >= 16 && rng.Intn(2) == 0 {
		for _, r := range []*kmsg.FetchResponse{zc, want} {
			r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 3, Host: "h", Port: 9092}}
		}
	}
	if version >= 12 && rng.Intn(3) == 0 {
		zc.UnknownTags.Set(99, []byte{1, 2, 3})
		want.UnknownTags.Set(99, []byte{1, 2, 3})
	}
	for ti := range rng.Intn(4) {
		topic := kmsg.NewFetchResponseTopic()
		topic.Topic = string(bytes.Repeat([]byte{'t'}, 1+rng.Intn(200)))
		rng.Read(topic.TopicID[:])
		zt, wt := topic, topic
		zt.Partitions, wt.Partitions = nil, nil
		for pi := range rng.Intn(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(ti*10 + pi)
			p.ErrorCode = int16(rng.Intn(2))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int63(), rng.Int63(), rng.Int63()
			p.PreferredReadReplica = int32(rng.Intn(3) - 1)
			switch rng.Intn(3) {
			case 0:
				p.AbortedTransactions = nil
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				for range 1 + rng.Intn(3) {
					p.AbortedTransactions = append(p.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: rng.Int63(), FirstOffset: rng.Int63()})
				}
			}
			if version >= 12 && rng.Intn(2) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 4, 100
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 5
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 7, 2
				p.UnknownTags.Set(77, []byte("x"))
			}
			var s storage.Slice
			if rng.Intn(4) > 0 {
				var err error
				s, err = src.log.ReadSlice(rng.Int63n(src.end+1), rng.Intn(20000), src.end)
				if err != nil {
					t.Fatal(err)
				}
			}
			data, err := s.AppendTo([]byte{})
			if err != nil {
				t.Fatal(err)
			}
			zp, wp := p, p
			zp.RecordBatches = []byte{}
			wp.RecordBatches = data
			if s.Len() == 0 && rng.Intn(2) == 0 { // a null record set stays null
				zp.RecordBatches, wp.RecordBatches = nil, nil
			}
			zt.Partitions = append(zt.Partitions, zp)
			wt.Partitions = append(wt.Partitions, wp)
			reply.records = append(reply.records, s)
		}
		zc.Topics = append(zc.Topics, zt)
		want.Topics = append(want.Topics, wt)
	}
	return reply, want
}

// TestFetchReplyIsByteIdenticalToKmsg writes random Fetch responses of
// every served version the zero-copy way, to a buffer (records copied from
// MemFS and OS files) and to a TCP socket (records sent with sendfile), and
// checks each frame is byte for byte kmsg's encoding of the same response
// with its records in memory.
func TestFetchReplyIsByteIdenticalToKmsg(t *testing.T) {
	t.Parallel()
	sources := map[string]*sliceSource{
		"mem": newSliceSource(t, vfs.NewMemFS(), "/t-0"),
		"os":  newSliceSource(t, vfs.OSFS{}, filepath.Join(t.TempDir(), "t-0")),
	}
	server, client := tcpPair(t)
	serverW := bufio.NewWriterSize(server, 4096)
	clientR := bufio.NewReader(client)
	rng := rand.New(rand.NewSource(1))
	for version := int16(4); version <= 18; version++ {
		for name, src := range sources {
			for i := range 40 {
				reply, want := randomFetchReply(t, rng, version, src)
				corr := rng.Int31()
				wantFrame := protocol.AppendResponse(nil, corr, want)

				var buf bytes.Buffer
				w := bufio.NewWriterSize(&buf, 512) // small: ranges cross flushes
				if _, err := writeFetchReply(w, nil, nil, corr, reply); err != nil {
					t.Fatalf("v%d %s #%d: %v", version, name, i, err)
				}
				w.Flush()
				if !bytes.Equal(buf.Bytes(), wantFrame) {
					t.Fatalf("v%d %s #%d: copied frame differs from kmsg's (%d vs %d bytes) at byte %d", version, name, i, buf.Len(), len(wantFrame), firstDiff(buf.Bytes(), wantFrame))
				}

				if _, err := writeFetchReply(serverW, server, nil, corr, reply); err != nil {
					t.Fatalf("v%d %s #%d over tcp: %v", version, name, i, err)
				}
				serverW.Flush()
				got := make([]byte, len(wantFrame))
				client.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.ReadFull(clientR, got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, wantFrame) {
					t.Fatalf("v%d %s #%d: sent frame differs from kmsg's", version, name, i)
				}
				reply.release()
			}
		}
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (server, client *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return s.(*net.TCPConn), c.(*net.TCPConn)
}

// FuzzFetchReplyMatchesKmsg builds a Fetch response (version, shape, field
// values and record slices) from the fuzzer's seed and checks that the
// zero-copy writer's frame equals kmsg's encoding of it. Invariants: never
// panics; byte-identical output for every version from 4 to 18.
func FuzzFetchReplyMatchesKmsg(f *testing.F) {
	for _, seed := range []int64{0, 1, 42} {
		f.Add(seed, int16(4))
		f.Add(seed, int16(12))
		f.Add(seed, int16(18))
	}
	src := newSliceSource(f, vfs.NewMemFS(), "/t-0")
	f.Fuzz(func(t *testing.T, seed int64, version int16) {
		version = 4 + (version%15+15)%15
		reply, want := randomFetchReply(t, rand.New(rand.NewSource(seed)), version, src)
		defer reply.release()
		var buf bytes.Buffer
		w := bufio.NewWriterSize(&buf, 256)
		if _, err := writeFetchReply(w, nil, nil, 7, reply); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if wantFrame := protocol.AppendResponse(nil, 7, want); !bytes.Equal(buf.Bytes(), wantFrame) {
			t.Fatalf("v%d seed %d: frame differs from kmsg's", version, seed)
		}
	})
}

// FuzzFindRecordsFields walks arbitrary bytes as a Fetch response body.
// Invariants: never panics; any field found lies inside the input, in
// order.
func FuzzFindRecordsFields(f *testing.F) {
	for v := int16(4); v <= 18; v += 7 {
		r := kmsg.NewPtrFetchResponse()
		r.SetVersion(v)
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = []byte{1, 2, 3}
		r.Topics = []kmsg.FetchResponseTopic{{Topic: "a", Partitions: []kmsg.FetchResponseTopicPartition{p}}}
		f.Add(r.AppendTo(nil), v)
	}
	f.Fuzz(func(t *testing.T, body []byte, version int16) {
		fields, err := findRecordsFields(nil, body, version)
		if err != nil {
			return
		}
		prev := 0
		for _, fl := range fields {
			if fl.start < prev || fl.end < fl.start || fl.end > len(body) {
				t.Fatalf("field [%d, %d) out of order or outside %d bytes", fl.start, fl.end, len(body))
			}
			prev = fl.end
		}
	})
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

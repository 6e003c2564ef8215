package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// checkRecordSet checks that records are whole, CRC-valid batches with
// contiguous offsets from first, and returns the offset after the last.
func checkRecordSet(t testing.TB, records []byte, first int64) int64 {
	t.Helper()
	next := first
	if err := batch.Split(records, func(one []byte) error {
		h, err := batch.Check(one)
		if err != nil {
			return err
		}
		if h.BaseOffset != next {
			t.Fatalf("batch at offset %d, want %d", h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		return nil
	}); err != nil {
		t.Fatalf("record set: %v", err)
	}
	return next
}

// readFetchFrame reads one response frame from r and decodes it as a v12
// Fetch response.
func readFetchFrame(t testing.TB, r io.Reader) *kmsg.FetchResponse {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, frame); err != nil {
		t.Fatalf("reading a %d-byte response: %v", len(frame), err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(frame[5:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestFetchInFlightSurvivesDeleteTopics starts a 40 MiB fetch from disk,
// reads only its first bytes so that the broker is blocked in the middle of
// sending the records, deletes the topic (its segment files are removed),
// and then reads the rest: the response arrives whole and intact, because
// the fetch holds the segment files open.
func TestFetchInFlightSurvivesDeleteTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir})
	admin := dialRaw(t, b.Addr())
	createTopic(t, admin, "doomed", 1, map[string]string{"segment.bytes": "4194304"})
	end := fillTopic(t, admin, "doomed", 40<<20)

	consumer := dialRaw(t, b.Addr())
	req := fetchRequest(12, "doomed", 0, 0, 0)
	req.MaxBytes = 64 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = 64 << 20
	consumer.send(req)
	r := bufio.NewReaderSize(consumer.nc, 4096)
	consumer.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.Peek(64); err != nil { // the response has started
		t.Fatal(err)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(4)
	del.TopicNames = []string{"doomed"}
	if resp := admin.do(del).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: error %d", resp.Topics[0].ErrorCode)
	}
	if _, err := os.Stat(filepath.Join(dir, "doomed-0")); !os.IsNotExist(err) {
		t.Fatalf("partition directory still there after DeleteTopics: %v", err)
	}

	resp := readFetchFrame(t, r)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) < 39<<20 {
		t.Fatalf("fetch: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	if next := checkRecordSet(t, p.RecordBatches, 0); next != end {
		t.Fatalf("fetched offsets up to %d, want %d", next, end)
	}
}

// TestConcurrentFetchesOfOneSegment has several consumers read the same
// segments of a topic on disk at the same time, at overlapping offsets, and
// checks every response against one read alone: sendfile with explicit
// offsets shares a file between connections safely.
func TestConcurrentFetchesOfOneSegment(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{DataDir: t.TempDir()})
	admin := dialRaw(t, b.Addr())
	createTopic(t, admin, "shared", 1, map[string]string{"segment.bytes": "2097152"})
	end := fillTopic(t, admin, "shared", 8<<20)

	fetchAt := func(c *rawConn, offset int64) []byte {
		req := fetchRequest(12, "shared", offset, 0, 0)
		req.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 20
		resp := c.do(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Errorf("fetch at %d: error %d", offset, p.ErrorCode)
		}
		return p.RecordBatches
	}
	step := end / 16
	want := map[int64][]byte{}
	for off := int64(0); off < end; off += step {
		want[off] = fetchAt(admin, off)
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialRaw(t, b.Addr())
			for i := range 40 {
				off := int64((g+i)%16) * step
				if got := fetchAt(c, off); !bytes.Equal(got, want[off]) {
					t.Errorf("consumer %d: fetch at %d returned %d bytes unlike the %d read alone", g, off, len(got), len(want[off]))
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPipelinedFetchesAndSmallResponsesStayInOrder writes fetches with
// records (sent with sendfile), fetches without, and small requests in one
// burst, and reads every response in request order with intact records.
func TestPipelinedFetchesAndSmallResponsesStayInOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{DataDir: t.TempDir()})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "p", 1, nil)
	end := fillTopic(t, c, "p", 2<<20)

	var burst []byte
	var want []kmsg.Response
	for i := range 12 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = fetchRequest(12, "p", int64(i)*end/16, 0, 0)
		case 1:
			req = fetchRequest(12, "p", end, 0, 0) // at the end: no records
		default:
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(9)
			req = md
		}
		burst = append(burst, encodeRequest(req, int32(100+i))...)
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		want = append(want, resp)
	}
	if _, err := c.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	for i, resp := range want {
		c.readResponse(int32(100+i), resp)
		if f, ok := resp.(*kmsg.FetchResponse); ok {
			p := f.Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("response %d: error %d", i, p.ErrorCode)
			}
			if i%3 == 0 {
				checkRecordSet(t, p.RecordBatches, batchBaseOffset(t, p.RecordBatches))
				if len(p.RecordBatches) == 0 {
					t.Fatalf("response %d: no records", i)
				}
			}
		}
	}
}

func batchBaseOffset(t *testing.T, records []byte) int64 {
	t.Helper()
	if len(records) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(records))
}

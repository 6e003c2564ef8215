package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/vfs"
)

// idempotentBatch builds a batch of n records from producer pid at epoch and
// base sequence seq. pid -1 builds a batch without a producer.
func idempotentBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	if pid < 0 {
		epoch, seq = -1, -1
	}
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("p%d-e%d-s%d", pid, epoch, seq+int32(i)))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func initProducerID(t testing.TB, c *rawConn, version int16) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(version)
	req.TransactionTimeoutMillis = 60000
	resp := c.do(req).(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId v%d: %v", version, err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// idemStep is one produce of an idempotent scenario. On success the batch
// is appended at the log end, unless dup: then nothing is appended and the
// original's offset is returned.
type idemStep struct {
	pid    int64
	epoch  int16
	seq    int32
	n      int
	want   *kerr.Error
	dup    bool
	offset int64 // for dup: the original's base offset
}

func TestIdempotentProduceRules(t *testing.T) {
	t.Parallel()
	const max = math.MaxInt32
	ok := func(pid int64, epoch int16, seq int32, n int) idemStep {
		return idemStep{pid: pid, epoch: epoch, seq: seq, n: n}
	}
	dup := func(pid int64, epoch int16, seq int32, n int, offset int64) idemStep {
		return idemStep{pid: pid, epoch: epoch, seq: seq, n: n, dup: true, offset: offset}
	}
	bad := func(pid int64, epoch int16, seq int32, n int, e *kerr.Error) idemStep {
		return idemStep{pid: pid, epoch: epoch, seq: seq, n: n, want: e}
	}
	ooo, fenced := kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerEpoch
	tests := []struct {
		name  string
		steps []idemStep
	}{
		{"in sequence", []idemStep{ok(1, 0, 0, 3), ok(1, 0, 3, 2), ok(1, 0, 5, 1)}},
		{"retry of the last batch is deduplicated", []idemStep{ok(1, 0, 0, 3), ok(1, 0, 3, 2), dup(1, 0, 3, 2, 3), dup(1, 0, 3, 2, 3), ok(1, 0, 5, 1)}},
		{"the last five batches are remembered, not the sixth", []idemStep{
			ok(1, 0, 0, 1), ok(1, 0, 1, 1), ok(1, 0, 2, 1), ok(1, 0, 3, 1), ok(1, 0, 4, 1), ok(1, 0, 5, 1),
			dup(1, 0, 1, 1, 1), dup(1, 0, 5, 1, 5), bad(1, 0, 0, 1, ooo)}},
		{"a different range over the same sequences is no duplicate", []idemStep{ok(1, 0, 0, 3), bad(1, 0, 0, 2, ooo), bad(1, 0, 1, 2, ooo), bad(1, 0, 0, 4, ooo)}},
		{"a gap is out of order and changes nothing", []idemStep{ok(1, 0, 0, 1), bad(1, 0, 2, 1, ooo), ok(1, 0, 1, 1), ok(1, 0, 2, 1)}},
		{"an older epoch is INVALID_PRODUCER_EPOCH", []idemStep{ok(1, 3, 0, 1), bad(1, 2, 1, 1, fenced), bad(1, 2, 0, 1, fenced), ok(1, 3, 1, 1)}},
		{"an epoch bump starts at sequence 0", []idemStep{ok(1, 0, 0, 2), bad(1, 1, 2, 1, ooo), ok(1, 1, 0, 1),
			bad(1, 0, 2, 1, fenced), bad(1, 0, 0, 2, fenced), dup(1, 1, 0, 1, 2)}},
		{"an epoch bump may skip epochs", []idemStep{ok(1, 0, 0, 1), ok(1, 5, 0, 1), ok(1, 5, 1, 1)}},
		{"an unknown producer starts at any sequence (KIP-360)", []idemStep{ok(7, 3, 42, 2), ok(7, 3, 44, 1), dup(7, 3, 42, 2, 0)}},
		{"the sequence wraps after 2^31-1", []idemStep{ok(1, 0, max-1, 2), ok(1, 0, 0, 3), bad(1, 0, max, 1, ooo), dup(1, 0, max-1, 2, 0)}},
		{"a batch may span the wrap", []idemStep{ok(2, 0, max-1, 3), ok(2, 0, 1, 1), dup(2, 0, max-1, 3, 0), bad(2, 0, 0, 1, ooo)}},
		{"producers are independent", []idemStep{ok(1, 0, 0, 1), ok(2, 0, 0, 1), ok(1, 0, 1, 1), ok(2, 0, 1, 1), dup(1, 0, 0, 1, 0), dup(2, 0, 0, 1, 1)}},
		{"batches without a producer are never deduplicated", []idemStep{ok(-1, 0, 0, 2), ok(-1, 0, 0, 2), ok(1, 0, 0, 1), ok(-1, 0, 0, 1), dup(1, 0, 0, 1, 4)}},
		{"a producer id needs a sequence", []idemStep{bad(1, 0, -1, 1, kerr.InvalidRecord)}},
	}
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	now := time.Now().UnixMilli()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topic := fmt.Sprintf("idem-%d", i)
			createTopic(t, c, topic, 1, nil)
			p := b.lookupTopic(topic).partitions[0]
			for j, s := range tt.steps {
				end := p.Log().EndOffset()
				got := produceRaw(c, 9, -1, topic, 0, idempotentBatch(t, s.pid, s.epoch, s.seq, s.n, now))
				wantOffset, wantEnd := end, end+int64(s.n)
				switch {
				case s.want != nil:
					wantOffset, wantEnd = -1, end
				case s.dup:
					wantOffset, wantEnd = s.offset, end
				}
				if err := kerr.ErrorForCode(got.ErrorCode); err != s.want && !(s.want == nil && err == nil) {
					msg := ""
					if got.ErrorMessage != nil {
						msg = *got.ErrorMessage
					}
					t.Fatalf("step %d %+v: error %v, want %v (%s)", j, s, err, s.want, msg)
				}
				if got.BaseOffset != wantOffset || p.Log().EndOffset() != wantEnd {
					t.Fatalf("step %d %+v: offset %d, log end %d; want %d, %d", j, s, got.BaseOffset, p.Log().EndOffset(), wantOffset, wantEnd)
				}
			}
		})
	}
}

func TestIdempotentDuplicateReportsTheOriginalTimestamp(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "create", 1, nil)
	createTopic(t, c, "append", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	ts := time.Now().Add(-time.Minute).UnixMilli()

	// CreateTime: -1 on the append, the batch's max timestamp on a duplicate,
	// as Kafka sets LogAppendTime from the retained batch metadata.
	one := idempotentBatch(t, 1, 0, 0, 3, ts)
	if got := produceRaw(c, 9, -1, "create", 0, one); got.ErrorCode != 0 || got.LogAppendTime != -1 {
		t.Fatalf("append: %+v", got)
	}
	if got := produceRaw(c, 9, -1, "create", 0, idempotentBatch(t, 1, 0, 0, 3, ts)); got.ErrorCode != 0 || got.BaseOffset != 0 || got.LogAppendTime != ts {
		t.Fatalf("duplicate: offset %d, log append time %d; want 0, %d", got.BaseOffset, got.LogAppendTime, ts)
	}

	// LogAppendTime: the duplicate reports the time the original was stamped with.
	first := produceRaw(c, 9, -1, "append", 0, idempotentBatch(t, 1, 0, 0, 3, ts))
	if first.ErrorCode != 0 || first.LogAppendTime < ts {
		t.Fatalf("append: %+v", first)
	}
	waitFor(t, "the clock to move", func() bool { return time.Now().UnixMilli() > first.LogAppendTime })
	again := produceRaw(c, 9, -1, "append", 0, idempotentBatch(t, 1, 0, 0, 3, ts))
	if again.ErrorCode != 0 || again.BaseOffset != 0 || again.LogAppendTime != first.LogAppendTime {
		t.Fatalf("duplicate: offset %d, log append time %d; want 0, %d", again.BaseOffset, again.LogAppendTime, first.LogAppendTime)
	}
}

func TestIdempotentStateIsPerPartition(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "two", 2, nil)
	now := time.Now().UnixMilli()
	for part := int32(0); part < 2; part++ {
		for seq := int32(0); seq < 3; seq++ {
			if got := produceRaw(c, 9, -1, "two", part, idempotentBatch(t, 1, 0, seq, 1, now)); got.ErrorCode != 0 || got.BaseOffset != int64(seq) {
				t.Fatalf("partition %d seq %d: %v at %d", part, seq, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
			}
		}
	}
}

func TestInitProducerID(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	tests := []struct {
		name      string
		version   int16
		txnID     *string
		timeoutMs int32
		pid       int64
		epoch     int16
		want      *kerr.Error
	}{
		{"v0", 0, nil, 60000, -1, -1, nil},
		{"v1", 1, nil, 60000, -1, -1, nil},
		{"v2", 2, nil, 60000, -1, -1, nil},
		{"v3", 3, nil, 60000, -1, -1, nil},
		{"v4", 4, nil, 60000, -1, -1, nil},
		{"v5", 5, nil, 60000, -1, -1, nil},
		{"the timeout is not checked without a transactional id", 5, nil, -5, -1, -1, nil},
		{"an existing id and epoch get a new id", 4, nil, 60000, 0, 7, nil},
		{"an exhausted epoch gets a new id", 4, nil, 60000, 0, math.MaxInt16, nil},
		{"an id without an epoch", 4, nil, 60000, 3, -1, kerr.InvalidRequest},
		{"an epoch without an id", 3, nil, 60000, -1, 2, kerr.InvalidRequest},
		{"empty transactional id", 4, kmsg.StringPtr(""), 60000, -1, -1, kerr.InvalidRequest},
		{"zero transaction timeout", 4, kmsg.StringPtr("txn"), 0, -1, -1, kerr.InvalidTransactionTimeout},
		{"transaction timeout above transaction.max.timeout.ms", 4, kmsg.StringPtr("txn"), 900_001, -1, -1, kerr.InvalidTransactionTimeout},
	}
	seen := map[int64]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.SetVersion(tt.version)
			req.TransactionalID, req.TransactionTimeoutMillis = tt.txnID, tt.timeoutMs
			req.ProducerID, req.ProducerEpoch = tt.pid, tt.epoch
			got := c.do(req).(*kmsg.InitProducerIDResponse)
			if err := kerr.ErrorForCode(got.ErrorCode); err != tt.want && !(tt.want == nil && err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				if got.ProducerID != -1 || got.ProducerEpoch != -1 {
					t.Fatalf("error with producer id %d epoch %d", got.ProducerID, got.ProducerEpoch)
				}
				return
			}
			if got.ProducerID < 0 || got.ProducerEpoch != 0 || seen[got.ProducerID] || got.ProducerID == tt.pid {
				t.Fatalf("producer id %d epoch %d; want a fresh id with epoch 0", got.ProducerID, got.ProducerEpoch)
			}
			seen[got.ProducerID] = true
		})
	}
}

func TestProducerIDsAreReservedDurably(t *testing.T) {
	t.Parallel()
	fsys := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	c := catalog{fs: fsys, dir: "/d"}
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.load(); err != nil {
		t.Fatal(err)
	}
	for want := int64(0); want < producerIDBlockSize+5; want++ {
		if got, err := c.allocateProducerID(); err != nil || got != want {
			t.Fatalf("got %d, %v; want %d", got, err, want)
		}
	}
	// The next block cannot be reserved: no id from it is handed out.
	c.nextProducerID = c.producerIDBlockEnd
	fsys.Arm(vfs.FailAfter(0, vfs.ErrInjected, vfs.OpWrite))
	if got, err := c.allocateProducerID(); err == nil {
		t.Fatalf("got %d while the catalogue cannot be written", got)
	}
	fsys.Arm(nil)
	// A reload starts after the last reserved block.
	reloaded := catalog{fs: fsys, dir: "/d"}
	if err := reloaded.load(); err != nil {
		t.Fatal(err)
	}
	if got, err := reloaded.allocateProducerID(); err != nil || got != 2*producerIDBlockSize {
		t.Fatalf("after a reload got %d, %v; want %d", got, err, 2*producerIDBlockSize)
	}
}

// TestIdempotentStateSurvivesRestart produces with a producer id, restarts
// the broker on the same data directory, cleanly and after a crash, and
// resends the last batch: it must be deduplicated with its original offset.
func TestIdempotentStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "crash"}[crash], func(t *testing.T) {
			dir := t.TempDir()
			first := startBroker(t, Config{DataDir: dir})
			c := dialRaw(t, first.Addr())
			createTopic(t, c, "t", 1, nil)
			pid, epoch := initProducerID(t, c, 4)
			// Producers whose last batch is older than producer.id.expiration.ms
			// are not rebuilt, whether the rebuild skips their batches (pid+1,
			// before the first recent batch) or reads and drops them (pid+2):
			// after the restart they may start at any sequence.
			old := time.Now().Add(-25 * time.Hour).UnixMilli()
			produceRaw(c, 9, -1, "t", 0, idempotentBatch(t, pid+1, 0, 0, 1, old))
			now := time.Now().UnixMilli()
			for seq := int32(0); seq < 30; seq += 3 {
				if got := produceRaw(c, 9, -1, "t", 0, idempotentBatch(t, pid, epoch, seq, 3, now)); got.ErrorCode != 0 || got.BaseOffset != int64(seq)+1 {
					t.Fatalf("seq %d: %v at %d", seq, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
				}
			}
			produceRaw(c, 9, -1, "t", 0, idempotentBatch(t, pid+2, 0, 0, 1, old))

			dataDir := dir
			if crash {
				// A process crash: the files as they are while the broker runs,
				// without the clean-shutdown marker.
				dataDir = t.TempDir()
				copyDir(t, dir, dataDir)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			second := startBroker(t, Config{DataDir: dataDir})
			c = dialRaw(t, second.Addr())
			if newPID, _ := initProducerID(t, c, 4); newPID <= pid {
				t.Fatalf("producer id %d handed out again after the restart", newPID)
			}
			for _, s := range []idemStep{
				{pid: pid, epoch: epoch, seq: 27, n: 3, dup: true, offset: 28},
				{pid: pid, epoch: epoch, seq: 15, n: 3, dup: true, offset: 16},
				{pid: pid, epoch: epoch, seq: 12, n: 3, want: kerr.OutOfOrderSequenceNumber},
				{pid: pid, epoch: epoch, seq: 31, n: 1, want: kerr.OutOfOrderSequenceNumber},
				{pid: pid, epoch: epoch - 1, seq: 30, n: 1, want: kerr.InvalidProducerEpoch},
				{pid: pid, epoch: epoch, seq: 30, n: 1, offset: 32},
				{pid: pid + 1, epoch: 0, seq: 9, n: 1, offset: 33},
				{pid: pid + 2, epoch: 0, seq: 9, n: 1, offset: 34},
			} {
				got := produceRaw(c, 9, -1, "t", 0, idempotentBatch(t, s.pid, s.epoch, s.seq, s.n, now))
				if err := kerr.ErrorForCode(got.ErrorCode); err != s.want && !(s.want == nil && err == nil) {
					t.Fatalf("%+v: error %v, want %v", s, err, s.want)
				}
				if s.want == nil && got.BaseOffset != s.offset {
					t.Fatalf("%+v: offset %d, want %d", s, got.BaseOffset, s.offset)
				}
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIdempotentConcurrentConnectionsSamePID sends every batch of one
// producer over two connections at once: each batch must be appended once,
// and both connections must be told the same offset for it.
func TestIdempotentConcurrentConnectionsSamePID(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	setup := dialRaw(t, b.Addr())
	createTopic(t, setup, "race", 1, nil)
	pid, epoch := initProducerID(t, setup, 5)
	conns := [2]*rawConn{dialRaw(t, b.Addr()), dialRaw(t, b.Addr())}
	now := time.Now().UnixMilli()
	const rounds, perBatch = 200, 2
	for round := range rounds {
		seq := int32(round * perBatch)
		var got [2]kmsg.ProduceResponseTopicPartition
		var wg sync.WaitGroup
		for i, c := range conns {
			one := idempotentBatch(t, pid, epoch, seq, perBatch, now)
			wg.Go(func() { got[i] = produceRaw(c, 9, -1, "race", 0, one) })
		}
		wg.Wait()
		want := int64(round * perBatch)
		for i := range got {
			if got[i].ErrorCode != 0 || got[i].BaseOffset != want {
				t.Fatalf("round %d, connection %d: %v at offset %d, want offset %d", round, i, kerr.ErrorForCode(got[i].ErrorCode), got[i].BaseOffset, want)
			}
		}
	}
	p := b.lookupTopic("race").partitions[0]
	if end := p.Log().EndOffset(); end != rounds*perBatch {
		t.Fatalf("log end %d, want %d", end, rounds*perBatch)
	}
	data, err := p.Log().Read(0, math.MaxInt32, p.Log().EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	next := int32(0)
	err = batch.Split(data, func(one []byte) error {
		h, _ := batch.ParseHeader(one)
		if h.BaseSequence != next || h.BaseOffset != int64(next) {
			return fmt.Errorf("batch at offset %d has sequence %d, want %d", h.BaseOffset, h.BaseSequence, next)
		}
		next += perBatch
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFranzGoIdempotentExactlyOnceThroughLostResponses produces 10,000
// records with franz-go's default idempotent producer through a proxy that
// loses Produce responses and cuts the connection, so the client resends
// batches the broker already appended, and reads every record back exactly
// once, in order.
func TestFranzGoIdempotentExactlyOnceThroughLostResponses(t *testing.T) {
	t.Parallel()
	proxy := newLossyProxy(t, 4)
	b := startBroker(t, Config{Advertise: proxy.addr()})
	proxy.target = b.Addr()
	go proxy.serve()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "exactly-once"
	cl, err := kgo.NewClient(kgo.SeedBrokers(proxy.addr()), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	want := testRecords(recordsPerTest)
	if err := cl.ProduceSync(ctx, franzRecords(want)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if proxy.lost.Load() == 0 {
		t.Fatal("the proxy lost no Produce response: nothing was retried")
	}
	if end := b.lookupTopic(topic).partitions[0].Log().EndOffset(); end != recordsPerTest {
		t.Fatalf("log end %d after %d lost responses, want %d", end, proxy.lost.Load(), recordsPerTest)
	}
	franzConsume(t, ctx, b.Addr(), topic, want)
	t.Logf("%d Produce responses lost and retried", proxy.lost.Load())
}

// lossyProxy forwards Kafka connections to target. Every loseEvery-th
// Produce response it sees is dropped and both sides of its connection are
// closed: the broker has appended the batch, the client never hears so.
type lossyProxy struct {
	t         *testing.T
	ln        net.Listener
	target    string
	loseEvery int64
	produces  atomic.Int64
	lost      atomic.Int64
}

func newLossyProxy(t *testing.T, loseEvery int64) *lossyProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{t: t, ln: ln, loseEvery: loseEvery}
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *lossyProxy) addr() string { return p.ln.Addr().String() }

func (p *lossyProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		go p.relay(client, server)
	}
}

func (p *lossyProxy) relay(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	var keys sync.Map // correlation id -> api key
	go func() {
		defer server.Close()
		for {
			frame, err := protocol.ReadFrame(client, 1<<30, nil)
			if err != nil || len(frame) < 8 {
				return
			}
			keys.Store(binary.BigEndian.Uint32(frame[4:]), binary.BigEndian.Uint16(frame))
			if _, err := server.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := protocol.ReadFrame(server, 1<<30, nil)
		if err != nil || len(frame) < 4 {
			return
		}
		key, _ := keys.LoadAndDelete(binary.BigEndian.Uint32(frame))
		if key == uint16(0) && p.produces.Add(1)%p.loseEvery == 0 {
			p.lost.Add(1)
			return
		}
		if _, err := client.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
			return
		}
	}
}

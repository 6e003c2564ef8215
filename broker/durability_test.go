package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// produceConcurrently produces n records per producer from producers
// franz-go clients at once, acks=all, and returns the values acknowledged.
func produceConcurrently(t *testing.T, addr, topic string, producers, n int) map[string]bool {
	t.Helper()
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		wg    sync.WaitGroup
	)
	for w := range producers {
		wg.Go(func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(0))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := range n {
				v := fmt.Sprintf("p%d-%d", w, i)
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked
}

// consumeAll reads every record of topic's partition 0 through the raw
// Fetch API and returns the values in offset order, failing on any batch
// whose CRC does not match or whose offsets do not follow on.
func consumeAll(t *testing.T, addr, topic string) []string {
	t.Helper()
	c := dialRaw(t, addr)
	var vals []string
	for off := int64(0); ; {
		resp := c.do(fetchRequest(12, topic, off, 0, 1)).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch %s at %d: %v", topic, off, kerr.ErrorForCode(p.ErrorCode))
		}
		if len(p.RecordBatches) == 0 {
			if off != p.HighWatermark {
				t.Fatalf("fetch at %d returned nothing below the high watermark %d", off, p.HighWatermark)
			}
			return vals
		}
		var scratch batch.Scratch
		err := batch.Split(p.RecordBatches, func(b []byte) error {
			h, err := batch.Check(b)
			if err != nil {
				return err
			}
			if h.BaseOffset != off {
				return fmt.Errorf("batch at offset %d, want %d", h.BaseOffset, off)
			}
			off = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			return batch.ForEachRecord(b, &scratch, func(_ *batch.Header, rec *batch.Record) bool {
				vals = append(vals, string(rec.Value))
				return true
			})
		})
		if err != nil && !errors.Is(err, batch.ErrTruncated) {
			t.Fatalf("fetch %s: %v", topic, err)
		}
	}
}

// checkAcknowledgedPresent fails unless every acknowledged value is in
// vals, once, and each producer's values are in the order it sent them.
func checkAcknowledgedPresent(t *testing.T, vals []string, acked map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	lastSeq := map[string]int{}
	for _, v := range vals {
		if seen[v] {
			t.Fatalf("record %q stored twice", v)
		}
		seen[v] = true
		var w, i int
		if _, err := fmt.Sscanf(v, "p%d-%d", &w, &i); err != nil {
			t.Fatalf("unexpected record %q", v)
		}
		key := fmt.Sprint(w)
		if prev, ok := lastSeq[key]; ok && i <= prev {
			t.Fatalf("producer %d: record %d after %d", w, i, prev)
		}
		lastSeq[key] = i
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %q lost (%d of %d acknowledged records recovered)", v, len(vals), len(acked))
		}
	}
}

// TestFlushMessagesOneSurvivesPowerLoss produces from eight producers to a
// topic with flush.messages=1, takes the file system as a power loss would
// leave it (MemFS.CrashClone: unsynced bytes gone), starts a broker on that,
// and finds every acknowledged record. The default policy, left to the OS,
// loses them, which shows the crash is real.
func TestFlushMessagesOneSurvivesPowerLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flushMessages string
		wantAll       bool
	}{{"1", true}, {"9223372036854775807", false}} {
		t.Run("flush.messages="+tc.flushMessages, func(t *testing.T) {
			mem := vfs.NewMemFS()
			b := startBroker(t, Config{FS: mem, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
			createTopic(t, dialRaw(t, b.Addr()), "d", 1, map[string]string{"flush.messages": tc.flushMessages})
			acked := produceConcurrently(t, b.Addr(), "d", 8, 25)
			lost := mem.CrashClone()

			b2 := startBroker(t, Config{FS: lost, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
			vals := consumeAll(t, b2.Addr(), "d")
			if tc.wantAll {
				checkAcknowledgedPresent(t, vals, acked)
			} else if len(vals) == len(acked) {
				t.Fatalf("with flushing left to the OS all %d records survived the power loss; the test crashes nothing", len(vals))
			}
		})
	}
}

func TestFlushMsSyncsWithoutDelayingTheProducer(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMemFS()
	b := startBroker(t, Config{FS: mem, DataDir: "/data", TopicDefaults: map[string]string{"flush.ms": "10"}})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "ms", 1, nil)
	if got := produceRaw(c, 9, -1, "ms", 0, makeBatch(t, batch.None, 3, time.Now().UnixMilli())); got.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(got.ErrorCode))
	}
	p := b.partition(b.lookupTopicRef(false, "ms", [16]byte{}), 0)
	waitFor(t, "the flush.ms background fsync", func() bool { return p.Log().DurableOffset() == 3 })
}

func TestProduceAcksZeroWithFlushMessagesOneSyncsInBackground(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{FS: vfs.NewMemFS(), DataDir: "/data", TopicDefaults: map[string]string{"flush.messages": "1"}})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "z", 1, nil)
	c.send(produceRequest(9, 0, "z", 0, makeBatch(t, batch.None, 2, time.Now().UnixMilli())))
	p := b.partition(b.lookupTopicRef(false, "z", [16]byte{}), 0)
	waitFor(t, "the acks=0 append to be fsynced", func() bool { return p.Log().DurableOffset() == 2 })
}

// faultsUnder returns an injector failing the given operations on paths
// inside dir with err.
func faultsUnder(dir string, err error, ops ...vfs.Op) vfs.Injector {
	return func(op vfs.Op, name string, _ int) vfs.Fault {
		if strings.HasPrefix(name, dir+"/") || name == dir {
			for _, o := range ops {
				if o == op {
					return vfs.Fault{Err: err}
				}
			}
		}
		return vfs.Fault{}
	}
}

func TestFsyncFailureAnswersKafkaStorageErrorAndKeepsReads(t *testing.T) {
	t.Parallel()
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	b, err := Start(context.Background(), Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler),
		TopicDefaults: map[string]string{"flush.messages": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); !errors.Is(err, storage.ErrFailed) {
			t.Errorf("Close = %v, want the failed log's ErrFailed", err)
		}
	})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "bad", 1, nil)
	createTopic(t, c, "good", 1, nil)
	now := time.Now().UnixMilli()
	for _, topic := range []string{"bad", "good"} {
		if got := produceRaw(c, 9, -1, topic, 0, makeBatch(t, batch.None, 2, now)); got.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(got.ErrorCode))
		}
	}
	ffs.Arm(faultsUnder("/data/bad-0", &fs.PathError{Op: "fsync", Path: "/data/bad-0", Err: syscall.EIO}, vfs.OpSync))
	got := produceRaw(c, 9, -1, "bad", 0, makeBatch(t, batch.None, 2, now))
	if got.ErrorCode != kerr.KafkaStorageError.Code || got.BaseOffset != -1 {
		t.Fatalf("produce with a failing fsync: %v, base offset %d; want KAFKA_STORAGE_ERROR, -1", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	ffs.Arm(nil)
	// The failed log refuses writes until a restart recovers it ...
	if got := produceRaw(c, 9, -1, "bad", 0, makeBatch(t, batch.None, 2, now)); got.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce after the failed fsync: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(got.ErrorCode))
	}
	// ... and still serves what it acknowledged (under flush.messages=1 the
	// high watermark stays below the batch whose fsync failed); other
	// partitions are untouched.
	if vals := consumeAll(t, b.Addr(), "bad"); len(vals) != 2 {
		t.Fatalf("read %d records of the failed partition, want the 2 acknowledged", len(vals))
	}
	if got := produceRaw(c, 9, -1, "good", 0, makeBatch(t, batch.None, 2, now)); got.ErrorCode != 0 {
		t.Fatalf("produce to another partition: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if vals := consumeAll(t, b.Addr(), "good"); len(vals) != 4 {
		t.Fatalf("read %d records of the healthy partition, want 4", len(vals))
	}
}

// TestDiskFullRefusesWritesAndKeepsServingReads fills the disk under one
// partition (ENOSPC on every write there): its producers get
// KAFKA_STORAGE_ERROR, nothing partial is stored, its existing records and
// every other partition stay readable, and writes work again once space is
// freed, since the log cut the failed write off cleanly.
func TestDiskFullRefusesWritesAndKeepsServingReads(t *testing.T) {
	t.Parallel()
	ffs := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	b := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "full", 1, nil)
	createTopic(t, c, "other", 1, nil)
	now := time.Now().UnixMilli()
	for _, topic := range []string{"full", "other"} {
		if got := produceRaw(c, 9, -1, topic, 0, makeBatch(t, batch.None, 3, now)); got.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(got.ErrorCode))
		}
	}
	enospc := &fs.PathError{Op: "write", Path: "/data/full-0", Err: syscall.ENOSPC}
	ffs.Arm(faultsUnder("/data/full-0", enospc, vfs.OpWrite))
	for range 3 {
		got := produceRaw(c, 9, -1, "full", 0, makeBatch(t, batch.None, 3, now))
		if got.ErrorCode != kerr.KafkaStorageError.Code || got.BaseOffset != -1 {
			t.Fatalf("produce to a full disk: %v, base offset %d; want KAFKA_STORAGE_ERROR, -1", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	if vals := consumeAll(t, b.Addr(), "full"); len(vals) != 3 {
		t.Fatalf("read %d records of the full partition, want its 3", len(vals))
	}
	if got := produceRaw(c, 9, -1, "other", 0, makeBatch(t, batch.None, 3, now)); got.ErrorCode != 0 {
		t.Fatalf("produce to another partition: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if vals := consumeAll(t, b.Addr(), "other"); len(vals) != 6 {
		t.Fatalf("read %d records of the other partition, want 6", len(vals))
	}
	ffs.Arm(nil) // space freed
	if got := produceRaw(c, 9, -1, "full", 0, makeBatch(t, batch.None, 3, now)); got.ErrorCode != 0 || got.BaseOffset != 3 {
		t.Fatalf("produce after space was freed: %v at %d, want offset 3", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
}

// TestStrayEntriesInTheDataDirAreIgnored puts files and directories that
// are no partition of a known topic into a real data dir, and unknown files
// into a partition dir, then restarts: the broker logs the top-level ones,
// loads nothing from any of them, and serves its topic as before.
func TestStrayEntriesInTheDataDirAreIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := Start(context.Background(), Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "s", 1, nil)
	if got := produceRaw(c, 9, -1, "s", 0, makeBatch(t, batch.None, 4, time.Now().UnixMilli())); got.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(got.ErrorCode))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mustWrite := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("not Gregor's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(dir, "notes.txt"))
	mustWrite(filepath.Join(dir, "lost+found", "x"))
	mustWrite(filepath.Join(dir, "ghost-0", "00000000000000000000.log")) // a partition of no topic
	mustWrite(filepath.Join(dir, "s-0", "README"))
	mustWrite(filepath.Join(dir, "s-0", "sub", "00000000000000000000.log"))

	var logs bytes.Buffer
	b2 := startBroker(t, Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, name := range []string{"notes.txt", "lost+found", "ghost-0"} {
		if !strings.Contains(logs.String(), "name="+name) {
			t.Errorf("no warning names the stray %s; logs:\n%s", name, logs.String())
		}
	}
	if strings.Contains(logs.String(), "name=s-0") {
		t.Errorf("the partition dir s-0 was reported as stray")
	}
	if vals := consumeAll(t, b2.Addr(), "s"); len(vals) != 4 {
		t.Fatalf("read %d records after adding stray files, want 4", len(vals))
	}
	c2 := dialRaw(t, b2.Addr())
	if got := produceRaw(c2, 9, -1, "s", 0, makeBatch(t, batch.None, 1, time.Now().UnixMilli())); got.ErrorCode != 0 || got.BaseOffset != 4 {
		t.Fatalf("produce after restart: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	for _, p := range []string{"notes.txt", "lost+found/x", "s-0/README", "s-0/sub/00000000000000000000.log"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("stray %s was touched: %v", p, err)
		}
	}
}

// TestUnreadablePartitionDirRefusesToStart: a partition directory that
// cannot be listed (permission denied; injected, since tests may run as
// root) stops the broker from starting with an error naming the partition,
// as Kafka takes its only log dir offline and shuts down. Nothing panics,
// and the broker starts once the directory is readable again.
func TestUnreadablePartitionDirRefusesToStart(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMemFS()
	b, err := Start(context.Background(), Config{FS: mem, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, dialRaw(t, b.Addr()), "locked", 2, nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	denied := &fs.PathError{Op: "open", Path: "/data/locked-1", Err: syscall.EACCES}
	ffs := vfs.NewFaultFS(mem, faultsUnder("/data/locked-1", denied, vfs.OpReadDir, vfs.OpOpen))
	_, err = Start(context.Background(), Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "locked-1") {
		t.Fatalf("Start with an unreadable partition dir = %v, want a permission error naming locked-1", err)
	}
	ffs.Arm(nil)
	b2 := startBroker(t, Config{FS: ffs, DataDir: "/data", Logger: slog.New(slog.DiscardHandler)})
	if vals := consumeAll(t, b2.Addr(), "locked"); len(vals) != 0 {
		t.Fatalf("read %d records, want 0", len(vals))
	}
}

// holdingFS wraps an FS and, while held, blocks every fsync of a .log file
// until released, signalling each one that waits.
type holdingFS struct {
	vfs.FS
	mu      sync.Mutex
	release chan struct{} // nil: not holding
	waiting chan struct{}
}

func (h *holdingFS) hold() {
	h.mu.Lock()
	h.release = make(chan struct{})
	h.mu.Unlock()
}

func (h *holdingFS) let() {
	h.mu.Lock()
	close(h.release)
	h.release = nil
	h.mu.Unlock()
}

func (h *holdingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &holdingFile{File: f, h: h}, nil
}

type holdingFile struct {
	vfs.File
	h *holdingFS
}

func (f *holdingFile) Sync() error {
	f.h.mu.Lock()
	release := f.h.release
	f.h.mu.Unlock()
	if release != nil {
		f.h.waiting <- struct{}{}
		<-release
	}
	return f.File.Sync()
}

// TestFlushMessagesOneShowsConsumersOnlyFsyncedRecords holds a produce's
// fsync on the disk and fetches meanwhile: under flush.messages=1 the high
// watermark waits for the fsync, as Kafka's does, so no consumer reads a
// record a power loss could still take; once the fsync is done the
// producer is answered and a waiting fetch gets the records.
func TestFlushMessagesOneShowsConsumersOnlyFsyncedRecords(t *testing.T) {
	t.Parallel()
	h := &holdingFS{FS: vfs.NewMemFS(), waiting: make(chan struct{}, 4)}
	b := startBroker(t, Config{FS: h, DataDir: "/data", TopicDefaults: map[string]string{"flush.messages": "1"}})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "v", 1, nil)
	h.hold()
	req := produceRequest(9, -1, "v", 0, makeBatch(t, batch.None, 3, time.Now().UnixMilli()))
	req.TimeoutMillis = 30000
	corr := c.send(req)
	<-h.waiting // the append is written and its fsync is on hold

	fetcher := dialRaw(t, b.Addr())
	resp := fetcher.do(fetchRequest(12, "v", 0, 0, 1)).(*kmsg.FetchResponse)
	if fp := resp.Topics[0].Partitions[0]; fp.HighWatermark != 0 || len(fp.RecordBatches) != 0 {
		t.Fatalf("before the fsync: high watermark %d, %d bytes of records; want 0, none", fp.HighWatermark, len(fp.RecordBatches))
	}
	waiting := fetcher.send(fetchRequest(12, "v", 0, 30000, 1)) // parks until the fsync
	h.let()
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(9)
	c.readResponse(corr, pr)
	if sp := pr.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("produce: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.SetVersion(12)
	fetcher.readResponse(waiting, fr)
	if fp := fr.Topics[0].Partitions[0]; fp.HighWatermark != 3 || len(fp.RecordBatches) == 0 {
		t.Fatalf("after the fsync: high watermark %d, %d bytes of records; want 3 and the batch", fp.HighWatermark, len(fp.RecordBatches))
	}
}

// TestSwitchingToFlushMessagesOneKeepsRecordsVisible: records appended under
// the default policy are not yet fsynced when flush.messages becomes 1; the
// alteration fsyncs them, so the high watermark does not go back for long
// and comes to the log end without another produce.
func TestSwitchingToFlushMessagesOneKeepsRecordsVisible(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{FS: vfs.NewMemFS(), DataDir: "/data"})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "a", 1, nil)
	if got := produceRaw(c, 9, -1, "a", 0, makeBatch(t, batch.None, 3, time.Now().UnixMilli())); got.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(got.ErrorCode))
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "a"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "flush.messages", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	if code := c.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitFor(t, "the high watermark to reach the log end", func() bool {
		resp := c.do(fetchRequest(12, "a", 0, 0, 1)).(*kmsg.FetchResponse)
		return resp.Topics[0].Partitions[0].HighWatermark == 3
	})
}

// A second broker on a data dir in use is refused before it touches it,
// and starts once the first has closed; the lock file is left alone by
// the stray-entry check.
func TestDataDirInUseIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := Start(ctx, Config{DataDir: dir}); err == nil {
		b.Close()
		a.Close()
		t.Fatal("a second broker started on a data dir in use")
	} else if !strings.Contains(err.Error(), "in use by another broker") {
		a.Close()
		t.Fatalf("error %q does not say the data dir is in use", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	b.Close()
}

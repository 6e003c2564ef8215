package replication

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// testTopic is a Topic whose configs the test sets.
type testTopic struct {
	minISR    int
	throttled atomic.Bool
}

func (t *testTopic) MinInsyncReplicas() int            { return t.minISR }
func (t *testTopic) FollowerThrottled(_, _ int32) bool { return t.throttled.Load() }

// newTestPartition is a partition on an in-memory log.
func newTestPartition(t *testing.T) *partition.Partition {
	t.Helper()
	l, err := storage.Open(vfs.NewMemFS(), "/p", storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return partition.New("t", 0, l)
}

// leaderBatch is a one-record batch at offset as the leader stores it, at
// leader epoch 0.
func leaderBatch(t *testing.T, offset int64) []byte {
	t.Helper()
	rec := []batch.Record{{Key: []byte(strconv.FormatInt(offset, 10)), Value: []byte("v")}}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseOffset: offset, BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: 0}, rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeLeader is a fetcher's Conn that answers as the leader of one
// partition whose log is batches (one record each) and whose high
// watermark is its end.
type fakeLeader struct {
	batches [][]byte

	mu      sync.Mutex
	fetches []*kmsg.FetchRequest
	addrs   []string
	closed  bool
	fetched chan struct{} // signalled after each answered fetch
}

func (l *fakeLeader) Do(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	freq, ok := req.(*kmsg.FetchRequest)
	if !ok {
		return nil, errors.New("fakeLeader: not a Fetch")
	}
	l.mu.Lock()
	l.fetches = append(l.fetches, freq)
	l.addrs = append(l.addrs, addr)
	l.mu.Unlock()
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(freq.GetVersion())
	for _, rt := range freq.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = int64(len(l.batches)), int64(len(l.batches)), 0
			for off := rp.FetchOffset; off < int64(len(l.batches)); off++ {
				sp.RecordBatches = append(sp.RecordBatches, l.batches[off]...)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		// Nothing new: wait as a leader does, replica.fetch.wait.max.ms.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(freq.MaxWaitMillis) * time.Millisecond):
		}
	}
	select {
	case l.fetched <- struct{}{}:
	default:
	}
	return resp, nil
}

func (l *fakeLeader) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// testEnv is an Env over a fake leader and a fake controller.
type testEnv struct {
	leader *fakeLeader
	parts  []TopicPartition

	mu     sync.Mutex
	alters []controller.AlterPartitionRequest
	// alter answers the AlterPartitions in order; past its end, the last.
	alter []func(controller.AlterPartitionRequest) (controller.AlterPartitionResult, error)
}

func (e *testEnv) BrokerEpoch() int64 { return 7 }

func (e *testEnv) Endpoint(id int32) (string, int32, bool) {
	if id != 1 {
		return "", -1, false
	}
	return "leader", 9092, true
}

func (e *testEnv) NewConn() Conn { return e.leader }

func (e *testEnv) Partitions() []TopicPartition { return e.parts }

func (e *testEnv) AlterPartition(_ context.Context, req controller.AlterPartitionRequest, _ map[int32]int64) (controller.AlterPartitionResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.alters = append(e.alters, req)
	return e.alter[min(len(e.alters), len(e.alter))-1](req)
}

func testConfig(self int32) Config {
	return Config{NodeID: self, Settings: Settings{ReplicaLagTimeMaxMs: 30000, ReplicaFetchWaitMaxMs: 20, ReplicaFetchMinBytes: 1,
		ReplicaFetchMaxBytes: 1 << 20, ReplicaFetchResponseMaxBytes: 10 << 20, ReplicaFetchBackoffMs: 20,
		ReplicaHighWatermarkCheckpointIntervalMs: 5000}, ListOffsetsVersion: 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func newTestManager(t *testing.T, self int32, env Env) (*Manager, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var qs Quotas
	qs.Init(11, 1)
	m := New(ctx, testConfig(self), env, &qs)
	t.Cleanup(func() {
		cancel()
		m.Wait()
	})
	return m, cancel
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFetcherCopiesTheLeadersLog follows one partition from a fake
// leader: the fetcher sends Fetch v17 as this replica, at its broker
// epoch, from its log end at its leader epoch, appends what the leader
// sends with its offsets, takes the leader's high watermark and fetches
// on from the new end; stopping the Manager closes the connection.
func TestFetcherCopiesTheLeadersLog(t *testing.T) {
	topicID := [16]byte{1, 2, 3}
	leader := &fakeLeader{fetched: make(chan struct{}, 1)}
	for off := range int64(3) {
		leader.batches = append(leader.batches, leaderBatch(t, off))
	}
	env := &testEnv{leader: leader}
	m, cancel := newTestManager(t, 2, env)

	p := newTestPartition(t)
	st := &partition.State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	p.SetState(st)
	p.BecomeFollower(st)
	m.Follow(map[int32][]Target{1: {{Partition: p, Topic: &testTopic{}, TopicID: topicID, LeaderEpoch: 0}}})

	eventually(t, "the follower's log to reach the leader's end", func() bool {
		return p.Log().EndOffset() == 3 && p.HighWatermark() == 3
	})
	eventually(t, "a fetch from the new log end", func() bool {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		return len(leader.fetches) >= 2
	})
	cancel()
	m.Wait()

	leader.mu.Lock()
	defer leader.mu.Unlock()
	if !leader.closed {
		t.Error("the fetcher's connection was not closed when the Manager stopped")
	}
	first, second := leader.fetches[0], leader.fetches[1]
	if v := first.GetVersion(); v != 17 {
		t.Errorf("Fetch version %d, want 17", v)
	}
	if first.ReplicaID != 2 || first.ReplicaState.ID != 2 || first.ReplicaState.Epoch != 7 {
		t.Errorf("replica %d, state {%d, %d}; want 2, {2, 7}", first.ReplicaID, first.ReplicaState.ID, first.ReplicaState.Epoch)
	}
	if first.MaxWaitMillis != 20 || first.MinBytes != 1 || first.MaxBytes != 10<<20 {
		t.Errorf("wait %d, min %d, max %d", first.MaxWaitMillis, first.MinBytes, first.MaxBytes)
	}
	if leader.addrs[0] != "leader:9092" {
		t.Errorf("fetched from %q, want leader:9092", leader.addrs[0])
	}
	if len(first.Topics) != 1 || first.Topics[0].TopicID != topicID || len(first.Topics[0].Partitions) != 1 {
		t.Fatalf("topics %+v, want the one partition by topic id", first.Topics)
	}
	rp := first.Topics[0].Partitions[0]
	if rp.FetchOffset != 0 || rp.CurrentLeaderEpoch != 0 || rp.PartitionMaxBytes != 1<<20 {
		t.Errorf("first fetch: offset %d, epoch %d, max %d", rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes)
	}
	rp = second.Topics[0].Partitions[0]
	if rp.FetchOffset != 3 || rp.LastFetchedEpoch != 0 {
		t.Errorf("second fetch: offset %d, last fetched epoch %d; want 3, 0", rp.FetchOffset, rp.LastFetchedEpoch)
	}
}

// TestFetcherLeavesAThrottledPartitionOut checks the follower throttle:
// with the follower's rate over its bound, a partition the topic's list
// names is not fetched, and is once the list no longer names it.
func TestFetcherLeavesAThrottledPartitionOut(t *testing.T) {
	topicID := [16]byte{4}
	leader := &fakeLeader{fetched: make(chan struct{}, 1)}
	leader.batches = append(leader.batches, leaderBatch(t, 0))
	env := &testEnv{leader: leader}
	m, _ := newTestManager(t, 2, env)
	m.quotas.Follower.SetBound(0)
	m.quotas.Follower.Record(1 << 20) // over a bound of 0 bytes per second

	p := newTestPartition(t)
	st := &partition.State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1}}
	p.SetState(st)
	p.BecomeFollower(st)
	topic := &testTopic{}
	topic.throttled.Store(true)
	m.Follow(map[int32][]Target{1: {{Partition: p, Topic: topic, TopicID: topicID, LeaderEpoch: 0}}})

	time.Sleep(200 * time.Millisecond) // ten backoffs
	leader.mu.Lock()
	n := len(leader.fetches)
	leader.mu.Unlock()
	if n != 0 || p.Log().EndOffset() != 0 {
		t.Fatalf("a throttled partition was fetched %d times (log end %d)", n, p.Log().EndOffset())
	}
	topic.throttled.Store(false)
	eventually(t, "the unthrottled partition to be fetched", func() bool { return p.Log().EndOffset() == 1 })
}

// TestAlterISRRetriesUntilTheControllerAnswers expands a leader's ISR:
// the AlterPartition names this broker at its broker epoch and the
// partition's pending ISR, is retried after an unreachable controller,
// and the answer commits the new ISR.
func TestAlterISRRetriesUntilTheControllerAnswers(t *testing.T) {
	topicID := [16]byte{9}
	env := &testEnv{alter: []func(controller.AlterPartitionRequest) (controller.AlterPartitionResult, error){
		func(controller.AlterPartitionRequest) (controller.AlterPartitionResult, error) {
			return controller.AlterPartitionResult{}, errors.New("no controller")
		},
		func(req controller.AlterPartitionRequest) (controller.AlterPartitionResult, error) {
			it := req.Partitions[0]
			return controller.AlterPartitionResult{TopicID: it.TopicID, Partition: it.Partition, Leader: 1,
				LeaderEpoch: it.LeaderEpoch, PartitionEpoch: it.PartitionEpoch + 1, ISR: it.NewISR}, nil
		},
	}}
	m, _ := newTestManager(t, 1, env)

	p := newTestPartition(t)
	st := &partition.State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}, Local: true}
	p.SetState(st)
	if err := p.BecomeLeader(st, time.Now().UnixMilli(), 30000, func(int32) bool { return true }); err != nil {
		t.Fatal(err)
	}
	ok, _, expand, _ := p.FollowerFetch(2, 7, 0, 0, 3, true, time.Now().UnixMilli())
	if !ok || !slices.Equal(expand, []int32{1, 2}) {
		t.Fatalf("follower fetch: ok %v, expand %v; want an ISR expansion to [1 2]", ok, expand)
	}
	m.AlterISR(p, topicID)
	eventually(t, "the ISR to be committed", func() bool { return slices.Equal(p.ISR(), []int32{1, 2}) })

	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.alters) != 2 {
		t.Fatalf("%d AlterPartitions sent, want 2 (one retry)", len(env.alters))
	}
	req := env.alters[1]
	want := controller.AlterPartitionItem{TopicID: metadata.UUID(topicID), Partition: 0, LeaderEpoch: 3, PartitionEpoch: 5, NewISR: []int32{1, 2}}
	if req.BrokerID != 1 || req.BrokerEpoch != 7 || len(req.Partitions) != 1 {
		t.Fatalf("request %+v", req)
	}
	if got := req.Partitions[0]; got.TopicID != want.TopicID || got.Partition != want.Partition || got.LeaderEpoch != want.LeaderEpoch ||
		got.PartitionEpoch != want.PartitionEpoch || !slices.Equal(got.NewISR, want.NewISR) {
		t.Errorf("partition %+v, want %+v", got, want)
	}
}

// TestAwaitAcks waits for a follower: an acks=all append is answered once
// the follower's fetch moves the high watermark past it, and one it never
// reaches times out.
func TestAwaitAcks(t *testing.T) {
	p := newTestPartition(t)
	st := &partition.State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Local: true}
	p.SetState(st)
	now := time.Now().UnixMilli()
	if err := p.BecomeLeader(st, now, 30000, func(int32) bool { return true }); err != nil {
		t.Fatal(err)
	}
	topic := &testTopic{minISR: 2}
	var sp kmsg.ProduceResponseTopicPartition
	if !EnoughISR(topic, p, &sp, 9) {
		t.Fatalf("an ISR of 2 refused at min.insync.replicas 2: %d", sp.ErrorCode)
	}
	// The leader's append, at its epoch, without a producer id: the
	// producer state has nothing to check.
	_, last, err := p.Log().Append(leaderBatch(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	p.Appended()
	end, epoch := last+1, p.LeaderEpoch()

	var code int16
	err = AwaitAcks(context.Background(), 30*time.Millisecond, []Ack{{Partition: p, Topic: topic, End: end, Epoch: epoch, Code: &code}})
	if err != nil || code != kerr.RequestTimedOut.Code {
		t.Fatalf("without the follower: err %v, code %d; want REQUEST_TIMED_OUT", err, code)
	}

	go func() {
		time.Sleep(20 * time.Millisecond)
		if _, moved, _, _ := p.FollowerFetch(2, 7, end, p.Log().EndOffset(), 0, true, time.Now().UnixMilli()); moved {
			p.Wake()
		}
	}()
	code = 0
	err = AwaitAcks(context.Background(), 10*time.Second, []Ack{{Partition: p, Topic: topic, End: end, Epoch: epoch, Code: &code}})
	if err != nil || code != 0 || p.HighWatermark() != end {
		t.Fatalf("with the follower: err %v, code %d, high watermark %d; want success at %d", err, code, p.HighWatermark(), end)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := AwaitAcks(ctx, time.Second, []Ack{{Partition: p, Topic: topic, End: end + 1, Epoch: epoch, Code: &code}}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled request: %v, want context.Canceled", err)
	}
}

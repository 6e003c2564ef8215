package share_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/runtime"
	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// This file drives the coordinator under coordinator/runtime, as the
// broker is to: a State that replays __share_group_state's batches into
// it and hands out its records and answers, over an Env that keeps the
// topic in memory and can be told to fail an append.

const statePartitions = 3

var topic = [16]byte{1, 2, 3}

func topicImage(id [16]byte) (int32, bool) { return 4, id == topic }

type memLog struct {
	mu      sync.Mutex
	batches map[int32][][]byte
	next    map[int32]int64
	fail    bool
}

type memEnv struct{ log *memLog }

func (e memEnv) Append(records []share.Record, _ <-chan struct{}) error {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	if e.log.fail {
		return errors.New("disk full")
	}
	by := map[int32][]batch.Record{}
	for _, r := range records {
		p := share.PartitionFor(r.SharePartition, statePartitions)
		by[p] = append(by[p], batch.Record{OffsetDelta: int32(len(by[p])), Key: r.Key, Value: r.Value})
	}
	for p, recs := range by {
		b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseOffset: e.log.next[p], ProducerID: -1, ProducerEpoch: -1,
			BaseSequence: -1, PartitionLeaderEpoch: -1}, recs)
		if err != nil {
			return err
		}
		e.log.batches[p] = append(e.log.batches[p], b)
		e.log.next[p] += int64(len(recs))
	}
	return nil
}

func (e memEnv) Read(p int32, fn func([]byte) error) error {
	e.log.mu.Lock()
	bs := append([][]byte(nil), e.log.batches[p]...)
	e.log.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// shard is the runtime's State around a share.Coordinator.
type shard struct {
	t       *testing.T
	c       *share.Coordinator
	replies []runtime.Reply
	scratch batch.Scratch
}

func (s *shard) Replay(_ int64, _ int32, b []byte) error {
	return batch.ForEachRecord(b, &s.scratch, func(_ *batch.Header, r *batch.Record) bool {
		var v []byte
		if r.Value != nil {
			v = append([]byte(nil), r.Value...)
		}
		if err := s.c.Load(append([]byte(nil), r.Key...), v); err != nil {
			s.t.Errorf("replaying our own record: %v", err)
		}
		return true
	})
}

func (s *shard) Loaded(int64, []int32) {}
func (s *shard) Tick(int64)            {}
func (s *shard) Abort(int16)           {}
func (s *shard) Ready() ([]share.Record, []runtime.Reply) {
	r := s.replies
	s.replies = nil
	return s.c.Ready(), r
}

// failWrite is Config.Fail for the write answers this test sends.
func failWrite(res any, code int16) any {
	resp := res.(*kmsg.WriteShareGroupStateResponse)
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = share.OperationErrorCode(code)
		}
	}
	return resp
}

func newRuntime(t *testing.T, log *memLog) *runtime.Runtime[*shard, share.Record] {
	rt := runtime.New(runtime.Config[*shard, share.Record]{
		Name:      "__share_group_state",
		New:       func() *shard { return &shard{t: t, c: share.New(share.DefaultConfig())} },
		Env:       memEnv{log},
		TickEvery: time.Hour,
		Fail:      failWrite,
		ErrorCode: func(error) int16 { return kerr.KafkaStorageError.Code },
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	for p := range int32(statePartitions) {
		rt.Led(p, 0)
	}
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	return rt
}

func inputs(rt *runtime.Runtime[*shard, share.Record]) share.Inputs {
	return share.Inputs{Partitions: topicImage, StatePartitions: statePartitions,
		Serving: func(k share.Key) int16 { return rt.Serving(share.PartitionFor(k, statePartitions)) }}
}

func write(t *testing.T, rt *runtime.Runtime[*shard, share.Record], partition int32, start int64, batches ...share.Batch) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version, req.GroupID = 1, "g"
	tp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	tp.Partition, tp.StartOffset = partition, start
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		tp.StateBatches = append(tp.StateBatches, sb)
	}
	rtp := kmsg.NewWriteShareGroupStateRequestTopic()
	rtp.TopicID, rtp.Partitions = topic, append(rtp.Partitions, tp)
	req.Topics = append(req.Topics, rtp)
	res, err := rt.Call(context.Background(), func(s *shard, now int64, id runtime.ID) {
		s.replies = append(s.replies, runtime.Reply{ID: id, Result: s.c.WriteShareGroupState(now, req, inputs(rt))})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func stateOf(t *testing.T, rt *runtime.Runtime[*shard, share.Record], partition int32) share.Offset {
	t.Helper()
	var o share.Offset
	if err := rt.Run(context.Background(), func(s *shard, _ int64) { o, _ = s.c.State(share.Key{"g", topic, partition}) }); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestUnderRuntime: every share-partition initialized and written through
// the runtime; a failed append answers NOT_COORDINATOR (Kafka's mapping of
// a storage error) and leaves the state as the log has it; a restart
// replays exactly what was acknowledged; a share-partition whose
// __share_group_state partition is lost answers NOT_COORDINATOR.
func TestUnderRuntime(t *testing.T) {
	log := &memLog{batches: map[int32][][]byte{}, next: map[int32]int64{}}
	rt := newRuntime(t, log)
	for p := range int32(4) {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = "g"
		tp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		tp.Partition = p
		rtp := kmsg.NewInitializeShareGroupStateRequestTopic()
		rtp.TopicID, rtp.Partitions = topic, append(rtp.Partitions, tp)
		req.Topics = append(req.Topics, rtp)
		res, err := rt.Call(context.Background(), func(s *shard, now int64, id runtime.ID) {
			s.replies = append(s.replies, runtime.Reply{ID: id, Result: s.c.InitializeShareGroupState(now, req, inputs(rt))})
		})
		if err != nil || res.(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("init %d: %v %+v", p, err, res)
		}
		if code := write(t, rt, p, 0, share.Batch{FirstOffset: 0, LastOffset: 9, DeliveryState: 2, DeliveryCount: 1}); code != 0 {
			t.Fatalf("write %d: %d", p, code)
		}
	}
	acked := stateOf(t, rt, 2)

	log.mu.Lock()
	log.fail = true
	log.mu.Unlock()
	if code := write(t, rt, 2, 10); code != kerr.NotCoordinator.Code {
		t.Fatalf("a failed append answered %d", code)
	}
	if got := stateOf(t, rt, 2); got.StartOffset != acked.StartOffset || len(got.Batches) != len(acked.Batches) {
		t.Fatalf("the failed write stayed: %+v, the log has %+v", got, acked)
	}
	log.mu.Lock()
	log.fail = false
	log.mu.Unlock()
	if code := write(t, rt, 2, 5); code != 0 {
		t.Fatalf("write after the failure: %d", code)
	}
	acked = stateOf(t, rt, 2)
	rt.Stop()

	rt = newRuntime(t, log)
	defer rt.Stop()
	for p := range int32(4) {
		if got := stateOf(t, rt, p); got.StateEpoch != 0 || len(got.Batches) == 0 {
			t.Fatalf("after the restart, share-partition %d: %+v", p, got)
		}
	}
	if got := stateOf(t, rt, 2); got.StartOffset != 5 || got.StartOffset != acked.StartOffset || got.Batches[0] != acked.Batches[0] {
		t.Fatalf("after the restart: %+v, acknowledged %+v", got, acked)
	}

	rt.Lost(share.PartitionFor(share.Key{"g", topic, 1}, statePartitions))
	if code := write(t, rt, 1, 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("a share-partition not led here answered %d", code)
	}
}

package broker

// The share coordinator's part of the broker (KIP-932): a
// coordinator/runtime driving the coordinator/share state machine
// (shareShard) over __share_group_state, as txns.go drives
// coordinator/txn over __transaction_state. A call runs on the runtime's
// goroutine; its records are appended, one batch per partition of the
// topic with the topic's flush policy, before its answer goes out; a
// failed append answers every partition of the request with the code
// Kafka's ShareCoordinatorService maps a storage error to
// (share.OperationErrorCode) and the state is rebuilt from the log. Cold
// share-partitions are snapshotted on a timer every
// share.coordinator.cold.partition.snapshot.interval.ms, as Kafka's
// ShareCoordinatorShard timer does.
//
// The topic is created on first append with
// share.coordinator.state.topic.num.partitions partitions (50),
// cleanup.policy=delete and share.coordinator.state.topic.segment.bytes, as
// Kafka creates it. On a single node every partition is led and loaded
// here; in cluster mode the partitions this broker leads are pushed in by
// coordinatorLeadership, as for the other coordinators.
//
// It is the broker's sharePersister (share_persister.go): reads and
// writes of a share-partition led here are served locally. Reaching a
// share coordinator on another node (Kafka's RPCs 83-87 between brokers)
// is not done yet: such a key answers NOT_COORDINATOR.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/runtime"
	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// Kafka 4.4.0's ShareCoordinatorConfig defaults for the topic.
const (
	shareStateTopicPartitions   = share.DefaultStatePartitions // share.coordinator.state.topic.num.partitions
	shareStateTopicReplication  = 3                            // share.coordinator.state.topic.replication.factor
	shareStateTopicMinISR       = 2                            // share.coordinator.state.topic.min.isr
	shareStateTopicSegmentBytes = 104857600                    // share.coordinator.state.topic.segment.bytes
	shareStateAppendTimeout     = 30 * time.Second             // how long an append waits for its replicas, as the txn log's
)

// shareCoordinator is the runtime driving a share.Coordinator and its
// Env, __share_group_state.
type shareCoordinator struct {
	b  *Broker
	rt *runtime.Runtime[*shareShard, share.Record]

	// Owned by the runtime's goroutine.
	parts []*partition.Partition // __share_group_state's, once it exists
}

// shareShard is the runtime's State: the coordinator and the answers its
// calls owe.
type shareShard struct {
	c       *share.Coordinator
	replies []runtime.Reply
	scratch batch.Scratch
	sc      *shareCoordinator
}

// Replay loads one batch of __share_group_state; records that are not of
// Kafka's share state schemas are logged and skipped.
func (s *shareShard) Replay(_ int64, p int32, b []byte) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Control() {
		return nil
	}
	return batch.ForEachRecord(b, &s.scratch, func(_ *batch.Header, r *batch.Record) bool {
		var v []byte
		if r.Value != nil {
			v = append([]byte(nil), r.Value...)
		}
		if err := s.c.Load(append([]byte(nil), r.Key...), v); err != nil {
			s.sc.b.log.Warn("skipping a record of "+shareGroupStateTopic, "partition", p, "err", err)
		}
		return true
	})
}

func (s *shareShard) Loaded(int64, []int32) {}
func (s *shareShard) Tick(int64)            {}
func (s *shareShard) Abort(int16)           {} // no call is ever parked
func (s *shareShard) Ready() ([]share.Record, []runtime.Reply) {
	r := s.replies
	s.replies = nil
	return s.c.Ready(), r
}

// newShareCoordinator makes the share coordinator, not yet running.
func (b *Broker) newShareCoordinator() *shareCoordinator {
	sc := &shareCoordinator{b: b}
	cfg := share.DefaultConfig()
	sc.rt = runtime.New(runtime.Config[*shareShard, share.Record]{
		Name:      shareGroupStateTopic,
		New:       func() *shareShard { return &shareShard{c: share.New(cfg), sc: sc} },
		Env:       shareEnv{sc},
		TickEvery: time.Minute,
		Timers: []runtime.Timer[*shareShard]{{
			Every: time.Duration(cfg.ColdPartitionSnapshotIntervalMs) * time.Millisecond,
			Fire:  func(s *shareShard, now int64) { s.c.SnapshotColdPartitions(now, sc.inputs()) },
		}},
		ReloadOnGain: true,
		Fail:         failShareAnswer,
		ErrorCode: func(err error) int16 {
			if errors.Is(err, errShareStateTopic) {
				return kerr.CoordinatorNotAvailable.Code
			}
			return appendErrorCode(err)
		},
		Log: b.log,
	})
	return sc
}

// startShareCoordinator loads __share_group_state if it exists (on a
// single node) and runs the coordinator; it becomes b.shareState.
func (b *Broker) startShareCoordinator() error {
	sc := b.shares
	if !b.isCluster() {
		if t := b.lookupTopic(shareGroupStateTopic); t != nil {
			for _, p := range b.partitions(t) {
				sc.rt.Led(p.Index(), 0)
			}
		}
	}
	if err := sc.rt.Start(); err != nil {
		return err
	}
	b.shareState = sc
	return nil
}

func (sc *shareCoordinator) stop() { sc.rt.Stop() }

// stateParts returns __share_group_state's partitions, nil while the
// topic does not exist.
func (sc *shareCoordinator) stateParts() []*partition.Partition {
	if sc.parts == nil {
		if t := sc.b.lookupTopic(shareGroupStateTopic); t != nil {
			sc.parts = sc.b.partitions(t)
			adoptSingleNode(sc.b, sc.rt, sc.parts)
		}
	}
	return sc.parts
}

// inputs are the coordinator's Inputs: the keys served are those whose
// partition of __share_group_state the runtime serves (on a single node
// before the topic exists, every key: the first append creates it), and
// the topic image is the broker's catalogue.
func (sc *shareCoordinator) inputs() share.Inputs {
	n := int32(shareStateTopicPartitions)
	if parts := sc.stateParts(); parts != nil {
		n = int32(len(parts))
	}
	in := share.Inputs{StatePartitions: n, Partitions: func(id [16]byte) (int32, bool) {
		t := sc.b.lookupTopicID(id)
		if t == nil {
			return 0, false
		}
		return int32(len(sc.b.partitions(t))), true
	}}
	in.Serving = func(k share.Key) int16 {
		if sc.stateParts() == nil {
			if sc.b.isCluster() {
				return kerr.NotCoordinator.Code
			}
			return 0
		}
		return sc.rt.Serving(share.PartitionFor(k, n))
	}
	return in
}

// errShareStateTopic marks a failure to create __share_group_state.
var errShareStateTopic = errors.New("broker: " + shareGroupStateTopic + " cannot be created")

// shareStateTopicCreation is how __share_group_state is created: in
// cluster mode with Kafka's replication factor and min ISR, capped by
// the brokers there are.
func (b *Broker) shareStateTopicCreation() topicCreation {
	tc := topicCreation{
		name:              shareGroupStateTopic,
		partitions:        shareStateTopicPartitions,
		replicationFactor: 1,
		configs:           topicconfig.Configs{"cleanup.policy": "delete", "segment.bytes": strconv.Itoa(shareStateTopicSegmentBytes)},
	}
	if b.isCluster() {
		tc.replicationFactor = shareStateTopicReplication
		tc.configs["min.insync.replicas"] = strconv.Itoa(shareStateTopicMinISR)
	}
	return tc
}

// shareEnv is the runtime's Env: __share_group_state.
type shareEnv struct{ sc *shareCoordinator }

func (e shareEnv) Read(p int32, fn func(batch []byte) error) error {
	return readCoordinatorLog(shareGroupStateTopic, e.sc.stateParts(), p, fn)
}

// Append writes records as one batch per partition of the topic,
// creating it first if need be.
func (e shareEnv) Append(recs []share.Record, stop <-chan struct{}) error {
	sc := e.sc
	if sc.stateParts() == nil {
		parts, err := sc.b.createInternalTopic(sc.b.shareStateTopicCreation())
		if err != nil {
			return fmt.Errorf("%w: %v", errShareStateTopic, err)
		}
		sc.parts = parts
		adoptSingleNode(sc.b, sc.rt, parts)
	}
	n := int32(len(sc.parts))
	return sc.b.appendByPartition(sc.parts, len(recs),
		func(i int) int32 { return share.PartitionFor(recs[i].SharePartition, n) },
		func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value },
		shareStateAppendTimeout, stop)
}

// failShareAnswer is the runtime's Fail: every partition of the answer
// gets code as Kafka's ShareCoordinatorService maps it.
func failShareAnswer(res any, code int16) any {
	code = share.OperationErrorCode(code)
	switch r := res.(type) {
	case *kmsg.ReadShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.WriteShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.InitializeShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.DeleteShareGroupStateResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return res
}

// call runs fn on the coordinator's goroutine and waits for its answer,
// given once its records are durable.
func (sc *shareCoordinator) call(ctx context.Context, fn func(c *share.Coordinator, now int64, in share.Inputs) any) (any, error) {
	return sc.rt.Call(ctx, func(s *shareShard, now int64, id runtime.ID) {
		s.replies = append(s.replies, runtime.Reply{ID: id, Result: fn(s.c, now, sc.inputs())})
	})
}

func (sc *shareCoordinator) readShareState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	res, err := sc.call(ctx, func(c *share.Coordinator, now int64, in share.Inputs) any { return c.ReadShareGroupState(now, req, in) })
	if err != nil {
		return nil, err
	}
	return res.(*kmsg.ReadShareGroupStateResponse), nil
}

func (sc *shareCoordinator) writeShareState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	res, err := sc.call(ctx, func(c *share.Coordinator, now int64, in share.Inputs) any {
		return c.WriteShareGroupState(now, req, in)
	})
	if err != nil {
		return nil, err
	}
	return res.(*kmsg.WriteShareGroupStateResponse), nil
}

// initializeShareState is InitializeShareGroupState, for the group
// coordinator's share groups.
func (sc *shareCoordinator) initializeShareState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	res, err := sc.call(ctx, func(c *share.Coordinator, now int64, in share.Inputs) any {
		return c.InitializeShareGroupState(now, req, in)
	})
	if err != nil {
		return nil, err
	}
	return res.(*kmsg.InitializeShareGroupStateResponse), nil
}

// deleteShareState is DeleteShareGroupState, for DeleteGroups of a share
// group.
func (sc *shareCoordinator) deleteShareState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	res, err := sc.call(ctx, func(c *share.Coordinator, now int64, in share.Inputs) any {
		return c.DeleteShareGroupState(now, req, in)
	})
	if err != nil {
		return nil, err
	}
	return res.(*kmsg.DeleteShareGroupStateResponse), nil
}

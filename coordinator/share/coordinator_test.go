package share

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	msgFencedLeader = "The leader epoch in the request is older than the epoch on the broker."
	msgFencedState  = "The coordinator rejected the request because the state epoch did not match."
	msgUnknownTopic = "This server does not host this topic-partition."
)

func notCoordinator(Key) int16 { return kerr.NotCoordinator.Code }
func loading(Key) int16        { return kerr.CoordinatorLoadInProgress.Code }

// TestErrors: each RPC's refusals, with Kafka's codes and messages, and
// that a refusal writes nothing and changes nothing.
func TestErrors(t *testing.T) {
	a0 := part{topic: topicA, partition: 0, stateEpoch: 1, leaderEpoch: 1}
	initialized := func(c *Coordinator) {
		mustOK(t, c, 1, initReq("g", part{topic: topicA, partition: 0, stateEpoch: 1, startOffset: 0}))
		mustOK(t, c, 2, readReq("g", part{topic: topicA, partition: 0, leaderEpoch: 2}))
	}
	with := func(p part, f func(*part)) part { f(&p); return p }
	for _, tc := range []struct {
		name string
		prep func(*Coordinator)
		req  any
		in   Inputs
		code int16
		msg  string
	}{
		{"init negative partition", nil, initReq("g", with(a0, func(p *part) { p.partition = -1 })), served,
			kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
		{"init negative state epoch", nil, initReq("g", with(a0, func(p *part) { p.stateEpoch = -1 })), served,
			kerr.InvalidRequest.Code, "The state epoch cannot be a negative number."},
		{"init older state epoch", initialized, initReq("g", with(a0, func(p *part) { p.stateEpoch = 0 })), served,
			kerr.FencedStateEpoch.Code, msgFencedState},
		{"init unknown topic", nil, initReq("g", with(a0, func(p *part) { p.topic = topicX })), served,
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"init partition beyond the topic", nil, initReq("g", with(a0, func(p *part) { p.partition = 3 })), served,
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"init without an image", nil, initReq("g", a0), Inputs{},
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"init not coordinator", nil, initReq("g", a0), Inputs{Partitions: image, Serving: notCoordinator},
			kerr.NotCoordinator.Code, "Unable to initialize share group state: This is not the correct coordinator."},
		{"init inactive", nil, initReq("g", a0), Inputs{Partitions: image, Inactive: true},
			kerr.CoordinatorNotAvailable.Code, "Share coordinator is not available."},

		{"write uninitialized", nil, writeReq("g", a0), served,
			kerr.InvalidRequest.Code, "Write operation on uninitialized share partition not allowed."},
		{"write negative partition", initialized, writeReq("g", with(a0, func(p *part) { p.partition = -2 })), served,
			kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
		{"write negative leader epoch", initialized, writeReq("g", with(a0, func(p *part) { p.leaderEpoch = -1 })), served,
			kerr.InvalidRequest.Code, "The leader epoch cannot be a negative number."},
		{"write negative state epoch", initialized, writeReq("g", with(a0, func(p *part) { p.stateEpoch = -1 })), served,
			kerr.InvalidRequest.Code, "The state epoch cannot be a negative number."},
		{"write older leader epoch", initialized, writeReq("g", a0), served,
			kerr.FencedLeaderEpoch.Code, msgFencedLeader},
		{"write older state epoch", initialized, writeReq("g", with(a0, func(p *part) { p.leaderEpoch, p.stateEpoch = 2, 0 })), served,
			kerr.FencedStateEpoch.Code, msgFencedState},
		{"write loading", initialized, writeReq("g", with(a0, func(p *part) { p.leaderEpoch = 2 })), Inputs{Partitions: image, Serving: loading},
			kerr.CoordinatorLoadInProgress.Code, "Unable to write share group state: The coordinator is loading and hence can't process requests."},
		{"write after the topic shrank", initialized, writeReq("g", with(a0, func(p *part) { p.leaderEpoch = 2 })),
			Inputs{Partitions: func([16]byte) (int32, bool) { return 0, true }},
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"write batches Kafka's combiner fails on", initialized, writeReq("g", with(a0, func(p *part) {
			p.leaderEpoch = 2
			p.batches = []Batch{{10, 5, 0, 1}, {0, 20, 2, 1}}
		})), served, kerr.UnknownServerError.Code, "Unable to write share group state: " + combineFailure},

		{"read uninitialized", nil, readReq("g", a0), served,
			kerr.InvalidRequest.Code, "Read operation on uninitialized share partition not allowed."},
		{"read negative partition", initialized, readReq("g", with(a0, func(p *part) { p.partition = -1 })), served,
			kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
		{"read negative leader epoch", initialized, readReq("g", with(a0, func(p *part) { p.leaderEpoch = -1 })), served,
			kerr.InvalidRequest.Code, "The leader epoch cannot be a negative number."},
		{"read older leader epoch", initialized, readReq("g", a0), served,
			kerr.FencedLeaderEpoch.Code, msgFencedLeader},
		{"read unknown topic", nil, readReq("g", with(a0, func(p *part) { p.topic = topicX })), served,
			kerr.InvalidRequest.Code, "Read operation on uninitialized share partition not allowed."},
		{"read not coordinator", initialized, readReq("g", a0), Inputs{Partitions: image, Serving: notCoordinator},
			kerr.NotCoordinator.Code, "Unable to read share group state: This is not the correct coordinator."},

		{"summary negative partition", nil, summaryReq("g", with(a0, func(p *part) { p.partition = -1 })), served,
			kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
		{"summary unknown topic", nil, summaryReq("g", with(a0, func(p *part) { p.topic = topicX })), served,
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"summary not coordinator", nil, summaryReq("g", a0), Inputs{Partitions: image, Serving: notCoordinator},
			kerr.NotCoordinator.Code, "Unable to read share group state summary: This is not the correct coordinator."},

		{"delete negative partition", nil, deleteReq("g", with(a0, func(p *part) { p.partition = -1 })), served,
			kerr.InvalidRequest.Code, "The partition id cannot be a negative number."},
		{"delete unknown topic", initialized, deleteReq("g", with(a0, func(p *part) { p.topic = topicX })), served,
			kerr.UnknownTopicOrPartition.Code, msgUnknownTopic},
		{"delete not coordinator", initialized, deleteReq("g", a0), Inputs{Partitions: image, Serving: notCoordinator},
			kerr.NotCoordinator.Code, "Unable to delete share group state: This is not the correct coordinator."},
		{"delete inactive", initialized, deleteReq("g", a0), Inputs{Partitions: image, Inactive: true},
			kerr.CoordinatorNotAvailable.Code, "Share coordinator is not available."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(DefaultConfig())
			if tc.prep != nil {
				tc.prep(c)
			}
			c.Ready()
			before := snapshotOf(c)
			got := call(t, c, 10, tc.req, tc.in)
			if len(got) != 1 || got[0].code != tc.code || got[0].msg != tc.msg {
				t.Fatalf("got %+v, want code %d %q", got, tc.code, tc.msg)
			}
			if recs := c.Ready(); len(recs) != 0 {
				t.Fatalf("a refusal wrote %d records", len(recs))
			}
			if after := snapshotOf(c); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refusal changed the state:\n%+v\n%+v", before, after)
			}
		})
	}
}

// snapshotOf is everything a coordinator holds, for comparisons.
type state struct {
	Offsets      map[Key]Offset
	LeaderEpochs map[Key]int32
	StateEpochs  map[Key]int32
	Updates      map[Key]int
}

func snapshotOf(c *Coordinator) state {
	s := state{Offsets: map[Key]Offset{}, LeaderEpochs: map[Key]int32{}, StateEpochs: map[Key]int32{}, Updates: map[Key]int{}}
	for k, o := range c.states {
		s.Offsets[k] = *o.clone()
	}
	for k, v := range c.leaderEpochs {
		s.LeaderEpochs[k] = v
	}
	for k, v := range c.stateEpochs {
		s.StateEpochs[k] = v
	}
	for k, v := range c.updates {
		s.Updates[k] = v
	}
	return s
}

// TestServiceChecks: the ShareCoordinatorService's checks before any
// partition is looked at: no topics, a topic without partitions, an empty
// group id each answer with no results and write nothing.
func TestServiceChecks(t *testing.T) {
	empty := func(r any) any { return r }
	noParts := writeReq("g", part{topic: topicA})
	noParts.Topics = append(noParts.Topics, kmsg.NewWriteShareGroupStateRequestTopic())
	for _, tc := range []struct {
		name string
		req  any
	}{
		{"init no topics", empty(initReq("g"))},
		{"init empty group", initReq("", part{topic: topicA})},
		{"write no topics", writeReq("g")},
		{"write a topic without partitions", noParts},
		{"write empty group", writeReq("", part{topic: topicA})},
		{"read no topics", readReq("g")},
		{"read empty group", readReq("", part{topic: topicA})},
		{"summary no topics", summaryReq("g")},
		{"summary empty group", summaryReq("", part{topic: topicA})},
		{"delete no topics", deleteReq("g")},
		{"delete empty group", deleteReq("", part{topic: topicA})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(DefaultConfig())
			if got := call(t, c, 1, tc.req, served); len(got) != 0 {
				t.Fatalf("got results %+v", got)
			}
			if len(c.Ready()) != 0 {
				t.Fatal("records written")
			}
		})
	}
}

// TestInitializeWriteRead walks one share-partition through its life and
// checks every answer, record and state on the way, and that the log
// alone rebuilds the same state after every step.
func TestInitializeWriteRead(t *testing.T) {
	cfg := DefaultConfig()
	cfg.UpdatesPerSnapshot = 2
	c := New(cfg)
	k := Key{"g", topicA, 1}
	var log []Record
	step := func(now int64, req any, wantTypes ...int16) {
		t.Helper()
		mustOK(t, c, now, req)
		recs := c.Ready()
		if len(recs) != len(wantTypes) {
			t.Fatalf("%T: %d records, want %d", req, len(recs), len(wantTypes))
		}
		for i, r := range recs {
			typ, rk, _, err := DecodeRecord(r.Key, r.Value)
			if err != nil || typ != wantTypes[i] || rk != k || r.SharePartition != k {
				t.Fatalf("%T: record %d: type %d key %+v err %v; want type %d", req, i, typ, rk, err, wantTypes[i])
			}
		}
		log = append(log, recs...)
		if got, want := snapshotOf(rebuilt(t, cfg, log)), snapshotOf(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("%T: the log rebuilds\n%+v\nnot\n%+v", req, got, want)
		}
	}
	p := part{topic: topicA, partition: 1}

	step(100, initReq("g", part{topic: topicA, partition: 1, stateEpoch: 0, startOffset: -1}), SnapshotType)
	if o, _ := c.State(k); o.SnapshotEpoch != 0 || o.StartOffset != -1 || o.DeliveryCompleteCount != -1 || o.CreateTimestamp != 100 || o.WriteTimestamp != 100 {
		t.Fatalf("after init: %+v", o)
	}
	// The share-partition leader reads at leader epoch 3: recorded.
	p.leaderEpoch = 3
	step(200, readReq("g", p), UpdateType)
	if le, _, n, _ := c.Epochs(k); le != 3 || n != 1 {
		t.Fatalf("leader epoch %d, updates %d", le, n)
	}
	// Again at the same epoch: nothing to record.
	step(210, readReq("g", p))
	// A write: batches merged in an update.
	p.startOffset, p.dcc = 0, 2
	p.batches = []Batch{{0, 4, 2, 1}, {5, 9, 0, 1}}
	step(300, writeReq("g", p), UpdateType)
	o, _ := c.State(k)
	if want := []Batch{{0, 4, 2, 1}, {5, 9, 0, 1}}; !reflect.DeepEqual(o.Batches, want) || o.LeaderEpoch != 3 || o.DeliveryCompleteCount != 2 {
		t.Fatalf("after a write: %+v", o)
	}
	// Two updates so far: the next write is a snapshot, of the state
	// merged, with the snapshot epoch up and the write time now.
	p.startOffset, p.dcc = 5, 0
	p.batches = []Batch{{5, 7, 2, 1}}
	step(400, writeReq("g", p), SnapshotType)
	o, _ = c.State(k)
	if want := []Batch{{5, 7, 2, 1}, {8, 9, 0, 1}}; !reflect.DeepEqual(o.Batches, want) || o.SnapshotEpoch != 1 ||
		o.WriteTimestamp != 400 || o.CreateTimestamp != 400 || o.StartOffset != 5 {
		t.Fatalf("after the snapshot: %+v", o)
	}
	if _, _, n, _ := c.Epochs(k); n != 0 {
		t.Fatalf("updates not reset by the snapshot: %d", n)
	}
	// A write with an older start offset keeps the current one and its
	// delivery complete count.
	p.startOffset, p.dcc = 1, 9
	p.batches = nil
	step(500, writeReq("g", p), UpdateType)
	if o, _ = c.State(k); o.StartOffset != 5 || o.DeliveryCompleteCount != 0 {
		t.Fatalf("an older start offset moved the state: %+v", o)
	}
	// Re-initialized at a new state epoch: a fresh state, next snapshot epoch.
	step(600, initReq("g", part{topic: topicA, partition: 1, stateEpoch: 4, startOffset: 20}), SnapshotType)
	if o, _ = c.State(k); o.SnapshotEpoch != 2 || o.StateEpoch != 4 || len(o.Batches) != 0 || o.DeliveryCompleteCount != 0 {
		t.Fatalf("after re-init: %+v", o)
	}
	// The summary, without batches.
	sum := c.ReadShareGroupStateSummary(700, summaryReq("g", p), served).Topics[0].Partitions[0]
	if sum.StartOffset != 20 || sum.StateEpoch != 4 || sum.LeaderEpoch != 0 || sum.DeliveryCompleteCount != 0 {
		t.Fatalf("summary %+v", sum)
	}
	// The leader epoch map keeps its 3 though the snapshot says 0.
	if le, se, _, _ := c.Epochs(k); le != 3 || se != 4 {
		t.Fatalf("epochs %d %d", le, se)
	}
	// Deleted: a tombstone; the epochs go too, so an init at 0 passes.
	step(800, deleteReq("g", p), SnapshotType)
	if _, ok := c.State(k); ok {
		t.Fatal("state left after delete")
	}
	step(900, deleteReq("g", p))
	sum = c.ReadShareGroupStateSummary(910, summaryReq("g", p), served).Topics[0].Partitions[0]
	if sum.StartOffset != -1 || sum.DeliveryCompleteCount != -1 || sum.StateEpoch != 0 || sum.LeaderEpoch != 0 || sum.ErrorCode != 0 {
		t.Fatalf("summary of nothing %+v", sum)
	}
	step(1000, initReq("g", part{topic: topicA, partition: 1, stateEpoch: 0, startOffset: 0}), SnapshotType)
}

// TestReadAnswer: the read's answer carries the state; the summary at v0
// and v1.
func TestReadAnswer(t *testing.T) {
	c := New(DefaultConfig())
	mustOK(t, c, 1, initReq("g", part{topic: topicB, stateEpoch: 2, startOffset: 10}))
	mustOK(t, c, 2, writeReq("g", part{topic: topicB, stateEpoch: 2, leaderEpoch: 1, startOffset: 10, dcc: 1,
		batches: []Batch{{12, 12, 4, 5}, {10, 11, 2, 1}}}))
	r := c.ReadShareGroupState(3, readReq("g", part{topic: topicB, leaderEpoch: 1}), served).Topics[0].Partitions[0]
	var got []Batch
	for _, b := range r.StateBatches {
		got = append(got, Batch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	if want := []Batch{{10, 11, 2, 1}, {12, 12, 4, 5}}; r.ErrorCode != 0 || r.StartOffset != 10 || r.StateEpoch != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v batches %v", r, got)
	}
	req := summaryReq("g", part{topic: topicB})
	req.Version = 0
	resp := c.ReadShareGroupStateSummary(4, req, served)
	if resp.Version != 0 || resp.Topics[0].Partitions[0].LeaderEpoch != 1 {
		t.Fatalf("summary v0 %+v", resp)
	}
}

// TestWriteV0: a v0 write carries no delivery complete count, which is
// then Kafka's default -1 whatever the struct holds.
func TestWriteV0(t *testing.T) {
	c := New(DefaultConfig())
	mustOK(t, c, 1, initReq("g", part{topic: topicB, startOffset: 4}))
	req := writeReq("g", part{topic: topicB, startOffset: 6, dcc: 7})
	req.Version = 0
	mustOK(t, c, 2, req)
	if o, _ := c.State(Key{"g", topicB, 0}); o.DeliveryCompleteCount != -1 {
		t.Fatalf("v0 write took a delivery complete count: %+v", o)
	}
}

// TestCollation: several partitions and topics in one request; a
// partition named twice answers once, with its last operation's answer;
// answers come in Kafka's HashMap order (partitions of a small topic
// ascending), not the request's.
func TestCollation(t *testing.T) {
	c := New(DefaultConfig())
	req := initReq("g", part{topic: topicA, partition: 2}, part{topic: topicB}, part{topic: topicA, partition: 0},
		part{topic: topicA, partition: 2, stateEpoch: -1})
	got := call(t, c, 1, req, served)
	want := []answer{
		{topicA, 0, 0, ""},
		{topicA, 2, kerr.InvalidRequest.Code, "The state epoch cannot be a negative number."},
		{topicB, 0, 0, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if n := len(c.Ready()); n != 3 {
		t.Fatalf("%d records, want 3 (the first init of A-2 is done)", n)
	}
	// Topic ids iterate by their hash's bin: 00..01 falls in bin 1, after
	// A's and B's bin 0, though it comes first.
	topicC := [16]byte{15: 1}
	in := Inputs{Partitions: func(id [16]byte) (int32, bool) { return 3, true }}
	got = call(t, c, 2, deleteReq("g", part{topic: topicC}, part{topic: topicB}, part{topic: topicA}), in)
	if len(got) != 3 || got[0].topic != topicB || got[1].topic != topicA || got[2].topic != topicC {
		t.Fatalf("got %+v", got)
	}
	// An inactive coordinator answers every partition of the request, as
	// the request lists them.
	if got := call(t, c, 3, readReq("g", part{topic: topicX, partition: 9}, part{topic: topicA}), Inputs{Inactive: true}); len(got) != 2 ||
		got[0].code != kerr.CoordinatorNotAvailable.Code || got[0].topic != topicX || got[1].code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("got %+v", got)
	}
}

// TestOperationErrorCode: Kafka's CoordinatorOperationExceptionHelper.
func TestOperationErrorCode(t *testing.T) {
	for in, want := range map[*kerr.Error]*kerr.Error{
		kerr.NetworkException:        kerr.CoordinatorLoadInProgress,
		kerr.UnknownTopicOrPartition: kerr.CoordinatorNotAvailable,
		kerr.NotEnoughReplicas:       kerr.CoordinatorNotAvailable,
		kerr.RequestTimedOut:         kerr.CoordinatorNotAvailable,
		kerr.NotLeaderForPartition:   kerr.NotCoordinator,
		kerr.KafkaStorageError:       kerr.NotCoordinator,
		kerr.MessageTooLarge:         kerr.UnknownServerError,
		kerr.RecordListTooLarge:      kerr.UnknownServerError,
		kerr.InvalidFetchSize:        kerr.UnknownServerError,
		kerr.NotCoordinator:          kerr.NotCoordinator,
		kerr.PolicyViolation:         kerr.PolicyViolation,
	} {
		if got := OperationErrorCode(in.Code); got != want.Code {
			t.Errorf("%s: %d, want %s", in.Message, got, want.Message)
		}
	}
}

// TestColdSnapshots: Kafka's snapshotColdPartitions, its odd skip
// included: a __share_group_state partition whose share-partitions have
// all been written since created is passed over.
func TestColdSnapshots(t *testing.T) {
	cfg := DefaultConfig()
	cfg.UpdatesPerSnapshot = 0 // every write a snapshot
	c := New(cfg)
	in := Inputs{Partitions: image, StatePartitions: 1}
	mustOK(t, c, 0, initReq("g", part{topic: topicA}, part{topic: topicB}))
	c.Ready()
	c.SnapshotColdPartitions(DefaultColdPartitionSnapshotIntervalMs-1, in)
	if n := len(c.Ready()); n != 0 {
		t.Fatalf("%d snapshots before the interval", n)
	}
	c.SnapshotColdPartitions(DefaultColdPartitionSnapshotIntervalMs, in)
	recs := c.Ready()
	if len(recs) != 2 {
		t.Fatalf("%d snapshots, want 2", len(recs))
	}
	o, _ := c.State(Key{"g", topicA, 0})
	if o.SnapshotEpoch != 1 || o.WriteTimestamp != DefaultColdPartitionSnapshotIntervalMs || o.CreateTimestamp != 0 {
		t.Fatalf("cold snapshot %+v", o)
	}
	// Every share-partition now has create != write: passed over.
	c.SnapshotColdPartitions(10*DefaultColdPartitionSnapshotIntervalMs, in)
	if n := len(c.Ready()); n != 0 {
		t.Fatalf("%d snapshots of a partition Kafka passes over", n)
	}
	// Not served: passed over too.
	mustOK(t, c, 0, initReq("h", part{topic: topicA}))
	c.Ready()
	c.SnapshotColdPartitions(20*DefaultColdPartitionSnapshotIntervalMs, Inputs{Serving: notCoordinator})
	if n := len(c.Ready()); n != 0 {
		t.Fatalf("%d snapshots of keys not served", n)
	}
}

// TestTopicsDeleted: Kafka's maybeCleanupShareState.
func TestTopicsDeleted(t *testing.T) {
	c := New(DefaultConfig())
	mustOK(t, c, 0, initReq("g", part{topic: topicA}, part{topic: topicA, partition: 1}, part{topic: topicB}))
	c.Ready()
	c.TopicsDeleted(nil, served)
	c.TopicsDeleted([][16]byte{topicA}, served)
	recs := c.Ready()
	if len(recs) != 2 || recs[0].Value != nil || c.Len() != 1 {
		t.Fatalf("%d records, %d left", len(recs), c.Len())
	}
	if keys := c.Keys(); len(keys) != 1 || keys[0].TopicID != topicB {
		t.Fatalf("left %+v", keys)
	}
}

// TestLoadRefuses: records Kafka's replay refuses leave the state as it
// was.
func TestLoadRefuses(t *testing.T) {
	k := Key{"g", topicA, 0}
	c := New(DefaultConfig())
	if err := c.Load(encodeKey(UpdateType, k), nil); err == nil {
		t.Fatal("a ShareUpdate tombstone loaded")
	}
	snap := SnapshotRecord(k, &Offset{Batches: []Batch{{0, 9, 0, 1}}, DeliveryCompleteCount: -1})
	if err := c.Load(snap.Key, snap.Value); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(c)
	bad := UpdateRecord(k, &Offset{StartOffset: -1, LeaderEpoch: -1, Batches: []Batch{{5, 1, 2, 1}}})
	if err := c.Load(bad.Key, bad.Value); err == nil {
		t.Fatal("an update Kafka's merge fails on loaded")
	}
	if after := snapshotOf(c); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused record changed the state")
	}
}

// TestServiceOrder: the service's checks come in a different order per
// RPC. Initialize, Delete and ReadSummary ask first whether the
// coordinator is active (so an empty group id is still
// COORDINATOR_NOT_AVAILABLE), Read and Write last; Initialize does not
// refuse a topic without partitions; an inactive coordinator answers
// each partition as the request lists it, twice if named twice.
func TestServiceOrder(t *testing.T) {
	inactive := Inputs{Partitions: image, Inactive: true}
	twice := []part{{topic: topicA}, {topic: topicA}}
	for _, tc := range []struct {
		name string
		req  any
		in   Inputs
		want int // answers, each COORDINATOR_NOT_AVAILABLE when inactive
	}{
		{"init inactive, empty group", initReq("", twice...), inactive, 2},
		{"delete inactive, empty group", deleteReq("", twice...), inactive, 2},
		{"summary inactive, empty group", summaryReq("", twice...), inactive, 2},
		{"read inactive, empty group", readReq("", twice...), inactive, 0},
		{"write inactive, empty group", writeReq("", twice...), inactive, 0},
		{"write inactive", writeReq("g", twice...), inactive, 2},
		{"read inactive", readReq("g", twice...), inactive, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, New(DefaultConfig()), 1, tc.req, tc.in)
			if len(got) != tc.want {
				t.Fatalf("got %+v, want %d answers", got, tc.want)
			}
			for _, a := range got {
				if a.code != kerr.CoordinatorNotAvailable.Code || a.msg != "Share coordinator is not available." {
					t.Fatalf("got %+v", a)
				}
			}
		})
	}
	// A topic without partitions in an Initialize: the others are served.
	req := initReq("g", part{topic: topicB})
	req.Topics = append(req.Topics, kmsg.NewInitializeShareGroupStateRequestTopic())
	if got := call(t, New(DefaultConfig()), 1, req, served); len(got) != 1 || got[0].code != 0 || got[0].topic != topicB {
		t.Fatalf("got %+v", got)
	}
}

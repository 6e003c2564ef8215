package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// consumerHarness drives consumer-group heartbeats with a fake clock and a
// topic image the test controls.
type consumerHarness struct {
	t       *testing.T
	c       *Coordinator
	now     int64
	id      ReplyID
	topics  Topics
	records []Record
}

func newConsumerHarness(t *testing.T, cfg Config) *consumerHarness {
	return &consumerHarness{t: t, c: New(cfg), now: 1000, topics: Topics{}}
}

func (h *consumerHarness) addTopic(name string, partitions int32) TopicID {
	id := TopicID{byte(len(h.topics) + 1), 0xaa}
	if old, ok := h.topics[name]; ok {
		id = old.ID
	}
	h.topics[name] = TopicInfo{Name: name, ID: id, Partitions: partitions}
	return id
}

func (h *consumerHarness) hb(req ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	h.t.Helper()
	h.id++
	if req.GroupID == "" {
		req.GroupID = "g"
	}
	if req.Version == 0 {
		req.Version = 1
	}
	h.c.ConsumerGroupHeartbeat(h.now, h.id, req, h.topics)
	e := h.c.Ready()
	h.records = append(h.records, e.Records...)
	if len(e.Replies) != 1 {
		h.t.Fatalf("%d replies", len(e.Replies))
	}
	return e.Replies[0].Result.(*ConsumerHeartbeatResult)
}

// join sends a full joining heartbeat for member id subscribed to topics.
func (h *consumerHarness) join(member string, topics ...string) *ConsumerHeartbeatResult {
	h.t.Helper()
	return h.hb(ConsumerHeartbeatRequest{MemberID: member, MemberEpoch: 0, RebalanceTimeoutMs: 30000,
		SubscribedTopicNames: topics, TopicPartitions: []OwnedTopic{}})
}

// beat sends a heartbeat at epoch with the owned partitions (nil: not
// sent).
func (h *consumerHarness) beat(member string, epoch int32, owned []OwnedTopic) *ConsumerHeartbeatResult {
	h.t.Helper()
	return h.hb(ConsumerHeartbeatRequest{MemberID: member, MemberEpoch: epoch, RebalanceTimeoutMs: -1, TopicPartitions: owned})
}

func (h *consumerHarness) tick(ms int64) {
	h.now += ms
	h.c.Tick(h.now)
	h.records = append(h.records, h.c.Ready().Records...)
}

func ok(t *testing.T, r *ConsumerHeartbeatResult) *ConsumerHeartbeatResult {
	t.Helper()
	if r.ErrorCode != 0 {
		t.Fatalf("error %v: %s", kerr.ErrorForCode(r.ErrorCode), optStr(r.ErrorMessage))
	}
	return r
}

func countPartitions(a []OwnedTopic) int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

func TestConsumerFirstMemberGetsEveryPartition(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	foo := h.addTopic("foo", 4)
	r := ok(t, h.join("m1", "foo"))
	if r.MemberEpoch != 2 || optStr(r.MemberID) != "m1" || r.HeartbeatIntervalMs != 5000 {
		t.Fatalf("got epoch %d id %s interval %d", r.MemberEpoch, optStr(r.MemberID), r.HeartbeatIntervalMs)
	}
	if len(r.Assignment) != 1 || r.Assignment[0].TopicID != foo || fmt.Sprint(r.Assignment[0].Partitions) != "[0 1 2 3]" {
		t.Fatalf("assignment %+v", r.Assignment)
	}
	// A heartbeat with nothing new carries no assignment.
	if r := ok(t, h.beat("m1", 2, nil)); r.Assignment != nil || r.MemberEpoch != 2 {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	if l := h.c.ListGroups(nil, []string{"CONSUMER"}); len(l) != 1 || l[0].State != "Stable" || l[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v", l)
	}
	if l := h.c.ListGroups(nil, []string{"classic"}); len(l) != 0 {
		t.Fatalf("type filter classic listed %+v", l)
	}
}

// TestConsumerPartitionsMoveOnlyAfterRevocation walks the reconciliation of
// KIP-848: the new member gets partitions only once their previous owner
// has acknowledged their revocation.
func TestConsumerPartitionsMoveOnlyAfterRevocation(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	foo := h.addTopic("foo", 4)
	ok(t, h.join("m1", "foo"))

	r2 := ok(t, h.join("m2", "foo"))
	if r2.MemberEpoch != 3 || countPartitions(r2.Assignment) != 0 {
		t.Fatalf("m2 joined with epoch %d and %v; want epoch 3 and nothing yet (unreleased)", r2.MemberEpoch, r2.Assignment)
	}
	if d := h.c.ConsumerGroupDescribe([]string{"g"})[0]; d.State != "Reconciling" || d.Epoch != 3 || d.AssignmentEpoch != 3 {
		t.Fatalf("describe: %+v", d)
	}
	// m1, told nothing yet, heartbeats: it must revoke two partitions and
	// stays in epoch 2.
	r1 := ok(t, h.beat("m1", 2, nil))
	if r1.MemberEpoch != 2 || countPartitions(r1.Assignment) != 2 {
		t.Fatalf("m1 revocation step: epoch %d assignment %v", r1.MemberEpoch, r1.Assignment)
	}
	kept := r1.Assignment
	// m2 still gets nothing: m1 has not confirmed.
	if r := ok(t, h.beat("m2", 3, []OwnedTopic{})); countPartitions(r.Assignment) != 0 {
		t.Fatalf("m2 got %v before m1 revoked", r.Assignment)
	}
	// A member still claiming revoked partitions stays where it is.
	all := []OwnedTopic{{TopicID: foo, Partitions: []int32{0, 1, 2, 3}}}
	if r := ok(t, h.beat("m1", 2, all)); r.MemberEpoch != 2 {
		t.Fatalf("m1 advanced while owning revoked partitions: %+v", r)
	}
	// m1 confirms: it moves to epoch 3.
	if r := ok(t, h.beat("m1", 2, kept)); r.MemberEpoch != 3 {
		t.Fatalf("m1 after revoking: %+v", r)
	}
	r := ok(t, h.beat("m2", 3, []OwnedTopic{}))
	if countPartitions(r.Assignment) != 2 {
		t.Fatalf("m2 after m1 revoked: %v", r.Assignment)
	}
	if d := h.c.ConsumerGroupDescribe([]string{"g"})[0]; d.State != "Stable" {
		t.Fatalf("describe: %+v", d)
	}
	// No partition is assigned twice.
	seen := map[int32]string{}
	for _, pair := range []struct {
		m string
		a []OwnedTopic
	}{{"m1", kept}, {"m2", r.Assignment}} {
		for _, p := range pair.a[0].Partitions {
			if seen[p] != "" {
				t.Fatalf("partition %d held by %s and %s", p, seen[p], pair.m)
			}
			seen[p] = pair.m
		}
	}
}

func TestConsumerHeartbeatErrors(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerMaxSize: 2})
	h.addTopic("foo", 2)
	ok(t, h.join("m1", "foo"))
	ok(t, h.join("m2", "foo"))
	inst := "i1"
	ok(t, h.hb(ConsumerHeartbeatRequest{GroupID: "s", MemberID: "a", InstanceID: &inst, RebalanceTimeoutMs: 1000,
		SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}))
	bad, re := "range2", "(["
	empty := ""
	for _, tc := range []struct {
		name string
		req  ConsumerHeartbeatRequest
		want *kerr.Error
	}{
		{"empty group id", ConsumerHeartbeatRequest{GroupID: "", MemberID: "x", MemberEpoch: 1}, kerr.InvalidRequest},
		{"v1 empty member id", ConsumerHeartbeatRequest{MemberEpoch: 0, RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}, kerr.InvalidRequest},
		{"join without rebalance timeout", ConsumerHeartbeatRequest{MemberID: "x", RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}, kerr.InvalidRequest},
		{"join owning partitions", ConsumerHeartbeatRequest{MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{{Partitions: []int32{0}}}}, kerr.InvalidRequest},
		{"join without subscription", ConsumerHeartbeatRequest{MemberID: "x", RebalanceTimeoutMs: 1, TopicPartitions: []OwnedTopic{}}, kerr.InvalidRequest},
		{"epoch -3", ConsumerHeartbeatRequest{MemberID: "x", MemberEpoch: -3}, kerr.InvalidRequest},
		{"static leave without instance", ConsumerHeartbeatRequest{MemberID: "x", MemberEpoch: -2}, kerr.InvalidRequest},
		{"empty instance id", ConsumerHeartbeatRequest{MemberID: "x", MemberEpoch: 1, InstanceID: &empty}, kerr.InvalidRequest},
		{"unknown assignor", ConsumerHeartbeatRequest{MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}, ServerAssignor: &bad}, kerr.UnsupportedAssignor},
		{"bad regex", ConsumerHeartbeatRequest{MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicRegex: &re, TopicPartitions: []OwnedTopic{}}, kerr.InvalidRegularExpression},
		{"unknown group", ConsumerHeartbeatRequest{GroupID: "nope", MemberID: "x", MemberEpoch: 3}, kerr.GroupIDNotFound},
		{"unknown member", ConsumerHeartbeatRequest{GroupID: "s", MemberID: "x", MemberEpoch: 3}, kerr.UnknownMemberID},
		{"new member of a full group", ConsumerHeartbeatRequest{MemberID: "x", MemberEpoch: 3}, kerr.GroupMaxSizeReached},
		{"epoch ahead", ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: 9, RebalanceTimeoutMs: -1}, kerr.FencedMemberEpoch},
		{"epoch behind", ConsumerHeartbeatRequest{MemberID: "m2", MemberEpoch: 1, RebalanceTimeoutMs: -1}, kerr.FencedMemberEpoch},
		{"group full", ConsumerHeartbeatRequest{MemberID: "m3", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}, kerr.GroupMaxSizeReached},
		{"instance id in use", ConsumerHeartbeatRequest{GroupID: "s", MemberID: "b", InstanceID: &inst, RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}, kerr.UnreleasedInstanceID},
		{"fenced instance", ConsumerHeartbeatRequest{GroupID: "s", MemberID: "b", InstanceID: &inst, MemberEpoch: 1, RebalanceTimeoutMs: -1}, kerr.FencedInstanceID},
		{"leave unknown member", ConsumerHeartbeatRequest{MemberID: "zz", MemberEpoch: -1}, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.GroupID == "" && tc.name != "empty group id" {
				tc.req.GroupID = "g"
			}
			h.id++
			h.c.ConsumerGroupHeartbeat(h.now, h.id, func() ConsumerHeartbeatRequest { r := tc.req; r.Version = 1; return r }(), h.topics)
			e := h.c.Ready()
			r := e.Replies[0].Result.(*ConsumerHeartbeatResult)
			if r.ErrorCode != tc.want.Code {
				t.Fatalf("got %v (%s), want %v", kerr.ErrorForCode(r.ErrorCode), optStr(r.ErrorMessage), tc.want)
			}
			if r.ErrorMessage == nil {
				t.Fatal("no error message")
			}
			if len(e.Records) != 0 {
				t.Fatalf("a refused heartbeat wrote %d records", len(e.Records))
			}
		})
	}
}

func TestConsumerLostResponseIsForgiven(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	foo := h.addTopic("foo", 2)
	ok(t, h.join("m1", "foo")) // epoch 2, previous 0
	// The response was lost: the member retries the join with epoch 0 and
	// owns nothing, a subset of its assignment: accepted.
	if r := ok(t, h.join("m1", "foo")); r.MemberEpoch != 2 {
		t.Fatalf("rejoin: %+v", r)
	}
	h.addTopic("foo", 3)
	if r := ok(t, h.beat("m1", 2, nil)); r.MemberEpoch != 3 {
		t.Fatalf("after a new partition: %+v", r)
	}
	// The epoch-3 response was lost: epoch 2 with a subset is accepted.
	if r := ok(t, h.beat("m1", 2, []OwnedTopic{{TopicID: foo, Partitions: []int32{0, 1}}})); r.MemberEpoch != 3 {
		t.Fatalf("previous epoch: %+v", r)
	}
	// Claiming a partition it never had is not.
	r := h.beat("m1", 2, []OwnedTopic{{TopicID: foo, Partitions: []int32{5}}})
	if r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("got %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestConsumerLeaveAndSessionTimeoutReassign(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerSessionTimeoutMs: 10000})
	h.addTopic("foo", 4)
	ok(t, h.join("m1", "foo"))
	ok(t, h.join("m2", "foo"))
	r1 := ok(t, h.beat("m1", 2, nil))
	ok(t, h.beat("m1", 2, r1.Assignment))
	ok(t, h.beat("m2", 3, []OwnedTopic{}))
	// m1 leaves: the group epoch goes up and m2 gets everything.
	if r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: -1})); r.MemberEpoch != -1 || optStr(r.MemberID) != "m1" {
		t.Fatalf("leave: %+v", r)
	}
	r := ok(t, h.beat("m2", 3, nil))
	if r.MemberEpoch != 4 || countPartitions(r.Assignment) != 4 {
		t.Fatalf("after leave: %+v", r)
	}
	// m3 joins, then m2 goes silent: its session times out and m3 gets
	// every partition.
	ok(t, h.join("m3", "foo"))
	h.tick(6000)
	ok(t, h.beat("m3", 5, []OwnedTopic{}))
	h.tick(6000) // m2's last heartbeat was 12 s ago
	if d := h.c.ConsumerGroupDescribe([]string{"g"})[0]; len(d.Members) != 1 || d.Members[0].MemberID != "m3" {
		t.Fatalf("after m2's session timeout: %+v", d)
	}
	r = ok(t, h.beat("m3", 5, []OwnedTopic{}))
	if countPartitions(r.Assignment) != 4 || r.MemberEpoch != 6 {
		t.Fatalf("m3 after m2 timed out: %+v", r)
	}
}

func TestConsumerRebalanceTimeoutFencesMemberThatDoesNotRevoke(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 2)
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m1", RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}))
	ok(t, h.join("m2", "foo"))
	ok(t, h.beat("m1", 2, nil)) // asked to revoke one partition
	h.tick(4000)
	ok(t, h.beat("m2", 3, []OwnedTopic{}))
	ok(t, h.beat("m1", 2, nil)) // still revoking; a heartbeat does not extend the deadline
	h.tick(1500)
	if r := h.beat("m1", 2, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("m1 after its rebalance timeout: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := ok(t, h.beat("m2", 3, []OwnedTopic{})); countPartitions(r.Assignment) != 2 {
		t.Fatalf("m2: %+v", r)
	}
}

func TestConsumerStaticMemberLeavesAndComesBack(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 3)
	inst := "i1"
	join := func(member string) *ConsumerHeartbeatResult {
		return h.hb(ConsumerHeartbeatRequest{MemberID: member, InstanceID: &inst, RebalanceTimeoutMs: 1000,
			SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}})
	}
	r := ok(t, join("a"))
	if r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "a", InstanceID: &inst, MemberEpoch: -2})); r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	// The new instance takes the old one's place and partitions without a
	// new group epoch.
	r2 := ok(t, join("b"))
	if r2.MemberEpoch != r.MemberEpoch || countPartitions(r2.Assignment) != 3 {
		t.Fatalf("static rejoin: %+v (first %+v)", r2, r)
	}
	d := h.c.ConsumerGroupDescribe([]string{"g"})[0]
	if len(d.Members) != 1 || d.Members[0].MemberID != "b" || d.Epoch != 2 {
		t.Fatalf("describe: %+v", d)
	}
}

func TestConsumerTopicChangesBumpTheGroupEpoch(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 2)
	ok(t, h.join("m1", "foo", "bar"))
	h.addTopic("foo", 3) // partitions added
	r := ok(t, h.beat("m1", 2, nil))
	if r.MemberEpoch != 3 || countPartitions(r.Assignment) != 3 {
		t.Fatalf("after adding a partition: %+v", r)
	}
	h.addTopic("bar", 1) // a subscribed topic is created
	r = ok(t, h.beat("m1", 3, nil))
	if r.MemberEpoch != 4 || countPartitions(r.Assignment) != 4 {
		t.Fatalf("after creating bar: %+v", r)
	}
	delete(h.topics, "foo")
	r = ok(t, h.beat("m1", 4, nil))
	if r.MemberEpoch != 4 || countPartitions(r.Assignment) != 1 {
		t.Fatalf("after deleting foo (revocation): %+v", r)
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("orders-eu", 1)
	h.addTopic("orders-us", 1)
	h.addTopic("payments", 1)
	h.topics["__consumer_offsets"] = TopicInfo{Name: "__consumer_offsets", ID: TopicID{9}, Partitions: 50}
	re := "orders-.*"
	// The regex is resolved after the heartbeat that brings it: the next
	// one gets its topics.
	r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", RebalanceTimeoutMs: 1000, SubscribedTopicRegex: &re, TopicPartitions: []OwnedTopic{}}))
	if countPartitions(r.Assignment) != 0 || r.MemberEpoch != 2 {
		t.Fatalf("regex, first heartbeat: %+v", r)
	}
	r = ok(t, h.beat("m", r.MemberEpoch, []OwnedTopic{}))
	if countPartitions(r.Assignment) != 2 || r.MemberEpoch != 3 {
		t.Fatalf("regex, resolved: %+v", r)
	}
	all := ".*"
	// Until the new regex is resolved the member subscribes to nothing
	// (Kafka's resolution is per regex): it revokes, and then gets the
	// new regex's topics.
	r = ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", MemberEpoch: r.MemberEpoch, RebalanceTimeoutMs: -1, SubscribedTopicRegex: &all}))
	r = ok(t, h.beat("m", r.MemberEpoch, []OwnedTopic{}))
	if countPartitions(r.Assignment) != 53 {
		t.Fatalf(".* matches every topic, internal ones too, as in Kafka: %+v", r)
	}
	// An empty regex (librdkafka sends one beside its topic names) is no
	// regex.
	none := ""
	r = ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", MemberEpoch: r.MemberEpoch, RebalanceTimeoutMs: -1, SubscribedTopicRegex: &none,
		SubscribedTopicNames: []string{"payments"}}))
	if countPartitions(r.Assignment) != 1 {
		t.Fatalf("names with an empty regex: %+v", r)
	}
	n := ok(t, h.hb(ConsumerHeartbeatRequest{GroupID: "e", MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"payments"},
		SubscribedTopicRegex: &none, TopicPartitions: []OwnedTopic{}}))
	if countPartitions(n.Assignment) != 1 {
		t.Fatalf("join with names and an empty regex: %+v", n)
	}
}

// TestConsumerRegexAndLiteralTopicsArriveInTwoSteps is issue #26 case 2,
// in Kafka's order (GroupMetadataManager resolves a regex asynchronously;
// Kafka 4.2.2 answers the same on the wire, one epoch lower): the joining heartbeat is
// assigned the literal topic at epoch 2, the next one the regex-matched
// topics too at epoch 3. A second member with the same, already resolved,
// regex gets its share at once; after a replay the regex stays resolved.
func TestConsumerRegexAndLiteralTopicsArriveInTwoSteps(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("a_topic_regex_1", 4)
	h.addTopic("b_topic_regex_2", 4)
	h.addTopic("literal", 2)
	re := "^.*topic_regex.*"
	r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"literal"},
		SubscribedTopicRegex: &re, TopicPartitions: []OwnedTopic{}}))
	if countPartitions(r.Assignment) != 2 || r.MemberEpoch != 2 {
		t.Fatalf("first heartbeat: epoch %d, %d partitions, want the literal topic's 2 at epoch 2", r.MemberEpoch, countPartitions(r.Assignment))
	}
	r = ok(t, h.beat("m", r.MemberEpoch, r.Assignment))
	if countPartitions(r.Assignment) != 10 || r.MemberEpoch != 3 {
		t.Fatalf("second heartbeat: epoch %d, %d partitions, want 10 at epoch 3", r.MemberEpoch, countPartitions(r.Assignment))
	}
	n := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "n", RebalanceTimeoutMs: 30000, SubscribedTopicRegex: &re, TopicPartitions: []OwnedTopic{}}))
	if n.MemberEpoch != 4 {
		t.Fatalf("second member with a resolved regex: epoch %d, want 4", n.MemberEpoch)
	}
	c2 := New(Config{})
	for _, rec := range h.records {
		if err := c2.Load(h.now, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	c2.LoadDone(h.now)
	if got := c2.groups["g"].cg.resolvedRegex[re]; !got {
		t.Fatal("regex not resolved after replay")
	}
}

func TestConsumerOffsetCommitChecksMemberEpoch(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 1)
	r := ok(t, h.join("m1", "foo"))
	commit := func(member string, epoch int32, version int16) int16 {
		h.id++
		h.c.CommitOffsets(h.now, h.id, CommitRequest{GroupID: "g", MemberID: member, Generation: epoch, Version: version,
			Topics: []CommitTopic{{Topic: "foo", Partitions: []CommitPartition{{Partition: 0, Offset: 7}}}}})
		return h.c.Ready().Replies[0].Result.(*CommitResult).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		member  string
		epoch   int32
		version int16
		want    int16
	}{
		{"m1", r.MemberEpoch, 9, 0},
		{"m1", r.MemberEpoch + 1, 9, kerr.StaleMemberEpoch.Code},
		{"m1", r.MemberEpoch, 8, kerr.UnsupportedVersion.Code},
		{"nobody", 1, 9, kerr.UnknownMemberID.Code},
		{"", -1, 9, kerr.UnknownMemberID.Code}, // the group is not empty
	} {
		if got := commit(tc.member, tc.epoch, tc.version); got != tc.want {
			t.Errorf("commit(%s, %d, v%d) = %v, want %v", tc.member, tc.epoch, tc.version, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	stale := h.c.fetchOffsets(FetchRequest{GroupID: "g", MemberID: strp("m1"), MemberEpoch: 5})
	if stale.ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch with a stale epoch: %v", kerr.ErrorForCode(stale.ErrorCode))
	}
	good := h.c.fetchOffsets(FetchRequest{GroupID: "g", MemberID: strp("m1"), MemberEpoch: r.MemberEpoch})
	if good.ErrorCode != 0 || good.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("fetch: %+v", good)
	}
	// Deleting a group with members is refused; after the member left, the
	// group and its offsets go.
	h.id++
	h.c.DeleteGroups(h.now, h.id, []string{"g"})
	if e := h.c.Ready().Replies[0].Result.(*DeleteGroupsResult).Groups[0].ErrorCode; e != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %v", kerr.ErrorForCode(e))
	}
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: -1}))
	if commit("", -1, 9) != 0 {
		t.Fatal("an empty consumer group refused a commit from outside")
	}
	h.id++
	h.c.DeleteGroups(h.now, h.id, []string{"g"})
	if e := h.c.Ready().Replies[0].Result.(*DeleteGroupsResult).Groups[0].ErrorCode; e != 0 {
		t.Fatalf("delete empty: %v", kerr.ErrorForCode(e))
	}
	if l := h.c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("after delete: %+v", l)
	}
}

func TestConsumerAndClassicGroupsDoNotMix(t *testing.T) {
	h := newConsumerHarness(t, Config{InitialRebalanceDelayMs: 0})
	h.addTopic("foo", 1)
	ok(t, h.join("m1", "foo"))
	h.id++
	h.c.JoinGroup(h.now, h.id, JoinRequest{GroupID: "g", ProtocolType: "consumer", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000,
		Protocols: []Protocol{{Name: "range"}}})
	if e := h.c.Ready().Replies[0].Result.(*JoinResult).ErrorCode; e != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a consumer group: %v", kerr.ErrorForCode(e))
	}
	if d := h.c.DescribeGroups([]string{"g"})[0]; d.State != "Dead" || !d.NotClassic {
		t.Fatalf("DescribeGroups of a consumer group: %+v", d)
	}
	// A classic group with a member cannot be joined by a consumer member.
	h.id++
	h.c.JoinGroup(h.now, h.id, JoinRequest{GroupID: "c", ProtocolType: "consumer", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000,
		Protocols: []Protocol{{Name: "range"}}})
	h.c.Ready()
	if r := h.hb(ConsumerHeartbeatRequest{GroupID: "c", MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer join of a classic group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := h.c.ConsumerGroupDescribe([]string{"c"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %+v", d)
	}
	// An empty classic group (offsets only) is upgraded, keeping offsets.
	h.id++
	h.c.CommitOffsets(h.now, h.id, CommitRequest{GroupID: "e", Generation: -1, Version: 9,
		Topics: []CommitTopic{{Topic: "foo", Partitions: []CommitPartition{{Offset: 3}}}}})
	h.c.Ready()
	ok(t, h.hb(ConsumerHeartbeatRequest{GroupID: "e", MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}))
	if f := h.c.fetchOffsets(FetchRequest{GroupID: "e"}); f.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("offsets after upgrade: %+v", f)
	}
}

// TestConsumerGroupSurvivesReplay loads every record a scenario wrote into
// a fresh coordinator and checks that it describes the same group and
// carries on from the same epochs.
func TestConsumerGroupSurvivesReplay(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 4)
	ok(t, h.join("m1", "foo"))
	ok(t, h.join("m2", "foo"))
	r1 := ok(t, h.beat("m1", 2, nil)) // m1 now revoking
	inst, rack := "i3", "r1"
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m3", InstanceID: &inst, RackID: &rack, RebalanceTimeoutMs: 1000,
		SubscribedTopicNames: []string{"foo"}, ServerAssignor: strp("range"), TopicPartitions: []OwnedTopic{}}))
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "gone", RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}}))
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "gone", MemberEpoch: -1}))
	rx := "fo+"
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "rx", RebalanceTimeoutMs: 1000, SubscribedTopicRegex: &rx, TopicPartitions: []OwnedTopic{}}))

	want := h.c.ConsumerGroupDescribe([]string{"g"})
	c2 := New(Config{})
	for _, r := range h.records {
		if err := c2.Load(h.now, r.Key, r.Value); err != nil {
			t.Fatalf("load %x: %v", r.Key, err)
		}
	}
	c2.LoadDone(h.now)
	got := c2.ConsumerGroupDescribe([]string{"g"})
	if describeString(got) != describeString(want) {
		t.Fatalf("after replay:\n got %+v\nwant %+v", got, want)
	}
	// m1 carries on its revocation with the reloaded coordinator.
	h.c = c2
	if r := ok(t, h.beat("m1", 2, r1.Assignment)); r.MemberEpoch < 3 {
		t.Fatalf("m1 after replay: %+v", r)
	}
	// Deleting the group after everyone left leaves nothing after replay.
	// The regex survived: rx still gets its share after a new partition.
	h.addTopic("foo", 8)
	for i := 0; i < 4; i++ {
		for _, id := range []string{"m1", "m2", "m3", "rx"} {
			h.c.ConsumerGroupHeartbeat(h.now, h.id, ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: id,
				InstanceID: map[bool]*string{true: &inst}[id == "m3"], MemberEpoch: c2.groups["g"].cg.members[id].epoch,
				RebalanceTimeoutMs: -1, TopicPartitions: toOwned(c2.groups["g"].cg.members[id].assigned)}, h.topics)
			h.records = append(h.records, h.c.Ready().Records...)
		}
	}
	if d := c2.ConsumerGroupDescribe([]string{"g"})[0]; d.State != "Stable" || len(d.Members[3].Assignment) != 1 ||
		len(d.Members[3].Assignment[0].Partitions) != 2 {
		t.Fatalf("after replay and growth: %s", describeString([]ConsumerDescribedGroup{d}))
	}
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "rx", MemberEpoch: -1}))
	for _, m := range []string{"m1", "m2"} {
		ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: m, MemberEpoch: -1}))
	}
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m3", InstanceID: &inst, MemberEpoch: -1}))
	h.id++
	h.c.DeleteGroups(h.now, h.id, []string{"g"})
	h.records = append(h.records, h.c.Ready().Records...)
	c3 := New(Config{})
	for _, r := range h.records {
		if err := c3.Load(h.now, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	c3.LoadDone(h.now)
	if l := c3.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("deleted group came back: %+v", l)
	}
}

func TestAssignorsBalanceAndStick(t *testing.T) {
	a, b := TopicID{1}, TopicID{2}
	in := func(members map[string][]TopicID, current map[string]assignment) assignorInput {
		ai := assignorInput{partitions: map[TopicID]int32{a: 5, b: 3}, names: map[TopicID]string{a: "a", b: "b"}}
		for _, id := range sortedKeys(members) {
			m := assignorMember{id: id, topics: map[TopicID]bool{}, current: current[id]}
			for _, t := range members[id] {
				m.topics[t] = true
			}
			ai.members = append(ai.members, m)
		}
		return ai
	}
	check := func(name string, out map[string]assignment, wantCounts map[string]int) {
		t.Helper()
		seen := map[tp]bool{}
		for id, as := range out {
			if as.size() != wantCounts[id] {
				t.Errorf("%s: %s has %d partitions, want %d (%v)", name, id, as.size(), wantCounts[id], out)
			}
			for top, ps := range as {
				for _, p := range ps {
					if seen[tp{top, p}] {
						t.Errorf("%s: %v-%d assigned twice", name, top, p)
					}
					seen[tp{top, p}] = true
				}
			}
		}
	}
	both := []TopicID{a, b}
	u := assignUniform(in(map[string][]TopicID{"x": both, "y": both, "z": both}, nil))
	check("uniform 3", u, map[string]int{"x": 3, "y": 3, "z": 2})
	// Sticky: removing z moves only z's partitions.
	u2 := assignUniform(in(map[string][]TopicID{"x": both, "y": both}, u))
	check("uniform 2", u2, map[string]int{"x": 4, "y": 4})
	for _, id := range []string{"x", "y"} {
		for top, ps := range u[id] {
			for _, p := range ps {
				if !u2[id].has(top, p) {
					t.Errorf("uniform moved %v-%d away from %s", top, p, id)
				}
			}
		}
	}
	// Heterogeneous: y only reads b.
	h := assignUniform(in(map[string][]TopicID{"x": both, "y": {b}}, nil))
	check("uniform heterogeneous", h, map[string]int{"x": 5, "y": 3})
	r := assignRange(in(map[string][]TopicID{"x": both, "y": both}, nil))
	check("range", r, map[string]int{"x": 5, "y": 3})
	if fmt.Sprint(r["x"][a], r["x"][b], r["y"][a], r["y"][b]) != "[0 1 2] [0 1] [3 4] [2]" {
		t.Errorf("range: %v", r)
	}
}

func describeString(ds []ConsumerDescribedGroup) string {
	out := ""
	for _, d := range ds {
		out += fmt.Sprintf("%s %s epoch=%d/%d assignor=%s\n", d.GroupID, d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName)
		for _, m := range d.Members {
			out += fmt.Sprintf("  %s inst=%s rack=%s epoch=%d topics=%v regex=%s assigned=%v target=%v\n", m.MemberID,
				optStr(m.InstanceID), optStr(m.RackID), m.MemberEpoch, m.SubscribedTopicNames, optStr(m.SubscribedTopicRegex),
				m.Assignment, m.TargetAssign)
		}
	}
	return out
}

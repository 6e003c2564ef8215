package group

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// consumerRecordFixture is one record of fixtures/consumer-records.txt:
// how Gregor encodes it, and what replaying Kafka's bytes must give.
type consumerRecordFixture struct {
	key, value []byte
	check      func(cg *consumerGroup) string // "" when the replayed state is right
}

// TestConsumerRecordsMatchKafka compares the consumer group records whose
// Kafka 4.4 fields Gregor writes (group epoch, AssignmentTimestamp,
// AssignmentEpochs) with the bytes Kafka 4.4.0's
// GroupCoordinatorRecordHelpers and GroupCoordinatorRecordSerde produce
// (fixtures/consumer-records.txt, written by compat-tests/sharegroup's
// ConsumerRecordsGen), and replays Kafka's bytes.
func TestConsumerRecordsMatchKafka(t *testing.T) {
	want := readRecordFixtureFile(t, "fixtures/consumer-records.txt")
	foo := mustTopicID(t, "0102030405060708090a0b0c0d0e0f10")
	bar := mustTopicID(t, "1112131415161718191a1b1c1d1e1f20")
	stable := &consumerMember{id: "m1", epoch: 4, previousEpoch: 3, state: memberStable,
		assigned: assignment{foo: {0, 2, 3}}, pendingRevocation: assignment{},
		assignmentEpochs: map[tp]int32{{foo, 0}: 2, {foo, 2}: 4, {foo, 3}: 4}}
	revoking := &consumerMember{id: "m1", epoch: 5, previousEpoch: 4, state: memberUnrevokedPartitions,
		assigned: assignment{foo: {1}}, pendingRevocation: assignment{bar: {0, 7}},
		assignmentEpochs: map[tp]int32{{foo, 1}: 5, {bar, 0}: 2, {bar, 7}: 3}}
	empty := &consumerMember{id: "m2", epoch: 2, state: memberUnreleasedPartitions,
		assigned: assignment{}, pendingRevocation: assignment{}}
	left := &consumerMember{id: "m1", epoch: staticLeaveEpoch, previousEpoch: 3, state: memberStable,
		assigned: assignment{foo: {0, 2, 3}}, pendingRevocation: assignment{},
		assignmentEpochs: assignment{foo: {0, 2, 3}}.epochsOf(nil)}
	member := func(want *consumerMember) func(cg *consumerGroup) string {
		return func(cg *consumerGroup) string { return diffMemberAssignment(cg.members[want.id], want) }
	}
	got := map[string]consumerRecordFixture{
		"epoch": {consumerGroupKey("grp"), consumerGroupValue(&consumerGroup{epoch: 7, metadataHash: 0x1122334455667788}),
			func(cg *consumerGroup) string {
				return check(cg.epoch == 7 && cg.metadataHash == 0x1122334455667788, "epoch %d hash %x", cg.epoch, cg.metadataHash)
			}},
		"epoch-first": {consumerGroupKey("grp"), consumerGroupValue(&consumerGroup{epoch: 2}),
			func(cg *consumerGroup) string { return check(cg.epoch == 2, "epoch %d", cg.epoch) }},
		"target-metadata": {targetMetadataKey("grp"), targetMetadataValue(3, 1700000000000),
			func(cg *consumerGroup) string {
				return check(cg.assignmentEpoch == 3 && cg.assignmentTimestamp == 1700000000000, "%d %d", cg.assignmentEpoch, cg.assignmentTimestamp)
			}},
		"target-metadata-zero-time": {targetMetadataKey("grp"), targetMetadataValue(5, 0),
			func(cg *consumerGroup) string {
				return check(cg.assignmentEpoch == 5 && cg.assignmentTimestamp == 0, "%d %d", cg.assignmentEpoch, cg.assignmentTimestamp)
			}},
		"current":             {currentAssignmentKey("grp", "m1"), currentAssignmentValue(stable), member(stable)},
		"current-revoking":    {currentAssignmentKey("grp", "m1"), currentAssignmentValue(revoking), member(revoking)},
		"current-empty":       {currentAssignmentKey("grp", "m2"), currentAssignmentValue(empty), member(empty)},
		"current-static-left": {currentAssignmentKey("grp", "m1"), currentAssignmentValue(left), member(left)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d fixtures, %d encoded", len(want), len(got))
	}
	for name, kv := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: no Gregor encoding", name)
			continue
		}
		if hex.EncodeToString(g.key) != hex.EncodeToString(kv[0]) {
			t.Errorf("%s key:\n got %x\nwant %x", name, g.key, kv[0])
		}
		if hex.EncodeToString(g.value) != hex.EncodeToString(kv[1]) {
			t.Errorf("%s value:\n got %x\nwant %x", name, g.value, kv[1])
		}
		c := New(Config{})
		if err := c.Load(0, kv[0], kv[1]); err != nil {
			t.Errorf("%s: Load: %v", name, err)
			continue
		}
		if d := g.check(c.groups["grp"].cg); d != "" {
			t.Errorf("%s: replayed %s", name, d)
		}
	}
}

func check(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// diffMemberAssignment describes how m's current assignment differs from
// want's ("" when equal).
func diffMemberAssignment(m, want *consumerMember) string {
	if m == nil {
		return "no member"
	}
	g, w := memberAssignmentString(m), memberAssignmentString(want)
	return check(g == w, "%s, want %s", g, w)
}

func memberAssignmentString(m *consumerMember) string {
	epochs := func(a assignment) string {
		var parts []string
		for t, ps := range a {
			for _, p := range ps {
				parts = append(parts, fmt.Sprintf("%x-%d@%d", t[:2], p, m.assignmentEpochs[tp{t, p}]))
			}
		}
		sort.Strings(parts)
		return fmt.Sprint(parts)
	}
	return fmt.Sprintf("epoch=%d prev=%d state=%d assigned=%s pending=%s",
		m.epoch, m.previousEpoch, m.state, epochs(m.assigned), epochs(m.pendingRevocation))
}

// TestConsumerCurrentAssignmentWithoutEpochs replays a current assignment
// record as Kafka before 4.4 wrote it (no AssignmentEpochs), and one whose
// epochs do not match its partitions: every partition gets the member
// epoch, as Kafka's Utils.assignmentFromTopicPartitions gives them.
func TestConsumerCurrentAssignmentWithoutEpochs(t *testing.T) {
	foo := TopicID{1, 2}
	plain := func(epoch int32) []byte {
		w := newValue()
		w.int32(epoch)
		w.int32(epoch - 1)
		w.int8(int8(memberStable))
		w.topicPartitions(assignment{foo: {0, 1}})
		w.topicPartitions(assignment{})
		w.uvarint(0)
		return w.b
	}
	mismatched := func() []byte {
		w := newValue()
		w.int32(6)
		w.int32(5)
		w.int8(int8(memberStable))
		w.uvarint(2) // one topic
		w.b = append(w.b, foo[:]...)
		w.uvarint(3)
		w.int32(0)
		w.int32(1)
		w.uvarint(1) // one tagged field
		w.uvarint(0) // tag 0
		w.uvarint(5) // size: a one-element compact array
		w.uvarint(2) // one epoch for two partitions
		w.int32(2)
		w.uvarint(0) // no pending revocation
		w.uvarint(0)
		return w.b
	}
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"pre-4.4 record", plain(4), "[0102-0@4 0102-1@4]"},
		{"negative member epoch", plain(-2), "[0102-0@0 0102-1@0]"},
		{"epochs of the wrong length", mismatched(), "[0102-0@6 0102-1@6]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			if err := c.Load(0, currentAssignmentKey("g", "m"), tc.value); err != nil {
				t.Fatal(err)
			}
			m := c.groups["g"].cg.members["m"]
			var parts []string
			for _, p := range m.assigned[foo] {
				parts = append(parts, fmt.Sprintf("%x-%d@%d", foo[:2], p, m.assignmentEpochs[tp{foo, p}]))
			}
			if got := fmt.Sprint(parts); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestConsumerAssignmentEpochsFollowReconciliation walks Kafka 4.4's
// CurrentAssignmentBuilder rules for the epochs it writes as
// AssignmentEpochs: a partition keeps the epoch it was assigned at while
// the member keeps it (also through a revocation that moves the member to
// a new epoch), a newly assigned partition takes the target's epoch, and a
// static leave resets the kept partitions' epochs to 0
// (ConsumerGroupMember.Builder.resetAssignedPartitionsEpochsToZero), which
// the instance that takes the member's place inherits.
func TestConsumerAssignmentEpochsFollowReconciliation(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 4)
	epochsOf := func(id string) string {
		t.Helper()
		m := h.c.groups["g"].cg.members[id]
		if m == nil {
			t.Fatalf("no member %s", id)
		}
		return memberAssignmentString(m)
	}
	ok(t, h.join("m1", "foo"))
	if got, want := epochsOf("m1"), "epoch=2 prev=0 state=0 assigned=[01aa-0@2 01aa-1@2 01aa-2@2 01aa-3@2] pending=[]"; got != want {
		t.Fatalf("first member:\n got %s\nwant %s", got, want)
	}
	ok(t, h.join("m2", "foo"))
	r1 := ok(t, h.beat("m1", 2, nil)) // told to revoke two partitions
	if got, want := epochsOf("m1"), "epoch=2 prev=2 state=1 assigned=[01aa-0@2 01aa-1@2] pending=[01aa-2@2 01aa-3@2]"; got != want {
		t.Fatalf("m1 revoking:\n got %s\nwant %s", got, want)
	}
	ok(t, h.beat("m1", 2, r1.Assignment)) // revoked: epoch 3, partitions still at 2
	if got, want := epochsOf("m1"), "epoch=3 prev=2 state=0 assigned=[01aa-0@2 01aa-1@2] pending=[]"; got != want {
		t.Fatalf("m1 after revoking:\n got %s\nwant %s", got, want)
	}
	ok(t, h.beat("m2", 3, []OwnedTopic{}))
	if got, want := epochsOf("m2"), "epoch=3 prev=3 state=0 assigned=[01aa-2@3 01aa-3@3] pending=[]"; got != want {
		t.Fatalf("m2 after m1 revoked:\n got %s\nwant %s", got, want)
	}
	// The record written last for m2 carries those epochs.
	var last []byte
	for _, r := range h.records {
		if string(r.Key) == string(currentAssignmentKey("g", "m2")) {
			last = r.Value
		}
	}
	c := New(Config{})
	if err := c.Load(0, currentAssignmentKey("g", "m2"), last); err != nil {
		t.Fatal(err)
	}
	if got, want := memberAssignmentString(c.groups["g"].cg.members["m2"]), epochsOf("m2"); got != want {
		t.Fatalf("m2's record replays as\n %s\nwant %s", got, want)
	}
}

func TestConsumerStaticLeaveResetsAssignmentEpochs(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("foo", 2)
	inst := "i1"
	join := func(member string) *ConsumerHeartbeatResult {
		return h.hb(ConsumerHeartbeatRequest{MemberID: member, InstanceID: &inst, RebalanceTimeoutMs: 1000,
			SubscribedTopicNames: []string{"foo"}, TopicPartitions: []OwnedTopic{}})
	}
	ok(t, join("a"))
	ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "a", InstanceID: &inst, MemberEpoch: staticLeaveEpoch}))
	m := h.c.groups["g"].cg.members["a"]
	if got, want := memberAssignmentString(m), "epoch=-2 prev=0 state=0 assigned=[01aa-0@0 01aa-1@0] pending=[]"; got != want {
		t.Fatalf("after the static leave:\n got %s\nwant %s", got, want)
	}
	ok(t, join("b"))
	m = h.c.groups["g"].cg.members["b"]
	if got, want := memberAssignmentString(m), "epoch=2 prev=0 state=0 assigned=[01aa-0@0 01aa-1@0] pending=[]"; got != want {
		t.Fatalf("the new instance:\n got %s\nwant %s", got, want)
	}
}

// TestConsumerHeartbeatsMatchKafka runs the scenario of
// fixtures/consumer-heartbeats.txt (Kafka 4.4.0's GroupCoordinatorShard,
// written by compat-tests/sharegroup's ConsumerHeartbeatProbe) on Gregor
// and compares each answer's member epoch and, byte for byte, the records
// of the group epoch, the targets and the current assignments (types 3, 6,
// 7, 8; the member metadata record, type 5, holds client details the
// harness does not send as Kafka's request context has them). The group
// epoch record's MetadataHash is masked: Gregor's hash is its own
// (consumerGroup.subscriptionHash), only its changes follow Kafka's.
func TestConsumerHeartbeatsMatchKafka(t *testing.T) {
	f, err := os.Open("fixtures/consumer-heartbeats.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := newConsumerHarness(t, Config{})
	h.now = 1700000000000
	h.topics["foo"] = TopicInfo{Name: "foo", ID: mustTopicID(t, "0102030405060708090a0b0c0d0e0f10"), Partitions: 3}
	foo := h.topics["foo"].ID
	var want, got []string
	flush := func() {
		for _, r := range h.records {
			if typ := int16(binary.BigEndian.Uint16(r.Key)); typ != consumerMemberMetadataType {
				got = append(got, maskMetadataHash(fmt.Sprintf("rec %x %x", r.Key, r.Value)))
			}
		}
		h.records = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 3 && fs[0] == "rec":
			if !strings.HasPrefix(fs[1], "0005") {
				want = append(want, maskMetadataHash(sc.Text()))
			}
		case len(fs) == 10 && fs[0] == "step":
			want = append(want, "answer "+fs[9])
			h.now += 10
			epoch, _ := strconv.Atoi(fs[2])
			var r *ConsumerHeartbeatResult
			switch fs[3] {
			case "join":
				r = h.join(fs[1], "foo")
			case "-":
				r = h.beat(fs[1], int32(epoch), nil)
			case "revoked":
				r = h.beat(fs[1], int32(epoch), []OwnedTopic{{TopicID: foo, Partitions: []int32{0}}})
			case "none":
				r = h.beat(fs[1], int32(epoch), []OwnedTopic{})
			}
			got = append(got, fmt.Sprintf("answer %d", r.MemberEpoch))
			flush()
		}
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Fatalf("Gregor:\n%s\nKafka 4.4.0:\n%s", g, w)
	}
}

// maskMetadataHash replaces the MetadataHash tag of a group epoch record
// line ("rec 0003... value") with "<hash>".
func maskMetadataHash(line string) string {
	fs := strings.Fields(line)
	if len(fs) != 3 || !strings.HasPrefix(fs[1], "0003") || len(fs[2]) != len("0000")+8+6+16 {
		return line
	}
	return fs[0] + " " + fs[1] + " " + fs[2][:len(fs[2])-16] + "<hash>"
}

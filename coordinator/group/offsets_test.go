package group

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitOne(group string, gen int32, member, topic string, partition int32, offset int64) CommitRequest {
	return CommitRequest{GroupID: group, Generation: gen, MemberID: member, Version: 8,
		Topics: []CommitTopic{{Topic: topic, Partitions: []CommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: 0, Metadata: sp("md")}}}}}
}

// TestOffsetDeleteOnClassicGroupAnswersPerPartition: Kafka's
// OffsetMetadataManager.deleteOffsets with ClassicGroup.validateOffsetDelete
// and isSubscribedToTopic: a "consumer" group with members answers per
// partition, GROUP_SUBSCRIBED_TO_TOPIC for the topics in its members'
// subscriptions (from the generation's protocol metadata, also after
// replay), and deletes the others; a group of another protocol type with
// members is NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.
func TestOffsetDeleteOnClassicGroupAnswersPerPartition(t *testing.T) {
	h := newHarness(t, Config{})
	sub := kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"t"}}
	a := h.joinResult(h.join(JoinRequest{GroupID: "c", ClientID: "a",
		Protocols: []Protocol{{Name: "range", Metadata: sub.AppendTo(nil)}}})).MemberID
	h.sync(SyncRequest{GroupID: "c", Generation: 1, MemberID: a})
	h.wantCode(h.commit(commitOne("c", 1, a, "t", 0, 5)), nil)
	h.wantCode(h.commit(commitOne("c", 1, a, "u", 0, 7)), nil)
	k := h.joinResult(h.join(JoinRequest{GroupID: "k", ClientID: "k", ProtocolType: "connect"})).MemberID
	h.sync(SyncRequest{GroupID: "k", Generation: 1, MemberID: k})

	del := func(c *Coordinator, group string) *OffsetDeleteResult {
		c.DeleteOffsets(h.now, 1, OffsetDeleteRequest{GroupID: group, Topics: []FetchTopic{
			{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "u", Partitions: []int32{0}}}})
		e := c.Ready()
		h.records = append(h.records, e.Records...)
		return e.Replies[0].Result.(*OffsetDeleteResult)
	}
	// Replayed, the group knows its subscriptions as well.
	c2 := New(Config{})
	for _, r := range h.records {
		if err := c2.Load(h.now, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]*Coordinator{"live": h.c, "replayed": c2} {
		if got, want := describeResult(del(c, "c")), "offset-delete OK [t-0:GROUP_SUBSCRIBED_TO_TOPIC t-1:GROUP_SUBSCRIBED_TO_TOPIC u-0:OK]"; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
		if f := c.fetchOffsets(FetchRequest{GroupID: "c"}); describeResult(f) != `fetch OK [t-0=5(e0,"md")]` {
			t.Errorf("%s: after delete %s", name, describeResult(f))
		}
		if got := del(c, "k"); got.ErrorCode != kerr.NonEmptyGroup.Code || len(got.Topics) != 0 {
			t.Errorf("%s: connect group: %s", name, describeResult(got))
		}
		if got := del(c, "nope"); got.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("%s: unknown group: %s", name, describeResult(got))
		}
	}
}

func TestSubscriptionTopicsParsesTheVersion0Prefix(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		md := kmsg.ConsumerMemberMetadata{Version: v, Topics: []string{"a", "b"}, UserData: []byte("x")}
		if got, ok := subscriptionTopics(md.AppendTo(nil)); !ok || !reflect.DeepEqual(got, []string{"a", "b"}) {
			t.Errorf("v%d: %v %v", v, got, ok)
		}
	}
	for _, b := range [][]byte{nil, []byte("m-a"), {0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1, 0, 5, 'a'}, {0, 0, 0, 0, 0, 0}} {
		if got, ok := subscriptionTopics(b); ok {
			t.Errorf("%x parsed as %v", b, got)
		}
	}
}

// TestReplayRebuildsGroupsAndOffsets: the records a coordinator writes,
// loaded into a new one, give the same groups and offsets.
func TestReplayRebuildsGroupsAndOffsets(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.joinResult(h.join(JoinRequest{GroupID: "g", ClientID: "a", InstanceID: sp("ia")})).MemberID
	h.sync(SyncRequest{GroupID: "g", Generation: 1, MemberID: a, Assignments: map[string][]byte{a: []byte("A")}})
	h.commit(commitOne("g", 1, a, "t", 0, 10))
	h.commit(commitOne("g", 1, a, "t", 1, 20))
	h.commit(commitOne("g", 1, a, "t", 0, 11))
	h.commit(commitOne("gone", -1, "", "t", 0, 1))
	id := h.id()
	h.c.DeleteGroups(h.now, id, []string{"gone"})
	h.drain()

	c2 := New(Config{})
	for _, r := range h.records {
		if err := c2.Load(h.now, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if e := c2.Ready(); len(e.Records)+len(e.Replies) != 0 {
		t.Fatalf("Load produced effects: %+v", e)
	}
	if got, want := c2.DescribeGroups([]string{"g", "gone"}), h.c.DescribeGroups([]string{"g", "gone"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed groups:\n%+v\nwant\n%+v", got, want)
	}
	if got, want := c2.fetchOffsets(FetchRequest{GroupID: "g"}), h.c.fetchOffsets(FetchRequest{GroupID: "g"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed offsets %s, want %s", describeResult(got), describeResult(want))
	}
	// The loaded member keeps its generation and assignment.
	c2.Heartbeat(h.now, 1, HeartbeatRequest{GroupID: "g", Generation: 1, MemberID: a, InstanceID: sp("ia")})
	if r := c2.Ready().Replies[0].Result.(*HeartbeatResult); r.ErrorCode != 0 {
		t.Fatalf("heartbeat after replay: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := c2.Load(0, []byte{0, 9, 1}, nil); err == nil {
		t.Fatal("unknown key version accepted")
	}
}

// TestPartitionForMatchesKafka: Utils.abs(groupId.hashCode()) % 50; the
// hashes are Java's String.hashCode over UTF-16 code units, computed
// independently.
func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tt := range []struct {
		group string
		want  int32
	}{
		{"", 0},
		{"a", 47},                     // hashCode 97
		{"my-group", 12},              // hashCode -1906497762
		{"console-consumer-12345", 6}, // hashCode 158455506
		{"polygenelubricants", 0},     // hashCode Integer.MIN_VALUE: Utils.abs gives 0
		{"gr\U0001F600up", 29},        // a surrogate pair: hashCode 462876329
	} {
		if got := PartitionFor(tt.group, 50); got != tt.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tt.group, got, tt.want)
		}
	}
}

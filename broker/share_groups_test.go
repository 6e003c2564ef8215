package broker

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/share"
)

// shareGroupTestConfig is a broker that serves share groups.
func shareGroupTestConfig(dir string) Config {
	cfg := groupTestConfig(dir)
	cfg.testHooks.shareGroups = true
	return cfg
}

// shareMember is a KIP-932 member driven by hand with kmsg requests.
type shareMember struct {
	t     *testing.T
	c     *rawConn
	group string
	id    string
	epoch int32
	owned map[[16]byte][]int32
}

// send sends one ShareGroupHeartbeat at epoch and returns the answer,
// taking its epoch and assignment only when it is not an error.
func (m *shareMember) send(epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, epoch
	if len(topics) > 0 {
		req.SubscribedTopicNames = topics
	}
	resp := m.c.do(req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = map[[16]byte][]int32{}
			for _, tp := range resp.Assignment.TopicPartitions {
				m.owned[tp.TopicID] = append([]int32(nil), tp.Partitions...)
			}
		}
	}
	return resp
}

// heartbeat is send at the member's epoch (0 with topics: a join), which
// must succeed.
func (m *shareMember) heartbeat(topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	m.t.Helper()
	epoch := m.epoch
	if len(topics) > 0 {
		epoch = 0
	}
	resp := m.send(epoch, topics...)
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s heartbeat at epoch %d: %v %v", m.id, epoch, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	return resp
}

// covers heartbeats every member and reports whether their assignments of
// topic together hold partitions 0..n-1, each member holding at least
// one.
func covers(members []*shareMember, topic [16]byte, n int32) bool {
	held := map[int32]bool{}
	for _, m := range members {
		m.heartbeat()
		if len(m.owned[topic]) == 0 {
			return false
		}
		for _, p := range m.owned[topic] {
			held[p] = true
		}
	}
	return len(held) == int(n)
}

func describeShareGroup(t *testing.T, c *rawConn, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.SetVersion(1)
	req.GroupIDs = []string{group}
	return c.do(req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
}

// readShareStateOf reads the share-partition state of group's partition p
// of topic through the broker's persister.
func readShareStateOf(t *testing.T, b *Broker, group string, topic [16]byte, p int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition = p
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	res, err := b.shareState.readShareState(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return res.Topics[0].Partitions[0]
}

// TestShareGroupHeartbeatAssignsLeavesFencesAndDeletes drives two raw
// share group members: once the share coordinator has initialized the
// topic's share-partition state, their assignments cover every partition;
// epochs advance; a wrong epoch is FENCED_MEMBER_EPOCH; a leave hands the
// partitions to the other member; ShareGroupDescribe and ListGroups show
// the group; DeleteGroups refuses it while it has members and then deletes
// it with its share state.
func TestShareGroupHeartbeatAssignsLeavesFencesAndDeletes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, shareGroupTestConfig(t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopics(t, ctx, b.Addr(), 4, "queue")
	topic := b.lookupTopic("queue").id
	const group = "sg"

	a := &shareMember{t: t, c: dialRaw(t, b.Addr()), group: group, id: "member-a"}
	c := &shareMember{t: t, c: dialRaw(t, b.Addr()), group: group, id: "member-c"}
	first := a.heartbeat("queue")
	if first.MemberID == nil || *first.MemberID != "member-a" || first.MemberEpoch < 1 || first.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", first)
	}
	c.heartbeat("queue")
	joinEpoch := a.epoch
	members := []*shareMember{a, c}
	waitFor(t, "both members assigned and every partition held", func() bool { return covers(members, topic, 4) })
	if a.epoch <= joinEpoch {
		t.Fatalf("epoch did not advance: joined at %d, now %d", joinEpoch, a.epoch)
	}
	for p := range int32(4) {
		if st := readShareStateOf(t, b, group, topic, p); st.ErrorCode != 0 || st.StartOffset != -1 {
			t.Fatalf("share state of partition %d: %+v", p, st)
		}
	}

	d := describeShareGroup(t, a.c, group)
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || len(d.Members) != 2 || d.GroupEpoch < d.AssignmentEpoch {
		t.Fatalf("ShareGroupDescribe: %+v", d)
	}
	for _, m := range d.Members {
		if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "queue" || len(m.SubscribedTopicNames) != 1 {
			t.Fatalf("described member: %+v", m)
		}
	}
	if d := describeShareGroup(t, a.c, "nope"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of a missing group: %v", kerr.ErrorForCode(d.ErrorCode))
	}

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.SetVersion(5)
	lreq.TypesFilter = []string{"Share"}
	if l := a.c.do(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].GroupType != "share" ||
		l.Groups[0].ProtocolType != "share" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("a share filter listed %+v", l.Groups)
	}
	lreq.TypesFilter = []string{"consumer"}
	if l := a.c.do(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("a consumer filter listed %+v", l.Groups)
	}

	// Refusals, each leaving the member as it was.
	for _, tc := range []struct {
		name  string
		m     *shareMember
		epoch int32
		want  *kerr.Error
	}{
		{"an epoch ahead of the member's", a, a.epoch + 1, kerr.FencedMemberEpoch},
		{"an unknown member", &shareMember{t: t, c: a.c, group: group, id: "ghost"}, 3, kerr.UnknownMemberID},
		{"a missing group", &shareMember{t: t, c: a.c, group: "missing", id: "x"}, 3, kerr.GroupIDNotFound},
		{"an empty member id", &shareMember{t: t, c: a.c, group: group, id: ""}, 3, kerr.InvalidRequest},
	} {
		if r := tc.m.send(tc.epoch); r.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(r.ErrorCode), tc.want)
		}
	}
	a.heartbeat() // its own epoch still works

	// Another group type under the same id, both ways.
	join := joinReq(5, group, "", 30000, nil)
	if r := a.c.do(join).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a share group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	consumer := &rawMember{t: t, c: a.c, group: group, id: "cm"}
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.SetVersion(1)
	creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis, creq.SubscribedTopicNames = group, consumer.id, 30000, []string{"queue"}
	creq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := a.c.do(creq).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a share group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	creq.Group = "consumers"
	if r := a.c.do(creq).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("consumer heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := (&shareMember{t: t, c: a.c, group: "consumers", id: "s"}).send(0, "queue"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share heartbeat to a consumer group: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// a leaves: c alone holds every partition.
	if r := a.send(-1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	waitFor(t, "c alone with every partition", func() bool { return covers([]*shareMember{c}, topic, 4) })
	if n := len(c.owned[topic]); n != 4 {
		t.Fatalf("c holds %d partitions", n)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{group}
	if r := a.c.do(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a group with a member: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	if st := readShareStateOf(t, b, group, topic, 0); st.ErrorCode != 0 {
		t.Fatalf("a refused delete touched the share state: %+v", st)
	}
	if r := c.send(-1); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := describeShareGroup(t, a.c, group); d.ErrorCode != 0 || d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("ShareGroupDescribe of the empty group: %+v", d)
	}
	del.Groups = []string{group, "missing"}
	r := a.c.do(del).(*kmsg.DeleteGroupsResponse)
	if r.Groups[0].Group != group || r.Groups[0].ErrorCode != 0 || r.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete: %+v", r.Groups)
	}
	for p := range int32(4) {
		// The share coordinator reads a share-partition without state
		// as INVALID_REQUEST, as Kafka's ShareCoordinatorShard.
		if st := readShareStateOf(t, b, group, topic, p); st.ErrorCode != kerr.InvalidRequest.Code || deref(st.ErrorMessage) != "Read operation on uninitialized share partition not allowed." {
			t.Fatalf("share state of partition %d after the delete: %v", p, kerr.ErrorForCode(st.ErrorCode))
		}
	}
	if d := describeShareGroup(t, a.c, group); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after the delete: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	lreq.TypesFilter = []string{"share"}
	if l := a.c.do(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("the deleted group is listed: %+v", l.Groups)
	}
}

// TestShareGroupSurvivesRestart: a share group's members, epochs,
// assignments and initialized share state are back after the broker
// restarts on its data directory, and a member goes on heartbeating at its
// epoch.
func TestShareGroupSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Start(ctx, shareGroupTestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	createTopics(t, ctx, b.Addr(), 3, "jobs")
	topic := b.lookupTopic("jobs").id
	m := &shareMember{t: t, c: dialRaw(t, b.Addr()), group: "durable", id: "m1"}
	m.heartbeat("jobs")
	waitFor(t, "every partition assigned", func() bool { return covers([]*shareMember{m}, topic, 3) })
	before := describeShareGroup(t, m.c, "durable")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, shareGroupTestConfig(dir))
	m.c = dialRaw(t, b.Addr())
	after := describeShareGroup(t, m.c, "durable")
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		len(after.Members) != 1 || after.Members[0].MemberEpoch != m.epoch {
		t.Fatalf("after the restart: %+v, before: %+v", after, before)
	}
	got := after.Members[0].Assignment.TopicPartitions
	if len(got) != 1 || !sameInt32s(got[0].Partitions, []int32{0, 1, 2}) {
		t.Fatalf("assignment after the restart: %+v", got)
	}
	m.heartbeat()
	if !sameInt32s(m.owned[topic], []int32{0, 1, 2}) {
		t.Fatalf("heartbeat after the restart holds %v", m.owned[topic])
	}
	for p := range int32(3) {
		if st := readShareStateOf(t, b, "durable", topic, p); st.ErrorCode != 0 {
			t.Fatalf("share state of partition %d after the restart: %v", p, kerr.ErrorForCode(st.ErrorCode))
		}
	}
}

func sameInt32s(a, b []int32) bool {
	a, b = append([]int32(nil), a...), append([]int32(nil), b...)
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestShareGroupKeysOnlyWhileServed: without share groups switched on,
// ShareGroupHeartbeat and ShareGroupDescribe are not advertised and
// FindCoordinator refuses the SHARE key type; with them on, both are
// advertised at v1 and a well-formed share-partition key finds this node.
func TestShareGroupKeysOnlyWhileServed(t *testing.T) {
	t.Parallel()
	advertised := func(c *rawConn) map[int16][2]int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		out := map[int16][2]int16{}
		for _, k := range c.do(req).(*kmsg.ApiVersionsResponse).ApiKeys {
			out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return out
	}
	findShare := func(c *rawConn, keys ...string) []kmsg.FindCoordinatorResponseCoordinator {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(6)
		req.CoordinatorType, req.CoordinatorKeys = 2, keys
		return c.do(req).(*kmsg.FindCoordinatorResponse).Coordinators
	}
	valid := share.Key{GroupID: "g", TopicID: [16]byte{1, 2, 3}, Partition: 4}.CoordinatorKey()

	off := dialRaw(t, startBroker(t, groupTestConfig("")).Addr())
	if v := advertised(off); v[76] != ([2]int16{}) || v[77] != ([2]int16{}) {
		t.Fatalf("share group keys advertised while off: %v %v", v[76], v[77])
	}
	if cs := findShare(off, valid); cs[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator SHARE while off: %v", kerr.ErrorForCode(cs[0].ErrorCode))
	}

	b := startBroker(t, shareGroupTestConfig(""))
	on := dialRaw(t, b.Addr())
	if v := advertised(on); v[76] != [2]int16{1, 1} || v[77] != [2]int16{1, 1} {
		t.Fatalf("share group keys advertised as %v %v", v[76], v[77])
	}
	cs := findShare(on, valid, "g:notanid:0", "g", valid+":1")
	if cs[0].ErrorCode != 0 || cs[0].NodeID != b.cfg.NodeID {
		t.Fatalf("FindCoordinator SHARE: %+v", cs[0])
	}
	for _, c := range cs[1:] {
		if c.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("FindCoordinator SHARE %q: %v", c.Key, kerr.ErrorForCode(c.ErrorCode))
		}
	}
}

func TestParseShareCoordinatorKey(t *testing.T) {
	id := [16]byte{0xff, 0xfe, 7}
	valid := share.Key{GroupID: "my-group", TopicID: id, Partition: 12}
	for _, tc := range []struct {
		key  string
		want *share.Key
	}{
		{valid.CoordinatorKey(), &valid},
		{"", nil},
		{"my-group", nil},
		{":" + share.Key{TopicID: id}.CoordinatorKey()[1:], nil},   // no group
		{"my-group:AAAA:1", nil},                                   // a short topic id
		{"my-group:" + valid.CoordinatorKey()[9:31] + "==:1", nil}, // padded
		{valid.CoordinatorKey()[:len(valid.CoordinatorKey())-2] + "-1", nil},
		{valid.CoordinatorKey() + "x", nil},
		{valid.CoordinatorKey() + ":3", nil},
	} {
		got, err := parseShareCoordinatorKey(tc.key)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%q parsed as %+v", tc.key, got)
		case tc.want != nil && (err != nil || got != *tc.want):
			t.Errorf("%q: %+v %v, want %+v", tc.key, got, err, *tc.want)
		}
	}
}

// FuzzParseShareCoordinatorKey checks that parsing any FindCoordinator
// SHARE key never panics, and that a key that parses names the same
// share-partition as the key Kafka's asCoordinatorKey would write for it.
func FuzzParseShareCoordinatorKey(f *testing.F) {
	f.Add(share.Key{GroupID: "g", Partition: 3}.CoordinatorKey())
	f.Add("g:AAAAAAAAAAAAAAAAAAAAAA:007")
	f.Add("::")
	f.Fuzz(func(t *testing.T, key string) {
		k, err := parseShareCoordinatorKey(key)
		if err != nil {
			return
		}
		again, err := parseShareCoordinatorKey(k.CoordinatorKey())
		if err != nil || again != k {
			t.Fatalf("%q parsed as %+v, whose key %q parses as %+v %v", key, k, k.CoordinatorKey(), again, err)
		}
	})
}

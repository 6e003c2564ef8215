package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/vfs"
)

// consumerGroupTestConfig is groupTestConfig with fast KIP-848 heartbeats
// and a short session, so tests converge and expire quickly.
func consumerGroupTestConfig(dir string) Config {
	cfg := groupTestConfig(dir)
	cfg.GroupConsumerHeartbeatIntervalMs = 100
	cfg.GroupConsumerSessionTimeoutMs = 1500
	return cfg
}

// rawMember is a KIP-848 member driven by hand: it acknowledges whatever
// assignment it was last given, as a client that revokes at once would.
type rawMember struct {
	t     *testing.T
	c     *rawConn
	group string
	id    string
	epoch int32
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

func (m *rawMember) heartbeat(join bool, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.Topics = m.owned
	if join {
		req.MemberEpoch, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 0, 30000, topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp := m.c.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s heartbeat: %v %v", m.id, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, at := range resp.Assignment.Topics {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = at.TopicID, at.Partitions
			m.owned = append(m.owned, t)
		}
	}
	return resp
}

func (m *rawMember) count() int {
	n := 0
	for _, t := range m.owned {
		n += len(t.Partitions)
	}
	return n
}

func describeConsumerGroup(t *testing.T, c *rawConn, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.SetVersion(1)
	req.Groups = []string{group}
	return c.do(req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
}

// TestConsumerGroupHeartbeatMembersConvergeLeaveAndExpire drives three raw
// KIP-848 members: their assignments converge without a partition owned
// twice, a leaving member's partitions go to the others, and a member that
// stops heartbeating is fenced after group.consumer.session.timeout.ms.
func TestConsumerGroupHeartbeatMembersConvergeLeaveAndExpire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, consumerGroupTestConfig(""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, _ := newAdmin(t, b.Addr())
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	const group = "raw848"
	var ms []*rawMember
	for _, id := range []string{"a", "b", "c"} {
		m := &rawMember{t: t, c: dialRaw(t, b.Addr()), group: group, id: id}
		if r := m.heartbeat(true, "work"); r.HeartbeatIntervalMillis != 100 {
			t.Fatalf("heartbeat interval %d", r.HeartbeatIntervalMillis)
		}
		ms = append(ms, m)
	}
	converged := func(members []*rawMember, each int) bool {
		owner := map[[2]int64]string{}
		for _, m := range members {
			m.heartbeat(false)
			for _, tp := range m.owned {
				for _, p := range tp.Partitions {
					k := [2]int64{int64(tp.TopicID[0]), int64(p)}
					if owner[k] != "" {
						t.Fatalf("partition %d owned by %s and %s", p, owner[k], m.id)
					}
					owner[k] = m.id
				}
			}
		}
		for _, m := range members {
			if m.count() != each {
				return false
			}
		}
		return true
	}
	waitFor(t, "three members with two partitions each", func() bool { return converged(ms, 2) })
	d := describeConsumerGroup(t, ms[0].c, group)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 3 || d.AssignorName != "uniform" {
		t.Fatalf("ConsumerGroupDescribe: %+v", d)
	}
	if d.Members[0].Assignment.TopicPartitions[0].Topic != "work" {
		t.Fatalf("describe did not name the topic: %+v", d.Members[0].Assignment)
	}
	listed, err := adm.ListGroups(ctx, "Stable")
	if err != nil || listed[group].ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v %v", listed, err)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.SetVersion(5)
	lreq.TypesFilter = []string{"classic"}
	if l := ms[0].c.do(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("a classic filter listed %+v", l.Groups)
	}
	lreq.TypesFilter = []string{"Consumer"}
	if l := ms[0].c.do(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].GroupType != "consumer" {
		t.Fatalf("a consumer filter listed %+v", l.Groups)
	}

	// a leaves: b and c share the six partitions.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.SetVersion(1)
	leave.Group, leave.MemberID, leave.MemberEpoch = group, "a", -1
	if r := ms[0].c.do(leave).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	waitFor(t, "b and c with three partitions each", func() bool { return converged(ms[1:], 3) })

	// c goes silent: after its session timeout b owns everything.
	start := time.Now()
	waitFor(t, "b alone with six partitions", func() bool { return converged(ms[1:2], 6) })
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("c was fenced after %v, before its 1.5s session timeout", waited)
	}
	// c learns it is gone.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, "c", ms[2].epoch, -1
	if r := ms[2].c.do(req).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A commit with a stale epoch is refused, with the current one taken.
	commit := commitReq(9, group, "b", ms[1].epoch-1, "work", 5)
	if r := ms[1].c.do(commit).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	commit.Generation = ms[1].epoch
	if r := ms[1].c.do(commit).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
}

// TestFranzGoServerSideBalancerProcessesEveryRecordAndResumes: franz-go
// members using KIP-848 (kgo.ServerSideBalancer) join and leave while
// records flow; every record is processed; after a broker restart the
// group's offsets and state are back and a new member resumes from them.
func TestFranzGoServerSideBalancerProcessesEveryRecordAndResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	first, err := Start(ctx, consumerGroupTestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	const topic, group = "events848", "workers848"
	prod := roundRobinProducer(t, first.Addr())
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	seen := newSeenSet()
	opts := []kgo.Opt{kgo.ServerSideBalancer()}
	m1 := startFranzMember(t, first.Addr(), group, topic, kgo.RangeBalancer(), seen, opts...)
	produceN(t, prod, topic, 300, "a")
	m2 := startFranzMember(t, first.Addr(), group, topic, kgo.RangeBalancer(), seen, opts...)
	m3 := startFranzMember(t, first.Addr(), group, topic, kgo.RangeBalancer(), seen, opts...)
	produceN(t, prod, topic, 300, "b")
	adm := kadm.NewClient(prod)
	waitForGroup(t, "three KIP-848 members", func() bool {
		d, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return false
		}
		g := d[group]
		return g.Err == nil && g.State == "Stable" && len(g.Members) == 3
	})
	m2.stop(t)
	produceN(t, prod, topic, 300, "c")
	waitForGroup(t, "every record processed", func() bool { return seen.len() == 900 })
	m1.stop(t)
	m3.stop(t)
	waitForGroup(t, "offsets committed to the end", func() bool { return committedEqualsEnd(t, adm, group, topic) })
	prod.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second, err := Start(ctx, consumerGroupTestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	prod = roundRobinProducer(t, second.Addr())
	defer prod.Close()
	adm = kadm.NewClient(prod)
	if !committedEqualsEnd(t, adm, group, topic) {
		t.Fatal("committed offsets lost across the restart")
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil || listed[group].ProtocolType != "consumer" {
		t.Fatalf("after restart ListGroups: %+v %v", listed, err)
	}
	produceN(t, prod, topic, 60, "d")
	after := newSeenSet()
	m4 := startFranzMember(t, second.Addr(), group, topic, kgo.RangeBalancer(), after, opts...)
	defer m4.stop(t)
	waitForGroup(t, "the new records, and only them", func() bool { return after.len() == 60 })
}

// TestGroupCoordinatorRevertsWhenOffsetsTopicWriteFails: while writes to
// __consumer_offsets fail (vfs.FaultFS), a commit is answered
// NOT_COORDINATOR and a KIP-848 join too, as Kafka maps a storage error, and
// neither leaves a trace: the coordinator is rebuilt from the log, so the
// earlier offset is still the committed one and the group does not exist.
// Once writes work again, both succeed.
func TestGroupCoordinatorRevertsWhenOffsetsTopicWriteFails(t *testing.T) {
	t.Parallel()
	fsys := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	cfg := consumerGroupTestConfig("")
	cfg.fs = fsys
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	ctr := kmsg.NewPtrCreateTopicsRequest()
	ctr.SetVersion(7)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "work", 1, 1
	ctr.Topics = append(ctr.Topics, ct)
	if r := c.do(ctr).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	commit := func(offset int64) int16 {
		r := c.do(commitReq(9, "simple", "", -1, "work", offset)).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(8)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "simple"
		req.Groups = append(req.Groups, g)
		r := c.do(req).(*kmsg.OffsetFetchResponse)
		if len(r.Groups[0].Topics) == 0 {
			return -1
		}
		return r.Groups[0].Topics[0].Partitions[0].Offset
	}
	if e := commit(5); e != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(e))
	}
	failOffsets := func(op vfs.Op, name string, _ int) vfs.Fault {
		if op == vfs.OpWrite && strings.Contains(name, offsetsTopic) {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	}
	fsys.Arm(failOffsets)
	if e := commit(9); e != kerr.NotCoordinator.Code {
		t.Fatalf("commit while the log fails: %v, want NOT_COORDINATOR", kerr.ErrorForCode(e))
	}
	m := &rawMember{t: t, c: c, group: "g848", id: "m1"}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = m.group, m.id, 30000
	req.SubscribedTopicNames, req.Topics = []string{"work"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := c.do(req).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.NotCoordinator.Code || r.Assignment != nil {
		t.Fatalf("join while the log fails: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
	fsys.Arm(nil)
	if got := fetch(); got != 5 {
		t.Fatalf("committed offset after the failed commit: %d, want 5", got)
	}
	if d := describeConsumerGroup(t, c, "g848"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("the failed join left a group behind: %+v", d)
	}
	if e := commit(9); e != 0 {
		t.Fatalf("commit after recovery: %v", kerr.ErrorForCode(e))
	}
	if got := fetch(); got != 9 {
		t.Fatalf("committed offset: %d, want 9", got)
	}
	// A new consumer group starts at epoch 1 (Kafka 4.4): its first member joins at 2.
	if r := m.heartbeat(true, "work"); r.MemberEpoch != 2 || m.count() != 1 {
		t.Fatalf("join after recovery: %+v", r)
	}
}

package group

// TestDataDriven replays the transcripts in testdata/*.txt: each command is
// one request to the coordinator (or a step of the fake clock), and the
// expected output under it is what the coordinator answers and writes. To
// regenerate the expected outputs after a deliberate change, run
//
//	go test ./coordinator/group -run TestDataDriven -rewrite
//
// and review the diff. The command vocabulary is listed in
// docs/architecture.md (Tests) and described at each command below.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		d := &driver{t: t, h: newHarness(t, Config{}), topics: Topics{}, clients: map[string]*ddClient{}}
		datadriven.RunTest(t, path, d.run)
	})
}

// driver interprets one transcript. It keeps, per KIP-848 member, what a
// well-behaved client would hold, so that "revoke" and "take" can answer
// the last assignment the way librdkafka does.
type driver struct {
	t       *testing.T
	h       *harness
	topics  Topics
	clients map[string]*ddClient
	// shareInits are the state initializations the coordinator asked for
	// and "sginit" has not yet reported done.
	shareInits []ShareStateInit
}

type ddClient struct {
	epoch  int32
	target []OwnedTopic // the last assignment received
	owned  []OwnedTopic // what the client holds
}

func (d *driver) run(t *testing.T, td *datadriven.TestData) string {
	d.t = t
	d.h.t = t
	d.h.log.Reset()
	switch td.Cmd {
	case "config":
		d.config(t, td)
	case "advance":
		d.advance(t, td)
	case "join":
		d.join(t, td)
	case "sync":
		d.sync(t, td)
	case "heartbeat":
		id := d.h.id()
		d.h.c.Heartbeat(d.h.now, id, HeartbeatRequest{GroupID: str(td, "group"), Generation: int32(num(t, td, "generation", 0)),
			MemberID: str(td, "member"), InstanceID: optArg(td, "instance")})
		d.answer(id)
	case "leave":
		var ms []LeaveMember
		for _, m := range vals(td, "members") {
			lm := LeaveMember{MemberID: m}
			if i := strings.IndexByte(m, '/'); i >= 0 {
				lm = LeaveMember{MemberID: m[:i], InstanceID: sp(m[i+1:])}
			}
			ms = append(ms, lm)
		}
		id := d.h.id()
		d.h.c.LeaveGroup(d.h.now, id, LeaveRequest{GroupID: str(td, "group"), Members: ms})
		d.answer(id)
	case "commit":
		d.commit(t, td)
	case "fetch":
		id := d.h.id()
		d.h.c.FetchOffsets(d.h.now, id, FetchRequest{GroupID: str(td, "group"), Topics: fetchTopics(t, td)})
		d.answer(id)
	case "delete-offsets":
		id := d.h.id()
		d.h.c.DeleteOffsets(d.h.now, id, OffsetDeleteRequest{GroupID: str(td, "group"), Topics: fetchTopics(t, td)})
		d.answer(id)
	case "delete-groups":
		id := d.h.id()
		d.h.c.DeleteGroups(d.h.now, id, vals(td, "groups"))
		d.answer(id)
	case "describe":
		d.h.describe(vals(td, "group")...)
	case "list-groups":
		var gs []string
		for _, g := range d.h.c.ListGroups(nil, nil) {
			gs = append(gs, fmt.Sprintf("%s(%s)", g.GroupID, g.State))
		}
		d.h.logf("groups [%s]", strings.Join(gs, " "))
	case "topics":
		d.setTopics(t, td)
	case "cghb":
		d.cghb(t, td)
	case "revoke", "take":
		d.reconcile(t, td)
	case "cgdescribe":
		d.describeConsumerGroup(str(td, "group"))
	case "sghb":
		d.sghb(t, td)
	case "sginit":
		d.sginit(t, td)
	case "sgdescribe":
		d.describeShareGroup(groupArg(td))
	case "rebuild":
		d.rebuild(t)
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	return d.h.log.String()
}

// str is the value of key, or "" when absent.
func str(td *datadriven.TestData, key string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

// optArg is the value of key, or nil when absent.
func optArg(td *datadriven.TestData, key string) *string {
	if !td.HasArg(key) {
		return nil
	}
	return sp(str(td, key))
}

// vals is the list value of key: key=(a,b) or key=a; () is the empty list.
func vals(td *datadriven.TestData, key string) []string {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 1 && a.Vals[0] == "" {
				return []string{}
			}
			return a.Vals
		}
	}
	return nil
}

func num(t *testing.T, td *datadriven.TestData, key string, def int64) int64 {
	t.Helper()
	if !td.HasArg(key) {
		return def
	}
	n, err := strconv.ParseInt(str(td, key), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s: %v", td.Pos, key, err)
	}
	return n
}

// answer prints what the request brought, and says so when its own answer
// is parked.
func (d *driver) answer(id ReplyID) {
	d.h.drain()
	if d.h.parked(id) {
		d.h.logf("#%d parked", id)
	}
}

func (d *driver) config(t *testing.T, td *datadriven.TestData) {
	var cfg Config
	for _, a := range td.CmdArgs {
		v, err := strconv.ParseInt(a.Vals[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %s: %v", td.Pos, a.Key, err)
		}
		switch a.Key {
		case "offsets-retention-ms":
			cfg.OffsetsRetentionMs = v
		case "offsets-retention-check-interval-ms":
			cfg.OffsetsRetentionCheckIntervalMs = v
		case "initial-rebalance-delay-ms":
			cfg.InitialRebalanceDelayMs = v
		case "consumer-session-timeout-ms":
			cfg.ConsumerSessionTimeoutMs = int32(v)
		case "consumer-assignment-interval-ms":
			cfg.ConsumerAssignmentIntervalMs = v
		case "share-session-timeout-ms":
			cfg.ShareSessionTimeoutMs = int32(v)
		case "share-max-size":
			cfg.ShareMaxSize = int(v)
		case "share-assignment-interval-ms":
			cfg.ShareAssignmentIntervalMs = v
		default:
			t.Fatalf("%s: unknown config %q", td.Pos, a.Key)
		}
	}
	d.h = newHarness(t, cfg)
	d.topics = Topics{}
	d.clients = map[string]*ddClient{}
	d.shareInits = nil
}

// advance moves the fake clock and runs the coordinator's timers, unless
// no-tick is given (the next request then sees the new time first).
func (d *driver) advance(t *testing.T, td *datadriven.TestData) {
	ms := num(t, td, "ms", 0)
	if td.HasArg("no-tick") {
		d.h.now += ms
		d.h.logf("t=%d", d.h.now)
		return
	}
	d.h.advance(ms)
}

func (d *driver) join(t *testing.T, td *datadriven.TestData) {
	req := JoinRequest{GroupID: str(td, "group"), MemberID: str(td, "member"), ClientID: str(td, "client"),
		InstanceID: optArg(td, "instance"), RequireKnownMemberID: td.HasArg("require-known-member-id"),
		SupportsSkipAssignment: td.HasArg("skip-assignment"), ProtocolType: "consumer",
		SessionTimeoutMs: int32(num(t, td, "session", 10000)), RebalanceTimeoutMs: int32(num(t, td, "rebalance", 30000))}
	meta := "m-" + req.ClientID
	if td.HasArg("metadata") {
		meta = str(td, "metadata")
	}
	protocols := vals(td, "protocols")
	if protocols == nil {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: []byte(meta)})
	}
	id := d.h.id()
	d.h.c.JoinGroup(d.h.now, id, req)
	d.answer(id)
}

// sync takes the leader's assignments as assign=member:value, repeated.
func (d *driver) sync(t *testing.T, td *datadriven.TestData) {
	req := SyncRequest{GroupID: str(td, "group"), Generation: int32(num(t, td, "generation", 0)), MemberID: str(td, "member"),
		InstanceID: optArg(td, "instance")}
	for _, a := range td.CmdArgs {
		if a.Key != "assign" {
			continue
		}
		m, v, ok := strings.Cut(a.Vals[0], ":")
		if !ok {
			t.Fatalf("%s: assign=%s: want member:assignment", td.Pos, a.Vals[0])
		}
		if req.Assignments == nil {
			req.Assignments = map[string][]byte{}
		}
		req.Assignments[m] = []byte(v)
	}
	id := d.h.id()
	d.h.c.SyncGroup(d.h.now, id, req)
	d.answer(id)
}

// commit commits offset=N (metadata "md", or metadata-bytes=N of zeros) for
// topic/partition at version (default 8).
func (d *driver) commit(t *testing.T, td *datadriven.TestData) {
	md := "md"
	if td.HasArg("metadata-bytes") {
		md = string(make([]byte, num(t, td, "metadata-bytes", 0)))
	}
	req := CommitRequest{GroupID: str(td, "group"), Generation: int32(num(t, td, "generation", -1)), MemberID: str(td, "member"),
		Version: int16(num(t, td, "version", 8)),
		Topics: []CommitTopic{{Topic: str(td, "topic"), Partitions: []CommitPartition{{Partition: int32(num(t, td, "partition", 0)),
			Offset: num(t, td, "offset", 0), Metadata: &md}}}}}
	id := d.h.id()
	d.h.c.CommitOffsets(d.h.now, id, req)
	d.answer(id)
}

// fetchTopics reads topic=t partitions=(0,1); no topic means every topic.
func fetchTopics(t *testing.T, td *datadriven.TestData) []FetchTopic {
	if !td.HasArg("topic") {
		return nil
	}
	ft := FetchTopic{Topic: str(td, "topic")}
	for _, p := range vals(td, "partitions") {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			t.Fatalf("%s: partitions: %v", td.Pos, err)
		}
		ft.Partitions = append(ft.Partitions, int32(n))
	}
	return []FetchTopic{ft}
}

// setTopics sets name=partitions in the topic image KIP-848 heartbeats see;
// a topic keeps its id when it grows.
func (d *driver) setTopics(t *testing.T, td *datadriven.TestData) {
	for _, a := range td.CmdArgs {
		n, err := strconv.ParseInt(a.Vals[0], 10, 32)
		if err != nil {
			t.Fatalf("%s: %s: %v", td.Pos, a.Key, err)
		}
		if n == 0 {
			delete(d.topics, a.Key)
			continue
		}
		id := TopicID{byte(len(d.topics) + 1), 0xaa}
		if old, ok := d.topics[a.Key]; ok {
			id = old.ID
		}
		d.topics[a.Key] = TopicInfo{Name: a.Key, ID: id, Partitions: int32(n)}
	}
	var ts []string
	for _, n := range sortedKeys(d.topics) {
		ts = append(ts, fmt.Sprintf("%s:%d", n, d.topics[n].Partitions))
	}
	d.h.logf("topics [%s]", strings.Join(ts, " "))
}

func (d *driver) client(member string) *ddClient {
	c := d.clients[member]
	if c == nil {
		c = &ddClient{}
		d.clients[member] = c
	}
	return c
}

// cghb sends a ConsumerGroupHeartbeat. epoch defaults to the member's last
// epoch; names, regex and owned are sent only when given (owned=() sends an
// empty list; owned=(t0:0 1, t1:0) the listed partitions); rebalance
// defaults to -1 (unchanged).
func (d *driver) cghb(t *testing.T, td *datadriven.TestData) {
	group := str(td, "group")
	if group == "" {
		group = "g"
	}
	member := str(td, "member")
	c := d.client(member)
	req := ConsumerHeartbeatRequest{Version: 1, GroupID: group, MemberID: member, MemberEpoch: int32(num(t, td, "epoch", int64(c.epoch))),
		InstanceID: optArg(td, "instance"), RebalanceTimeoutMs: int32(num(t, td, "rebalance", -1)),
		SubscribedTopicNames: vals(td, "names"), SubscribedTopicRegex: optArg(td, "regex")}
	if owned := vals(td, "owned"); owned != nil {
		req.TopicPartitions = []OwnedTopic{}
		for _, o := range owned {
			name, ps, _ := strings.Cut(o, ":")
			ot := OwnedTopic{TopicID: d.topics[name].ID}
			for _, p := range strings.Fields(ps) {
				n, err := strconv.ParseInt(p, 10, 32)
				if err != nil {
					t.Fatalf("%s: owned: %v", td.Pos, err)
				}
				ot.Partitions = append(ot.Partitions, int32(n))
			}
			req.TopicPartitions = append(req.TopicPartitions, ot)
		}
		c.owned = req.TopicPartitions
	}
	if req.MemberEpoch == leaveEpoch {
		c.owned = nil
	}
	d.send(c, req)
}

// reconcile is the client's side of a revocation: "revoke" gives up what the
// last assignment no longer holds, "take" takes the whole last assignment;
// either then says so in a heartbeat.
func (d *driver) reconcile(t *testing.T, td *datadriven.TestData) {
	member := str(td, "member")
	c := d.client(member)
	if td.Cmd == "take" {
		c.owned = append([]OwnedTopic{}, c.target...)
	} else {
		var kept []OwnedTopic
		for _, o := range c.owned {
			var ps []int32
			for _, p := range o.Partitions {
				for _, a := range c.target {
					if a.TopicID == o.TopicID && contains32(a.Partitions, p) {
						ps = append(ps, p)
					}
				}
			}
			if len(ps) > 0 {
				kept = append(kept, OwnedTopic{TopicID: o.TopicID, Partitions: ps})
			}
		}
		c.owned = append([]OwnedTopic{}, kept...)
	}
	group := str(td, "group")
	if group == "" {
		group = "g"
	}
	d.h.logf("client holds %s", d.ownedString(c.owned))
	d.send(c, ConsumerHeartbeatRequest{Version: 1, GroupID: group, MemberID: member, MemberEpoch: c.epoch, RebalanceTimeoutMs: -1,
		TopicPartitions: c.owned})
}

func (d *driver) send(c *ddClient, req ConsumerHeartbeatRequest) {
	id := d.h.id()
	d.h.c.ConsumerGroupHeartbeat(d.h.now, id, req, d.topics)
	e := d.h.c.Ready()
	d.h.records = append(d.h.records, e.Records...)
	if len(e.Replies) != 1 {
		d.t.Fatalf("%d replies", len(e.Replies))
	}
	res := e.Replies[0].Result.(*ConsumerHeartbeatResult)
	a := "none"
	if res.Assignment != nil {
		a = d.ownedString(res.Assignment)
		c.target = res.Assignment
	}
	line := fmt.Sprintf("reply %s epoch=%d assignment=%s", errName(res.ErrorCode), res.MemberEpoch, a)
	if res.ErrorMessage != nil {
		line += fmt.Sprintf(" message=%q", *res.ErrorMessage)
	}
	d.h.logf("%s", line)
	if res.ErrorCode == 0 {
		c.epoch = res.MemberEpoch
	}
	d.describeConsumerGroup(req.GroupID)
}

// describeConsumerGroup prints the group's epochs and each member's epoch,
// state, assignment and target.
func (d *driver) describeConsumerGroup(group string) {
	for _, g := range d.h.c.ConsumerGroupDescribe([]string{group}) {
		if g.ErrorCode != 0 {
			d.h.logf("group %s", errName(g.ErrorCode))
			continue
		}
		line := fmt.Sprintf("group %s epoch=%d assignment-epoch=%d", g.State, g.Epoch, g.AssignmentEpoch)
		for _, m := range g.Members {
			st := d.h.c.groups[group].cg.members[m.MemberID].state
			line += fmt.Sprintf(" %s(epoch=%d %s assigned=%s target=%s)", m.MemberID, m.MemberEpoch, st,
				d.ownedString(m.Assignment), d.ownedString(m.TargetAssign))
		}
		d.h.logf("%s", line)
	}
}

func (d *driver) ownedString(ts []OwnedTopic) string {
	names := map[TopicID]string{}
	for n, ti := range d.topics {
		names[ti.ID] = n
	}
	var parts []string
	for _, o := range ts {
		var ps []string
		for _, p := range o.Partitions {
			ps = append(ps, fmt.Sprint(p))
		}
		n, ok := names[o.TopicID]
		if !ok {
			n = fmt.Sprintf("%x", o.TopicID[:2])
		}
		parts = append(parts, n+":"+strings.Join(ps, ","))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

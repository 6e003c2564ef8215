package group

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator the way broker/groups.go does, with a fake
// clock, and writes a transcript of every event and its effects.
type harness struct {
	t       *testing.T
	c       *Coordinator
	now     int64
	nextID  ReplyID
	log     strings.Builder
	results map[ReplyID]any
	records []Record
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, c: New(cfg), now: 1000, results: map[ReplyID]any{}}
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(&h.log, format+"\n", args...)
}

func (h *harness) id() ReplyID { h.nextID++; return h.nextID }

func (h *harness) drain() {
	e := h.c.Ready()
	for _, r := range e.Records {
		h.logf("record %s", describeRecord(r))
		h.records = append(h.records, r)
	}
	for _, r := range e.Replies {
		h.logf("reply #%d %s", r.ID, describeResult(r.Result))
		h.results[r.ID] = r.Result
	}
}

func (h *harness) advance(ms int64) {
	h.now += ms
	h.logf("tick +%dms (t=%d)", ms, h.now)
	h.c.Tick(h.now)
	h.drain()
}

func (h *harness) join(req JoinRequest) ReplyID {
	id := h.id()
	if req.ProtocolType == "" {
		req.ProtocolType = "consumer"
	}
	if req.SessionTimeoutMs == 0 {
		req.SessionTimeoutMs = 10000
	}
	if req.RebalanceTimeoutMs == 0 {
		req.RebalanceTimeoutMs = 30000
	}
	if req.Protocols == nil {
		req.Protocols = []Protocol{{Name: "range", Metadata: []byte("m-" + req.ClientID)}}
	}
	h.logf("#%d join group=%s member=%q instance=%s client=%s protocols=%s v4+=%v", id, req.GroupID, req.MemberID,
		optStr(req.InstanceID), req.ClientID, protocolNames(req.Protocols), req.RequireKnownMemberID)
	h.c.JoinGroup(h.now, id, req)
	h.drain()
	return id
}

func (h *harness) sync(req SyncRequest) ReplyID {
	id := h.id()
	var as []string
	for _, k := range sortedKeys(req.Assignments) {
		as = append(as, k+"="+string(req.Assignments[k]))
	}
	h.logf("#%d sync group=%s gen=%d member=%q assignments=[%s]", id, req.GroupID, req.Generation, req.MemberID, strings.Join(as, " "))
	h.c.SyncGroup(h.now, id, req)
	h.drain()
	return id
}

func (h *harness) heartbeat(req HeartbeatRequest) ReplyID {
	id := h.id()
	h.logf("#%d heartbeat group=%s gen=%d member=%q", id, req.GroupID, req.Generation, req.MemberID)
	h.c.Heartbeat(h.now, id, req)
	h.drain()
	return id
}

func (h *harness) leave(req LeaveRequest) ReplyID {
	id := h.id()
	h.logf("#%d leave group=%s members=%d", id, req.GroupID, len(req.Members))
	h.c.LeaveGroup(h.now, id, req)
	h.drain()
	return id
}

func (h *harness) commit(req CommitRequest) ReplyID {
	id := h.id()
	h.logf("#%d commit group=%s gen=%d member=%q v%d", id, req.GroupID, req.Generation, req.MemberID, req.Version)
	h.c.CommitOffsets(h.now, id, req)
	h.drain()
	return id
}

func (h *harness) describe(ids ...string) []DescribedGroup {
	d := h.c.DescribeGroups(ids)
	for _, g := range d {
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, fmt.Sprintf("%s(assign=%q)", m.MemberID, m.Assignment))
		}
		h.logf("describe %s: state=%s protocol=%q members=[%s]", g.GroupID, g.State, g.Protocol, strings.Join(ms, " "))
	}
	return d
}

// join result accessors
func (h *harness) joinResult(id ReplyID) *JoinResult {
	h.t.Helper()
	r, ok := h.results[id].(*JoinResult)
	if !ok {
		h.t.Fatalf("no join answer for #%d (parked?)", id)
	}
	return r
}

func (h *harness) code(id ReplyID) int16 {
	h.t.Helper()
	switch r := h.results[id].(type) {
	case *JoinResult:
		return r.ErrorCode
	case *SyncResult:
		return r.ErrorCode
	case *HeartbeatResult:
		return r.ErrorCode
	case *LeaveResult:
		return r.ErrorCode
	case *CommitResult:
		return r.Topics[0].Partitions[0].ErrorCode
	}
	h.t.Fatalf("no answer for #%d", id)
	return 0
}

func (h *harness) wantCode(id ReplyID, want *kerr.Error) {
	h.t.Helper()
	if got := h.code(id); got != errCode(want) {
		h.t.Fatalf("#%d: error %v, want %v", id, kerr.ErrorForCode(got), want)
	}
}

func (h *harness) parked(id ReplyID) bool {
	_, done := h.results[id]
	return !done
}

func optStr(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func protocolNames(ps []Protocol) string {
	var n []string
	for _, p := range ps {
		n = append(n, p.Name)
	}
	return strings.Join(n, ",")
}

func errName(code int16) string {
	if code == 0 {
		return "OK"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint(code)
}

func describeResult(r any) string {
	switch r := r.(type) {
	case *JoinResult:
		var ms []string
		for _, m := range r.Members {
			ms = append(ms, m.MemberID+":"+string(m.Metadata))
		}
		return fmt.Sprintf("join %s gen=%d member=%q leader=%q protocol=%s skip=%v members=[%s]", errName(r.ErrorCode),
			r.Generation, r.MemberID, r.Leader, optStr(r.Protocol), r.SkipAssignment, strings.Join(ms, " "))
	case *SyncResult:
		return fmt.Sprintf("sync %s assignment=%q", errName(r.ErrorCode), r.Assignment)
	case *HeartbeatResult:
		return "heartbeat " + errName(r.ErrorCode)
	case *LeaveResult:
		var ms []string
		for _, m := range r.Members {
			ms = append(ms, fmt.Sprintf("%s/%s:%s", m.MemberID, optStr(m.InstanceID), errName(m.ErrorCode)))
		}
		return fmt.Sprintf("leave %s members=[%s]", errName(r.ErrorCode), strings.Join(ms, " "))
	case *CommitResult:
		var ps []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				ps = append(ps, fmt.Sprintf("%s-%d:%s", t.Topic, p.Partition, errName(p.ErrorCode)))
			}
		}
		return "commit " + strings.Join(ps, " ")
	case *FetchResult:
		var ps []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				ps = append(ps, fmt.Sprintf("%s-%d=%d(e%d,%q)", t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata))
			}
		}
		return fmt.Sprintf("fetch %s [%s]", errName(r.ErrorCode), strings.Join(ps, " "))
	case *DeleteGroupsResult:
		var gs []string
		for _, g := range r.Groups {
			gs = append(gs, g.GroupID+":"+errName(g.ErrorCode))
		}
		return "delete-groups " + strings.Join(gs, " ")
	case *OffsetDeleteResult:
		var ps []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				ps = append(ps, fmt.Sprintf("%s-%d:%s", t.Topic, p.Partition, errName(p.ErrorCode)))
			}
		}
		return fmt.Sprintf("offset-delete %s [%s]", errName(r.ErrorCode), strings.Join(ps, " "))
	}
	return fmt.Sprintf("%T", r)
}

// describeRecord decodes a record the way kafka-dump-log
// --offsets-decoder would show it.
func describeRecord(r Record) string {
	version := int16(r.Key[0])<<8 | int16(r.Key[1])
	if version <= 1 {
		k := kmsg.NewOffsetCommitKey()
		if err := k.ReadFrom(r.Key); err != nil {
			return "bad offset key: " + err.Error()
		}
		if r.Value == nil {
			return fmt.Sprintf("offset %s/%s-%d tombstone", k.Group, k.Topic, k.Partition)
		}
		v := kmsg.NewOffsetCommitValue()
		if err := v.ReadFrom(r.Value); err != nil {
			return "bad offset value: " + err.Error()
		}
		return fmt.Sprintf("offset %s/%s-%d v%d offset=%d epoch=%d metadata=%q", k.Group, k.Topic, k.Partition, v.Version, v.Offset, v.LeaderEpoch, v.Metadata)
	}
	if version >= shareMemberMetadataType && version <= shareStatePartitionMetaType {
		return describeShareRecord(version, r)
	}
	if version > groupKeyVersion {
		return describeConsumerRecord(version, r)
	}
	k := kmsg.NewGroupMetadataKey()
	if err := k.ReadFrom(r.Key); err != nil {
		return "bad group key: " + err.Error()
	}
	if r.Value == nil {
		return fmt.Sprintf("group %s tombstone", k.Group)
	}
	v := kmsg.NewGroupMetadataValue()
	if err := v.ReadFrom(r.Value); err != nil {
		return "bad group value: " + err.Error()
	}
	var ms []string
	for _, m := range v.Members {
		ms = append(ms, fmt.Sprintf("%s(assign=%q)", m.MemberID, m.Assignment))
	}
	sort.Strings(ms)
	return fmt.Sprintf("group %s v%d type=%s gen=%d protocol=%s leader=%s members=[%s]", k.Group, v.Version, v.ProtocolType,
		v.Generation, optStr(v.Protocol), optStr(v.Leader), strings.Join(ms, " "))
}

// describeConsumerRecord names a KIP-848 record by its type and key fields
// (group, and member or regex); its value is shown only as present or a
// tombstone.
func describeConsumerRecord(recordType int16, r Record) string {
	names := map[int16]string{
		consumerGroupMetadataType:      "cg-metadata",
		consumerGroupPartitionMetaType: "cg-partition-metadata",
		consumerMemberMetadataType:     "cg-member",
		targetAssignmentMetadataType:   "cg-target-metadata",
		targetAssignmentMemberType:     "cg-target-member",
		currentMemberAssignmentType:    "cg-current-assignment",
		regularExpressionType:          "cg-regex",
	}
	name, ok := names[recordType]
	if !ok {
		name = fmt.Sprintf("type-%d", recordType)
	}
	var fields []string
	for b := r.Key[2:]; len(b) >= 2; {
		n := int(b[0])<<8 | int(b[1])
		if len(b) < 2+n {
			break
		}
		fields = append(fields, string(b[2:2+n]))
		b = b[2+n:]
	}
	value := "value"
	if r.Value == nil {
		value = "tombstone"
	}
	return fmt.Sprintf("%s %s %s", name, strings.Join(fields, "/"), value)
}

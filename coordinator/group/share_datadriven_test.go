package group

// The share group commands of the datadriven transcripts
// (testdata/share-*.txt):
//
//	sghb member=m1 [epoch=N] [names=(a,b)] [rack=r] [group=g]
//	    a ShareGroupHeartbeat; epoch defaults to the member's last epoch,
//	    names are sent only when given. Prints the records, the answer, the
//	    state initializations asked, and the group.
//	sginit [group=g] [topics=(a)]
//	    the share coordinator reports the asked initializations done
//	    (all, or only those of the named topics).
//	sgdescribe [group=g]
//	    ShareGroupDescribe of the group.
//	rebuild
//	    replaces the coordinator with one rebuilt from every record written
//	    so far (Load, LoadDone) and checks it describes every group as the
//	    old one did.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

func groupArg(td *datadriven.TestData) string {
	if g := str(td, "group"); g != "" {
		return g
	}
	return "g"
}

func (d *driver) sghb(t *testing.T, td *datadriven.TestData) {
	member := str(td, "member")
	c := d.client(member)
	req := ShareHeartbeatRequest{GroupID: groupArg(td), MemberID: member, MemberEpoch: int32(num(t, td, "epoch", int64(c.epoch))),
		RackID: optArg(td, "rack"), SubscribedTopicNames: vals(td, "names"), ClientID: "client-" + member, ClientHost: "/127.0.0.1"}
	if td.HasArg("group-id") {
		req.GroupID = str(td, "group-id") // may be empty, for validation
	}
	if td.HasArg("member-id") {
		req.MemberID = str(td, "member-id")
	}
	id := d.h.id()
	d.h.c.ShareGroupHeartbeat(d.h.now, id, req, d.topics)
	e := d.drainShare()
	if len(e.Replies) != 1 {
		t.Fatalf("%d replies", len(e.Replies))
	}
	res := e.Replies[0].Result.(*ShareHeartbeatResult)
	a := "none"
	if res.Assignment != nil {
		a = d.ownedString(res.Assignment)
	}
	line := fmt.Sprintf("reply %s epoch=%d assignment=%s", errName(res.ErrorCode), res.MemberEpoch, a)
	if res.ErrorCode == 0 {
		line += fmt.Sprintf(" interval=%d", res.HeartbeatIntervalMs)
		c.epoch = res.MemberEpoch
	}
	if res.ErrorMessage != nil {
		line += fmt.Sprintf(" message=%q", *res.ErrorMessage)
	}
	d.h.logf("%s", line)
	d.describeShareGroup(req.GroupID)
}

// drainShare prints and keeps the records and the state initializations
// of the last event and returns its effects.
func (d *driver) drainShare() Effects {
	e := d.h.c.Ready()
	for _, r := range e.Records {
		d.h.logf("record %s", d.describeRecordNamed(r))
		d.h.records = append(d.h.records, r)
	}
	for _, init := range e.ShareStateInits {
		d.h.logf("initialize %s state-epoch=%d %s", init.GroupID, init.StateEpoch, d.ownedString(init.Topics))
		d.shareInits = append(d.shareInits, init)
	}
	return e
}

// describeRecordNamed is describeRecord with topic ids shown by name.
func (d *driver) describeRecordNamed(r Record) string {
	s := describeRecord(r)
	for n, ti := range d.topics {
		s = strings.ReplaceAll(s, fmt.Sprintf("%x", ti.ID[:2]), n)
	}
	return s
}

func (d *driver) sginit(t *testing.T, td *datadriven.TestData) {
	group := groupArg(td)
	only := map[TopicID]bool{}
	for _, n := range vals(td, "topics") {
		only[d.topics[n].ID] = true
	}
	var keep []ShareStateInit
	for _, init := range d.shareInits {
		if init.GroupID != group {
			keep = append(keep, init)
			continue
		}
		var done, rest []OwnedTopic
		for _, o := range init.Topics {
			if len(only) == 0 || only[o.TopicID] {
				done = append(done, o)
			} else {
				rest = append(rest, o)
			}
		}
		if len(done) > 0 {
			d.h.c.InitializeShareGroupState(d.h.now, group, done)
			d.drainShare()
		}
		if len(rest) > 0 {
			init.Topics = rest
			keep = append(keep, init)
		}
	}
	d.shareInits = keep
	d.describeShareGroup(group)
}

// describeShareGroup prints the group's epochs and each member's epoch,
// assignment and target, and the initialized partitions.
func (d *driver) describeShareGroup(group string) {
	for _, g := range d.h.c.ShareGroupDescribe([]string{group}, d.topics) {
		if g.ErrorCode != 0 {
			d.h.logf("group %s message=%q", errName(g.ErrorCode), *g.ErrorMessage)
			continue
		}
		sg := d.h.c.groups[group].sg
		line := fmt.Sprintf("group %s epoch=%d assignment-epoch=%d", g.State, g.Epoch, g.AssignmentEpoch)
		for _, m := range g.Members {
			var owned []OwnedTopic
			for _, a := range m.Assignment {
				owned = append(owned, OwnedTopic{TopicID: a.TopicID, Partitions: a.Partitions})
			}
			line += fmt.Sprintf(" %s(epoch=%d assigned=%s target=%s)", m.MemberID, m.MemberEpoch, d.ownedString(owned),
				d.ownedString(toOwned(sg.target[m.MemberID])))
		}
		line += fmt.Sprintf(" initialized=%s initializing=%s", d.initString(sg.initialized), d.initString(sg.initializing))
		d.h.logf("%s", line)
	}
}

func (d *driver) initString(m map[TopicID]shareTopicInit) string {
	a := assignment{}
	for t, ti := range m {
		a[t] = ti.partitions
	}
	return d.ownedString(toOwned(a))
}

func (d *driver) rebuild(t *testing.T) {
	old := d.h.c
	c := New(old.cfg)
	for _, r := range d.h.records {
		if err := c.Load(d.h.now, r.Key, r.Value); err != nil {
			t.Fatalf("load %s: %v", describeRecord(r), err)
		}
	}
	c.LoadDone(d.h.now)
	ids := old.sortedGroupIDs()
	if got := c.sortedGroupIDs(); !reflect.DeepEqual(got, ids) {
		t.Fatalf("rebuilt groups %v, want %v", got, ids)
	}
	for _, id := range ids {
		if g := old.groups[id]; g.sg != nil {
			if !reflect.DeepEqual(shareStateOf(c.groups[id].sg), shareStateOf(g.sg)) {
				t.Fatalf("rebuilt share group %s:\n%+v\nwant\n%+v", id, shareStateOf(c.groups[id].sg), shareStateOf(g.sg))
			}
		}
	}
	c.cfg.NewMemberID = old.cfg.NewMemberID
	d.h.c = c
	d.h.logf("rebuilt %d groups from %d records", len(ids), len(d.h.records))
	for _, id := range ids {
		if c.groups[id].sg != nil {
			d.describeShareGroup(id)
		}
	}
}

// shareStateOf is what the log must carry of a share group: everything but
// the session deadlines and initialization timestamps, which restart at
// load.
func shareStateOf(sg *shareGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "epoch=%d hash=%d assignment-epoch=%d ts=%d\n", sg.epoch, sg.metadataHash, sg.assignmentEpoch, sg.assignmentTimestamp)
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		fmt.Fprintf(&b, "member %s rack=%s client=%s/%s names=%v epoch=%d prev=%d assigned=%v target=%v\n", m.id, optStr(m.rackID),
			m.clientID, m.clientHost, m.subscribedTopicNames, m.epoch, m.previousEpoch, toOwned(m.assigned), toOwned(sg.target[id]))
	}
	for _, set := range []map[TopicID]shareTopicInit{sg.initializing, sg.initialized} {
		for _, t := range sortedTopicKeys(set) {
			fmt.Fprintf(&b, "topic %x %s %v\n", t[:2], set[t].name, set[t].partitions)
		}
	}
	fmt.Fprintf(&b, "deleting=%v metadata=%v\n", sg.deleting, sg.hasStateMetadata)
	return b.String()
}

func sortedTopicKeys(m map[TopicID]shareTopicInit) []TopicID {
	ids := make([]TopicID, 0, len(m))
	for t := range m {
		ids = append(ids, t)
	}
	sortTopicIDs(ids)
	return ids
}

// describeShareRecord decodes a share group record for the transcripts.
func describeShareRecord(recordType int16, r Record) string {
	names := map[int16]string{
		shareMemberMetadataType:     "sg-member",
		shareGroupMetadataType:      "sg-metadata",
		shareTargetMetadataType:     "sg-target-metadata",
		shareTargetMemberType:       "sg-target-member",
		shareCurrentAssignmentType:  "sg-current-assignment",
		shareStatePartitionMetaType: "sg-state-partitions",
	}
	nfields := 1
	if recordType == shareMemberMetadataType || recordType == shareTargetMemberType || recordType == shareCurrentAssignmentType {
		nfields = 2
	}
	fields, err := keyFields(r.Key, nfields)
	if err != nil {
		return "bad key: " + err.Error()
	}
	head := names[recordType] + " " + strings.Join(fields, "/")
	if r.Value == nil {
		return head + " tombstone"
	}
	rd, err := valueReader(r.Value)
	if err != nil {
		return head + " bad value: " + err.Error()
	}
	var v string
	switch recordType {
	case shareMemberMetadataType:
		rack := rd.nullable()
		v = fmt.Sprintf("rack=%s client=%s host=%s names=%v", optStr(rack), rd.string(), rd.string(), rd.strings())
		rd.tags()
	case shareGroupMetadataType:
		v = fmt.Sprintf("epoch=%d", rd.int32())
		rd.take(8)
		rd.tags()
	case shareTargetMetadataType:
		v = fmt.Sprintf("assignment-epoch=%d", rd.int32())
		if tag := rd.tags(); tag != nil {
			v += " timestamp=set"
		}
	case shareTargetMemberType:
		v = ownedPlain(rd.topicPartitions())
		rd.tags()
	case shareCurrentAssignmentType:
		v = fmt.Sprintf("epoch=%d previous=%d state=%d", rd.int32(), rd.int32(), rd.int8())
		v += " " + ownedPlain(rd.topicPartitions())
		rd.tags()
	case shareStatePartitionMetaType:
		ing, ed := rd.topicInits(0), rd.topicInits(0)
		v = fmt.Sprintf("initializing=%s initialized=%s", initPlain(ing), initPlain(ed))
	}
	if rd.err != nil {
		return head + " bad value: " + rd.err.Error()
	}
	return head + " " + v
}

func ownedPlain(a assignment) string {
	var parts []string
	for _, t := range a.sortedTopics() {
		var ps []string
		for _, p := range a[t] {
			ps = append(ps, fmt.Sprint(p))
		}
		parts = append(parts, fmt.Sprintf("%x:%s", t[:2], strings.Join(ps, ",")))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func initPlain(m map[TopicID]shareTopicInit) string {
	var parts []string
	for _, t := range sortedTopicKeys(m) {
		var ps []string
		for _, p := range m[t].partitions {
			ps = append(ps, fmt.Sprint(p))
		}
		parts = append(parts, m[t].name+":"+strings.Join(ps, ","))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

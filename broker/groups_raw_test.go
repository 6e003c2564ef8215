package broker

import (
	"bytes"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 0
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(version int16, group, member string, sessionMs int32, metadata []byte) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", metadata
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return req
}

func syncReq(version int16, group, member string, gen int32, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	for id, a := range assignments {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func heartbeatReq(version int16, group, member string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	return req
}

func commitReq(version int16, group, member string, gen int32, topic string, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	return req
}

func wantErr(t *testing.T, what string, code int16, want *kerr.Error) {
	t.Helper()
	if code != errCode(want) {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(code), want)
	}
}

// rawJoinAndSync joins group as a v5 consumer of topic (KIP-394 two-step
// join), syncs as a follower and returns the member id.
func rawJoinAndSync(t *testing.T, c *rawConn, group, topic string, sessionMs int32) string {
	t.Helper()
	first := c.do(joinReq(5, group, "", sessionMs, consumerMetadata(topic))).(*kmsg.JoinGroupResponse)
	wantErr(t, "first join", first.ErrorCode, kerr.MemberIDRequired)
	joined := c.do(joinReq(5, group, first.MemberID, sessionMs, consumerMetadata(topic))).(*kmsg.JoinGroupResponse)
	wantErr(t, "join", joined.ErrorCode, nil)
	synced := c.do(syncReq(3, group, first.MemberID, joined.Generation, nil)).(*kmsg.SyncGroupResponse)
	wantErr(t, "sync", synced.ErrorCode, nil)
	return first.MemberID
}

// TestGroupRequestsBadInput: unknown groups, wrong generations and bogus
// member ids get Kafka's error codes.
func TestGroupRequestsBadInput(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 1, nil)

	// Unknown group.
	wantErr(t, "heartbeat, unknown group", c.do(heartbeatReq(4, "nope", "m", 1)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "sync, unknown group", c.do(syncReq(5, "nope", "m", 1, nil)).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "join with a member id, unknown group", c.do(joinReq(9, "nope", "m", 10000, nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "commit v8 with a generation, unknown group",
		c.do(commitReq(8, "nope", "m", 1, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	wantErr(t, "commit v9 with a generation, unknown group",
		c.do(commitReq(9, "nope", "m", 1, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	wantErr(t, "commit, unknown topic",
		c.do(commitReq(8, "simple", "", -1, "missing", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.SetVersion(1)
	lr.Group, lr.MemberID = "nope", "m"
	wantErr(t, "leave, unknown group", c.do(lr).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups = []string{"nope"}
	if g := c.do(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.State != "Dead" || g.ErrorCode != 0 {
		t.Fatalf("describe unknown group: %+v", g)
	}
	// v6 (KIP-1043): GROUP_ID_NOT_FOUND, as Kafka 4.2 answers.
	dg.SetVersion(6)
	if g := c.do(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.State != "Dead" || g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown group at v6: %+v", g)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"nope"}
	wantErr(t, "delete unknown group", c.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "nope"
	wantErr(t, "offset delete, unknown group", c.do(od).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(5)
	of.Group = "nope"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	of.Topics = []kmsg.OffsetFetchRequestTopic{rt}
	if p := c.do(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 {
		t.Fatalf("offset fetch, unknown group: %+v", p)
	}

	// A v3 member joins without MEMBER_ID_REQUIRED; a v4 one needs it.
	j := c.do(joinReq(3, "g", "", 10000, consumerMetadata("t"))).(*kmsg.JoinGroupResponse)
	wantErr(t, "v3 join", j.ErrorCode, nil)
	member, gen := j.MemberID, j.Generation
	c2 := dialRaw(t, b.Addr())
	wantErr(t, "v4 join", c2.do(joinReq(4, "g2", "", 10000, nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.MemberIDRequired)
	wantErr(t, "session timeout too long", c2.do(joinReq(4, "g2", "", 1800001, nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)

	wantErr(t, "sync, wrong generation", c.do(syncReq(5, "g", member, gen+1, nil)).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)
	wantErr(t, "sync, bogus member", c.do(syncReq(5, "g", "bogus", gen, nil)).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	s := c.do(syncReq(5, "g", member, gen, map[string][]byte{member: []byte("assignment")})).(*kmsg.SyncGroupResponse)
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "assignment" || s.Protocol == nil || *s.Protocol != "range" {
		t.Fatalf("sync: %+v", s)
	}
	wantErr(t, "heartbeat, wrong generation", c.do(heartbeatReq(4, "g", member, gen+1)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	wantErr(t, "heartbeat, bogus member", c.do(heartbeatReq(4, "g", "bogus", gen)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "heartbeat", c.do(heartbeatReq(0, "g", member, gen)).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	wantErr(t, "commit, wrong generation",
		c.do(commitReq(8, "g", member, gen+1, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	wantErr(t, "commit, bogus member",
		c.do(commitReq(8, "g", "bogus", gen, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "commit", c.do(commitReq(2, "g", member, gen, "t", 7)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	del.Groups = []string{"g"}
	wantErr(t, "delete a group with members", c.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)
	// OffsetDelete on a group with members is answered per partition: its
	// member subscribes to t (Kafka's GROUP_SUBSCRIBED_TO_TOPIC).
	od.Group = "g"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t"
	odp := kmsg.NewOffsetDeleteRequestTopicPartition()
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{odp}
	od.Topics = []kmsg.OffsetDeleteRequestTopic{odt}
	odr := c.do(od).(*kmsg.OffsetDeleteResponse)
	wantErr(t, "offset delete, group with members", odr.ErrorCode, nil)
	wantErr(t, "offset delete, subscribed topic", odr.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

	// Every OffsetFetch version reads the commit back.
	for v := int16(1); v <= 7; v++ {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.SetVersion(v)
		of.Group = "g"
		of.Topics = []kmsg.OffsetFetchRequestTopic{rt}
		if p := c.do(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.Offset != 7 {
			t.Fatalf("offset fetch v%d: %+v", v, p)
		}
	}
	lr.SetVersion(0)
	lr.Group, lr.MemberID = "g", member
	wantErr(t, "leave", c.do(lr).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
	wantErr(t, "delete the empty group", c.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)

	// __consumer_offsets now exists and is internal.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(offsetsTopic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	if got := c.do(md).(*kmsg.MetadataResponse).Topics[0]; got.ErrorCode != 0 || !got.IsInternal || len(got.Partitions) != 50 {
		t.Fatalf("metadata of %s: error %d internal %v partitions %d", offsetsTopic, got.ErrorCode, got.IsInternal, len(got.Partitions))
	}
}

// TestOffsetCommitAndFetchByTopicID: OffsetCommit v10 and OffsetFetch v10
// name topics by id.
func TestOffsetCommitAndFetchByTopicID(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestConfig(""))
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "t", 2, nil)
	id := b.lookupTopic("t").id
	req := commitReq(10, "simple", "", -1, "", 33)
	req.Topics[0].TopicID = id
	bogus := kmsg.NewOffsetCommitRequestTopic()
	bogus.TopicID = [16]byte{1, 2, 3}
	bogus.Partitions = req.Topics[0].Partitions
	req.Topics = append(req.Topics, bogus)
	resp := c.do(req).(*kmsg.OffsetCommitResponse)
	wantErr(t, "commit by id", resp.Topics[0].Partitions[0].ErrorCode, nil)
	wantErr(t, "commit by unknown id", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicID)
	if resp.Topics[0].TopicID != id {
		t.Fatalf("commit response topic id %x", resp.Topics[0].TopicID)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(10)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "simple"
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.TopicID, gt.Partitions = id, []int32{0, 1}
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "simple"
	all.Topics = nil
	of.Groups = []kmsg.OffsetFetchRequestGroup{g, all}
	fr := c.do(of).(*kmsg.OffsetFetchResponse)
	got := fr.Groups[0].Topics[0]
	if got.TopicID != id || got.Partitions[0].Offset != 33 || got.Partitions[1].Offset != -1 {
		t.Fatalf("fetch by id: %+v", got)
	}
	if a := fr.Groups[1].Topics; len(a) != 1 || a[0].TopicID != id || a[0].Partitions[0].Offset != 33 {
		t.Fatalf("fetch all by id: %+v", a)
	}
}

// TestJoinGroupLargeMetadata: member metadata of 512 KiB reaches the
// leader intact; a request above socket.request.max.bytes closes the
// connection, as Kafka does.
func TestJoinGroupLargeMetadata(t *testing.T) {
	t.Parallel()
	cfg := groupTestConfig("")
	cfg.MaxFrameBytes = 1 << 20
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	big := bytes.Repeat([]byte{7}, 512<<10)
	j := c.do(joinReq(3, "big", "", 10000, big)).(*kmsg.JoinGroupResponse)
	if j.ErrorCode != 0 || len(j.Members) != 1 || !bytes.Equal(j.Members[0].ProtocolMetadata, big) {
		t.Fatalf("join with large metadata: error %d, %d members", j.ErrorCode, len(j.Members))
	}
	c2 := dialRaw(t, b.Addr())
	c2.sendRefused(joinReq(3, "big", "", 10000, bytes.Repeat([]byte{7}, 1<<20)))
	c2.expectClosed()
}

// TestThousandMembersJoinOneGroup: 999 members join a Stable group, each on
// its own connection, parked until the leader rejoins; other connections
// are served meanwhile; then all get generation 2 and the leader sees 1000
// members.
func TestThousandMembersJoinOneGroup(t *testing.T) {
	// Not parallel: its thousand connections each read with a deadline,
	// which beside other tests (under -race) it can miss.
	b := startBroker(t, groupTestConfig(""))
	lc := dialRaw(t, b.Addr())
	lj := lc.do(joinReq(3, "big", "", 30000, consumerMetadata("t"))).(*kmsg.JoinGroupResponse)
	wantErr(t, "leader join", lj.ErrorCode, nil)
	wantErr(t, "leader sync", lc.do(syncReq(3, "big", lj.MemberID, 1, nil)).(*kmsg.SyncGroupResponse).ErrorCode, nil)

	const n = 999
	results := make([]*kmsg.JoinGroupResponse, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		c := dialRaw(t, b.Addr())
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req := joinReq(3, "big", "", 30000, consumerMetadata("t"))
			corr := c.corr + 1
			c.corr = corr
			if _, err := c.nc.Write(encodeRequest(req, corr)); err != nil {
				errs <- err
				return
			}
			resp := kmsg.NewPtrJoinGroupResponse()
			resp.SetVersion(3)
			c.readResponse(corr, resp)
			results[i] = resp
		}(i)
	}
	dc := dialRaw(t, b.Addr())
	waitFor(t, "1000 members in the group", func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(5)
		req.Groups = []string{"big"}
		return len(dc.do(req).(*kmsg.DescribeGroupsResponse).Groups[0].Members) == n+1
	})
	lj2 := lc.do(joinReq(3, "big", lj.MemberID, 30000, consumerMetadata("t"))).(*kmsg.JoinGroupResponse)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if lj2.ErrorCode != 0 || lj2.Generation != 2 || len(lj2.Members) != n+1 {
		t.Fatalf("leader rejoin: error %d gen %d members %d", lj2.ErrorCode, lj2.Generation, len(lj2.Members))
	}
	ids := map[string]bool{}
	for i, r := range results {
		if r == nil || r.ErrorCode != 0 || r.Generation != 2 || r.LeaderID != lj.MemberID {
			t.Fatalf("member %d: %+v", i, r)
		}
		ids[r.MemberID] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct member ids, want %d", len(ids), n)
	}
}

package group

import "testing"

// FuzzLoad feeds arbitrary key and value bytes to Load, as a record a client
// produced to __consumer_offsets would arrive at start-up. Invariants: Load
// never panics; it either accepts the record or returns an error wrapping
// ErrBadRecord; it produces no effects; and the coordinator still answers
// DescribeGroups, ListGroups, ConsumerGroupDescribe and a fetch of every
// offset afterwards; the same holds for the record loaded as part of a
// producer's transaction (LoadTransactional) and committed. The seeds include every consumer group record type
// (KIP-848) and every share group record type (KIP-932, types 10-15), whose
// decoders are Gregor's own; ShareGroupDescribe and a share heartbeat must
// work on whatever was loaded.
func FuzzLoad(f *testing.F) {
	c := New(Config{})
	c.CommitOffsets(1, 1, CommitRequest{GroupID: "g", Generation: -1, Topics: []CommitTopic{{Topic: "t", Partitions: []CommitPartition{{Offset: 5, Metadata: sp("m")}}}}})
	c.JoinGroup(1, 2, JoinRequest{GroupID: "h", ClientID: "c", ProtocolType: "consumer", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000, Protocols: []Protocol{{Name: "range", Metadata: []byte{1}}}})
	c.SyncGroup(1, 3, SyncRequest{GroupID: "h", Generation: 1, MemberID: "c-1", Assignments: map[string][]byte{"c-1": {2}}})
	inst := "i"
	c.ConsumerGroupHeartbeat(1, 4, ConsumerHeartbeatRequest{Version: 1, GroupID: "k", MemberID: "m", InstanceID: &inst, RackID: &inst,
		RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"t"}, TopicPartitions: []OwnedTopic{}},
		Topics{"t": {Name: "t", ID: TopicID{1}, Partitions: 3}})
	c.ConsumerGroupHeartbeat(1, 5, ConsumerHeartbeatRequest{Version: 1, GroupID: "k", MemberID: "m", InstanceID: &inst, MemberEpoch: -1}, nil)
	foo := Topics{"t": {Name: "t", ID: TopicID{1}, Partitions: 3}}
	c.ShareGroupHeartbeat(1, 6, ShareHeartbeatRequest{GroupID: "s", MemberID: "a", RackID: &inst, SubscribedTopicNames: []string{"t"}}, foo)
	c.InitializeShareGroupState(1, "s", []OwnedTopic{{TopicID: TopicID{1}, Partitions: []int32{0, 1, 2}}})
	c.ShareGroupHeartbeat(1, 7, ShareHeartbeatRequest{GroupID: "s", MemberID: "a", MemberEpoch: 1}, foo)
	c.ShareGroupHeartbeat(1, 8, ShareHeartbeatRequest{GroupID: "s", MemberID: "a", MemberEpoch: -1}, foo)
	c.DeleteGroups(1, 9, []string{"s"})
	for _, r := range c.Ready().Records {
		f.Add(r.Key, r.Value)
	}
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte(nil))
	f.Add([]byte{0, 1}, []byte{0, 3})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := New(Config{})
		if err := c.Load(0, key, value); err != nil {
			if !isBadRecord(err) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
		}
		if e := c.Ready(); len(e.Records)+len(e.Replies) != 0 {
			t.Fatal("Load produced effects")
		}
		for _, g := range c.ListGroups(nil, nil) {
			c.DescribeGroups([]string{g.GroupID})
			c.ConsumerGroupDescribe([]string{g.GroupID})
			c.ShareGroupDescribe([]string{g.GroupID}, Topics{})
			c.fetchOffsets(FetchRequest{GroupID: g.GroupID})
		}
		c.LoadDone(0)
		for _, g := range c.ListGroups(nil, []string{"share"}) {
			c.ShareGroupHeartbeat(0, 1, ShareHeartbeatRequest{GroupID: g.GroupID, MemberID: "fuzz", SubscribedTopicNames: []string{"t"}},
				Topics{"t": {Name: "t", ID: TopicID{1}, Partitions: 2}})
		}
		c.Tick(1 << 40)
		// The same record in a transactional batch, then its commit.
		c = New(Config{})
		if err := c.LoadTransactional(0, 1, key, value); err != nil && !isBadRecord(err) {
			t.Fatalf("error %v does not wrap ErrBadRecord", err)
		}
		for _, g := range c.ListGroups(nil, nil) {
			c.fetchOffsets(FetchRequest{GroupID: g.GroupID, RequireStable: true})
		}
		c.CompleteTransaction(0, 1, 0, 1, true)
		c.Tick(1 << 40)
	})
}

func isBadRecord(err error) bool {
	for e := err; e != nil; {
		if e == ErrBadRecord {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

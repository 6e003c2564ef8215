//go:build cluster

package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSelectReadReplicaIsKafkasRackAwareSelector: the cases of Kafka's
// RackAwareReplicaSelector: no client rack or the leader in the client's
// rack is the leader; no candidate in the rack is the leader; else the
// most caught-up candidate in the rack (log end offset, then time since
// caught up, then id).
func TestSelectReadReplicaIsKafkasRackAwareSelector(t *testing.T) {
	leader := replicaView{id: 1, rack: "a", logEndOffset: 100}
	tests := []struct {
		name      string
		rack      string
		followers []replicaView
		want      int32
	}{
		{"no client rack", "", []replicaView{{id: 2, rack: "b", logEndOffset: 100}}, 1},
		{"leader in the client's rack", "a", []replicaView{{id: 2, rack: "a", logEndOffset: 100}}, 1},
		{"nobody in the client's rack", "c", []replicaView{{id: 2, rack: "b", logEndOffset: 100}}, 1},
		{"the follower in the client's rack", "b", []replicaView{{id: 2, rack: "b", logEndOffset: 90}, {id: 3, rack: "c", logEndOffset: 100}}, 2},
		{"the most caught-up in the rack", "b", []replicaView{{id: 2, rack: "b", logEndOffset: 90}, {id: 3, rack: "b", logEndOffset: 95}}, 3},
		{"then the most recently caught up", "b", []replicaView{{id: 2, rack: "b", logEndOffset: 95, sinceCaughtUpMs: 10}, {id: 3, rack: "b", logEndOffset: 95, sinceCaughtUpMs: 20}}, 2},
		{"then the highest id", "b", []replicaView{{id: 4, rack: "b", logEndOffset: 95}, {id: 3, rack: "b", logEndOffset: 95}}, 4},
		{"no followers", "b", nil, 1},
	}
	for _, tt := range tests {
		if got := selectReadReplica(tt.rack, leader, tt.followers); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func rackFetch(version int16, topic string, offset int64, rack string) *kmsg.FetchRequest {
	req := fetchRequest(version, topic, offset, 0, 0)
	req.Rack = rack
	return req
}

func onlyFetchPartition(t *testing.T, resp kmsg.Response) kmsg.FetchResponseTopicPartition {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response: %+v", fr)
	}
	return fr.Topics[0].Partitions[0]
}

// TestFetchFromFollowerRules runs a three-node cluster with a rack each
// and the rack-aware selector, and a topic of two replicas:
//   - once the follower has fetched, the leader names it as preferred read
//     replica to a consumer fetch v11+ from the follower's rack, without
//     records and with its own offsets, and serves everyone else itself;
//   - the follower serves consumer fetches v11+ from its own log up to its
//     high watermark, OFFSET_OUT_OF_RANGE past its end, and refuses older
//     consumer fetches, as Kafka's fetchOnlyFromLeader;
//   - a broker that is no replica refuses all of them;
//   - a franz-go consumer in the follower's rack reads every record, from
//     the follower (its read counter moves);
//   - the metrics count both.
func TestFetchFromFollowerRules(t *testing.T) {
	tc := startClusterWith(t, 3, func(cfg *Config) {
		cfg.BrokerRack = fmt.Sprintf("rack-%d", cfg.NodeID)
		cfg.ReplicaSelectorClass = RackAwareReplicaSelector
	})
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "ff"); err != nil {
		t.Fatal(err)
	}
	var replicas []int32
	var leader int32 = -1
	waitLong(t, "the topic's leader", func() bool {
		for _, tp := range tc.metadata(1).Topics {
			if len(tp.Partitions) == 1 {
				leader, replicas = tp.Partitions[0].Leader, tp.Partitions[0].Replicas
			}
		}
		return leader >= 0 && len(replicas) == 2
	})
	follower := replicas[0]
	if follower == leader {
		follower = replicas[1]
	}
	var stranger int32
	for _, id := range tc.live() {
		if id != leader && id != follower {
			stranger = id
		}
	}
	cl := tc.client(1, kgo.DefaultProduceTopic("ff"))
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	toLeader := dialRaw(t, tc.nodes[leader].Addr())
	followerRack := fmt.Sprintf("rack-%d", follower)
	var sp kmsg.FetchResponseTopicPartition
	waitLong(t, "the leader to name the follower", func() bool {
		sp = onlyFetchPartition(t, toLeader.do(rackFetch(12, "ff", 0, followerRack)))
		return sp.PreferredReadReplica == follower
	})
	if sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 || sp.HighWatermark != 3 || sp.LogStartOffset != 0 {
		t.Fatalf("leader's answer to a client in the follower's rack: %+v", sp)
	}
	for _, req := range []*kmsg.FetchRequest{
		rackFetch(12, "ff", 0, fmt.Sprintf("rack-%d", leader)), // the leader's own rack
		rackFetch(12, "ff", 0, "elsewhere"),                    // no replica there
		rackFetch(12, "ff", 0, ""),                             // no rack
		fetchRequest(10, "ff", 0, 0, 0),                        // before KIP-392
	} {
		sp := onlyFetchPartition(t, toLeader.do(req))
		if sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
			t.Fatalf("leader's answer to v%d rack %q: %+v", req.Version, req.Rack, sp)
		}
	}
	// Past the follower's log end no follower holds the offset.
	if sp := onlyFetchPartition(t, toLeader.do(rackFetch(12, "ff", 4, followerRack))); sp.PreferredReadReplica != -1 || sp.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("leader's answer past its end: %+v", sp)
	}

	toFollower := dialRaw(t, tc.nodes[follower].Addr())
	waitLong(t, "the follower to serve the records up to its high watermark", func() bool {
		sp = onlyFetchPartition(t, toFollower.do(rackFetch(12, "ff", 0, followerRack)))
		return sp.ErrorCode == 0 && sp.HighWatermark == 3 && len(sp.RecordBatches) > 0
	})
	if sp.PreferredReadReplica != -1 {
		t.Fatalf("follower's answer: %+v", sp)
	}
	sp = onlyFetchPartition(t, toFollower.do(rackFetch(12, "ff", 1000, followerRack)))
	if sp.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("follower's answer past its log end: %+v", sp)
	}
	if sp := onlyFetchPartition(t, toFollower.do(fetchRequest(10, "ff", 0, 0, 0))); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower's answer to a consumer fetch v10: %+v", sp)
	}
	if sp := onlyFetchPartition(t, dialRaw(t, tc.nodes[stranger].Addr()).do(rackFetch(12, "ff", 0, followerRack))); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("a non-replica's answer: %+v", sp)
	}
	if n := counterValue(t, tc.nodes[leader], "gregor_fetch_preferred_read_replica_total"); n < 1 {
		t.Errorf("preferred read replica answers counted %v", n)
	}

	// A consumer in the follower's rack reads everything, from the follower.
	before := counterValue(t, tc.nodes[follower], "gregor_fetch_follower_reads_total")
	consumer := tc.client(leader, kgo.Rack(followerRack), kgo.ConsumeTopics("ff"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []byte
	for len(got) < 3 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Value...) })
	}
	if string(got) != "\x00\x01\x02" {
		t.Fatalf("consumed %v", got)
	}
	if after := counterValue(t, tc.nodes[follower], "gregor_fetch_follower_reads_total"); after <= before {
		t.Fatalf("the follower served no read to the consumer in its rack (%v before, %v after)", before, after)
	}
}

// TestFetchFromFollowerOffByDefault: without replica.selector.class the
// leader serves a consumer in another replica's rack itself.
func TestFetchFromFollowerOffByDefault(t *testing.T) {
	b := startBroker(t, Config{BrokerRack: "r1"})
	cl := newTestClient(t, b.Addr())
	ctx := testCtx(t)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "solo"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "solo", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sp := onlyFetchPartition(t, dialRaw(t, b.Addr()).do(rackFetch(12, "solo", 0, "r2")))
	if sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("single node: %+v", sp)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	if resp := dialRaw(t, b.Addr()).do(md).(*kmsg.MetadataResponse); resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "r1" {
		t.Fatalf("broker.rack not in Metadata: %+v", resp.Brokers)
	}
}

// counterValue reads an unlabelled counter from b's registry.
func counterValue(t *testing.T, b *Broker, name string) float64 {
	t.Helper()
	mfs, err := b.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}

//go:build cluster

package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterListenersAnswerWithTheClientsListener runs three nodes whose
// replication goes over INTERNAL; nodes 1 and 2 also have a CLIENT
// listener and node 3 has none; node 1 also has a SASL_PLAINTEXT SECURE
// listener. A client of CLIENT sees only CLIENT
// endpoints, node 3 is left out, and a partition node 3 leads is
// LISTENER_NOT_FOUND to it, as Kafka's KRaftMetadataCache answers.
func TestClusterListenersAnswerWithTheClientsListener(t *testing.T) {
	tc := startClusterWith(t, 3, func(c *Config) {
		c.Listeners = []ListenerConfig{{Name: "INTERNAL"}}
		if c.NodeID != 3 {
			c.Listeners = append(c.Listeners, ListenerConfig{Name: "CLIENT"})
		}
		if c.NodeID == 1 {
			// A secured listener beside the PLAINTEXT inter-broker one.
			c.Listeners = append(c.Listeners, ListenerConfig{Name: "SECURE", SecurityProtocol: "SASL_PLAINTEXT",
				SASLEnabledMechanisms: []string{"PLAIN"}, SASLPlainJAASConfig: saslTestJAAS})
		}
		c.InterBrokerListenerName = "INTERNAL"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "spread"); err != nil {
		t.Fatal(err)
	}
	client := map[int32]string{1: tc.nodes[1].ListenerAddr("CLIENT"), 2: tc.nodes[2].ListenerAddr("CLIENT")}
	raw := dialRaw(t, client[1])
	internal := dialRaw(t, tc.nodes[1].Addr())
	topicReq := func(version int16) *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		rt := kmsg.NewMetadataRequestTopic()
		name := "spread"
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		return req
	}
	// Wait until the INTERNAL view has a leader for every partition, and
	// some partition led by node 3.
	var inner *kmsg.MetadataResponse
	waitFor(t, "leaders of spread on every partition, one on node 3", func() bool {
		inner = internal.do(topicReq(12)).(*kmsg.MetadataResponse)
		if len(inner.Topics) != 1 || len(inner.Topics[0].Partitions) != 6 || len(inner.Brokers) != 3 {
			return false
		}
		on3 := false
		for _, p := range inner.Topics[0].Partitions {
			if p.Leader < 0 {
				return false
			}
			on3 = on3 || p.Leader == 3
		}
		return on3
	})
	leaders := map[int32]int32{}
	for _, p := range inner.Topics[0].Partitions {
		leaders[p.Partition] = p.Leader
	}
	for _, version := range []int16{5, 12} {
		md := raw.do(topicReq(version)).(*kmsg.MetadataResponse)
		if len(md.Brokers) != 2 {
			t.Fatalf("v%d: brokers %+v, want nodes 1 and 2 only", version, md.Brokers)
		}
		for _, br := range md.Brokers {
			h, p := hostPort(t, client[br.NodeID])
			if br.Host != h || br.Port != p {
				t.Errorf("v%d: broker %d at %s:%d, want its CLIENT listener %s", version, br.NodeID, br.Host, br.Port, client[br.NodeID])
			}
		}
		for _, p := range md.Topics[0].Partitions {
			want := leaders[p.Partition]
			code := int16(0)
			if want == 3 {
				want, code = -1, kerr.ListenerNotFound.Code
				if version < 6 {
					code = kerr.LeaderNotAvailable.Code
				}
			}
			if p.Leader != want || p.ErrorCode != code {
				t.Errorf("v%d: partition %d leader %d error %d, want %d error %d", version, p.Partition, p.Leader, p.ErrorCode, want, code)
			}
		}
	}
	dc := raw.do(kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
	if len(dc.Brokers) != 2 {
		t.Errorf("DescribeCluster brokers %+v, want nodes 1 and 2", dc.Brokers)
	}
	for _, br := range dc.Brokers {
		h, p := hostPort(t, client[br.NodeID])
		if br.Host != h || br.Port != p {
			t.Errorf("DescribeCluster: broker %d at %s:%d, want %s", br.NodeID, br.Host, br.Port, client[br.NodeID])
		}
	}
	// A SASL client of node 1's SECURE listener sees node 1 alone, at its
	// SECURE address.
	secure, err := kgo.NewClient(kgo.SeedBrokers(tc.nodes[1].ListenerAddr("SECURE")), plainOpt("alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	smd, err := topicReq(12).RequestWith(ctx, secure)
	if err != nil {
		t.Fatal(err)
	}
	sh, sp := hostPort(t, tc.nodes[1].ListenerAddr("SECURE"))
	if len(smd.Brokers) != 1 || smd.Brokers[0].NodeID != 1 || smd.Brokers[0].Host != sh || smd.Brokers[0].Port != sp {
		t.Errorf("SECURE: brokers %+v, want node 1 at %s:%d", smd.Brokers, sh, sp)
	}

	// Replication runs over INTERNAL: a record produced with acks=all on
	// CLIENT to a partition node 1 or 2 leads is acknowledged by every
	// replica.
	var part int32 = -1
	for p, l := range leaders {
		if l != 3 {
			part = p
		}
	}
	if part < 0 {
		t.Fatalf("node 3 leads every partition: %v", leaders)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(client[1]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "spread", Partition: part, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce over CLIENT to a partition nodes 1 or 2 lead: %v", err)
	}
}

//go:build cluster

package broker

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/quota"
)

// rawQuotaEntry is an AlterClientQuotas entry of one client id setting
// (value > 0) or removing (value 0) key.
func rawQuotaEntry(clientID *string, key string, value float64) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = quota.EntityClientID, clientID
	e.Entity = append(e.Entity, ent)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, value == 0
	e.Ops = append(e.Ops, op)
	return e
}

// alterQuotasOn sends AlterClientQuotas to node id itself (franz-go would
// send it to the controller) and returns each entry's "code message".
func (tc *testCluster) alterQuotasOn(id int32, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []string {
	tc.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(1)
	req.Entries, req.ValidateOnly = entries, validateOnly
	var out []string
	for _, e := range tc.rawDo(id, req).(*kmsg.AlterClientQuotasResponse).Entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", e.ErrorCode, msg)))
	}
	return out
}

// rawDo sends req to node id on a connection of its own.
func (tc *testCluster) rawDo(id int32, req kmsg.Request) kmsg.Response {
	tc.t.Helper()
	c := dialRaw(tc.t, tc.nodes[id].Addr())
	defer c.nc.Close()
	return c.do(req)
}

// doForwarded sends req to node id as a forwarding broker does (with the
// forwarding client id), so that the node does not forward it again.
func (tc *testCluster) doForwarded(id int32, req kmsg.Request) kmsg.Response {
	tc.t.Helper()
	c := dialRaw(tc.t, tc.nodes[id].Addr())
	defer c.nc.Close()
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(forwardClientID)))
	b = append(b, forwardClientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.nc.Write(b); err != nil {
		tc.t.Fatal(err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.readResponse(1, resp)
	return resp
}

// quotasOn describes every client quota node id knows, as sorted lines
// "entity: key=value ...".
func (tc *testCluster) quotasOn(id int32) []string {
	tc.t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.SetVersion(1)
	resp := tc.rawDo(id, req).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 {
		tc.t.Fatalf("node %d: DescribeClientQuotas: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, e := range resp.Entries {
		var ent, vals []string
		for _, c := range e.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			ent = append(ent, c.Type+"="+name)
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		sort.Strings(vals)
		out = append(out, strings.Join(ent, ",")+": "+strings.Join(vals, " "))
	}
	sort.Strings(out)
	return out
}

// waitForQuotas waits until every live node describes want.
func (tc *testCluster) waitForQuotas(want ...string) {
	tc.t.Helper()
	for _, id := range tc.live() {
		waitLong(tc.t, fmt.Sprintf("node %d to describe %q", id, want), func() bool {
			return slices.Equal(tc.quotasOn(id), want)
		})
	}
}

// throttlesByNode counts the throttle times a client was given, by the
// node that gave them.
type throttlesByNode struct{ n [8]atomic.Int64 }

func (c *throttlesByNode) OnBrokerThrottle(m kgo.BrokerMetadata, d time.Duration, _ bool) {
	if m.NodeID >= 0 && int(m.NodeID) < len(c.n) && d > 0 {
		c.n[m.NodeID].Add(1)
	}
}

// TestClusterClientQuotas: a node that is not the controller answers a
// request forwarded to it NOT_CONTROLLER; client quotas altered through a
// node that is not the active controller (the request is forwarded) are
// described by every node; validate_only changes nothing; a producer over
// its producer_byte_rate is throttled by the partition's leader that is
// not the controller; the quotas survive the controller's restart, after
// which the new controller takes alterations.
func TestClusterClientQuotas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and a throttled producer for several seconds")
	}
	ctx := testCtx(t)
	// Three windows, so that the burst allowed before the first throttle
	// is small.
	tc := startClusterWith(t, 3, func(c *Config) { c.QuotaWindowNum = 3 })
	ctrl := tc.controller(1)
	var others []int32
	for _, id := range tc.live() {
		if id != ctrl {
			others = append(others, id)
		}
	}
	via := others[0]

	// A node that is not the controller answers a request forwarded to it
	// NOT_CONTROLLER, every entry, as Kafka's getErrorResponse.
	notCtrl := kmsg.NewPtrAlterClientQuotasRequest()
	notCtrl.SetVersion(1)
	notCtrl.Entries = []kmsg.AlterClientQuotasRequestEntry{
		rawQuotaEntry(strp("a"), "producer_byte_rate", 1), rawQuotaEntry(nil, "producer_byte_rate", 1)}
	resp := tc.doForwarded(others[1], notCtrl).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 2 || tc.controller(others[1]) == others[1] {
		t.Fatalf("forwarded to node %d: %+v", others[1], resp.Entries)
	}
	for i, e := range resp.Entries {
		if e.ErrorCode != kerr.NotController.Code || e.ErrorMessage == nil || *e.ErrorMessage != kerr.NotController.Description ||
			len(e.Entity) != 1 || e.Entity[0].Type != quota.EntityClientID || (i == 0) != (e.Entity[0].Name != nil) {
			t.Fatalf("forwarded to node %d, entry %d: %+v", others[1], i, e)
		}
	}

	const quota = 64 << 10
	got := tc.alterQuotasOn(via, false,
		rawQuotaEntry(strp("slow"), "producer_byte_rate", quota),
		rawQuotaEntry(nil, "request_percentage", 50),
		rawQuotaEntry(strp("bad"), "producer_byte_rate", 1.5))
	want := []string{"0", "0", "42 producer_byte_rate cannot be a fractional value."}
	if !slices.Equal(got, want) {
		t.Fatalf("AlterClientQuotas through node %d: %q, want %q", via, got, want)
	}
	described := []string{
		"client-id=<default>: request_percentage=50",
		"client-id=slow: producer_byte_rate=65536",
	}
	tc.waitForQuotas(described...)

	// validate_only answers as the controller validates, through another
	// node, and writes nothing.
	got = tc.alterQuotasOn(others[1], true, rawQuotaEntry(strp("slow"), "producer_byte_rate", 1), rawQuotaEntry(strp("x"), "connection_creation_rate", 1))
	if want := []string{"0", "42 Invalid configuration key connection_creation_rate"}; !slices.Equal(got, want) {
		t.Fatalf("validate_only: %q, want %q", got, want)
	}
	for _, id := range tc.live() {
		if got := tc.quotasOn(id); !slices.Equal(got, described) {
			t.Fatalf("node %d after validate_only: %q", id, got)
		}
	}

	// A partition led by a broker that is not the controller.
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "quota", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{via}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	create.Topics = append(create.Topics, rt)
	create.TimeoutMillis = 30000
	if res := tc.rawDo(ctrl, create).(*kmsg.CreateTopicsResponse).Topics[0]; res.ErrorCode != 0 {
		t.Fatalf("creating the topic: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	var throttles throttlesByNode
	cl := tc.client(via, kgo.ClientID("slow"), kgo.DefaultProduceTopic("quota"), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.WithHooks(&throttles))
	value := make([]byte, 1000)
	sem := make(chan struct{}, 64)
	for start := time.Now(); throttles.n[via].Load() == 0; {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no throttle from node %d after 60 s over a quota of %d B/s", via, quota)
		}
		sem <- struct{}{}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
			<-sem
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range throttles.n {
		if n := throttles.n[id].Load(); int32(id) != via && n != 0 {
			t.Errorf("node %d, which leads nothing the client wrote to, throttled it %d times", id, n)
		}
	}

	// The controller restarts; the quotas are still described by every
	// node, and the new controller takes an alteration forwarded to it.
	tc.close(ctrl)
	survivor := others[0]
	waitLong(t, "a new active controller", func() bool {
		c := tc.controller(survivor)
		return c >= 0 && c != ctrl
	})
	tc.restart(ctrl)
	tc.waitForBrokers(tc.live(), 3)
	tc.waitForQuotas(described...)
	newCtrl := tc.controller(survivor)
	for _, id := range tc.live() {
		if id == newCtrl {
			continue
		}
		got = tc.alterQuotasOn(id, false, rawQuotaEntry(strp("slow"), "producer_byte_rate", 0))
		if !slices.Equal(got, []string{"0"}) {
			t.Fatalf("removing through node %d: %q", id, got)
		}
		break
	}
	tc.waitForQuotas("client-id=<default>: request_percentage=50")
}

//go:build cluster

package broker

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReassignmentMovesDataToNewReplicas is KIP-455 end to end on a
// four-node cluster: a partition with two replicas and data is reassigned
// with kadm to the two other brokers. The new replicas copy the log from
// the leader and join the ISR; the controller then completes the
// reassignment (the old replicas leave, leadership moves to a new one);
// the new replicas hold the same bytes as the old leader had; the old
// replicas' local data is removed; a consumer reads every record, and
// producing goes on to the new leader.
func TestReassignmentMovesDataToNewReplicas(t *testing.T) {
	tc := startCluster(t, 4)
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "mv"); err != nil {
		t.Fatal(err)
	}
	var old []int32
	waitLong(t, "the topic's replicas", func() bool {
		for _, tp := range tc.metadata(1).Topics {
			if *tp.Topic == "mv" && len(tp.Partitions) == 1 && tp.Partitions[0].Leader >= 0 {
				old = tp.Partitions[0].Replicas
			}
		}
		return len(old) == 2
	})
	var target []int32
	for _, id := range tc.live() {
		if !slices.Contains(old, id) {
			target = append(target, id)
		}
	}
	producer := tc.client(1, kgo.DefaultProduceTopic("mv"))
	const n = 200
	for i := 0; i < n; i++ {
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	leaderBefore := tc.nodes[old[0]].cluster.currentImage().TopicByName("mv").Partitions[0].Leader
	want := partitionBytes(t, tc.nodes[leaderBefore], "mv")

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("mv", 0, target)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
	}
	waitLong(t, "the reassignment to complete", func() bool {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"mv": {0: {}}})
		if err != nil || len(listed) != 0 {
			return false
		}
		for _, id := range tc.live() {
			tp := tc.nodes[id].cluster.currentImage().TopicByName("mv")
			if tp == nil || !slices.Equal(tp.Partitions[0].Replicas, target) || !slices.Contains(target, tp.Partitions[0].Leader) {
				return false
			}
		}
		return true
	})
	for _, id := range target {
		waitLong(t, fmt.Sprintf("node %d to hold the data", id), func() bool {
			return bytes.Equal(partitionBytes(t, tc.nodes[id], "mv"), want)
		})
	}
	for _, id := range old {
		waitLong(t, fmt.Sprintf("old replica %d to drop its data", id), func() bool {
			p := tc.nodes[id].lookupTopic("mv").partitions[0]
			return p.Log().EndOffset() == 0 && p.Log().Size() == 0
		})
	}

	// Producing goes on to the new leader; a consumer reads everything.
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := tc.client(old[0], kgo.ConsumeTopics("mv"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for next := 0; next <= n; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", next, n+1)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(next) || r.Offset != int64(next) {
				t.Fatalf("record at offset %d is %q, want %d", r.Offset, r.Value, next)
			}
			next++
		})
	}
}

// partitionBytes reads partition 0 of topic from b's log, whole.
func partitionBytes(t *testing.T, b *Broker, topic string) []byte {
	t.Helper()
	p := b.lookupTopic(topic).partitions[0]
	end := p.Log().EndOffset()
	if end == 0 {
		return nil
	}
	data, err := p.Log().Read(p.Log().StartOffset(), 64<<20, end)
	if err != nil {
		t.Fatalf("reading %s on node %d: %v", topic, b.cfg.NodeID, err)
	}
	return data
}

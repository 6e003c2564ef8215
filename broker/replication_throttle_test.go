//go:build cluster

package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
)

// TestReassignmentIsThrottledUntilTheThrottleIsRemoved moves a replica
// onto a new broker under a replication throttle of 100 KiB/s, as
// kafka-reassign-partitions.sh --execute --throttle sets it: once with the
// leader's side only, once with the follower's only. The copy goes no
// faster than the rate allows (a lower bound on the time taken, with a
// wide margin); once the throttle is removed, as --verify removes it, the
// reassignment completes and the new replica holds the leader's bytes.
func TestReassignmentIsThrottledUntilTheThrottleIsRemoved(t *testing.T) {
	const (
		rate      = 100 << 10 // bytes per second
		chunk     = 64 << 10  // replica.fetch.max.bytes: one fetch's worth
		total     = 1 << 20   // the partition's size
		watched   = 384 << 10 // copied bytes at which the elapsed time is checked
		recordLen = 16 << 10
	)
	tc := startClusterWith(t, 3, func(cfg *Config) {
		cfg.ReplicaFetchMaxBytes = chunk
	})
	ctx := testCtx(t)
	adm := kadm.NewClient(tc.client(1))

	for _, side := range []string{"leader", "follower"} {
		t.Run(side, func(t *testing.T) {
			topic := "throttled-" + side
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			var leader int32 = -1
			waitLong(t, "the topic's leader", func() bool {
				for _, tp := range tc.metadata(1).Topics {
					if *tp.Topic == topic && len(tp.Partitions) == 1 {
						leader = tp.Partitions[0].Leader
					}
				}
				return leader >= 0
			})
			target := tc.otherThan(leader)
			producer := tc.client(1, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(recordLen+1024),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			for i := 0; i < total/recordLen; i++ {
				value := make([]byte, recordLen)
				rand.Read(value)
				producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
			if err := producer.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			want := partitionBytes(t, tc.nodes[leader], topic)

			// The throttle, as the reassign tool sets it: the rate on the
			// brokers, the replicas on the topic.
			throttled, rateKey, listKey := target, followerThrottledRate, topicconfig.FollowerThrottledReplicas
			if side == "leader" {
				throttled, rateKey, listKey = leader, leaderThrottledRate, topicconfig.LeaderThrottledReplicas
			}
			alterBroker(t, ctx, adm, throttled, kadm.AlterConfig{Op: kadm.SetConfig, Name: rateKey, Value: kmsg.StringPtr(strconv.Itoa(rate))})
			alterTopic(t, ctx, adm, topic, kadm.AlterConfig{Op: kadm.SetConfig, Name: listKey, Value: kmsg.StringPtr(fmt.Sprintf("0:%d", throttled))})
			waitLong(t, "the throttle in force", func() bool {
				q := &tc.nodes[throttled].replQuotas.Leader
				if side == "follower" {
					q = &tc.nodes[throttled].replQuotas.Follower
				}
				return q.Bound() == rate
			})

			start := time.Now()
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, 0, []int32{leader, target})
			res, err := adm.AlterPartitionAssignments(ctx, req)
			if err != nil || res.Error() != nil {
				t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
			}
			copied := func() int64 {
				tp := tc.nodes[target].lookupTopic(topic)
				if tp == nil {
					return 0
				}
				return tp.partitions[0].Log().Size()
			}
			waitLong(t, fmt.Sprintf("%d bytes copied", watched), func() bool { return copied() >= watched })
			elapsed := time.Since(start)
			// At rate r, c bytes take at least (c - one fetch) / r: 3.2 s
			// here. Half of that leaves room for any measurement slack; a
			// slow machine only makes the copy slower.
			if min := time.Duration(float64(watched-chunk) / rate / 2 * float64(time.Second)); elapsed < min {
				t.Fatalf("%d bytes copied in %v under a throttle of %d B/s; at least %v expected", copied(), elapsed, rate, min)
			}
			t.Logf("%d bytes copied in %v under a throttle of %d B/s", copied(), elapsed, rate)
			if got := copied(); got >= total {
				t.Fatalf("the whole partition (%d bytes) was copied in %v under a throttle of %d B/s", got, elapsed, rate)
			}

			// What --verify does once it sees the reassignment: the rates
			// deleted on every broker, the lists on the topic.
			for _, id := range tc.live() {
				alterBroker(t, ctx, adm, id, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: leaderThrottledRate},
					kadm.AlterConfig{Op: kadm.DeleteConfig, Name: followerThrottledRate},
					kadm.AlterConfig{Op: kadm.DeleteConfig, Name: alterLogDirsThrottleRate})
			}
			alterTopic(t, ctx, adm, topic, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: topicconfig.LeaderThrottledReplicas},
				kadm.AlterConfig{Op: kadm.DeleteConfig, Name: topicconfig.FollowerThrottledReplicas})
			waitLong(t, "the reassignment to complete", func() bool {
				listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
				return err == nil && len(listed) == 0 && bytes.Equal(partitionBytes(t, tc.nodes[target], topic), want)
			})
		})
	}
}

// alterBroker alters a broker's configs, failing the test on any error.
func alterBroker(t *testing.T, ctx context.Context, adm *kadm.Client, broker int32, configs ...kadm.AlterConfig) {
	t.Helper()
	res, err := adm.AlterBrokerConfigs(ctx, configs, broker)
	checkAltered(t, res, err)
}

// alterTopic alters a topic's configs, failing the test on any error.
func alterTopic(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, configs ...kadm.AlterConfig) {
	t.Helper()
	res, err := adm.AlterTopicConfigs(ctx, configs, topic)
	checkAltered(t, res, err)
}

func checkAltered(t *testing.T, res kadm.AlterConfigsResponses, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("altering %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
}

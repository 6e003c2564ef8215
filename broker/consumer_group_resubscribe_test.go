package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue #26, case 1: a KIP-848 consumer that changes its subscription step
// after step (a sliding window of topics) without waiting for the
// assignment in between must still end each fifth step, and the last, with
// exactly the partitions of its current subscription.
//
// librdkafka's own test also unsubscribes every seventh step; that
// variant is TestConsumerGroupUnsubscribeWhileSlidingConverges
// (consumer_group_unsubscribe_test.go), which needs Kafka 4.3+'s
// assignment interval and offloaded assignor (see docs/architecture.md,
// Groups).

const (
	slideTopics     = 24 // topics sw-00 .. sw-23
	slidePartitions = 4
	slideWindow     = 5
)

// resubscriber is a KIP-848 consumer whose subscription the test changes.
type resubscriber interface {
	subscribe(t *testing.T, topics []string)
	// poll serves the client's callbacks for about d.
	poll(d time.Duration)
	// assigned is the set of "topic/partition" the client holds now.
	assigned() map[string]bool
	close()
}

func slideTopicNames() []string {
	var out []string
	for i := range slideTopics {
		out = append(out, fmt.Sprintf("sw-%02d", i))
	}
	return out
}

func createSlideTopics(t *testing.T, bootstrap []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rf := int16(1)
	if len(bootstrap) > 1 {
		rf = 3
	}
	res, err := kadm.NewClient(cl).CreateTopics(ctx, slidePartitions, rf, nil, slideTopicNames()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Fatalf("create %s: %v", r.Topic, r.Err)
		}
	}
}

// runSlidingWindow subscribes r to topics [i, i+window) for i = 0, 1, ...
// (the window shrinking at the end), as librdkafka's
// 0045-subscribe_update do_test_subscribe_many_updates does, and at every
// fifth step and the last waits until r holds exactly the partitions of
// its current subscription.
func runSlidingWindow(t *testing.T, r resubscriber) {
	t.Helper()
	names := slideTopicNames()
	for i := range names {
		sub := names[i:min(i+slideWindow, len(names))]
		r.subscribe(t, sub)
		r.poll(time.Millisecond)
		if i%5 != 0 && i != len(names)-1 {
			continue
		}
		want := map[string]bool{}
		for _, n := range sub {
			for p := range slidePartitions {
				want[fmt.Sprintf("%s/%d", n, p)] = true
			}
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			got := r.assigned()
			if equalSets(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("step %d (subscribed to %s..%s): assignment never became the %d partitions of the subscription; holds %s",
					i, sub[0], sub[len(sub)-1], len(want), setString(got))
			}
			r.poll(20 * time.Millisecond)
		}
	}
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func setString(s map[string]bool) string {
	var ks []string
	for k := range s {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return fmt.Sprintf("%d [%s]", len(ks), strings.Join(ks, " "))
}

// librdkafkaResubscriber is a librdkafka (confluent-kafka-go) consumer with
// group.protocol=consumer and a rebalance callback installed.
type librdkafkaResubscriber struct {
	c *kafka.Consumer
}

func newLibrdkafkaResubscriber(t *testing.T, bootstrap []string, group string) *librdkafkaResubscriber {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  strings.Join(bootstrap, ","),
		"group.id":           group,
		"group.protocol":     "consumer",
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
		"log_level":          3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &librdkafkaResubscriber{c: c}
}

func (r *librdkafkaResubscriber) subscribe(t *testing.T, topics []string) {
	t.Helper()
	// The callback leaves the (incremental) assign and unassign to
	// confluent-kafka-go, which does them when the callback does not.
	rebalance := func(*kafka.Consumer, kafka.Event) error { return nil }
	if err := r.c.SubscribeTopics(topics, rebalance); err != nil {
		t.Fatal(err)
	}
}

func (r *librdkafkaResubscriber) poll(d time.Duration) {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		r.c.Poll(int(left.Milliseconds()) + 1)
	}
}

func (r *librdkafkaResubscriber) assigned() map[string]bool {
	out := map[string]bool{}
	tps, err := r.c.Assignment()
	if err != nil {
		return out
	}
	for _, tp := range tps {
		out[fmt.Sprintf("%s/%d", *tp.Topic, tp.Partition)] = true
	}
	return out
}

func (r *librdkafkaResubscriber) close() { r.c.Close() }

// franzResubscriber is a franz-go consumer with kgo.ServerSideBalancer;
// its subscription changes with AddConsumeTopics and
// PurgeTopicsFromConsuming, and its assignment is what the callbacks said.
type franzResubscriber struct {
	cl   *kgo.Client
	mu   sync.Mutex
	held map[string]bool
	subs []string
}

func newFranzResubscriber(t *testing.T, bootstrap []string, group string, first []string) *franzResubscriber {
	t.Helper()
	r := &franzResubscriber{held: map[string]bool{}, subs: first}
	update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for topic, ps := range m {
				for _, p := range ps {
					k := fmt.Sprintf("%s/%d", topic, p)
					if add {
						r.held[k] = true
					} else {
						delete(r.held, k)
					}
				}
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(first...),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(update(true)),
		kgo.OnPartitionsRevoked(update(false)),
		kgo.OnPartitionsLost(update(false)),
	)
	if err != nil {
		t.Fatal(err)
	}
	r.cl = cl
	return r
}

func (r *franzResubscriber) subscribe(t *testing.T, topics []string) {
	keep := map[string]bool{}
	for _, n := range topics {
		keep[n] = true
	}
	var drop []string
	for _, n := range r.subs {
		if !keep[n] {
			drop = append(drop, n)
		}
	}
	r.cl.AddConsumeTopics(topics...)
	r.cl.PurgeTopicsFromConsuming(drop...)
	r.subs = append([]string(nil), topics...)
}

func (r *franzResubscriber) poll(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r.cl.PollFetches(ctx)
}

func (r *franzResubscriber) assigned() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.held))
	for k := range r.held {
		out[k] = true
	}
	return out
}

func (r *franzResubscriber) close() { r.cl.Close() }

func testSlidingWindow(t *testing.T, bootstrap []string) {
	createSlideTopics(t, bootstrap)
	// Two groups: the clients' assignments do not depend on each other.
	t.Run("librdkafka", func(t *testing.T) {
		t.Parallel()
		r := newLibrdkafkaResubscriber(t, bootstrap, "slide-librdkafka")
		defer r.close()
		runSlidingWindow(t, r)
	})
	t.Run("franz-go", func(t *testing.T) {
		t.Parallel()
		r := newFranzResubscriber(t, bootstrap, "slide-franz", slideTopicNames()[:slideWindow])
		defer r.close()
		runSlidingWindow(t, r)
	})
}

// TestConsumerGroupSlidingResubscriptionConverges is issue #26 case 1
// against one in-process broker. A new target assignment waits for the
// assignment interval (1 s) and reaches the member with its next heartbeat:
// at the default heartbeat interval (5 s) each check waits for that
// heartbeat, so the members heartbeat every 100 ms, as in the cluster
// variant; what must converge is the same.
func TestConsumerGroupSlidingResubscriptionConverges(t *testing.T) {
	t.Parallel()
	cfg := groupTestConfig("")
	cfg.GroupConsumerHeartbeatIntervalMs = 100
	b := startBroker(t, cfg)
	testSlidingWindow(t, []string{b.Addr()})
}

package broker

import (
	"fmt"
	"testing"
	"time"
)

// runSlidingWindowWithUnsubscribe is librdkafka's 0045-subscribe_update
// do_test_subscribe_many_updates: the consumer slides its subscription
// over the topics without waiting between steps, unsubscribing first at
// every seventh and subscribing again, and at every fifth step and the
// last must come to hold exactly the partitions of its current
// subscription.
func runSlidingWindowWithUnsubscribe(t *testing.T, r *librdkafkaResubscriber, topics int) {
	t.Helper()
	names := slideTopicNames()[:topics]
	for i := range names {
		sub := names[i:min(i+slideWindow, len(names))]
		r.subscribe(t, sub)
		if i > 0 && i%7 == 0 {
			// The coordinator's answer to the subscription change is
			// handled while the unsubscribe is still to come, the
			// interleaving issue #26 found. The wait must cover
			// librdkafka handling the answer, not only its arrival:
			// librdkafka 2.11 (the newest confluent-kafka-go served
			// here) sends its leave without waiting for a heartbeat in
			// flight, and a heartbeat answer it handles after the leave
			// moves its join state out of INIT; the leave's answer then
			// resets the member epoch to 0 but not that state, so its
			// rejoin is an incremental heartbeat with epoch 0 and no
			// RebalanceTimeoutMs, which Kafka, as Gregor, refuses as
			// INVALID_REQUEST, fatal to librdkafka. A millisecond left
			// that race open about one run in four on a loaded machine.
			r.poll(50 * time.Millisecond)
			if err := r.c.Unsubscribe(); err != nil {
				t.Fatal(err)
			}
			r.subscribe(t, sub)
		}
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
		// Converging takes up to a few heartbeat intervals (5 s each);
		// the failure this test looks for never converges at all, so the
		// bound is generous for a loaded machine.
		deadline := time.Now().Add(30 * time.Second)
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

// TestConsumerGroupUnsubscribeWhileSlidingConverges is issue #26 case 1
// with librdkafka's unsubscribe at every seventh step, at Kafka 4.4's
// defaults (group.consumer.assignment.interval.ms 1000, assignor offload
// on). With interval 0 and offload off (Kafka 4.2's behaviour) librdkafka
// 2.11 to 2.16 handles the revoking answer to its subscription change
// between its queued subscribe and unsubscribe, leaves while "steady" and
// never heartbeats again, so this test times out; with Kafka's defaults
// the subscription change is answered before the new target exists. The
// 24 topics and the default heartbeat interval (5 s) are what make it
// fail without the interval; at Kafka's defaults it takes about 25 s.
func TestConsumerGroupUnsubscribeWhileSlidingConverges(t *testing.T) {
	// Not parallel: it needs a coordinator that answers at once, and beside
	// the other tests on a loaded machine librdkafka's hang can come back.
	b := startBroker(t, groupTestConfig(""))
	createSlideTopics(t, []string{b.Addr()})
	r := newLibrdkafkaResubscriber(t, []string{b.Addr()}, "slide-unsubscribe")
	// A librdkafka consumer in the stuck state does not close (it waits
	// for its leave); let the test end and report the failure.
	defer func() {
		done := make(chan struct{})
		go func() { r.close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the consumer did not close within 10 s")
		}
	}()
	runSlidingWindowWithUnsubscribe(t, r, slideTopics)
}

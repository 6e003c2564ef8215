package group

import "testing"

func describeOne(t *testing.T, c *Coordinator) ConsumerDescribedGroup {
	t.Helper()
	d := c.ConsumerGroupDescribe([]string{"g"})
	if len(d) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	return d[0]
}

// TestConsumerAssignmentIntervalDefersTarget checks
// group.consumer.assignment.interval.ms with offload off: a target is
// computed at most once per interval, the group is Assigning meanwhile,
// and the coordinator's Tick computes it when the interval has passed.
func TestConsumerAssignmentIntervalDefersTarget(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerAssignmentIntervalMs: 1000})
	h.addTopic("foo", 4)
	h.addTopic("bar", 2)
	// The group's first target is computed at once.
	if r := ok(t, h.join("m1", "foo")); r.MemberEpoch != 2 || countPartitions(r.Assignment) != 4 {
		t.Fatalf("join: %+v", r)
	}
	// 100 ms later a subscription change bumps the group epoch; the
	// target waits for the interval.
	h.now += 100
	r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: 2, RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"foo", "bar"}}))
	if r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("subscription change: %+v", r)
	}
	if d := describeOne(t, h.c); d.State != "Assigning" || d.Epoch != 3 || d.AssignmentEpoch != 2 {
		t.Fatalf("describe: state %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	// 999 ms after the first computation: still waiting.
	h.tick(899)
	if d := describeOne(t, h.c); d.State != "Assigning" {
		t.Fatalf("before the interval: %s", d.State)
	}
	// At the interval's end the Tick computes it; the next heartbeat
	// carries it.
	h.tick(1)
	if d := describeOne(t, h.c); d.State != "Reconciling" || d.AssignmentEpoch != 3 {
		t.Fatalf("after the interval: state %s assignment epoch %d", d.State, d.AssignmentEpoch)
	}
	if r := ok(t, h.beat("m1", 2, nil)); r.MemberEpoch != 3 || countPartitions(r.Assignment) != 6 {
		t.Fatalf("after the interval: %+v", r)
	}
}

// TestConsumerAssignmentDueAtHeartbeat checks that a heartbeat arriving
// after a scheduled computation's time sees its result, whatever the
// driver's last Tick.
func TestConsumerAssignmentDueAtHeartbeat(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerAssignmentIntervalMs: 1000})
	h.addTopic("foo", 4)
	ok(t, h.join("m1", "foo"))
	h.now += 10
	ok(t, h.join("m2", "foo"))
	if d := describeOne(t, h.c); d.State != "Assigning" {
		t.Fatalf("second join: %s", d.State)
	}
	h.now += 990
	r := ok(t, h.beat("m1", 2, nil))
	if r.MemberEpoch != 2 || countPartitions(r.Assignment) != 2 {
		t.Fatalf("m1 at the interval's end: %+v", r)
	}
}

// TestConsumerAssignorOffloadAnswersFirst checks
// group.consumer.assignor.offload.enable: the heartbeat that bumps the
// epoch is answered with the previous target, and the computation lands
// right after it, visible to the next heartbeat.
func TestConsumerAssignorOffloadAnswersFirst(t *testing.T) {
	h := newConsumerHarness(t, Config{ConsumerAssignorOffload: true})
	h.addTopic("foo", 4)
	h.addTopic("bar", 2)
	// A new group's first target is computed inline: epoch 2.
	if r := ok(t, h.join("m1", "foo")); r.MemberEpoch != 2 || countPartitions(r.Assignment) != 4 {
		t.Fatalf("join: %+v", r)
	}
	r := ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m1", MemberEpoch: 2, RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"bar"}}))
	if r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("subscription change answered with the new target: %+v", r)
	}
	if d := describeOne(t, h.c); d.State != "Assigning" {
		t.Fatalf("after the change: %s", d.State)
	}
	// A heartbeat before the coordinator's Tick still finds the
	// computation running: the previous target, nothing to do.
	if r := ok(t, h.beat("m1", 2, nil)); r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("heartbeat before the tick: %+v", r)
	}
	// The Tick lands it; the next heartbeat gets the revocation.
	h.tick(0)
	if d := describeOne(t, h.c); d.State != "Reconciling" || d.AssignmentEpoch != d.Epoch {
		t.Fatalf("after the tick: state %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	if r := ok(t, h.beat("m1", 2, nil)); r.MemberEpoch != 2 || r.Assignment == nil || countPartitions(r.Assignment) != 0 {
		t.Fatalf("heartbeat after the tick: %+v", r)
	}
}

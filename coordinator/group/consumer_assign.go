package group

// When a consumer group's target assignment is computed: Kafka 4.3+'s
// assignment batching and offload (KIP-1263, GroupMetadataManager's
// maybeUpdateTargetAssignment and canComputeNextTargetAssignment).
//
// Once the group epoch is ahead of the target assignment epoch (a member
// joined, left or changed its subscription, or a subscribed topic
// changed), the target is computed when at least
// group.consumer.assignment.interval.ms has passed since the previous
// computation (now >= last + interval, as Kafka's check); otherwise the
// computation is scheduled for last + interval, and the coordinator's Tick
// or the next request about the group (fireDueTimers) runs it then. Until
// it lands the group is Assigning and members reconcile towards the
// previous target.
//
// With group.consumer.assignor.offload.enable, Kafka runs the assignor on
// a background thread and applies its result in a later write, so the
// heartbeat that started the computation is answered with the previous
// target. Gregor emulates that by scheduling the computation for the same
// instant instead of running it inline, and only the coordinator's Tick
// runs an offloaded computation (the driver ticks every 20 ms): it lands
// after the heartbeat's answer, in an event of its own as Kafka's result
// does, and is visible to the heartbeats after that Tick. A heartbeat that
// comes before the Tick gets the previous target, as one that reaches
// Kafka while its assignor runs. With offload off, a computation the
// interval deferred runs at the Tick or at the first request about the
// group at or after its time. The first computation of a group this coordinator knows
// (a new group, or one replayed from the log) runs inline, so a member
// joining a new group is answered with the group's first bumped epoch (2,
// as Kafka 4.4 answers it; 1 in Kafka 4.3) and not the empty group's.
//
// Interval 0 with offload off is Kafka 4.2's behaviour: the heartbeat that
// finds the group epoch ahead computes the target and answers with it.

// maybeComputeTarget computes g's target assignment now, or schedules it,
// when the group epoch is ahead of the target epoch. topics is the topic
// image; the computation uses the latest image a heartbeat gave.
func (c *Coordinator) maybeComputeTarget(g *group, now int64, topics Topics) {
	cg := g.cg
	if cg.epoch <= cg.assignmentEpoch {
		cg.computeAt = 0
		return
	}
	cg.computeTopics = topics
	due := now
	if cg.computed {
		due = max(now, cg.computedAt+c.cfg.ConsumerAssignmentIntervalMs)
	}
	if due > now || (c.cfg.ConsumerAssignorOffload && cg.computed) {
		cg.computeAt = due
		return
	}
	c.computeTarget(g, now, topics)
}

// fireTargetComputation runs a scheduled target computation that is due
// by now, with topics if not nil (a heartbeat's image), else the image the
// last heartbeat gave.
func (c *Coordinator) fireTargetComputation(g *group, now int64, topics Topics) {
	cg := g.cg
	if cg.computeAt == 0 || now < cg.computeAt {
		return
	}
	if cg.epoch <= cg.assignmentEpoch {
		cg.computeAt = 0
		return
	}
	if topics == nil {
		topics = cg.computeTopics
	}
	c.computeTarget(g, now, topics)
}

func (c *Coordinator) computeTarget(g *group, now int64, topics Topics) {
	cg := g.cg
	c.computeTargetAssignment(g, now, topics)
	cg.computed, cg.computedAt, cg.computeAt = true, now, 0
}

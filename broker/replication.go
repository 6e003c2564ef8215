package broker

// The cluster's side of replication: roles from each image, the replica
// fetchers, ISR changes sent to the active controller, the ISR expiry
// check and the high watermark checkpoint (partition/replica.go has the partition's
// side).

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/replication"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// roleChange is one partition's state in an applied image.
type roleChange struct {
	p       *partition.Partition
	t       *topic
	topicID [16]byte
	st      *partition.State
}

// applyRoles gives every partition of an applied image its role (Kafka's
// ReplicaManager.applyDelta): leader, follower or none, and hands the
// followed partitions to the fetcher of their leader, and tells the
// coordinators which of their partitions it now leads
// (coordinatorLeadership). Called on the image goroutine, holding no lock.
//
// current says that im holds this broker's own registration, so that its
// placement is as new as anything this broker's data dir holds.
func (c *cluster) applyRoles(im *metadata.Image, roles []roleChange, current bool) {
	b := c.b
	self := b.cfg.NodeID
	now := time.Now().UnixMilli()
	follow := map[int32][]replication.Target{}
	for _, rc := range roles {
		p, st := rc.p, rc.st
		switch {
		case st.Leader == self:
			if err := p.BecomeLeader(st, now, b.cfg.ReplicaLagTimeMaxMs, func(id int32) bool { return isrEligible(im, id, -1) }); err != nil {
				b.log.Error("taking the lead failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
				// Refuse produce rather than append at a wrong epoch.
				p.SetState(&partition.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch,
					Replicas: st.Replicas, ISR: st.ISR, Local: false})
				b.coordinatorLeadership(p, 0, false)
				continue
			}
			p.Appended() // the high watermark may move (a lone ISR), waiters re-check
			b.coordinatorLeadership(p, st.LeaderEpoch, true)
		case slices.Contains(st.Replicas, self):
			p.BecomeFollower(st)
			b.coordinatorLeadership(p, 0, false)
			p.Wake() // acks=all produces waiting here fail over
			if st.Leader >= 0 {
				follow[st.Leader] = append(follow[st.Leader], replication.Target{Partition: p, Topic: rc.t, TopicID: rc.topicID, LeaderEpoch: st.LeaderEpoch})
			}
		default:
			if err := p.BecomeNone(st, current); err != nil {
				b.log.Error("removing the data of a replica no longer hosted failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			}
			b.coordinatorLeadership(p, 0, false)
			p.Wake()
		}
	}
	c.repl.Follow(follow)
}

// replicationLoop runs the leader's periodic work: the ISR expiry check
// every replica.lag.time.max.ms / 2 (Kafka's isr-expiration task) and the
// high watermark checkpoint every
// replica.high.watermark.checkpoint.interval.ms.
func (c *cluster) replicationLoop() {
	cfg := c.b.cfg
	expiry := time.NewTicker(time.Duration(max(cfg.ReplicaLagTimeMaxMs/2, 1)) * time.Millisecond)
	defer expiry.Stop()
	checkpoint := time.NewTicker(time.Duration(cfg.ReplicaHighWatermarkCheckpointIntervalMs) * time.Millisecond)
	defer checkpoint.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-expiry.C:
			now := time.Now().UnixMilli()
			for _, tp := range c.b.allPartitions() {
				if isr := tp.p.ShrinkISR(now, cfg.ReplicaLagTimeMaxMs); isr != nil {
					c.b.log.Info("shrinking the ISR", "topic", tp.p.Topic(), "partition", tp.p.Index(), "isr", isr)
					c.alterISR(tp.p, tp.topicID)
				}
			}
		case <-checkpoint.C:
			c.checkpointHighWatermarks()
		}
	}
}

// topicPartition is a partition with its topic's id.
type topicPartition struct {
	p       *partition.Partition
	topicID [16]byte
}

// allPartitions lists every partition of the catalogue.
func (b *Broker) allPartitions() []topicPartition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []topicPartition
	for _, t := range b.catalog.byName {
		for _, p := range t.partitions {
			out = append(out, topicPartition{p, t.id})
		}
	}
	return out
}

// checkpointHighWatermarks writes every partition's high watermark
// (Kafka's replica-high-watermark checkpoint), skipping those unchanged.
func (c *cluster) checkpointHighWatermarks() {
	for _, tp := range c.b.allPartitions() {
		p := tp.p
		if p.State() == nil {
			continue
		}
		hw, changed := p.HighWatermarkToCheckpoint()
		if !changed {
			continue
		}
		if err := p.Log().WriteHighWatermark(hw); err != nil {
			c.b.log.Warn("checkpointing the high watermark failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			continue
		}
		p.Checkpointed(hw)
	}
}

// alterISR sends the ISR change in flight for p (the pending ISR of partition.Partition)
// to the active controller, retrying while the controller cannot be
// reached, until an answer, or until p's change is no longer the one in
// flight. One goroutine per change; a partition has at most one in flight.
func (c *cluster) alterISR(p *partition.Partition, topicID [16]byte) {
	gen := p.AlterGeneration()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		backoff := 50 * time.Millisecond
		for {
			ch, ok := p.AlterRequest(gen)
			if !ok {
				return
			}
			leaderEpoch := ch.LeaderEpoch
			req := controller.AlterPartitionRequest{BrokerID: c.b.cfg.NodeID, BrokerEpoch: c.epoch.Load(),
				Partitions: []controller.AlterPartitionItem{{TopicID: metadata.UUID(topicID), Partition: p.Index(), LeaderEpoch: ch.LeaderEpoch,
					PartitionEpoch: ch.PartitionEpoch, NewISR: ch.NewISR}}}
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			res, err := c.alterPartition(ctx, req, p.FollowerEpochs())
			cancel()
			if err == nil && errors.Is(res.Err, kerr.NotController) {
				// The controller's metadata is behind this request's epochs:
				// retriable, as Kafka's AlterPartitionManager treats it.
				err = res.Err
			}
			if err == nil {
				if p.AlterDone(gen, leaderEpoch, res.ISR, res.PartitionEpoch, res.Err, time.Now().UnixMilli()) {
					p.Wake()
				}
				if res.Err != nil {
					c.b.log.Info("the controller refused an ISR change", "topic", p.Topic(), "partition", p.Index(), "err", res.Err)
				}
				return
			}
			c.b.log.Debug("AlterPartition failed; retrying", "topic", p.Topic(), "partition", p.Index(), "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-c.stop:
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
		}
	}()
}

// alterPartition sends one partition's AlterPartition to the active
// controller: in-process when it is the local voter, else to its node. An
// error is the request's: retry.
func (c *cluster) alterPartition(ctx context.Context, req controller.AlterPartitionRequest, epochs map[int32]int64) (controller.AlterPartitionResult, error) {
	results, err := c.ctrl.AlterPartition(ctx, req)
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			return controller.AlterPartitionResult{}, aerr
		}
		return c.rpc.alterPartition(ctx, addr, req, epochs)
	}
	if err != nil {
		return controller.AlterPartitionResult{}, err
	}
	if len(results) != 1 {
		return controller.AlterPartitionResult{}, errors.New("broker: the controller answered no partition")
	}
	return results[0], nil
}

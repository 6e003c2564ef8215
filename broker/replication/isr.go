package replication

// The leader's periodic work and its ISR changes: the ISR expiry check,
// the high watermark checkpoint, and the AlterPartition requests sent to
// the active controller (broker/partition/replica.go has the partition's
// side).

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Run runs the leader's periodic work until the Manager's ctx ends: the
// ISR expiry check every replica.lag.time.max.ms / 2 (Kafka's
// isr-expiration task) and the high watermark checkpoint every
// replica.high.watermark.checkpoint.interval.ms.
func (m *Manager) Run() {
	cfg := m.cfg
	expiry := time.NewTicker(time.Duration(max(cfg.ReplicaLagTimeMaxMs/2, 1)) * time.Millisecond)
	defer expiry.Stop()
	checkpoint := time.NewTicker(time.Duration(cfg.ReplicaHighWatermarkCheckpointIntervalMs) * time.Millisecond)
	defer checkpoint.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-expiry.C:
			now := time.Now().UnixMilli()
			for _, tp := range m.env.Partitions() {
				if isr := tp.Partition.ShrinkISR(now, cfg.ReplicaLagTimeMaxMs); isr != nil {
					m.log.Info("shrinking the ISR", "topic", tp.Partition.Topic(), "partition", tp.Partition.Index(), "isr", isr)
					m.AlterISR(tp.Partition, tp.TopicID)
				}
			}
		case <-checkpoint.C:
			m.CheckpointHighWatermarks()
		}
	}
}

// A TopicPartition is a partition with its topic's id.
type TopicPartition struct {
	Partition *partition.Partition
	TopicID   [16]byte
}

// CheckpointHighWatermarks writes every partition's high watermark
// (Kafka's replica-high-watermark checkpoint), skipping those unchanged.
// Run calls it periodically, and the broker once more as it closes.
func (m *Manager) CheckpointHighWatermarks() {
	for _, tp := range m.env.Partitions() {
		p := tp.Partition
		if p.State() == nil {
			continue
		}
		hw, changed := p.HighWatermarkToCheckpoint()
		if !changed {
			continue
		}
		if err := p.Log().WriteHighWatermark(hw); err != nil {
			m.log.Warn("checkpointing the high watermark failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			continue
		}
		p.Checkpointed(hw)
	}
}

// AlterISR sends the ISR change in flight for p (the pending ISR of
// partition.Partition) to the active controller, retrying while the
// controller cannot be reached, until an answer, or until p's change is no
// longer the one in flight. One goroutine per change; a partition has at
// most one in flight.
func (m *Manager) AlterISR(p *partition.Partition, topicID [16]byte) {
	gen := p.AlterGeneration()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		backoff := 50 * time.Millisecond
		for {
			ch, ok := p.AlterRequest(gen)
			if !ok {
				return
			}
			leaderEpoch := ch.LeaderEpoch
			req := controller.AlterPartitionRequest{BrokerID: m.cfg.NodeID, BrokerEpoch: m.env.BrokerEpoch(),
				Partitions: []controller.AlterPartitionItem{{TopicID: metadata.UUID(topicID), Partition: p.Index(), LeaderEpoch: ch.LeaderEpoch,
					PartitionEpoch: ch.PartitionEpoch, NewISR: ch.NewISR}}}
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			res, err := m.env.AlterPartition(ctx, req, p.FollowerEpochs())
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
					m.log.Info("the controller refused an ISR change", "topic", p.Topic(), "partition", p.Index(), "err", res.Err)
				}
				return
			}
			m.log.Debug("AlterPartition failed; retrying", "topic", p.Topic(), "partition", p.Index(), "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-m.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
		}
	}()
}

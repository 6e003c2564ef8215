package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerRegistration is a broker's BrokerRegistration request.
type BrokerRegistration struct {
	BrokerID      int32
	ClusterID     string
	IncarnationID metadata.UUID
	Endpoints     []metadata.Endpoint
	Rack          string
}

// RegisterBroker registers a broker, as Kafka's ClusterControlManager
// does: a broker of another cluster is refused (INCONSISTENT_CLUSTER_ID);
// an id held by another incarnation whose session is alive is
// DUPLICATE_BROKER_REGISTRATION. The broker starts fenced, and a
// re-registration moves leadership off it. It returns the broker epoch,
// the raft index of the registration.
func (c *Controller) RegisterBroker(ctx context.Context, req BrokerRegistration) (int64, error) {
	if req.BrokerID < 0 {
		return 0, fmt.Errorf("controller: broker id %d: %w", req.BrokerID, kerr.InvalidRequest)
	}
	im, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if req.ClusterID != im.ClusterID {
			return nil, fmt.Errorf("controller: broker %d belongs to cluster %q, this is %q: %w",
				req.BrokerID, req.ClusterID, im.ClusterID, kerr.InconsistentClusterID)
		}
		if old := im.Brokers[req.BrokerID]; old != nil && old.IncarnationID != req.IncarnationID && c.alive(old) {
			return nil, fmt.Errorf("controller: broker %d is registered by another incarnation (%s) whose session is alive: %w",
				req.BrokerID, old.IncarnationID, kerr.DuplicateBrokerRegistration)
		}
		recs := []metadata.Record{&metadata.RegisterBrokerRecord{BrokerID: req.BrokerID, IncarnationID: req.IncarnationID,
			BrokerEpoch: -1, Endpoints: slices.Clone(req.Endpoints), Rack: req.Rack, Fenced: true}}
		recs = append(recs, c.moveOff(im, req.BrokerID)...)
		c.contact[req.BrokerID] = c.cfg.Now()
		return recs, nil
	})
	if err != nil {
		return 0, err
	}
	return im.Brokers[req.BrokerID].Epoch, nil
}

// alive reports whether b's session has not expired. c.writeMu is held.
func (c *Controller) alive(b *metadata.Broker) bool {
	if b.Fenced {
		return false
	}
	last, ok := c.contact[b.ID]
	return ok && c.cfg.Now().Sub(last) < c.cfg.SessionTimeout
}

// BrokerHeartbeat is a broker's BrokerHeartbeat request.
type BrokerHeartbeat struct {
	BrokerID              int32
	BrokerEpoch           int64
	CurrentMetadataOffset int64
	WantFence             bool
	WantShutDown          bool
}

// HeartbeatResult is the answer to a heartbeat.
type HeartbeatResult struct {
	IsCaughtUp     bool
	IsFenced       bool
	ShouldShutDown bool
}

// Heartbeat records a broker's heartbeat, as Kafka's
// BrokerHeartbeatManager and ClusterControlManager do: an unknown broker is
// BROKER_ID_NOT_REGISTERED, another epoch STALE_BROKER_EPOCH. A fenced
// broker that has caught up to its registration and does not want to be
// fenced is unfenced (and leads the leaderless partitions it is in the ISR
// of); a broker that asks to be fenced, or to shut down, is fenced and its
// leaderships move. (Kafka's controlled shutdown keeps the broker
// unfenced until its leaderships have moved; here they move in the same
// write that fences it.)
func (c *Controller) Heartbeat(ctx context.Context, req BrokerHeartbeat) (HeartbeatResult, error) {
	var res HeartbeatResult
	im, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		b := im.Brokers[req.BrokerID]
		if b == nil {
			return nil, fmt.Errorf("controller: broker %d: %w", req.BrokerID, kerr.BrokerIDNotRegistered)
		}
		if b.Epoch != req.BrokerEpoch {
			return nil, fmt.Errorf("controller: broker %d is at epoch %d, not %d: %w", req.BrokerID, b.Epoch, req.BrokerEpoch, kerr.StaleBrokerEpoch)
		}
		c.contact[req.BrokerID] = c.cfg.Now()
		res.IsCaughtUp = req.CurrentMetadataOffset >= b.Epoch
		switch {
		case req.WantShutDown || (req.WantFence && !b.Fenced):
			res.ShouldShutDown = req.WantShutDown
			if b.Fenced {
				return nil, nil
			}
			return c.fenceRecords(im, b), nil
		case b.Fenced && !req.WantFence && res.IsCaughtUp:
			return c.unfenceRecords(im, b), nil
		}
		return nil, nil
	})
	if err != nil {
		return HeartbeatResult{}, err
	}
	res.IsFenced = im.Brokers[req.BrokerID].Fenced
	return res, nil
}

// fenceExpired fences every unfenced broker whose session has expired,
// one write per broker.
func (c *Controller) fenceExpired(ctx context.Context) error {
	for {
		var fenced int32 = -1
		_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
			for _, id := range sortedBrokerIDs(im) {
				b := im.Brokers[id]
				if !b.Fenced && !c.alive(b) {
					fenced = id
					c.log.Info("broker session expired; fencing it", "broker", id, "epoch", b.Epoch)
					return c.fenceRecords(im, b), nil
				}
			}
			return nil, nil
		})
		if err != nil || fenced < 0 {
			return err
		}
	}
}

func sortedBrokerIDs(im *metadata.Image) []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// fenceRecords fences b and moves its leaderships and ISR memberships.
func (c *Controller) fenceRecords(im *metadata.Image, b *metadata.Broker) []metadata.Record {
	recs := []metadata.Record{&metadata.FenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}
	return append(recs, c.moveOff(im, b.ID)...)
}

// moveOff removes broker from every ISR (keeping it when it is the last
// member, as Kafka never empties an ISR) and elects a new leader where it
// led: the first replica in replica order that is in the new ISR and
// unfenced; without one, with unclean leader election enabled for the
// topic, the first unfenced replica, which becomes the ISR alone; else no
// leader (-1). The changes go through partitionChange, so a shrunk ISR
// may complete a reassignment that was waiting for the broker's removal.
func (c *Controller) moveOff(im *metadata.Image, broker int32) []metadata.Record {
	var recs []metadata.Record
	forEachPartition(im, func(t *metadata.Topic, pid int32, p *metadata.Partition) {
		inISR := slices.Contains(p.ISR, broker)
		if !inISR && p.Leader != broker {
			return
		}
		pc := newPartitionChange(im, t.ID, pid, p)
		pc.excluded = broker
		if inISR && len(p.ISR) > 1 {
			pc.isr = without(p.ISR, broker)
		}
		if c.unclean(im, t.Name) {
			pc.election = electUncleanReplica
		}
		rec := pc.build()
		if rec == nil {
			return
		}
		if rec.Leader >= 0 && !slices.Contains(pc.isr, rec.Leader) {
			c.log.Warn("unclean leader election", "topic", t.Name, "partition", pid, "leader", rec.Leader)
		}
		recs = append(recs, rec)
	})
	return recs
}

// unfenceRecords unfences b and makes it leader of the leaderless
// partitions whose ISR holds it.
func (c *Controller) unfenceRecords(im *metadata.Image, b *metadata.Broker) []metadata.Record {
	recs := []metadata.Record{&metadata.UnfenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}
	forEachPartition(im, func(t *metadata.Topic, pid int32, p *metadata.Partition) {
		if p.Leader == metadata.NoLeader && slices.Contains(p.ISR, b.ID) {
			recs = append(recs, &metadata.PartitionChangeRecord{TopicID: t.ID, PartitionID: pid, Leader: b.ID})
		}
	})
	return recs
}

// unclean reports whether unclean leader election is enabled for topic.
func (c *Controller) unclean(im *metadata.Image, topic string) bool {
	if v, ok := im.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}]["unclean.leader.election.enable"]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return c.cfg.UncleanLeaderElection
}

// forEachPartition visits every partition in a fixed order (topics by
// name, partitions by id), so that the records built are deterministic.
func forEachPartition(im *metadata.Image, fn func(t *metadata.Topic, pid int32, p *metadata.Partition)) {
	names := make([]string, 0, len(im.TopicIDs))
	for n := range im.TopicIDs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := im.Topics[im.TopicIDs[n]]
		pids := make([]int32, 0, len(t.Partitions))
		for pid := range t.Partitions {
			pids = append(pids, pid)
		}
		slices.Sort(pids)
		for _, pid := range pids {
			fn(t, pid, t.Partitions[pid])
		}
	}
}

func without(s []int32, x int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

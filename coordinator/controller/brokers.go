package controller

import (
	"context"
	"fmt"
	"math"
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
	// RaftAddr is the raft address of a broker-only node (an observer of
	// the quorum), "" for a voter's broker. The active controller adds the
	// node as a raft learner at that address (raftnode.Node.AddLearner),
	// or records its new address. It is not part of the broker's
	// registration record: the conf change carries it.
	RaftAddr string
}

// RegisterBroker registers a broker, as Kafka's ClusterControlManager
// does: a broker of another cluster is refused (INCONSISTENT_CLUSTER_ID);
// an id held by another incarnation whose session is alive is
// DUPLICATE_BROKER_REGISTRATION. The broker starts fenced, and a
// re-registration moves leadership off it. It returns the broker epoch,
// the raft index of the registration. A registration with a raft address
// (an observer's) makes the node a learner of the quorum, after the
// registration is written; a voter's id with one is INVALID_REGISTRATION.
func (c *Controller) RegisterBroker(ctx context.Context, req BrokerRegistration) (int64, error) {
	if req.BrokerID < 0 {
		return 0, fmt.Errorf("controller: broker id %d: %w", req.BrokerID, kerr.InvalidRequest)
	}
	if _, voter := c.cfg.Voters[req.BrokerID]; voter && req.RaftAddr != "" {
		return 0, fmt.Errorf("controller: broker %d registers as a broker-only node (an observer), but it is one of the controller quorum's voters: %w",
			req.BrokerID, kerr.InvalidRegistration)
	}
	if !c.validRaftAddr(req.RaftAddr) {
		return 0, fmt.Errorf("controller: broker %d: raft address %q is not host:port: %w", req.BrokerID, req.RaftAddr, kerr.InvalidRegistration)
	}
	if _, voter := c.cfg.Voters[req.BrokerID]; !voter && req.RaftAddr == "" {
		// An observer of an older release, or a misconfigured node: it can
		// register, but it receives no metadata from this quorum.
		c.log.Warn("a broker that is not a voter registered without a raft address; it will not receive the metadata log", "broker", req.BrokerID)
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
		delete(c.controlledShutdown, req.BrokerID)
		return recs, nil
	})
	if err != nil {
		return 0, err
	}
	if req.RaftAddr != "" {
		if err := c.addObserver(ctx, req.BrokerID, req.RaftAddr); err != nil {
			return 0, err
		}
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
// BrokerHeartbeatManager and ReplicationControlManager do: an unknown
// broker is BROKER_ID_NOT_REGISTERED, another epoch STALE_BROKER_EPOCH. A
// fenced broker that has caught up to its registration and does not want
// to be fenced is unfenced (and leads the leaderless partitions it is in
// the ISR of); a broker that asks to be fenced is fenced and its
// leaderships move.
//
// WantShutDown is KIP-631's controlled shutdown: a fenced broker, or one
// that leads nothing, may shut down at once (it is fenced). Otherwise the
// broker enters controlled shutdown: its leaderships move to other ISR
// members (no leader when there is none, as Kafka does), it leaves every
// ISR it is not alone in, and it is chosen for no leadership while in it;
// it stays unfenced, still serving, until it leads nothing and every
// other active broker has reported a metadata offset past that move, so
// the new leaders know they lead before it stops. Then ShouldShutDown is
// answered and the broker is fenced.
func (c *Controller) Heartbeat(ctx context.Context, req BrokerHeartbeat) (HeartbeatResult, error) {
	var res HeartbeatResult
	entering := false
	im, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		b := im.Brokers[req.BrokerID]
		if b == nil {
			return nil, fmt.Errorf("controller: broker %d: %w", req.BrokerID, kerr.BrokerIDNotRegistered)
		}
		if b.Epoch != req.BrokerEpoch {
			return nil, fmt.Errorf("controller: broker %d is at epoch %d, not %d: %w", req.BrokerID, b.Epoch, req.BrokerEpoch, kerr.StaleBrokerEpoch)
		}
		c.contact[req.BrokerID] = c.cfg.Now()
		c.metadataOffsets[req.BrokerID] = req.CurrentMetadataOffset
		res.IsCaughtUp = req.CurrentMetadataOffset >= b.Epoch
		_, inShutdown := c.controlledShutdown[req.BrokerID]
		switch {
		case b.Fenced:
			if req.WantShutDown {
				res.ShouldShutDown = true
				delete(c.controlledShutdown, req.BrokerID)
				return nil, nil
			}
			if !req.WantFence && res.IsCaughtUp {
				return c.unfenceRecords(im, b), nil
			}
			return nil, nil
		case req.WantFence:
			res.ShouldShutDown = req.WantShutDown
			delete(c.controlledShutdown, req.BrokerID)
			return c.fenceRecords(im, b), nil
		case req.WantShutDown || inShutdown:
			switch {
			case !inShutdown && !leads(im, b.ID):
				c.log.Info("broker leads no partition and is granted an immediate shutdown", "broker", b.ID)
				res.ShouldShutDown = true
				return c.fenceRecords(im, b), nil
			case !inShutdown:
				c.log.Info("broker entered controlled shutdown; moving its leaderships", "broker", b.ID)
				c.controlledShutdown[b.ID] = pendingShutdownOffset
				entering = true
				return c.moveOff(im, b.ID), nil
			case leads(im, b.ID):
				return c.moveOff(im, b.ID), nil
			}
			if off := c.controlledShutdown[b.ID]; off <= c.lowestActiveOffset(im) {
				c.log.Info("controlled shutdown granted: the broker leads nothing and every active broker has applied the move",
					"broker", b.ID, "shutdown_offset", off)
				res.ShouldShutDown = true
				return c.fenceRecords(im, b), nil
			}
		}
		return nil, nil
	})
	if err != nil {
		return HeartbeatResult{}, err
	}
	if entering {
		c.writeMu.Lock()
		if off, ok := c.controlledShutdown[req.BrokerID]; ok && off == pendingShutdownOffset {
			c.controlledShutdown[req.BrokerID] = int64(im.Offset)
		}
		c.writeMu.Unlock()
	}
	res.IsFenced = im.Brokers[req.BrokerID].Fenced
	return res, nil
}

// pendingShutdownOffset marks a controlled shutdown whose move is not
// written yet; no broker's offset reaches it.
const pendingShutdownOffset = math.MaxInt64

// leads reports whether broker leads a partition of im.
func leads(im *metadata.Image, broker int32) bool {
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == broker {
				return true
			}
		}
	}
	return false
}

// lowestActiveOffset is the lowest metadata offset that the active brokers
// (unfenced, not in controlled shutdown) have reported, as Kafka's
// BrokerHeartbeatManager.lowestActiveOffset; MaxInt64 when there is none.
// A broker that has not heartbeated this controller yet counts as -1.
// c.writeMu is held.
func (c *Controller) lowestActiveOffset(im *metadata.Image) int64 {
	lowest := int64(math.MaxInt64)
	for id, b := range im.Brokers {
		if _, shutting := c.controlledShutdown[id]; b.Fenced || shutting {
			continue
		}
		off, ok := c.metadataOffsets[id]
		if !ok {
			off = -1
		}
		lowest = min(lowest, off)
	}
	return lowest
}

// InControlledShutdown reports whether broker is in controlled shutdown on
// this (active) controller.
func (c *Controller) InControlledShutdown(broker int32) bool {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, ok := c.controlledShutdown[broker]
	return ok
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
// c.writeMu is held.
func (c *Controller) fenceRecords(im *metadata.Image, b *metadata.Broker) []metadata.Record {
	delete(c.controlledShutdown, b.ID)
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
		pc.inControlledShutdown = c.controlledShutdown
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

// refuseInControlledShutdown is INELIGIBLE_REPLICA for an AlterPartition
// whose new ISR holds a broker in controlled shutdown, as Kafka's
// ineligibleReplicasForIsr refuses brokers that are not active: its
// leaderships have moved and it has left the ISRs, and a leader that still
// sees it caught up must not take it back. c.writeMu is held.
func (c *Controller) refuseInControlledShutdown(im *metadata.Image, item AlterPartitionItem) error {
	for _, r := range item.NewISR {
		if _, shutting := c.controlledShutdown[r]; shutting {
			t := im.Topics[item.TopicID]
			return fmt.Errorf("controller: ISR %v of %s-%d holds broker %d, which is in controlled shutdown: %w",
				item.NewISR, t.Name, item.Partition, r, kerr.IneligibleReplica)
		}
	}
	return nil
}

package broker

// The broker's side of package replication: the roles from each image
// (applyRoles), the replication Config, taken from the broker's, the Env
// the cluster gives it, and a Produce's acks=all wait.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/peer"
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

// replicationConfig is the replication package's part of b's config.
func (b *Broker) replicationConfig() replication.Config {
	cfg := &b.cfg
	return replication.Config{
		NodeID:             cfg.NodeID,
		Settings:           cfg.Settings,
		ListOffsetsVersion: handlers[2].max,
		Logger:             b.log,
		BeforeFetch:        cfg.testHooks.replicaFetch,
	}
}

// replicationEnv is the cluster as package replication sees it.
type replicationEnv struct{ c *cluster }

func (e replicationEnv) BrokerEpoch() int64 { return e.c.epoch.Load() }

func (e replicationEnv) Endpoint(id int32) (host string, port int32, registered bool) {
	im := e.c.currentImage()
	if im == nil || im.Brokers[id] == nil {
		return "", -1, false
	}
	// Replicas fetch over the inter-broker listener; a broker registered
	// without it cannot be fetched from.
	host, port, registered = brokerEndpoint(im.Brokers[id], e.c.b.cfg.InterBrokerListenerName)
	return host, port, registered
}

func (e replicationEnv) NewConn() replication.Conn {
	return &peer.Conn{ClientID: replication.FetchClientID, MaxResponseBytes: e.c.b.cfg.MaxFrameBytes, DialTimeout: 10 * time.Second, Security: e.c.b.interBroker}
}

// Partitions lists every partition of the catalogue.
func (e replicationEnv) Partitions() []replication.TopicPartition {
	b := e.c.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []replication.TopicPartition
	for _, t := range b.catalog.byName {
		for _, p := range t.partitions {
			out = append(out, replication.TopicPartition{Partition: p, TopicID: t.id})
		}
	}
	return out
}

// AlterPartition sends one partition's AlterPartition to the active
// controller: in-process when it is the local voter, else to its node. An
// error is the request's: retry.
func (e replicationEnv) AlterPartition(ctx context.Context, req controller.AlterPartitionRequest, epochs map[int32]int64) (controller.AlterPartitionResult, error) {
	c := e.c
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

// MinInsyncReplicas is replication.Topic's: the topic's
// min.insync.replicas (an atomic load).
func (t *topic) MinInsyncReplicas() int { return t.effective.Load().minInsyncReplicas }

// awaitReplication waits until every partition appended to by an acks=all
// produce has replicated its batch, or the request times out
// (replication.AwaitAcks). An error means the connection or the broker is
// closing.
func (b *Broker) awaitReplication(r *request, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, flushes []pendingFlush) error {
	var acks []replication.Ack
	for _, f := range flushes {
		if sp := &resp.Topics[f.topic].Partitions[f.partition]; sp.ErrorCode == 0 {
			acks = append(acks, replication.Ack{Partition: f.p, Topic: f.t, End: f.end, Epoch: f.epoch, Code: &sp.ErrorCode})
		}
	}
	return replication.AwaitAcks(r.ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond, acks)
}

// FollowerThrottled is replication.Topic's: whether the topic's
// follower.replication.throttled.replicas names the replica (an atomic
// load).
func (t *topic) FollowerThrottled(partition, broker int32) bool {
	return t.effective.Load().followerThrottled.Has(partition, broker)
}

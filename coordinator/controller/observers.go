package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/gregor-broker/gregor/coordinator/controller/raftnode"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
)

// Observers are broker-only nodes (process.roles=broker): Kafka's
// observers of the metadata log. Kafka's brokers fetch the log from the
// controller quorum; etcd raft pushes entries instead, so here an observer
// is a raft learner with a raft listener of its own, which the leader
// sends entries and snapshots to. The broker registers over the Kafka
// listener as every broker does, naming that listener's address
// (BrokerRegistration.RaftAddr); the active controller then adds it as a
// learner (addObserver), after the registration record.

// validRaftAddr reports whether addr is "" or host:port with a port.
func (c *Controller) validRaftAddr(addr string) bool {
	if addr == "" {
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && p != 0
}

// addObserver makes node id a raft learner at addr, or records its new
// address, as one controller operation (conf changes go one at a time). It
// returns once the change is applied here.
func (c *Controller) addObserver(ctx context.Context, id int32, addr string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.WriteTimeout)
		defer cancel()
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.active(ctx); err != nil {
		return err
	}
	if c.node.Membership().Learners[id] == addr {
		return nil
	}
	c.log.Info("adding a broker-only node to the quorum as an observer (raft learner)", "broker", id, "raft_addr", addr)
	return c.confChangeErr(ctx, c.node.AddLearner(ctx, id, addr))
}

// removeObserver removes node id from the quorum's learners, as one
// controller operation.
func (c *Controller) removeObserver(ctx context.Context, id int32) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.active(ctx); err != nil {
		return err
	}
	if !c.node.Membership().IsLearner(id) {
		return nil
	}
	c.log.Info("removing an observer from the quorum", "broker", id)
	return c.confChangeErr(ctx, c.node.RemoveLearner(ctx, id))
}

// confChangeErr maps a conf change's failure to the Kafka error the
// caller answers.
func (c *Controller) confChangeErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrProposalDropped), errors.Is(err, raftnode.ErrStopped):
		return &NotControllerError{LeaderID: c.Leader()}
	case ctx.Err() != nil:
		c.log.Warn("quorum configuration change not applied in time: no majority of the controller quorum acknowledged it")
		return kerr.RequestTimedOut
	default:
		return fmt.Errorf("controller: %v: %w", err, kerr.UnknownServerError)
	}
}

// Observers returns the quorum's observers (raft learners) this node has
// applied, by node id, with their raft addresses.
func (c *Controller) Observers() map[int32]string { return c.node.Membership().Learners }

// UnregisterBroker removes broker id's registration, as Kafka's
// ReplicationControlManager.unregisterBroker (kafka-cluster.sh
// unregister): BROKER_ID_NOT_REGISTERED when it has none; otherwise it
// leaves every ISR it is not alone in, its leaderships move (as when it is
// fenced) and an UnregisterBrokerRecord removes it. A broker-only node is
// then removed from the quorum's observers, so the voters stop sending it
// the log. A broker that is still running registers again (and, for a
// broker-only node, asks to join again): stop it first.
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.WriteTimeout)
		defer cancel()
	}
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		b := im.Brokers[id]
		if b == nil {
			return nil, fmt.Errorf("controller: broker %d is not registered: %w", id, kerr.BrokerIDNotRegistered)
		}
		recs := c.moveOff(im, id)
		recs = append(recs, &metadata.UnregisterBrokerRecord{ID: id, Epoch: b.Epoch})
		delete(c.contact, id)
		delete(c.metadataOffsets, id)
		delete(c.controlledShutdown, id)
		c.log.Info("unregistering broker", "broker", id, "epoch", b.Epoch)
		return recs, nil
	})
	if err != nil {
		return err
	}
	if _, voter := c.cfg.Voters[id]; voter {
		return nil
	}
	return c.removeObserver(ctx, id)
}

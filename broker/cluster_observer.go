package broker

// Broker-only nodes (process.roles=broker) and controlled shutdown.
//
// A broker-only node runs no voter: its controller.Controller is an
// observer of the quorum, a raft learner. Kafka's observers fetch the
// metadata log from the quorum; etcd raft's leader pushes entries and
// snapshots to its learners instead, so a broker-only node needs a raft
// listener of its own (controller listener, --controller-listen), which
// the voters dial. The broker registers with the active controller as
// every broker does (BrokerRegistration over the Kafka listener, or
// in-process), with one more listener in the registration, named
// observerListenerName, giving that raft address; the active controller
// keeps it out of the broker's endpoints and adds the node as a learner
// at that address. From then on the node applies the metadata log and
// publishes images like a voter, so syncImage serves its topics as on any
// other node; admin writes it receives are forwarded to the active
// controller's node as a voter's are (its controller answers
// NOT_CONTROLLER naming the leader).
//
// Controlled shutdown (KIP-631): Close first heartbeats with WantShutDown
// until the active controller answers ShouldShutDown (its leaderships have
// moved and the other brokers know) or ControlledShutdownTimeout passes.

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// observerListenerName names the registration's listener that carries a
// broker-only node's raft address (not a Kafka listener: the controller
// takes it out of the broker's endpoints).
const observerListenerName = "RAFT_OBSERVER"

// maxProducerIDRank bounds a node's producer id range rank:
// (rank+1)<<48 must stay below 2^63.
const maxProducerIDRank = 1<<15 - 2

// parseProcessRoles parses process.roles: "broker,controller" (or empty)
// is combined mode, "broker" a broker-only node.
func parseProcessRoles(s string) (brokerOnly bool, err error) {
	if strings.TrimSpace(s) == "" {
		return false, nil
	}
	roles := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		roles[strings.ToLower(strings.TrimSpace(r))] = true
	}
	switch {
	case len(roles) == 1 && roles["broker"]:
		return true, nil
	case len(roles) == 2 && roles["broker"] && roles["controller"]:
		return false, nil
	case len(roles) == 1 && roles["controller"]:
		return false, fmt.Errorf("process.roles=controller: controller-only nodes are not served yet; run voters with process.roles=broker,controller")
	}
	return false, fmt.Errorf("process.roles=%q: want broker,controller or broker", s)
}

// checkRoles checks process.roles against the voters: a combined node must
// be a voter, a broker-only node must not be one. It reports whether the
// node is broker-only.
func (b *Broker) checkRoles(voters map[int32]string) (bool, error) {
	brokerOnly, err := parseProcessRoles(b.cfg.ProcessRoles)
	if err != nil {
		return false, fmt.Errorf("broker: %w", err)
	}
	_, voter := voters[b.cfg.NodeID]
	switch {
	case brokerOnly && voter:
		return false, fmt.Errorf("broker: node.id %d is one of controller.quorum.voters %q, but process.roles=broker: a voter must run with process.roles=broker,controller, and a broker-only node needs an id that is not a voter's",
			b.cfg.NodeID, b.cfg.ControllerQuorumVoters)
	case !brokerOnly && !voter:
		return false, fmt.Errorf("broker: node.id %d is not among controller.quorum.voters %q (process.roles=broker,controller needs it to be a voter; a node that only adds a broker runs with process.roles=broker)",
			b.cfg.NodeID, b.cfg.ControllerQuorumVoters)
	case brokerOnly && b.cfg.ControllerListen == "" && b.cfg.controllerListener == nil:
		return false, fmt.Errorf("broker: node %d has process.roles=broker but no controller listener: a broker-only node needs one (--controller-listen HOST:PORT) for the voters to send it the metadata log", b.cfg.NodeID)
	}
	return brokerOnly, nil
}

// observerRank is a broker-only node's producer id range rank: after every
// voter's, by node id, so no two nodes share one.
func observerRank(voters map[int32]string, id int32) (int, error) {
	rank := len(voters) + int(id)
	if rank > maxProducerIDRank {
		return 0, fmt.Errorf("broker: node.id %d is too large for a broker-only node with %d voters (at most %d)", id, len(voters), maxProducerIDRank-len(voters))
	}
	return rank, nil
}

// observerRaftAddr is the raft address the voters dial: the controller
// listener's, or, when it binds every interface (0.0.0.0, ::), its port on
// the host of the advertised Kafka address (Config.Advertise, else
// Config.Listen), else on this machine's host name.
func (b *Broker) observerRaftAddr(ln net.Addr) string {
	host, port, err := net.SplitHostPort(ln.String())
	if err != nil {
		return ln.String()
	}
	if !unspecifiedHost(host) {
		return ln.String()
	}
	for _, a := range []string{b.cfg.Advertise, b.cfg.Listen} {
		if h, _, err := net.SplitHostPort(a); err == nil && !unspecifiedHost(h) {
			return net.JoinHostPort(h, port)
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return net.JoinHostPort(h, port)
	}
	return net.JoinHostPort("localhost", port)
}

func unspecifiedHost(h string) bool {
	ip := net.ParseIP(h)
	return h == "" || (ip != nil && ip.IsUnspecified())
}

// splitObserverListener takes the raft address out of a registration's
// listeners (handleBrokerRegistration).
func splitObserverListener(reg *controller.BrokerRegistration) {
	eps := reg.Endpoints[:0]
	for _, ep := range reg.Endpoints {
		if ep.Name == observerListenerName {
			reg.RaftAddr = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
			continue
		}
		eps = append(eps, ep)
	}
	reg.Endpoints = eps
}

// withObserverListener is reg's listeners as sent over the wire, the raft
// address as one more listener.
func withObserverListener(reg controller.BrokerRegistration) []metadata.Endpoint {
	eps := reg.Endpoints
	if reg.RaftAddr == "" {
		return eps
	}
	host, port, err := net.SplitHostPort(reg.RaftAddr)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return eps
	}
	return append(eps[:len(eps):len(eps)], metadata.Endpoint{Name: observerListenerName, Host: host, Port: int32(p)})
}

// anotherBrokerUnfenced reports whether the applied image has an unfenced
// broker other than this one.
func (c *cluster) anotherBrokerUnfenced() bool {
	im := c.currentImage()
	if im == nil {
		return false
	}
	for id, br := range im.Brokers {
		if id != c.b.cfg.NodeID && !br.Fenced {
			return true
		}
	}
	return false
}

// noControllerGiveUp is how long a controlled shutdown waits without any
// active controller known (a quorum without a majority, as when the last
// nodes of a cluster stop) before the broker stops anyway.
const noControllerGiveUp = 3 * time.Second

// controlledShutdown asks the active controller, by heartbeats with
// WantShutDown, to move this broker's leaderships, until it answers
// ShouldShutDown, ControlledShutdownTimeout passes, or no controller has
// been known for noControllerGiveUp. The broker keeps serving meanwhile.
func (c *cluster) controlledShutdown() {
	b := c.b
	if !*b.cfg.ControlledShutdownEnable || c.epoch.Load() < 0 {
		return
	}
	if !c.anotherBrokerUnfenced() {
		// No broker could take its leaderships: nothing to hand over, and
		// typically no quorum left either (the last nodes of a cluster
		// stopping). The session timeout fences it, as before.
		b.log.Info("controlled shutdown skipped: no other unfenced broker to hand leaderships to")
		return
	}
	c.wantShutDown.Store(true)
	start := time.Now()
	deadline := start.Add(b.cfg.ControlledShutdownTimeout)
	lastController := start
	b.log.Info("controlled shutdown: asking the active controller to move this broker's leaderships")
	for {
		callDeadline := time.Now().Add(5 * time.Second)
		if deadline.Before(callDeadline) {
			callDeadline = deadline
		}
		ctx, cancel := context.WithDeadline(c.ctx, callDeadline)
		res, err := c.heartbeat(ctx)
		cancel()
		now := time.Now()
		switch {
		case err == nil && res.ShouldShutDown:
			b.log.Info("controlled shutdown granted", "took", now.Sub(start).Round(time.Millisecond))
			return
		case err != nil:
			b.log.Debug("controlled shutdown heartbeat failed", "err", err)
		}
		if err == nil || c.ctrl.Leader() >= 0 {
			lastController = now
		}
		switch {
		case now.After(deadline):
			b.log.Warn("controlled shutdown not granted in time; stopping anyway", "timeout", b.cfg.ControlledShutdownTimeout)
			return
		case now.Sub(lastController) > noControllerGiveUp:
			b.log.Warn("controlled shutdown: no active controller; stopping anyway")
			return
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-c.stop:
			t.Stop()
			return
		}
	}
}

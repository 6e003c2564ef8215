package broker

// UnregisterBroker (key 64), v0: Kafka's `kafka-cluster.sh unregister --id
// N`, Admin.unregisterBroker.
//
// Behavior:
//   - cluster mode only (a single node has no registrations and does not
//     advertise it);
//   - the active controller removes the registration (its ISR memberships
//     and leaderships go as when it is fenced) and, for a broker-only node,
//     its place among the quorum's observers; another node forwards the
//     request, as admin writes;
//   - BROKER_ID_NOT_REGISTERED, NOT_CONTROLLER (no active controller
//     known), REQUEST_TIMED_OUT.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerScoped(clusterOnly, 64, 0, 0, handleUnregisterBroker) }

func handleUnregisterBroker(b *Broker, r *request, req *kmsg.UnregisterBrokerRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.UnregisterBrokerResponse](req)
	c := b.cluster
	ctx, cancel := context.WithTimeout(r.ctx, adminTimeout)
	defer cancel()
	err := c.ctrl.UnregisterBroker(ctx, req.BrokerID)
	if leader := remoteLeader(err, b.cfg.NodeID); leader >= 0 && !forwarded(r) {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			err = aerr
		} else if resp.ErrorCode, resp.ErrorMessage, err = c.rpc.unregisterBroker(ctx, addr, req.BrokerID); err == nil {
			return resp, nil // the active controller's answer
		}
	}
	switch {
	case errors.Is(err, kerr.BrokerIDNotRegistered):
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		msg := fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID) // Kafka's message
		resp.ErrorMessage = &msg
	case err != nil:
		ke, msg := kerrOf(err)
		resp.ErrorCode, resp.ErrorMessage = ke.Code, &msg
	}
	return resp, nil
}

package broker

// BrokerHeartbeat (key 63), v0-v1, broker to active controller.
//
// Behavior:
//   - cluster mode only and never advertised (see
//     62_broker_registration.go);
//   - the active controller keeps the broker's session alive, unfences it
//     once it has caught up to its registration, and fences it on request.
//
// Version notes:
//   - v1's offline log dirs are not used yet.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
)

func init() { registerScoped(brokerToController, 63, 0, 1, handleBrokerHeartbeat) }

func handleBrokerHeartbeat(b *Broker, r *request, req *kmsg.BrokerHeartbeatRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.BrokerHeartbeatResponse](req)
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	res, err := b.cluster.ctrl.Heartbeat(ctx, controller.BrokerHeartbeat{
		BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, CurrentMetadataOffset: req.CurrentMetadataOffset,
		WantFence: req.WantFence, WantShutDown: req.WantShutdown,
	})
	resp.ErrorCode = controller.ErrorCode(err)
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = res.IsCaughtUp, res.IsFenced, res.ShouldShutDown
	if err != nil {
		resp.IsFenced = true
	}
	return resp, nil
}

package broker

// BrokerRegistration (key 62), v0-v4, broker to active controller.
//
// Behavior:
//   - cluster mode only and never advertised in ApiVersions: Kafka serves
//     it on the controller listener, which the raft transport owns here
//     (cluster.go);
//   - answered only by the active controller's node, with the controller's
//     codes (NOT_CONTROLLER, INCONSISTENT_CLUSTER_ID,
//     DUPLICATE_BROKER_REGISTRATION, ...);
//   - a broker-only node adds a listener RAFT_OBSERVER with its raft
//     listener's address, taken out of its endpoints, which makes it an
//     observer of the quorum (cluster_observer.go);
//   - features, log dirs and the previous broker epoch are not used yet.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

func init() { registerScoped(brokerToController, 62, 0, 4, handleBrokerRegistration) }

func handleBrokerRegistration(b *Broker, r *request, req *kmsg.BrokerRegistrationRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.BrokerRegistrationResponse](req)
	reg := controller.BrokerRegistration{BrokerID: req.BrokerID, ClusterID: req.ClusterID, IncarnationID: req.IncarnationID}
	for _, l := range req.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	splitObserverListener(&reg)
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	epoch, err := b.cluster.ctrl.RegisterBroker(ctx, reg)
	resp.ErrorCode = controller.ErrorCode(err)
	resp.BrokerEpoch = -1
	if err == nil {
		resp.BrokerEpoch = epoch
	}
	return resp, nil
}

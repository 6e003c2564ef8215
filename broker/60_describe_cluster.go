package broker

// DescribeCluster (key 60), v0-v2, what the Java admin client's
// describeCluster uses.
//
// Behavior:
//   - a single node answers itself alone, as controller id too; on a
//     cluster the registered, unfenced brokers, and the active controller's
//     node as controller id (combined-mode nodes are brokers clients reach);
//   - ClusterAuthorizedOperations, when asked for, is every cluster
//     operation (no authorizer), else Kafka's "not asked", the minimum
//     int32.
//
// Version notes:
//   - v1 EndpointType: 1 (brokers) is served; 2 (controllers) is
//     MISMATCHED_ENDPOINT_TYPE, since clients reach the broker listener;
//     others UNSUPPORTED_ENDPOINT_TYPE; both with Kafka's message and
//     nothing else filled in (AuthHelper.computeDescribeClusterResponse);
//   - v2 IncludeFencedBrokers adds the fenced ones, IsFenced set; a single
//     node is never fenced.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(60, 0, 2, handleDescribeCluster) }

func handleDescribeCluster(b *Broker, r *request, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeClusterResponse](req)
	endpoint := req.EndpointType
	if req.Version < 1 {
		endpoint = 1
	}
	switch endpoint {
	case 1:
	case 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		resp.ErrorMessage = &msg
		return resp, nil
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := fmt.Sprintf("Unsupported endpoint type %d", endpoint)
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.EndpointType = 1
	resp.ClusterID = b.ClusterID()
	resp.ControllerID = b.cfg.NodeID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = allClusterOperations
	}
	if b.isCluster() {
		resp.ControllerID = b.cluster.ctrl.Leader()
		for _, mb := range b.cluster.liveBrokers(req.Version >= 2 && req.IncludeFencedBrokers) {
			broker := kmsg.NewDescribeClusterResponseBroker()
			broker.NodeID = mb.ID
			var ok bool
			if broker.Host, broker.Port, ok = brokerEndpoint(mb, r.conn.l.cfg.Name); !ok {
				continue // as Metadata: only brokers with the client's listener
			}
			if mb.Rack != "" {
				rack := mb.Rack
				broker.Rack = &rack
			}
			broker.IsFenced = mb.Fenced
			resp.Brokers = append(resp.Brokers, broker)
		}
		return resp, nil
	}
	broker := kmsg.NewDescribeClusterResponseBroker()
	broker.NodeID, broker.Host, broker.Port = b.cfg.NodeID, r.conn.l.host, r.conn.l.port
	if b.cfg.BrokerRack != "" {
		broker.Rack = &b.cfg.BrokerRack
	}
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{broker}
	return resp, nil
}

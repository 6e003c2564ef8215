package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/coordinator/controller"
)

// forwardClientID is the client id of the requests a broker sends the
// active controller's node: registrations, heartbeats and forwarded admin
// writes. A node receiving a forwarded write that is not the active
// controller answers NOT_CONTROLLER rather than forwarding it again.
const forwardClientID = "gregor-controller-client"

// maxControllerResponse bounds a response from the controller's node; the
// answers to registrations, heartbeats and single-topic writes are small.
const maxControllerResponse = 16 << 20

// controllerRPC is the broker's connection to the active controller's
// node, when that is not this node: one connection, one request at a time
// (the calls are rare: a heartbeat every broker.heartbeat.interval.ms and
// the admin writes). It dials again after any error or when the active
// controller moves (peer.Conn). The transaction coordinator and the
// partition leaders use one per peer node too (txn_peers.go), with their
// own client id.
type controllerRPC struct {
	conn peer.Conn
}

// newControllerRPC is a connection whose requests name clientID (empty is
// forwardClientID) and that logs in with sec.
func newControllerRPC(clientID string, sec *peer.Security) *controllerRPC {
	if clientID == "" {
		clientID = forwardClientID
	}
	return &controllerRPC{conn: peer.Conn{ClientID: clientID, MaxResponseBytes: maxControllerResponse, Security: sec}}
}

// do sends req to the Kafka listener at addr, at the newest version this
// broker serves of its key (both ends run the same code), and returns the
// decoded response.
func (r *controllerRPC) do(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	h := handlers[req.Key()]
	if h == nil {
		return nil, fmt.Errorf("broker: api key %d is not served", req.Key())
	}
	req.SetVersion(h.max)
	resp, err := r.conn.Do(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return resp, nil
}

func (r *controllerRPC) close() { r.conn.Close() }

// codeErr turns a response's error code into the kerr error (nil for 0).
func codeErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%s: %w", *msg, err)
	}
	return err
}

func (r *controllerRPC) register(ctx context.Context, addr string, reg controller.BrokerRegistration) (int64, error) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = reg.BrokerID, reg.ClusterID, reg.IncarnationID
	for _, ep := range withObserverListener(reg) {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = ep.Name, ep.Host, uint16(ep.Port), ep.SecurityProtocol
		req.Listeners = append(req.Listeners, l)
	}
	if reg.Rack != "" {
		req.Rack = &reg.Rack
	}
	req.PreviousBrokerEpoch = -1
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return 0, err
	}
	resp := raw.(*kmsg.BrokerRegistrationResponse)
	if err := codeErr(resp.ErrorCode, nil); err != nil {
		return 0, err
	}
	return resp.BrokerEpoch, nil
}

func (r *controllerRPC) heartbeat(ctx context.Context, addr string, hb controller.BrokerHeartbeat) (controller.HeartbeatResult, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset
	req.WantFence, req.WantShutdown = hb.WantFence, hb.WantShutDown
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return controller.HeartbeatResult{}, err
	}
	resp := raw.(*kmsg.BrokerHeartbeatResponse)
	if err := codeErr(resp.ErrorCode, nil); err != nil {
		return controller.HeartbeatResult{}, err
	}
	return controller.HeartbeatResult{IsCaughtUp: resp.IsCaughtUp, IsFenced: resp.IsFenced, ShouldShutDown: resp.ShouldShutdown}, nil
}

// createTopic forwards one topic's creation.
func (r *controllerRPC) createTopic(ctx context.Context, addr string, ct controller.CreateTopic, validateOnly bool) (controller.TopicResult, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = ct.Name, ct.NumPartitions, ct.ReplicationFactor
	for name, v := range ct.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = name, v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 30000
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return controller.TopicResult{}, err
	}
	resp := raw.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return controller.TopicResult{}, fmt.Errorf("broker: the controller answered %d topics for 1", len(resp.Topics))
	}
	st := resp.Topics[0]
	return controller.TopicResult{Name: st.Topic, TopicID: st.TopicID, NumPartitions: st.NumPartitions,
		ReplicationFactor: st.ReplicationFactor, Err: codeErr(st.ErrorCode, st.ErrorMessage)}, nil
}

// deleteTopic forwards one topic's deletion, by name or id.
func (r *controllerRPC) deleteTopic(ctx context.Context, addr string, ref controller.TopicRef) (controller.TopicResult, error) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	if ref.ID != ([16]byte{}) {
		dt.TopicID = ref.ID
	} else {
		name := ref.Name
		dt.Topic = &name
	}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	req.TimeoutMillis = 30000
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return controller.TopicResult{}, err
	}
	resp := raw.(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 {
		return controller.TopicResult{}, fmt.Errorf("broker: the controller answered %d topics for 1", len(resp.Topics))
	}
	st := resp.Topics[0]
	res := controller.TopicResult{TopicID: st.TopicID, Err: codeErr(st.ErrorCode, st.ErrorMessage)}
	if st.Topic != nil {
		res.Name = *st.Topic
	}
	return res, nil
}

// forwarded reports whether r came from another broker's controller
// client, which must not be forwarded again.
func forwarded(r *request) bool {
	return r.hdr.ClientID != nil && *r.hdr.ClientID == forwardClientID
}

// createPartitions forwards one topic's CreatePartitions; the answer's
// error is the result's.
func (r *controllerRPC) createPartitions(ctx context.Context, addr string, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (controller.TopicResult, error) {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{rt}
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 30000
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return controller.TopicResult{}, err
	}
	resp := raw.(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 1 {
		return controller.TopicResult{}, fmt.Errorf("broker: the controller answered %d topics for 1", len(resp.Topics))
	}
	st := resp.Topics[0]
	return controller.TopicResult{Name: st.Topic, Err: codeErr(st.ErrorCode, st.ErrorMessage)}, nil
}

// alterTopicConfigs forwards a topic's config changes as one
// IncrementalAlterConfigs resource of SET and DELETE operations.
func (r *controllerRPC) alterTopicConfigs(ctx context.Context, addr, name string, changes []controller.ConfigChange) error {
	return r.alterConfigs(ctx, addr, kmsg.ConfigResourceTypeTopic, name, changes)
}

// alterConfigs forwards a resource's config changes as one
// IncrementalAlterConfigs resource of SET and DELETE operations.
func (r *controllerRPC) alterConfigs(ctx context.Context, addr string, typ kmsg.ConfigResourceType, name string, changes []controller.ConfigChange) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, ch := range changes {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = ch.Name, ch.Value, kmsg.IncrementalAlterConfigOpSet
		if ch.Value == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.IncrementalAlterConfigsResponse)
	if len(resp.Resources) != 1 {
		return fmt.Errorf("broker: the controller answered %d resources for 1", len(resp.Resources))
	}
	return codeErr(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
}

// unregisterBroker forwards an UnregisterBroker and returns the active
// controller's error code and message.
func (r *controllerRPC) unregisterBroker(ctx context.Context, addr string, id int32) (int16, *string, error) {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return 0, nil, err
	}
	resp := raw.(*kmsg.UnregisterBrokerResponse)
	return resp.ErrorCode, resp.ErrorMessage, nil
}

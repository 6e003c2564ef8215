package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerCall runs a controller operation for request r in cluster mode:
// local runs it against this node's controller. When that is not the
// active controller and knows which node is, and r was not forwarded
// already, the request itself is sent to that node's Kafka listener and
// its answer is returned as fwd (at r's version), as a KRaft broker
// forwards admin requests to the controller. Otherwise err is local's
// error, nil or the NOT_CONTROLLER (or timeout) to answer.
func (c *cluster) controllerCall(r *request, req kmsg.Request, local func(ctx context.Context) error) (fwd kmsg.Response, err error) {
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	err = local(ctx)
	leader := remoteLeader(err, c.b.cfg.NodeID)
	if leader < 0 || forwarded(r) {
		return nil, err
	}
	addr, err := c.activeEndpoint(leader)
	if err != nil {
		return nil, err
	}
	version := req.GetVersion()
	resp, err := c.rpc.do(ctx, addr, req)
	req.SetVersion(version)
	if err != nil {
		return nil, err
	}
	resp.SetVersion(version)
	return resp, nil
}

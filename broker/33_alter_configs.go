package broker

// AlterConfigs (key 33), v0-v2.
//
// Behavior:
//   - the legacy form of IncrementalAlterConfigs
//     (44_incremental_alter_configs.go, which holds the shared checks);
//   - a TOPIC resource's configs replace its whole explicit set: one left
//     out returns to the broker default;
//   - every value must be non-null (INVALID_REQUEST "Null value not
//     supported"); BROKER_LOGGER is not served, as in Kafka
//     (INVALID_REQUEST "Unknown resource type 8"); ValidateOnly checks
//     without changing anything.
//
// Version notes:
//   - v2 is flexible.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(b *Broker, r *request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterConfigsResponse](req)
	keys := make([]resourceKey, len(req.Resources))
	changes := make([][]configChange, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{int8(rr.ResourceType), rr.ResourceName}
		for _, c := range rr.Configs {
			changes[i] = append(changes[i], configChange{c.Name, opSet, c.Value})
		}
	}
	for i, res := range b.alterResources(keys, changes, false, req.ValidateOnly, forwarded(r)) {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		out.ErrorCode, out.ErrorMessage = res.errorFields()
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

package broker

// AlterConfigs (key 33), v0-v2, the legacy form of IncrementalAlterConfigs
// (44_incremental_alter_configs.go), which holds the shared checks.
//
// A TOPIC resource's configs replace its whole explicit set: a config left
// out returns to the broker default. Every value must be non-null
// (INVALID_REQUEST "Null value not supported"). BROKER_LOGGER is not
// served by this API in Kafka either (INVALID_REQUEST "Unknown resource
// type 8"). ValidateOnly checks without changing anything.
// v2: flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(b *Broker, r *request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterConfigsResponse](req)
	keys := make([]resourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{int8(rr.ResourceType), rr.ResourceName}
	}
	dups := duplicateResources(keys)
	for i, rr := range req.Resources {
		changes := make([]configChange, len(rr.Configs))
		for j, c := range rr.Configs {
			changes[j] = configChange{c.Name, opSet, c.Value}
		}
		res := alterResult{kerr.InvalidRequest, "Each resource must appear at most once."}
		if !dups[keys[i]] {
			res = b.alterConfigs(keys[i], changes, false, req.ValidateOnly)
		}
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		out.ErrorCode = errCode(res.err)
		if res.err != nil && res.msg != "" {
			msg := res.msg
			out.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

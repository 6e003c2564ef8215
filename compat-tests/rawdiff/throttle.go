package main

// The replication throttles (KIP-73): the rates as dynamic configs of the
// cluster-default BROKER resource (""), checked with ValidateOnly so that a
// reused reference Kafka keeps no throttle, and the topics' replica lists.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterClusterDefault is an IncrementalAlterConfigs v1 of the BROKER ""
// resource with one operation.
func alterClusterDefault(validateOnly bool, op kmsg.IncrementalAlterConfigOp, name string, value *string) func(string) kmsg.Request {
	return func(string) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		req.ValidateOnly = validateOnly
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, op, value
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return req
	}
}

var throttleEntries = []entry{
	{name: "IncrementalAlterConfigs throttle rate, validate only", req: alterClusterDefault(true, kmsg.IncrementalAlterConfigOpSet, "leader.replication.throttled.rate", kmsg.StringPtr("100000"))},
	{name: "IncrementalAlterConfigs throttle rate not a number", req: alterClusterDefault(true, kmsg.IncrementalAlterConfigOpSet, "leader.replication.throttled.rate", kmsg.StringPtr("fast"))},
	{name: "IncrementalAlterConfigs throttle rate negative", req: alterClusterDefault(true, kmsg.IncrementalAlterConfigOpSet, "follower.replication.throttled.rate", kmsg.StringPtr("-1"))},
	{name: "IncrementalAlterConfigs throttle rate append", req: alterClusterDefault(true, kmsg.IncrementalAlterConfigOpAppend, "leader.replication.throttled.rate", kmsg.StringPtr("1"))},
	{name: "IncrementalAlterConfigs throttle rate delete", req: alterClusterDefault(false, kmsg.IncrementalAlterConfigOpDelete, "follower.replication.throttled.rate", nil)},
	{name: "IncrementalAlterConfigs log-dir throttle", req: alterClusterDefault(true, kmsg.IncrementalAlterConfigOpSet, "replica.alter.log.dirs.io.max.bytes.per.second", kmsg.StringPtr("100000"))},
	{name: "CreateTopics malformed throttled replicas", req: createTopics(1, 1, map[string]string{"leader.replication.throttled.replicas": "0:1,x"})},
	{name: "CreateTopics throttled replicas", req: createTopics(1, 1, map[string]string{"leader.replication.throttled.replicas": "0:1,1:1", "follower.replication.throttled.replicas": "*"})},
}

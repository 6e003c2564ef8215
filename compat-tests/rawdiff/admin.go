package main

// ElectLeaders, DescribeClientQuotas and AlterClientQuotas. Quota entities
// are named after the entry's topic, so that a reused reference Kafka's
// older quotas do not match the filters.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker"
)

func electLeaders(version int16, typ int8, partitions ...int32) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.TimeoutMillis = version, typ, 30000
		if partitions != nil {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = topic, partitions
			req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
		}
		return req
	}
}

// quotaOp is one AlterClientQuotas op; remove when value is 0 and rm set.
type quotaOp struct {
	key   string
	value float64
	rm    bool
}

// quotaEntry builds an AlterClientQuotas entry from alternating type, name
// pairs ("" as a name is the default entity; "$" in a name stands for the
// topic).
func quotaEntry(topic string, entity []string, ops ...quotaOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i+1 < len(entity); i += 2 {
		c := kmsg.NewAlterClientQuotasRequestEntryEntity()
		c.Type = entity[i]
		if name := entity[i+1]; name != "" {
			c.Name = kmsg.StringPtr(strings.Replace(name, "$", topic, 1))
		}
		e.Entity = append(e.Entity, c)
	}
	for _, op := range ops {
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value, o.Remove = op.key, op.value, op.rm
		e.Ops = append(e.Ops, o)
	}
	return e
}

type quotaEntryFn func(topic string) kmsg.AlterClientQuotasRequestEntry

func qe(entity []string, ops ...quotaOp) quotaEntryFn {
	return func(topic string) kmsg.AlterClientQuotasRequestEntry { return quotaEntry(topic, entity, ops...) }
}

func alterQuotasReq(version int16, validateOnly bool, entries ...quotaEntryFn) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version, req.ValidateOnly = version, validateOnly
		for _, e := range entries {
			req.Entries = append(req.Entries, e(topic))
		}
		return req
	}
}

// quotaSetup applies an AlterClientQuotas request, checks every entity was
// accepted, and waits until DescribeClientQuotas of user=topic lists want
// entities: Kafka's brokers describe from their copy of the metadata log,
// which trails the controller.
func quotaSetup(want int, entries ...quotaEntryFn) func(*conn, string) error {
	return func(c *conn, topic string) error {
		resp, err := c.roundTrip(alterQuotasReq(1, false, entries...)(topic))
		if err != nil {
			return err
		}
		for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
			if e.ErrorCode != 0 {
				return fmt.Errorf("setting up quotas: %v", kerr.ErrorForCode(e.ErrorCode))
			}
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, err := c.roundTrip(describeQuotas(1, false, describeComp{"user", 0, "$"})(topic))
			if err != nil {
				return err
			}
			got := len(resp.(*kmsg.DescribeClientQuotasResponse).Entries)
			if got == want {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("setting up quotas: %d entities described, want %d", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// describeComp is a DescribeClientQuotas filter component; name "$" is
// the topic, "" none.
type describeComp struct {
	typ   string
	match kmsg.QuotasMatchType
	name  string
}

func describeQuotas(version int16, strict bool, comps ...describeComp) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version, req.Strict = version, strict
		for _, dc := range comps {
			c := kmsg.NewDescribeClientQuotasRequestComponent()
			c.EntityType, c.MatchType = dc.typ, dc.match
			switch dc.name {
			case "":
			case "$":
				c.Match = kmsg.StringPtr(topic)
			default:
				c.Match = kmsg.StringPtr(dc.name)
			}
			req.Components = append(req.Components, c)
		}
		return req
	}
}

// sortQuotaEntries orders each entry's entity components by type and
// values by key, then the entries by entity: Kafka answers in hash-map
// order, which is not part of the protocol.
func sortQuotaEntries(tree any, _ string) {
	m, ok := tree.(map[string]any)
	if !ok {
		return
	}
	entries, _ := m["Entries"].([]any)
	keyOf := func(x any, field string) string {
		o, _ := x.(map[string]any)
		return fmt.Sprint(o[field])
	}
	for _, e := range entries {
		o, _ := e.(map[string]any)
		for field, by := range map[string]string{"Entity": "Type", "Values": "Key"} {
			list, _ := o[field].([]any)
			sort.SliceStable(list, func(i, j int) bool { return keyOf(list[i], by) < keyOf(list[j], by) })
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return keyOf(entries[i], "Entity") < keyOf(entries[j], "Entity") })
}

var (
	user       = []string{"user", "$"}
	userClient = []string{"user", "$", "client-id", "app"}
	userDefCl  = []string{"user", "$", "client-id", ""}
	three      = quotaSetup(3,
		qe(user, quotaOp{key: "producer_byte_rate", value: 1024}, quotaOp{key: "request_percentage", value: 12.5}),
		qe(userClient, quotaOp{key: "consumer_byte_rate", value: 2048}),
		qe(userDefCl, quotaOp{key: "controller_mutation_rate", value: 3}),
	)
)

var adminEntries = []entry{
	{name: "DescribeConfigs broker config types and defaults", raw: brokerConfigTypesAndDefaults},
	// ElectLeaders: one replica, the preferred leader, is always leading.
	{name: "ElectLeaders v2 preferred", setup: setupTopic2, req: electLeaders(2, 0, 0, 1)},
	{name: "ElectLeaders v2 unclean", setup: setupTopic, req: electLeaders(2, 1, 0)},
	{name: "ElectLeaders v0", setup: setupTopic, req: electLeaders(0, 0, 0)},
	{name: "ElectLeaders v1 unknown topic", req: electLeaders(1, 0, 0)},
	{name: "ElectLeaders v2 unknown partition", setup: setupTopic, req: electLeaders(2, 0, 0, 4, -1)},
	{name: "ElectLeaders v2 all partitions", setup: setupTopic2, req: electLeaders(2, 0), post: onlyThisRun},
	{name: "ElectLeaders v2 unknown election type", setup: setupTopic, req: electLeaders(2, 7, 0)},
	{name: "ElectLeaders v1 unknown election type, all partitions", req: electLeaders(1, -1)},

	// AlterClientQuotas
	{name: "AlterClientQuotas v1 set", req: alterQuotasReq(1, false,
		qe(user, quotaOp{key: "producer_byte_rate", value: 1024}),
		qe(userDefCl, quotaOp{key: "request_percentage", value: 0.5})), post: sortQuotaEntries},
	{name: "AlterClientQuotas v0 validate only", req: alterQuotasReq(0, true,
		qe(user, quotaOp{key: "consumer_byte_rate", value: 7}))},
	{name: "AlterClientQuotas v1 refusals", req: alterQuotasReq(1, false,
		qe(nil, quotaOp{key: "producer_byte_rate", value: 1}),
		qe([]string{"group", "$"}, quotaOp{key: "producer_byte_rate", value: 1}),
		qe([]string{"user", "$", "ip", "1.2.3.4"}, quotaOp{key: "producer_byte_rate", value: 1}),
		qe([]string{"client-id", "$"}, quotaOp{key: "connection_creation_rate", value: 1}),
		qe([]string{"ip", "10.9.8.7"}, quotaOp{key: "producer_byte_rate", value: 1}),
		qe([]string{"user", "$-zero"}, quotaOp{key: "request_percentage", value: 0}),
		qe([]string{"user", "$-frac"}, quotaOp{key: "producer_byte_rate", value: 1.5}),
		qe([]string{"ip", "10.9.8.6"}, quotaOp{key: "connection_creation_rate", value: 4e9}),
		qe([]string{"user", "$-unknown"}, quotaOp{key: "no_such_quota", value: 1}),
	), post: sortQuotaEntries},
	{name: "AlterClientQuotas v1 duplicate entity and key", req: alterQuotasReq(1, false,
		qe(userClient, quotaOp{key: "producer_byte_rate", value: 10}),
		qe([]string{"client-id", "app", "user", "$"}, quotaOp{key: "producer_byte_rate", value: 20}),
		qe(user, quotaOp{key: "producer_byte_rate", value: 1}, quotaOp{key: "producer_byte_rate", rm: true}),
	), post: sortQuotaEntries},
	{name: "AlterClientQuotas v1 remove", setup: three, req: alterQuotasReq(1, false,
		qe(user, quotaOp{key: "producer_byte_rate", rm: true}, quotaOp{key: "consumer_byte_rate", rm: true}),
		qe(userClient, quotaOp{key: "consumer_byte_rate", rm: true})), post: sortQuotaEntries},

	// DescribeClientQuotas
	{name: "DescribeClientQuotas v1 exact user", setup: three, req: describeQuotas(1, false, describeComp{"user", 0, "$"}), post: sortQuotaEntries},
	{name: "DescribeClientQuotas v0 exact user, strict", setup: three, req: describeQuotas(0, true, describeComp{"user", 0, "$"}), post: sortQuotaEntries},
	{name: "DescribeClientQuotas v1 exact user, default client-id", setup: three,
		req: describeQuotas(1, false, describeComp{"user", 0, "$"}, describeComp{"client-id", 1, ""}), post: sortQuotaEntries},
	{name: "DescribeClientQuotas v1 exact user, any client-id", setup: three,
		req: describeQuotas(1, true, describeComp{"user", 0, "$"}, describeComp{"client-id", 2, ""}), post: sortQuotaEntries},
	{name: "DescribeClientQuotas v1 after removal", setup: func(c *conn, topic string) error {
		if err := three(c, topic); err != nil {
			return err
		}
		return quotaSetup(2, qe(user, quotaOp{key: "producer_byte_rate", rm: true}, quotaOp{key: "request_percentage", rm: true}))(c, topic)
	}, req: describeQuotas(1, false, describeComp{"user", 0, "$"}), post: sortQuotaEntries},
	{name: "DescribeClientQuotas v1 unknown entity type", req: describeQuotas(1, false, describeComp{"group", 2, ""})},
	{name: "DescribeClientQuotas v1 exact without a name", req: describeQuotas(1, false, describeComp{"user", 0, ""})},
	{name: "DescribeClientQuotas v1 default with a name", req: describeQuotas(1, false, describeComp{"user", 1, "$"})},
	{name: "DescribeClientQuotas v1 repeated type", req: describeQuotas(1, false, describeComp{"user", 2, ""}, describeComp{"user", 0, "$"})},
	{name: "DescribeClientQuotas v1 ip with user", req: describeQuotas(1, false, describeComp{"ip", 2, ""}, describeComp{"user", 0, "$"})},
	{name: "DescribeClientQuotas v0 unknown match type", req: describeQuotas(0, false, describeComp{"user", 5, ""})},
}

// brokerConfigTypesAndDefaults describes the node's broker configs that
// Gregor lists (all of its config table) and returns, by name, each one's
// type and Kafka default (the DEFAULT_CONFIG synonym, "null" when none):
// the facts Gregor's table must share with Kafka. Values and sources differ
// with each broker's set-up and are left out.
func brokerConfigTypesAndDefaults(c *conn, _ string) (any, error) {
	mresp, err := c.roundTrip(kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	brokers := mresp.(*kmsg.MetadataResponse).Brokers
	if len(brokers) == 0 {
		return nil, fmt.Errorf("metadata lists no broker")
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms = 4, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(brokers[0].NodeID))
	for _, k := range broker.BrokerConfigs() {
		if k.Listed() {
			r.ConfigNames = append(r.ConfigNames, k.Name)
		}
	}
	req.Resources = append(req.Resources, r)
	resp, err := c.roundTrip(req)
	if err != nil {
		return nil, err
	}
	res := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if res.ErrorCode != 0 {
		return nil, fmt.Errorf("describe broker %s: %v", r.ResourceName, kerr.ErrorForCode(res.ErrorCode))
	}
	out := map[string]any{}
	for _, cfg := range res.Configs {
		def := "null"
		for _, s := range cfg.ConfigSynonyms {
			if s.Source == kmsg.ConfigSourceDefaultConfig && s.Value != nil {
				def = *s.Value
			}
		}
		out[cfg.Name] = map[string]string{"Type": cfg.ConfigType.String(), "Default": def}
	}
	return out, nil
}

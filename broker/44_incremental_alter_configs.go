package broker

// IncrementalAlterConfigs (key 44), v0-v1, the range Kafka 4 serves.
//
// Behavior:
//   - per resource, all or nothing, saved in gregor-topics.json before the
//     answer, in effect from the next request, append or segment;
//   - SET, DELETE (back to the default), APPEND and SUBTRACT (list configs
//     only); ValidateOnly checks without changing anything;
//   - errors in Kafka's order: a resource or config named twice, a null
//     value outside DELETE, an unknown operation INVALID_REQUEST; for a
//     TOPIC the name's errors, then INVALID_CONFIG with Kafka's message for
//     a bad operation, name or value; for a BROKER only the replication
//     throttle rates (replication_throttle.go) and, on this broker's own
//     resource, the listeners' listener.name.<l>.ssl.* stores
//     (listener_ssl_dynamic.go) change, another config of
//     the table is INVALID_REQUEST ("Cannot update these configs
//     dynamically"), an unknown name INVALID_CONFIG; BROKER_LOGGER,
//     CLIENT_METRICS and GROUP are INVALID_REQUEST until Gregor has them.
//
// Version notes:
//   - v1 is flexible.
//
// docs/apis.md#incrementalalterconfigs has the details.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
)

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

// Incremental config operations.
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

var opNames = [...]string{"SET", "DELETE", "APPEND", "SUBTRACT"}

// configChange is one requested change of a config resource.
type configChange struct {
	name  string
	op    int8
	value *string
}

// alterResult is a resource's outcome: nil error for success.
type alterResult struct {
	err *kerr.Error
	msg string
}

func handleIncrementalAlterConfigs(b *Broker, r *request, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.IncrementalAlterConfigsResponse](req)
	keys := make([]resourceKey, len(req.Resources))
	changes := make([][]configChange, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{int8(rr.ResourceType), rr.ResourceName}
		for _, c := range rr.Configs {
			changes[i] = append(changes[i], configChange{c.Name, int8(c.Op), c.Value})
		}
	}
	for i, res := range b.alterResources(keys, changes, true, req.ValidateOnly, forwarded(r)) {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		out.ErrorCode, out.ErrorMessage = res.errorFields()
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

// alterResources applies each resource's changes (incremental: the
// IncrementalAlterConfigs operations; otherwise the legacy replacement of the
// whole set) and returns one result per resource. Every copy of a resource
// named more than once is INVALID_REQUEST, as in Kafka.
// fwd marks a request another broker forwarded to this node as the active
// controller's (cluster mode): it is not forwarded again.
func (b *Broker) alterResources(keys []resourceKey, changes [][]configChange, incremental, validateOnly, fwd bool) []alterResult {
	dups := duplicateResources(keys)
	out := make([]alterResult, len(keys))
	for i, key := range keys {
		if dups[key] {
			out[i] = alterResult{kerr.InvalidRequest, "Each resource must appear at most once."}
			continue
		}
		out[i] = b.alterConfigs(key, changes[i], incremental, validateOnly, fwd)
	}
	return out
}

// errorFields returns the result as a response's error code and message.
func (r alterResult) errorFields() (int16, *string) {
	if r.err == nil || r.msg == "" {
		return errCode(r.err), nil
	}
	msg := r.msg
	return r.err.Code, &msg
}

type resourceKey struct {
	typ  int8
	name string
}

func duplicateResources(keys []resourceKey) map[resourceKey]bool {
	seen := map[resourceKey]int{}
	for _, k := range keys {
		seen[k]++
	}
	dups := map[resourceKey]bool{}
	for k, n := range seen {
		if n > 1 {
			dups[k] = true
		}
	}
	return dups
}

// alterConfigs checks and applies the changes to one resource. incremental
// selects IncrementalAlterConfigs semantics; otherwise the changes (all
// SET) replace the resource's whole config set, as legacy AlterConfigs does.
func (b *Broker) alterConfigs(key resourceKey, changes []configChange, incremental, validateOnly, fwd bool) alterResult {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range changes {
		if seen[c.name] {
			return alterResult{kerr.InvalidRequest, "Error due to duplicate config keys"}
		}
		seen[c.name] = true
		if c.op != opDelete && c.value == nil {
			nulls = append(nulls, c.name)
		}
	}
	if len(nulls) > 0 {
		return alterResult{kerr.InvalidRequest, "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	for _, c := range changes {
		if c.op < opSet || c.op > opSubtract {
			return alterResult{kerr.InvalidRequest, fmt.Sprintf("Unknown operations type %d", c.op)}
		}
	}
	switch key.typ {
	case resourceTopic:
		return b.alterTopicConfigs(key.name, changes, incremental, validateOnly, fwd)
	case resourceBroker:
		return b.alterBrokerConfigs(key.name, changes, incremental, validateOnly, fwd)
	case resourceBrokerLogger:
		if !incremental {
			return alterResult{kerr.InvalidRequest, fmt.Sprintf("Unknown resource type %d", key.typ)}
		}
		fallthrough
	case resourceClientMetrics, resourceGroup:
		return alterResult{kerr.InvalidRequest, "Unsupported resource type: " + resourceTypeName(key.typ)}
	}
	return alterResult{kerr.InvalidRequest, fmt.Sprintf("Unknown resource type %d", key.typ)}
}

func (b *Broker) alterTopicConfigs(name string, changes []configChange, incremental, validateOnly, fwd bool) alterResult {
	if name == "" {
		return alterResult{kerr.InvalidRequest, "Default topic resources are not allowed."}
	}
	if err := validateTopicName(name); err != nil {
		return alterResult{kerr.InvalidTopicException, err.Error()}
	}
	// Broker.mu is held for writing throughout, so the set validated is the
	// set replaced and a concurrent alteration cannot be lost. (In cluster
	// mode it is released before the controller is asked: the catalogue
	// follows the metadata image, and the controller writes the changes.)
	b.mu.Lock()
	locked := true
	defer func() {
		if locked {
			b.mu.Unlock()
		}
	}()
	t := b.catalog.byName[name]
	if t == nil {
		return alterResult{kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", name)}
	}
	next := topicconfig.Configs{}
	if incremental {
		next = t.configs.Clone()
	}
	for _, c := range changes {
		switch c.op {
		case opSet:
			next[c.name] = *c.value
		case opDelete:
			delete(next, c.name)
		case opAppend, opSubtract:
			def := topicconfig.Lookup(c.name)
			if def == nil || def.Kind != topicconfig.KindList {
				return alterResult{kerr.InvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", opNames[c.op], c.name)}
			}
			current, ok := next[c.name]
			if !ok { // Kafka edits the schema default, not the broker's
				current = def.Default
			}
			next[c.name] = editList(current, *c.value, c.op == opAppend)
		}
	}
	next, err := next.ValidateAll()
	if err != nil {
		return alterResult{kerr.InvalidConfig, err.Error()}
	}
	if validateOnly {
		return alterResult{}
	}
	if b.isCluster() {
		old := t.configs
		b.mu.Unlock()
		locked = false
		return b.cluster.alterTopicConfigs(name, old, next, fwd)
	}
	if err := b.catalog.alterConfigs(t, next); err != nil {
		b.log.Error("altering topic configs failed", "topic", name, "err", err)
		return alterResult{kerr.UnknownServerError, err.Error()}
	}
	b.log.Info("altered topic configs", "topic", name, "configs", len(next))
	return alterResult{}
}

// editList appends the items of change missing from list, or removes those
// present, keeping list's order.
func editList(list, change string, appendItems bool) string {
	var items []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	for _, s := range strings.Split(change, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		i := indexOf(items, s)
		switch {
		case appendItems && i < 0:
			items = append(items, s)
		case !appendItems && i >= 0:
			items = append(items[:i], items[i+1:]...)
		}
	}
	return strings.Join(items, ",")
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// alterBrokerConfigs applies the changes of the dynamic broker configs
// Gregor has, the replication throttle rates (replication_throttle.go), and
// refuses any other: Gregor's other broker settings are read-only at run
// time. A change forwarded by another broker (fwd) may name any broker, as
// the controller takes them all.
func (b *Broker) alterBrokerConfigs(name string, changes []configChange, incremental, validateOnly, fwd bool) alterResult {
	if name != "" {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return alterResult{kerr.InvalidRequest, "Node id must be an integer, but it is: " + name}
		}
		if int32(id) != b.cfg.NodeID && !fwd {
			return alterResult{kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", b.cfg.NodeID, name)}
		}
	}
	var sslNext map[*listener]map[string]string
	if name == "" || name == strconv.Itoa(int(b.cfg.NodeID)) {
		// Another broker's (a forwarded request) has no listener of this
		// node, and the SSL keys are never forwarded.
		var refused *alterResult
		if changes, sslNext, refused = b.splitSSLChanges(name, changes, incremental); refused != nil {
			return *refused
		}
	}
	changes, old, next, refused := b.throttleRateChanges(name, changes, incremental)
	if refused != nil {
		return *refused
	}
	var names []string
	for _, c := range changes {
		if incremental && brokerConfigByName[c.name] == nil {
			return alterResult{kerr.InvalidConfig, "Unknown config name: " + c.name}
		}
		names = append(names, c.name)
	}
	if len(names) > 0 {
		sort.Strings(names)
		return alterResult{kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", strings.Join(names, ", "))}
	}
	sslChanges, refused := checkSSLChanges(sslNext)
	if refused != nil {
		return *refused
	}
	if validateOnly {
		return alterResult{}
	}
	if refused := b.applySSLChanges(sslChanges); refused != nil {
		return *refused
	}
	return b.storeBrokerConfigs(name, old, next, fwd)
}

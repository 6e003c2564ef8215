package controller

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Client quotas (KIP-546), as Kafka's ClientQuotaControlManager:
// ValidateClientQuotaAlterations checks an AlterClientQuotas request, and
// is shared by the single-node broker, which keeps the quotas itself, and
// AlterClientQuotas, which writes them to the metadata log.

// QuotaOp sets a quota key to *Value, or removes the key when Value is nil.
type QuotaOp struct {
	Key   string
	Value *float64
}

// QuotaAlteration is one entry of an AlterClientQuotas request: its entity
// as the request names it (types may repeat or be unknown) and its ops.
type QuotaAlteration struct {
	Entity []metadata.QuotaEntityData
	Ops    []QuotaOp
}

// QuotaResult is the answer for one distinct entity of a request. Entity
// is as the request names it, a repeated type keeping its last name (as
// Kafka's map does), in order of first appearance. Err is nil, or
// INVALID_REQUEST with Kafka's message as its text.
type QuotaResult struct {
	Entity []metadata.QuotaEntityData
	Err    error
}

// QuotaChange is a validated alteration of one entity.
type QuotaChange struct {
	Entity metadata.ClientQuotaEntity
	Ops    []QuotaOp
}

// quotaKeyType is the type Kafka's QuotaConfig gives a quota key; it decides
// which values are legal.
type quotaKeyType int

const (
	quotaDouble quotaKeyType = iota
	quotaInt
	quotaLong
)

// userClientQuotaKeys are the keys for user and client-id entities,
// ipQuotaKeys those for IP entities (QuotaConfig).
var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{
		"connection_creation_rate": quotaInt,
	}
)

// ValidateClientQuotaAlterations checks an AlterClientQuotas request as
// Kafka's ClientQuotaControlManager.alterClientQuotas does, and returns one
// result per distinct entity and the changes of the accepted ones. A
// second entry for an entity, or an entry repeating a key, is refused
// ("Ignoring duplicate entity"), and, as in Kafka, replaces the first
// entry's result although the first entry's changes are kept. It needs no
// state (removing an unset key is no change), so it runs before a write
// takes any lock; resolving an IP entity's host name is bounded by ctx and
// 5 seconds.
func ValidateClientQuotaAlterations(ctx context.Context, alts []QuotaAlteration) ([]QuotaResult, []QuotaChange) {
	var results []*QuotaResult
	byKey := map[string]*QuotaResult{}
	var changes []QuotaChange
	for _, alt := range alts {
		entity := requestEntity(alt.Entity)
		key := entityKey(entity)
		res, seen := byKey[key]
		if !seen {
			res = &QuotaResult{Entity: entity}
			byKey[key] = res
			results = append(results, res)
		}
		dupKey := false
		for i, op := range alt.Ops {
			for _, o := range alt.Ops[:i] {
				dupKey = dupKey || o.Key == op.Key
			}
		}
		if seen || dupKey {
			// Kafka records "Duplicate quota key" for a repeated key, then
			// finds the entity answered and replaces it with this; an
			// earlier entry's changes for the entity still go ahead.
			res.Err = invalidQuota(fmt.Sprintf("Ignoring duplicate entity %s", entityString(entity)))
			continue
		}
		e, msg := validateAlteration(ctx, entity, alt.Ops)
		if msg != "" {
			res.Err = invalidQuota(msg)
			continue
		}
		changes = append(changes, QuotaChange{Entity: e, Ops: alt.Ops})
	}
	out := make([]QuotaResult, len(results))
	for i, res := range results {
		out[i] = *res
	}
	return out, changes
}

func invalidQuota(msg string) error { return kafkaError(kerr.InvalidRequest, msg) }

// requestEntity is the entity as a request names it: a repeated type keeps
// its last name, in order of first appearance.
func requestEntity(in []metadata.QuotaEntityData) []metadata.QuotaEntityData {
	var out []metadata.QuotaEntityData
next:
	for _, c := range in {
		for i := range out {
			if out[i].Type == c.Type {
				out[i].Name = c.Name
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

// entityKey identifies an entity whatever the order of its components.
func entityKey(e []metadata.QuotaEntityData) string {
	m := map[string]string{}
	for _, c := range e {
		m[c.Type] = "\x01"
		if c.Name != nil {
			m[c.Type] = "=" + *c.Name
		}
	}
	return fmt.Sprint(m) // fmt sorts map keys
}

// entityString renders an entity as Kafka's ClientQuotaEntity does.
func entityString(e []metadata.QuotaEntityData) string {
	s := "ClientQuotaEntity(entries={"
	for i, c := range e {
		if i > 0 {
			s += ", "
		}
		name := "null"
		if c.Name != nil {
			name = *c.Name
		}
		s += c.Type + "=" + name
	}
	return s + "})"
}

// validateAlteration checks one entity's alteration in Kafka's order: the
// entity, the combination of its types, then each value set. It returns
// Kafka's message for a refusal.
func validateAlteration(ctx context.Context, entity []metadata.QuotaEntityData, ops []QuotaOp) (metadata.ClientQuotaEntity, string) {
	e, msg := validateEntity(entity)
	if msg != "" {
		return e, msg
	}
	keys, msg := quotaKeysFor(ctx, e)
	if msg != "" {
		return e, msg
	}
	for _, op := range ops {
		if op.Value == nil {
			continue
		}
		if msg := validateQuotaValue(keys, op.Key, *op.Value); msg != "" {
			return e, msg
		}
	}
	return e, ""
}

// validateEntity is ClientQuotaControlManager.validateEntity.
func validateEntity(entity []metadata.QuotaEntityData) (metadata.ClientQuotaEntity, string) {
	var e metadata.ClientQuotaEntity
	if len(entity) == 0 {
		return e, "Invalid empty client quota entity"
	}
	for _, c := range entity {
		n := e.Component(c.Type)
		if n == nil {
			return e, "Unhandled client quota entity type: " + c.Type
		}
		*n = metadata.QuotaEntityName{Present: true, Default: c.Name == nil}
		if c.Name != nil {
			n.Name = *c.Name
		}
		if c.Name != nil && *c.Name == "" {
			return e, "Empty " + c.Type + " not supported"
		}
	}
	return e, ""
}

// quotaKeysFor returns the keys legal for e, or Kafka's refusal of the
// combination (ClientQuotaControlManager.configKeysForEntityType).
func quotaKeysFor(ctx context.Context, e metadata.ClientQuotaEntity) (map[string]quotaKeyType, string) {
	switch {
	case e.IP.Present && (e.User.Present || e.ClientID.Present):
		// Kafka's message, missing space included.
		return nil, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
	case e.IP.Present:
		if !e.IP.Default && !resolvable(ctx, e.IP.Name) {
			return nil, e.IP.Name + " is not a valid IP or resolvable host."
		}
		return ipQuotaKeys, ""
	case e.User.Present || e.ClientID.Present:
		return userClientQuotaKeys, ""
	}
	return nil, "Invalid empty client quota entity"
}

// resolvable reports whether name is an IP address or a host name that
// resolves, as Java's InetAddress.getByName accepts.
func resolvable(ctx context.Context, name string) bool {
	if net.ParseIP(name) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}

// validateQuotaValue applies Kafka's checks of a value for a key
// (ClientQuotaControlManager.validateQuotaKeyValue), in its order, and
// returns Kafka's message for a refusal.
func validateQuotaValue(keys map[string]quotaKeyType, key string, v float64) string {
	typ, ok := keys[key]
	if !ok {
		return "Invalid configuration key " + key
	}
	if v <= 0 {
		return "Quota " + key + " must be greater than 0"
	}
	switch typ {
	case quotaInt:
		if v > float64(1<<31-1) {
			return "Proposed value for " + key + " is too large for an INT."
		}
	case quotaLong:
		// Java compares with (double) Long.MAX_VALUE, which is 2^63.
		if v > float64(1<<63) {
			return "Proposed value for " + key + " is too large for a LONG."
		}
	default:
		return ""
	}
	// Java's Math.abs(v % 1.0) > 1e-6, which NaN passes, as in Kafka.
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}

// AlterClientQuotas validates alts (ValidateClientQuotaAlterations) and,
// unless validateOnly, writes the changes of every accepted entity in one
// entry: a ClientQuotaRecord per key set, and per key removed that the
// entity has, as Kafka's ClientQuotaControlManager. The results are per
// distinct entity; err is for the whole request: NotControllerError on a
// node that is not the active controller (validate_only too, as Kafka's
// controller answers it), REQUEST_TIMED_OUT when the entry does not
// commit in time.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration, validateOnly bool) ([]QuotaResult, error) {
	// Checked before validating, so that a follower does not resolve
	// host names for a request the active controller will validate.
	if leader := c.Leader(); leader != c.cfg.NodeID {
		return nil, &NotControllerError{LeaderID: leader}
	}
	results, changes := ValidateClientQuotaAlterations(ctx, alts)
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if validateOnly {
			return nil, nil
		}
		return clientQuotaRecords(im, changes), nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// clientQuotaRecords are the records of changes against im.
func clientQuotaRecords(im *metadata.Image, changes []QuotaChange) []metadata.Record {
	var recs []metadata.Record
	for _, ch := range changes {
		current := im.ClientQuotas[ch.Entity]
		for _, op := range ch.Ops {
			if op.Value == nil {
				if _, ok := current[op.Key]; ok {
					recs = append(recs, &metadata.ClientQuotaRecord{Entity: ch.Entity.Data(), Key: op.Key, Remove: true})
				}
				continue
			}
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: ch.Entity.Data(), Key: op.Key, Value: *op.Value})
		}
	}
	return recs
}

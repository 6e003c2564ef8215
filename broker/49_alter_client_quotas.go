package broker

// AlterClientQuotas (key 49), v0-v1.
//
// Sets and removes client quotas, validated as Kafka's controller does
// (ClientQuotaControlManager): entity types user, client-id and ip, an IP
// alone and a valid address or resolvable host, keys legal for the entity
// (producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate; connection_creation_rate for IPs), values above
// 0 and whole for integral keys. Every refusal is INVALID_REQUEST with
// Kafka's message. The changes of all accepted entries are persisted
// together before the answer; validate_only changes nothing. One result per
// distinct entity: a second entry for the same entity is refused ("Ignoring
// duplicate entity"), and, as in Kafka, replaces the first entry's result
// although the first entry's changes are made. A change is in force as
// soon as it is persisted; the byte rates and the
// connection rate are enforced (throttle.go, connquota.go), the other keys
// only stored. v1: flexible.

import (
	"context"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerScoped(singleNodeOnly, 49, 0, 1, handleAlterClientQuotas) }

// quotaOp sets a quota key, or removes it when value is nil.
type quotaOp struct {
	key   string
	value *float64
}

// requestEntity is an entity as a request names it: its components with a
// repeated type keeping the last name, as Kafka's map does, in order of
// first appearance. Types may be unknown.
type requestEntity []quotaComponent

func newRequestEntity(in []kmsg.AlterClientQuotasRequestEntryEntity) requestEntity {
	var out requestEntity
next:
	for _, c := range in {
		for i := range out {
			if out[i].typ == c.Type {
				out[i].name = c.Name
				continue next
			}
		}
		out = append(out, quotaComponent{c.Type, c.Name})
	}
	return out
}

// key identifies the entity whatever the order of its components.
func (e requestEntity) key() string {
	m := map[string]string{}
	for _, c := range e {
		m[c.typ] = "\x01"
		if c.name != nil {
			m[c.typ] = "=" + *c.name
		}
	}
	return fmt.Sprint(m) // fmt sorts map keys
}

// String renders the entity as Kafka's ClientQuotaEntity does.
func (e requestEntity) String() string {
	s := "ClientQuotaEntity(entries={"
	for i, c := range e {
		if i > 0 {
			s += ", "
		}
		name := "null"
		if c.name != nil {
			name = *c.name
		}
		s += c.typ + "=" + name
	}
	return s + "})"
}

// validate turns the entity into a quotaEntity, or refuses it with Kafka's
// message (ClientQuotaControlManager.validateEntity).
func (e requestEntity) validate() (quotaEntity, quotaError) {
	var out quotaEntity
	if len(e) == 0 {
		return out, "Invalid empty client quota entity"
	}
	for _, c := range e {
		n := out.component(c.typ)
		if n == nil {
			return out, quotaError("Unhandled client quota entity type: " + c.typ)
		}
		n.present = true
		if c.name == nil {
			n.isDefault = true
		} else {
			n.name = *c.name
		}
		if c.name != nil && *c.name == "" {
			return out, quotaError("Empty " + c.typ + " not supported")
		}
	}
	return out, ""
}

// quotaResult is one entity's answer: no error, or err with msg.
type quotaResult struct {
	entity requestEntity
	err    *kerr.Error
	msg    string
}

func (res *quotaResult) refuse(msg quotaError) {
	res.err, res.msg = kerr.InvalidRequest, string(msg)
}

func handleAlterClientQuotas(b *Broker, r *request, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterClientQuotasResponse](req)

	// Validation needs no state (removing an unset key is no change), so it
	// runs without the lock: resolving a host name may take a while.
	var results []*quotaResult
	byKey := map[string]*quotaResult{}
	type change struct {
		entity quotaEntity
		ops    []quotaOp
	}
	var changes []change
	for _, entry := range req.Entries {
		entity := newRequestEntity(entry.Entity)
		key := entity.key()
		res, seen := byKey[key]
		if !seen {
			res = &quotaResult{entity: entity}
			byKey[key] = res
			results = append(results, res)
		}
		ops := make([]quotaOp, 0, len(entry.Ops))
		dupKey := false
		for _, op := range entry.Ops {
			for _, o := range ops {
				dupKey = dupKey || o.key == op.Key
			}
			o := quotaOp{key: op.Key}
			if !op.Remove {
				v := op.Value
				o.value = &v
			}
			ops = append(ops, o)
		}
		if seen || dupKey {
			// Kafka records "Duplicate quota key" for a repeated key, then
			// finds the entity answered and replaces it with this; an
			// earlier entry's changes for the entity still go ahead.
			res.refuse(quotaError(fmt.Sprintf("Ignoring duplicate entity %v", entity)))
			continue
		}
		qe, qerr := validateAlteration(r.ctx, entity, ops)
		if qerr != "" {
			res.refuse(qerr)
			continue
		}
		changes = append(changes, change{qe, ops})
	}

	if !req.ValidateOnly && len(changes) > 0 {
		b.mu.Lock()
		old := b.catalog.quotas
		next := maps.Clone(old)
		if next == nil {
			next = map[quotaEntity]map[string]float64{}
		}
		for _, ch := range changes {
			values := maps.Clone(next[ch.entity])
			if values == nil {
				values = map[string]float64{}
			}
			for _, op := range ch.ops {
				if op.value == nil {
					delete(values, op.key)
				} else {
					values[op.key] = *op.value
				}
			}
			if len(values) == 0 {
				delete(next, ch.entity)
			} else {
				next[ch.entity] = values
			}
		}
		b.catalog.quotas = next
		err := b.catalog.save()
		if err != nil {
			b.catalog.quotas = old
		}
		b.mu.Unlock()
		if err == nil {
			b.refreshQuotas(r.ctx)
		}
		if err != nil {
			b.log.Error("altering client quotas failed", "err", err)
			for _, res := range results {
				if res.err == nil {
					res.err, res.msg = kerr.UnknownServerError, err.Error()
				}
			}
		} else {
			b.log.Info("altered client quotas", "entities", len(changes))
		}
	}

	for _, res := range results {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range res.entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.typ, c.name
			out.Entity = append(out.Entity, ent)
		}
		if res.err != nil {
			msg := res.msg
			out.ErrorCode, out.ErrorMessage = res.err.Code, &msg
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp, nil
}

// validateAlteration checks one entity's alteration in Kafka's order: the
// entity, the combination of its types, then each value set.
func validateAlteration(ctx context.Context, entity requestEntity, ops []quotaOp) (quotaEntity, quotaError) {
	qe, qerr := entity.validate()
	if qerr != "" {
		return qe, qerr
	}
	keys, qerr := quotaKeysFor(ctx, qe)
	if qerr != "" {
		return qe, qerr
	}
	for _, op := range ops {
		if op.value == nil {
			continue
		}
		if qerr := validateQuotaValue(keys, op.key, *op.value); qerr != "" {
			return qe, qerr
		}
	}
	return qe, ""
}

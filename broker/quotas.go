package broker

import (
	"maps"

	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Client quotas (KIP-546) are stored and described as Kafka's controller
// stores them (ClientQuotaControlManager) and its brokers describe them
// (ClientQuotasImage): on a single node in gregor-topics.json, in cluster
// mode in the metadata log (ClientQuotaRecord), whose applied image feeds
// the broker (cluster_quotas.go). Alterations are validated in both modes
// by controller.ValidateClientQuotaAlterations. producer_byte_rate,
// consumer_byte_rate and connection_creation_rate are enforced (package
// quota, glued to requests in throttle.go); request_percentage and
// controller_mutation_rate are stored only. The controller's entities are
// converted here, so that package quota knows nothing of the controller.

// quotaEntityOf is the broker's form of a metadata entity.
func quotaEntityOf(e metadata.ClientQuotaEntity) quota.Entity {
	name := func(n metadata.QuotaEntityName) quota.Name {
		return quota.Name{Present: n.Present, Default: n.Default, Name: n.Name}
	}
	return quota.Entity{User: name(e.User), ClientID: name(e.ClientID), IP: name(e.IP)}
}

// quotasOf converts the image's client quotas. The value maps are shared,
// never changed in place by either side.
func quotasOf(im map[metadata.ClientQuotaEntity]map[string]float64) map[quota.Entity]map[string]float64 {
	out := make(map[quota.Entity]map[string]float64, len(im))
	for e, values := range im {
		out[quotaEntityOf(e)] = values
	}
	return out
}

// applyQuotaChanges returns quotas with changes made, as a new map (the
// one given is not changed): a nil value removes a key, and an entity left
// without keys is gone.
func applyQuotaChanges(quotas map[quota.Entity]map[string]float64, changes []controller.QuotaChange) map[quota.Entity]map[string]float64 {
	next := maps.Clone(quotas)
	if next == nil {
		next = map[quota.Entity]map[string]float64{}
	}
	for _, ch := range changes {
		e := quotaEntityOf(ch.Entity)
		values := maps.Clone(next[e])
		if values == nil {
			values = map[string]float64{}
		}
		for _, op := range ch.Ops {
			if op.Value == nil {
				delete(values, op.Key)
			} else {
				values[op.Key] = *op.Value
			}
		}
		if len(values) == 0 {
			delete(next, e)
		} else {
			next[e] = values
		}
	}
	return next
}

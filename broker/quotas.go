package broker

import (
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Client quotas (KIP-546) are stored and described as Kafka's controller
// stores them (ClientQuotaControlManager) and its brokers describe them
// (ClientQuotasImage): on a single node in gregor-topics.json, in cluster
// mode in the metadata log (ClientQuotaRecord), whose applied image feeds
// the broker (cluster_quotas.go). Alterations are validated in both modes
// by controller.ValidateClientQuotaAlterations. producer_byte_rate and
// consumer_byte_rate are enforced (throttle.go), as is
// connection_creation_rate (connquota.go); request_percentage and
// controller_mutation_rate are stored only.

// Quota entity types (Kafka's ClientQuotaEntity).
const (
	quotaUser     = metadata.QuotaUser
	quotaClientID = metadata.QuotaClientID
	quotaIP       = metadata.QuotaIP
)

// quotaName is one component of a quota entity: absent, the default entity
// (a null name on the wire), or a named one.
type quotaName struct {
	present, isDefault bool
	name               string
}

func (n quotaName) wire() *string {
	if n.isDefault {
		return nil
	}
	s := n.name
	return &s
}

// quotaEntity is who a set of quotas applies to: a user, a client id, both,
// or an IP address, each named or the default. It is comparable, a map key.
type quotaEntity struct {
	user, clientID, ip quotaName
}

// component returns the entity's component of type typ.
func (e *quotaEntity) component(typ string) *quotaName {
	switch typ {
	case quotaUser:
		return &e.user
	case quotaClientID:
		return &e.clientID
	case quotaIP:
		return &e.ip
	}
	return nil
}

// quotaComponent is one (type, name) pair of an entity.
type quotaComponent struct {
	typ  string
	name *string
}

// components lists the entity's present components in a fixed order.
func (e quotaEntity) components() []quotaComponent {
	var out []quotaComponent
	for _, typ := range []string{quotaUser, quotaClientID, quotaIP} {
		if n := e.component(typ); n.present {
			out = append(out, quotaComponent{typ, n.wire()})
		}
	}
	return out
}

func (e quotaEntity) size() int { return len(e.components()) }

// String renders the entity as Kafka's ClientQuotaEntity does.
func (e quotaEntity) String() string {
	s := "ClientQuotaEntity(entries={"
	for i, c := range e.components() {
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

// quotaEntityOf is the broker's form of a metadata entity.
func quotaEntityOf(e metadata.ClientQuotaEntity) quotaEntity {
	name := func(n metadata.QuotaEntityName) quotaName {
		return quotaName{present: n.Present, isDefault: n.Default, name: n.Name}
	}
	return quotaEntity{user: name(e.User), clientID: name(e.ClientID), ip: name(e.IP)}
}

// quotasOf converts the image's client quotas. The value maps are shared,
// never changed in place by either side.
func quotasOf(im map[metadata.ClientQuotaEntity]map[string]float64) map[quotaEntity]map[string]float64 {
	out := make(map[quotaEntity]map[string]float64, len(im))
	for e, values := range im {
		out[quotaEntityOf(e)] = values
	}
	return out
}

// applyQuotaChanges returns quotas with changes made, as a new map (the
// one given is not changed): a nil value removes a key, and an entity left
// without keys is gone.
func applyQuotaChanges(quotas map[quotaEntity]map[string]float64, changes []controller.QuotaChange) map[quotaEntity]map[string]float64 {
	next := maps.Clone(quotas)
	if next == nil {
		next = map[quotaEntity]map[string]float64{}
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

// quotaRecord is how one entity's quotas are persisted. A nil name is the
// default entity. Values are strings so that NaN and infinities, which
// Kafka accepts for DOUBLE keys, survive JSON.
type quotaRecord struct {
	Entity map[string]*string `json:"entity"`
	Values map[string]string  `json:"values"`
}

func quotaRecords(quotas map[quotaEntity]map[string]float64) []quotaRecord {
	out := make([]quotaRecord, 0, len(quotas))
	for e, values := range quotas {
		rec := quotaRecord{Entity: map[string]*string{}, Values: map[string]string{}}
		for _, c := range e.components() {
			rec.Entity[c.typ] = c.name
		}
		for k, v := range values {
			rec.Values[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return recordKey(out[i]) < recordKey(out[j]) })
	return out
}

func recordKey(r quotaRecord) string {
	s := ""
	for _, typ := range []string{quotaUser, quotaClientID, quotaIP} {
		if n, ok := r.Entity[typ]; ok {
			if n == nil {
				s += typ + "\x00<default>\x00"
			} else {
				s += typ + "\x00=" + *n + "\x00"
			}
		}
	}
	return s
}

// loadQuotaRecords rebuilds the quota map from the metadata file.
func loadQuotaRecords(recs []quotaRecord) (map[quotaEntity]map[string]float64, error) {
	out := map[quotaEntity]map[string]float64{}
	for _, rec := range recs {
		var e quotaEntity
		for typ, name := range rec.Entity {
			n := e.component(typ)
			if n == nil {
				return nil, fmt.Errorf("broker: %s: client quota entity type %q is unknown", metadataFile, typ)
			}
			n.present = true
			if name == nil {
				n.isDefault = true
			} else {
				n.name = *name
			}
		}
		values := map[string]float64{}
		for k, s := range rec.Values {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("broker: %s: client quota %s of %v: %w", metadataFile, k, e, err)
			}
			values[k] = v
		}
		if len(values) > 0 {
			out[e] = values
		}
	}
	return out, nil
}

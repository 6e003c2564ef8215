package quota

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
)

// Quota entity types (Kafka's ClientQuotaEntity).
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Name is one component of a quota entity: absent, the default entity
// (a null name on the wire), or a named one.
type Name struct {
	Present, Default bool
	Name             string
}

func (n Name) wire() *string {
	if n.Default {
		return nil
	}
	s := n.Name
	return &s
}

// Entity is who a set of quotas applies to: a user, a client id, both, or
// an IP address, each named or the default. It is comparable, a map key.
type Entity struct {
	User, ClientID, IP Name
}

// Component returns the entity's component of type typ, nil when typ is
// not an entity type.
func (e *Entity) Component(typ string) *Name {
	switch typ {
	case EntityUser:
		return &e.User
	case EntityClientID:
		return &e.ClientID
	case EntityIP:
		return &e.IP
	}
	return nil
}

// Component is one (type, name) pair of an entity; a nil Name is the
// default entity.
type Component struct {
	Type string
	Name *string
}

// Components lists the entity's present components in a fixed order.
func (e Entity) Components() []Component {
	var out []Component
	for _, typ := range []string{EntityUser, EntityClientID, EntityIP} {
		if n := e.Component(typ); n.Present {
			out = append(out, Component{typ, n.wire()})
		}
	}
	return out
}

// Size is the number of the entity's present components.
func (e Entity) Size() int { return len(e.Components()) }

// String renders the entity as Kafka's ClientQuotaEntity does.
func (e Entity) String() string {
	s := "ClientQuotaEntity(entries={"
	for i, c := range e.Components() {
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

// Equal compares quotas value by value, bit for bit (a NaN quota is the
// same as itself).
func Equal(a, b map[Entity]map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]float64) bool {
		return maps.EqualFunc(x, y, func(v, w float64) bool { return math.Float64bits(v) == math.Float64bits(w) })
	})
}

// Record is how one entity's quotas are persisted. A nil name is the
// default entity. Values are strings so that NaN and infinities, which
// Kafka accepts for DOUBLE keys, survive JSON.
type Record struct {
	Entity map[string]*string `json:"entity"`
	Values map[string]string  `json:"values"`
}

// Records returns the records of quotas, in a fixed order.
func Records(quotas map[Entity]map[string]float64) []Record {
	out := make([]Record, 0, len(quotas))
	for e, values := range quotas {
		rec := Record{Entity: map[string]*string{}, Values: map[string]string{}}
		for _, c := range e.Components() {
			rec.Entity[c.Type] = c.Name
		}
		for k, v := range values {
			rec.Values[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return recordKey(out[i]) < recordKey(out[j]) })
	return out
}

func recordKey(r Record) string {
	s := ""
	for _, typ := range []string{EntityUser, EntityClientID, EntityIP} {
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

// LoadRecords rebuilds the quota map from its records. An entity left
// without values is dropped.
func LoadRecords(recs []Record) (map[Entity]map[string]float64, error) {
	out := map[Entity]map[string]float64{}
	for _, rec := range recs {
		var e Entity
		for typ, name := range rec.Entity {
			n := e.Component(typ)
			if n == nil {
				return nil, fmt.Errorf("client quota entity type %q is unknown", typ)
			}
			n.Present = true
			if name == nil {
				n.Default = true
			} else {
				n.Name = *name
			}
		}
		values := map[string]float64{}
		for k, s := range rec.Values {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("client quota %s of %v: %w", k, e, err)
			}
			values[k] = v
		}
		if len(values) > 0 {
			out[e] = values
		}
	}
	return out, nil
}

package metadata

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"sort"
)

// Client quota entity types, Kafka's ClientQuotaEntity.USER, CLIENT_ID and
// IP.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// QuotaEntityData is one component of a ClientQuotaRecord's entity: its
// type and its name, nil for the type's default entity.
type QuotaEntityData struct {
	Type string
	Name *string
}

// ClientQuotaRecord sets one quota key of a client quota entity to Value,
// or removes it (Remove, Value ignored), as Kafka's ClientQuotaRecord
// (apiKey 14). The controller writes each entity with its components in
// the order user, client-id, ip.
type ClientQuotaRecord struct {
	Entity []QuotaEntityData
	Key    string
	Value  float64
	Remove bool
}

func (*ClientQuotaRecord) Type() RecordType { return TypeClientQuota }

func (r *ClientQuotaRecord) encode(e *encoder) {
	e.uvarint(uint64(len(r.Entity)))
	for _, c := range r.Entity {
		e.string(c.Type)
		e.nullableString(c.Name)
	}
	e.string(r.Key)
	e.float64(r.Value)
	e.bool(r.Remove)
}

func decodeClientQuota(d *decoder) *ClientQuotaRecord {
	r := &ClientQuotaRecord{}
	// Each component takes at least two bytes: its type's and its name's
	// lengths.
	n := d.length(d.uvarint(), 2)
	r.Entity = make([]QuotaEntityData, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		r.Entity = append(r.Entity, QuotaEntityData{Type: d.string(), Name: d.nullableString()})
	}
	r.Key = d.string()
	r.Value = d.float64()
	r.Remove = d.bool()
	return r
}

// QuotaEntityName is one component of a ClientQuotaEntity: absent, the
// default entity of its type, or a named one.
type QuotaEntityName struct {
	Present bool
	Default bool
	Name    string // "" unless Present and not Default
}

// ClientQuotaEntity is who a set of client quotas applies to: a user, a
// client id, both, or an IP address, each named or the default. It is
// comparable, a map key.
type ClientQuotaEntity struct {
	User, ClientID, IP QuotaEntityName
}

// Component returns e's component of type typ, nil for an unknown type.
func (e *ClientQuotaEntity) Component(typ string) *QuotaEntityName {
	switch typ {
	case QuotaUser:
		return &e.User
	case QuotaClientID:
		return &e.ClientID
	case QuotaIP:
		return &e.IP
	}
	return nil
}

// Data lists e's present components in the order user, client-id, ip, as
// a ClientQuotaRecord carries them.
func (e ClientQuotaEntity) Data() []QuotaEntityData {
	var out []QuotaEntityData
	for _, typ := range []string{QuotaUser, QuotaClientID, QuotaIP} {
		n := e.Component(typ)
		if !n.Present {
			continue
		}
		c := QuotaEntityData{Type: typ}
		if !n.Default {
			name := n.Name
			c.Name = &name
		}
		out = append(out, c)
	}
	return out
}

// sortKey orders entities in a snapshot: by their components, the default
// before named ones.
func (e ClientQuotaEntity) sortKey() string {
	s := ""
	for _, c := range e.Data() {
		if c.Name == nil {
			s += c.Type + "\x00\x00"
		} else {
			s += c.Type + "\x00\x01" + *c.Name + "\x00"
		}
	}
	return s
}

// ClientQuotaEntityOf builds the entity a record's components name. A
// repeated type keeps its last name, as Kafka's replay builds a map. An
// empty entity or an unknown type is ErrInconsistent: the controller
// writes neither.
func ClientQuotaEntityOf(data []QuotaEntityData) (ClientQuotaEntity, error) {
	var e ClientQuotaEntity
	if len(data) == 0 {
		return e, fmt.Errorf("%w: client quota record without an entity", ErrInconsistent)
	}
	for _, c := range data {
		n := e.Component(c.Type)
		if n == nil {
			return e, fmt.Errorf("%w: client quota entity type %q is unknown", ErrInconsistent, c.Type)
		}
		*n = QuotaEntityName{Present: true, Default: c.Name == nil}
		if c.Name != nil {
			n.Name = *c.Name
		}
	}
	return e, nil
}

// applyClientQuota is Kafka's ClientQuotaControlManager.replay: the key is
// set or removed, and an entity left without keys is gone. The entity's
// value map is replaced, never changed in place (see Image).
func (im *Image) applyClientQuota(r *ClientQuotaRecord) error {
	e, err := ClientQuotaEntityOf(r.Entity)
	if err != nil {
		return err
	}
	values := maps.Clone(im.ClientQuotas[e])
	if values == nil {
		values = map[string]float64{}
	}
	if r.Remove {
		delete(values, r.Key)
	} else {
		values[r.Key] = r.Value
	}
	if im.ClientQuotas == nil {
		im.ClientQuotas = map[ClientQuotaEntity]map[string]float64{}
	}
	if len(values) == 0 {
		delete(im.ClientQuotas, e)
	} else {
		im.ClientQuotas[e] = values
	}
	return nil
}

// clientQuotaRecords are the records that rebuild im.ClientQuotas, in a
// deterministic order.
func (im *Image) clientQuotaRecords() []Record {
	entities := make([]ClientQuotaEntity, 0, len(im.ClientQuotas))
	for e := range im.ClientQuotas {
		entities = append(entities, e)
	}
	sort.Slice(entities, func(i, j int) bool { return entities[i].sortKey() < entities[j].sortKey() })
	var recs []Record
	for _, e := range entities {
		values := im.ClientQuotas[e]
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			recs = append(recs, &ClientQuotaRecord{Entity: e.Data(), Key: k, Value: values[k]})
		}
	}
	return recs
}

// float64 is the value's IEEE 754 bits, 8 bytes big-endian, so that every
// value (NaN and the infinities too) is kept exactly.
func (e *encoder) float64(v float64) { e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(v)) }

func (d *decoder) float64() float64 {
	b := d.bytes(8)
	if len(b) < 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

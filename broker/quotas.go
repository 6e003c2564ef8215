package broker

import (
	"context"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"time"
)

// Client quotas (KIP-546) are stored, persisted in gregor-topics.json and
// described, as Kafka's controller stores them (ClientQuotaControlManager)
// and its brokers describe them (ClientQuotasImage). producer_byte_rate and
// consumer_byte_rate are enforced (throttle.go), as is
// connection_creation_rate (connquota.go); request_percentage and
// controller_mutation_rate are stored only.

// Quota entity types (Kafka's ClientQuotaEntity).
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"
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
func (e quotaEntity) String() string { return requestEntity(e.components()).String() }

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

// quotaError is a refusal of one entity's alteration: INVALID_REQUEST with
// Kafka's message.
type quotaError string

// quotaKeysFor returns the keys legal for e, or Kafka's refusal of the
// combination (ClientQuotaControlManager.configKeysForEntityType).
func quotaKeysFor(ctx context.Context, e quotaEntity) (map[string]quotaKeyType, quotaError) {
	switch {
	case e.ip.present && (e.user.present || e.clientID.present):
		// Kafka's message, missing space included.
		return nil, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
	case e.ip.present:
		if !e.ip.isDefault && !resolvable(ctx, e.ip.name) {
			return nil, quotaError(e.ip.name + " is not a valid IP or resolvable host.")
		}
		return ipQuotaKeys, ""
	case e.user.present || e.clientID.present:
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
// (ClientQuotaControlManager.validateQuotaKeyValue), in its order.
func validateQuotaValue(keys map[string]quotaKeyType, key string, v float64) quotaError {
	typ, ok := keys[key]
	if !ok {
		return quotaError("Invalid configuration key " + key)
	}
	if v <= 0 {
		return quotaError("Quota " + key + " must be greater than 0")
	}
	switch typ {
	case quotaInt:
		if v > float64(1<<31-1) {
			return quotaError("Proposed value for " + key + " is too large for an INT.")
		}
	case quotaLong:
		// Java compares with (double) Long.MAX_VALUE, which is 2^63.
		if v > float64(1<<63) {
			return quotaError("Proposed value for " + key + " is too large for a LONG.")
		}
	default:
		return ""
	}
	// Java's Math.abs(v % 1.0) > 1e-6, which NaN passes, as in Kafka.
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return quotaError(key + " cannot be a fractional value.")
	}
	return ""
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

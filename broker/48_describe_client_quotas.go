package broker

// DescribeClientQuotas (key 48), v0-v1.
//
// Behavior:
//   - lists the quotas whose entity matches the filter, as Kafka's
//     ClientQuotasImage.describe: a single node's stored ones; on a cluster
//     the last applied image's, so an alteration shows once applied;
//   - each component names a type (user, client-id, ip) and matches a name
//     (EXACT), the default (DEFAULT) or any (SPECIFIED); strict: no other
//     types;
//   - a bad filter fails the request, with no entries: INVALID_REQUEST (an
//     empty or repeated type, a misplaced or missing match string, an
//     unknown match type, ip with user or client-id), UNSUPPORTED_VERSION
//     for an unknown entity type;
//   - the byte rates and connection rate are enforced (package quota,
//     throttle.go), other keys only stored.
//
// Version notes:
//   - v1 is flexible.
//
// docs/apis.md#describeclientquotas has the details.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/quota"
)

func init() { register(48, 0, 1, handleDescribeClientQuotas) }

// Match types of a DescribeClientQuotas filter component.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

// quotaFilter is a validated DescribeClientQuotas filter: exact holds the
// name each type must have (nil for the default entity), specified the
// types that must merely be present.
type quotaFilter struct {
	exact     map[string]*string
	specified map[string]bool
	strict    bool
}

// newQuotaFilter validates the request's filter in Kafka's order.
func newQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (quotaFilter, *kerr.Error, string) {
	f := quotaFilter{exact: map[string]*string{}, specified: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		typ := c.EntityType
		_, exact := f.exact[typ]
		switch {
		case typ == "":
			return f, kerr.InvalidRequest, "Invalid empty entity type."
		case exact || f.specified[typ]:
			return f, kerr.InvalidRequest, fmt.Sprintf("Entity type %s cannot appear more than once in the filter.", typ)
		case typ != quota.EntityUser && typ != quota.EntityClientID && typ != quota.EntityIP:
			return f, kerr.UnsupportedVersion, "Unsupported entity type " + typ
		}
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return f, kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
			f.exact[typ] = c.Match
		case quotaMatchDefault:
			if c.Match != nil {
				return f, kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
			f.exact[typ] = nil
		case quotaMatchSpecified:
			if c.Match != nil {
				return f, kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
			f.specified[typ] = true
		default:
			return f, kerr.InvalidRequest, fmt.Sprintf("Unknown match type %d", c.MatchType)
		}
	}
	if f.names(quota.EntityIP) && (f.names(quota.EntityUser) || f.names(quota.EntityClientID)) {
		return f, kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return f, nil, ""
}

// names reports whether the filter says anything about type typ.
func (f quotaFilter) names(typ string) bool {
	_, exact := f.exact[typ]
	return exact || f.specified[typ]
}

// matches is Kafka's ClientQuotasImage.matches.
func (f quotaFilter) matches(e quota.Entity) bool {
	if f.strict && e.Size() != len(f.exact)+len(f.specified) {
		return false
	}
	for typ, name := range f.exact {
		n := e.Component(typ)
		if !n.Present || n.Default != (name == nil) || (name != nil && n.Name != *name) {
			return false
		}
	}
	for typ := range f.specified {
		if !e.Component(typ).Present {
			return false
		}
	}
	return true
}

func handleDescribeClientQuotas(b *Broker, r *request, req *kmsg.DescribeClientQuotasRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeClientQuotasResponse](req)
	f, kErr, msg := newQuotaFilter(req)
	if kErr != nil {
		// Kafka's getErrorResponse: the error and null entries.
		resp.ErrorCode, resp.ErrorMessage = kErr.Code, &msg
		return resp, nil
	}
	quotas := b.storedQuotas()
	resp.ErrorMessage = new(string) // Kafka's default: empty, not null
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for e, values := range quotas {
		if !f.matches(e) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Components() {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ent)
		}
		for key, v := range values {
			val := kmsg.NewDescribeClientQuotasResponseEntryValue()
			val.Key, val.Value = key, v
			entry.Values = append(entry.Values, val)
		}
		sort.Slice(entry.Values, func(i, j int) bool { return entry.Values[i].Key < entry.Values[j].Key })
		resp.Entries = append(resp.Entries, entry)
	}
	sort.Slice(resp.Entries, func(i, j int) bool {
		return quotaEntryKey(resp.Entries[i]) < quotaEntryKey(resp.Entries[j])
	})
	return resp, nil
}

// quotaEntryKey orders described entries: by their components, the default
// entity before named ones.
func quotaEntryKey(e kmsg.DescribeClientQuotasResponseEntry) string {
	s := ""
	for _, c := range e.Entity {
		if c.Name == nil {
			s += c.Type + "\x00\x00"
		} else {
			s += c.Type + "\x00\x01" + *c.Name + "\x00"
		}
	}
	return s
}

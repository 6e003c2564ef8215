package controller

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// TestValidateQuotaValue covers Kafka's value checks at their edges
// (ClientQuotaControlManager.validateQuotaKeyValue).
func TestValidateQuotaValue(t *testing.T) {
	tests := []struct {
		keys  map[string]quotaKeyType
		key   string
		value float64
		want  string
	}{
		{userClientQuotaKeys, "producer_byte_rate", 1, ""},
		{userClientQuotaKeys, "producer_byte_rate", 1 << 62, ""},
		{userClientQuotaKeys, "producer_byte_rate", 1 << 63, ""}, // (double) Long.MAX_VALUE itself
		{userClientQuotaKeys, "producer_byte_rate", 1 << 64, "Proposed value for producer_byte_rate is too large for a LONG."},
		{userClientQuotaKeys, "producer_byte_rate", 2.000001, "producer_byte_rate cannot be a fractional value."},
		{userClientQuotaKeys, "producer_byte_rate", 2.0000001, ""},  // within Kafka's 1e-6
		{userClientQuotaKeys, "producer_byte_rate", math.NaN(), ""}, // NaN passes every check in Kafka too
		{userClientQuotaKeys, "producer_byte_rate", math.Copysign(0, -1), "Quota producer_byte_rate must be greater than 0"},
		{userClientQuotaKeys, "request_percentage", math.Inf(1), ""},
		{userClientQuotaKeys, "request_percentage", 0.001, ""},
		{userClientQuotaKeys, "controller_mutation_rate", math.Inf(-1), "Quota controller_mutation_rate must be greater than 0"},
		{userClientQuotaKeys, "connection_creation_rate", 1, "Invalid configuration key connection_creation_rate"},
		{ipQuotaKeys, "connection_creation_rate", 1<<31 - 1, ""},
		{ipQuotaKeys, "connection_creation_rate", 1 << 31, "Proposed value for connection_creation_rate is too large for an INT."},
		{ipQuotaKeys, "connection_creation_rate", 10.5, "connection_creation_rate cannot be a fractional value."},
		{ipQuotaKeys, "request_percentage", 1, "Invalid configuration key request_percentage"},
	}
	for _, tt := range tests {
		if got := validateQuotaValue(tt.keys, tt.key, tt.value); got != tt.want {
			t.Errorf("%s=%v: %q, want %q", tt.key, tt.value, got, tt.want)
		}
	}
}

func sp(s string) *string   { return &s }
func fp(v float64) *float64 { return &v }

func ent(kv ...*string) []metadata.QuotaEntityData {
	// kv alternates type and name: ent(sp("user"), sp("alice"), sp("client-id"), nil).
	var out []metadata.QuotaEntityData
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, metadata.QuotaEntityData{Type: *kv[i], Name: kv[i+1]})
	}
	return out
}

// TestValidateClientQuotaAlterations covers Kafka's refusals and its
// handling of repeated entities and keys (ClientQuotaControlManager).
func TestValidateClientQuotaAlterations(t *testing.T) {
	user, client, ip := sp(metadata.QuotaUser), sp(metadata.QuotaClientID), sp(metadata.QuotaIP)
	set := func(k string, v float64) QuotaOp { return QuotaOp{Key: k, Value: fp(v)} }
	tests := []struct {
		name    string
		alts    []QuotaAlteration
		results []string // "" for an accepted entity, else Kafka's message
		changes int
	}{
		{"a user and client", []QuotaAlteration{{ent(user, sp("alice"), client, nil), []QuotaOp{set("producer_byte_rate", 1024)}}}, []string{""}, 1},
		{"no entity", []QuotaAlteration{{nil, []QuotaOp{set("producer_byte_rate", 1)}}}, []string{"Invalid empty client quota entity"}, 0},
		{"unknown type", []QuotaAlteration{{ent(sp("group"), sp("g")), nil}}, []string{"Unhandled client quota entity type: group"}, 0},
		{"empty name", []QuotaAlteration{{ent(user, sp("")), nil}}, []string{"Empty user not supported"}, 0},
		{"ip with a user", []QuotaAlteration{{ent(ip, nil, user, nil), nil}},
			[]string{"Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"}, 0},
		{"unresolvable host", []QuotaAlteration{{ent(ip, sp("no-such-host.invalid")), []QuotaOp{set("connection_creation_rate", 1)}}},
			[]string{"no-such-host.invalid is not a valid IP or resolvable host."}, 0},
		{"ip key on a user", []QuotaAlteration{{ent(user, nil), []QuotaOp{set("connection_creation_rate", 1)}}},
			[]string{"Invalid configuration key connection_creation_rate"}, 0},
		{"removing needs no valid value", []QuotaAlteration{{ent(ip, sp("127.0.0.1")), []QuotaOp{{Key: "connection_creation_rate"}}}}, []string{""}, 1},
		{"the same entity twice: the second refused, the first's changes kept",
			[]QuotaAlteration{
				{ent(user, sp("a"), client, sp("c")), []QuotaOp{set("producer_byte_rate", 1)}},
				{ent(client, sp("c"), user, sp("a")), []QuotaOp{set("consumer_byte_rate", 1)}},
			}, []string{"Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=a})"}, 1},
		{"a repeated key", []QuotaAlteration{{ent(client, sp("c")), []QuotaOp{set("producer_byte_rate", 1), {Key: "producer_byte_rate"}}}},
			[]string{"Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})"}, 0},
		{"a repeated type keeps its last name", []QuotaAlteration{{ent(user, sp("x"), user, sp("y")), []QuotaOp{set("producer_byte_rate", 1)}}},
			[]string{""}, 1},
		{"one refused, one accepted", []QuotaAlteration{
			{ent(user, sp("a")), []QuotaOp{set("producer_byte_rate", 1.5)}},
			{ent(user, sp("b")), []QuotaOp{set("producer_byte_rate", 2)}},
		}, []string{"producer_byte_rate cannot be a fractional value.", ""}, 1},
	}
	for _, tt := range tests {
		results, changes := ValidateClientQuotaAlterations(t.Context(), tt.alts)
		var got []string
		for _, r := range results {
			if r.Err == nil {
				got = append(got, "")
				continue
			}
			if !errors.Is(r.Err, kerr.InvalidRequest) {
				t.Errorf("%s: %v is not INVALID_REQUEST", tt.name, r.Err)
			}
			got = append(got, r.Err.Error())
		}
		if !reflect.DeepEqual(got, tt.results) || len(changes) != tt.changes {
			t.Errorf("%s: results %q, %d changes; want %q, %d", tt.name, got, len(changes), tt.results, tt.changes)
		}
	}
	// The answer names the entity as the request did, the repeated type
	// with its last name.
	results, changes := ValidateClientQuotaAlterations(t.Context(), []QuotaAlteration{
		{ent(user, sp("x"), client, nil, user, sp("y")), []QuotaOp{set("producer_byte_rate", 1)}}})
	if want := ent(user, sp("y"), client, nil); !reflect.DeepEqual(results[0].Entity, want) {
		t.Errorf("entity answered as %v, want %v", results[0].Entity, want)
	}
	if want := (metadata.ClientQuotaEntity{User: metadata.QuotaEntityName{Present: true, Name: "y"},
		ClientID: metadata.QuotaEntityName{Present: true, Default: true}}); changes[0].Entity != want {
		t.Errorf("change for %+v, want %+v", changes[0].Entity, want)
	}
}

// TestAlterClientQuotasWritesOneEntry: the accepted entities' changes are
// one entry of the log; validate_only and removing an unset key write
// nothing; the quotas survive a restart from the WAL and a snapshot.
func TestAlterClientQuotasWritesOneEntry(t *testing.T) {
	q := newQuorum(t, 1, func(c *Config) { c.SnapshotEntries = 3 })
	c := q.active()
	user, client := sp(metadata.QuotaUser), sp(metadata.QuotaClientID)
	alice := metadata.QuotaEntityName{Present: true, Name: "alice"}
	app := metadata.QuotaEntityName{Present: true, Name: "app"}

	alter := func(validateOnly bool, alts ...QuotaAlteration) []QuotaResult {
		t.Helper()
		res, err := c.AlterClientQuotas(ctx(t), alts, validateOnly)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	before := c.Image().Offset
	res := alter(false,
		QuotaAlteration{ent(user, sp("alice")), []QuotaOp{{Key: "producer_byte_rate", Value: fp(1024)}, {Key: "request_percentage", Value: fp(math.NaN())}}},
		QuotaAlteration{ent(client, sp("app")), []QuotaOp{{Key: "consumer_byte_rate", Value: fp(2048)}}},
		QuotaAlteration{ent(client, sp("bad")), []QuotaOp{{Key: "consumer_byte_rate", Value: fp(-1)}}},
	)
	if len(res) != 3 || res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, kerr.InvalidRequest) {
		t.Fatalf("results %+v", res)
	}
	im := c.Image()
	if im.Offset != before+1 {
		t.Fatalf("offset %d after %d: the changes are not one entry", im.Offset, before)
	}
	if v := im.ClientQuotas[metadata.ClientQuotaEntity{User: alice}]; v["producer_byte_rate"] != 1024 || !math.IsNaN(v["request_percentage"]) {
		t.Fatalf("alice's quotas %v", v)
	}
	if len(im.ClientQuotas) != 2 || im.ClientQuotas[metadata.ClientQuotaEntity{ClientID: app}]["consumer_byte_rate"] != 2048 {
		t.Fatalf("quotas %v", im.ClientQuotas)
	}

	// validate_only checks and answers, and writes nothing.
	res = alter(true, QuotaAlteration{ent(client, sp("app")), []QuotaOp{{Key: "consumer_byte_rate", Value: fp(1)}}},
		QuotaAlteration{ent(client, sp("app2")), []QuotaOp{{Key: "consumer_byte_rate", Value: fp(0)}}})
	if res[0].Err != nil || res[1].Err == nil || c.Image().Offset != im.Offset {
		t.Fatalf("validate_only: %+v, offset %d -> %d", res, im.Offset, c.Image().Offset)
	}
	// Removing a key the entity does not have writes nothing.
	alter(false, QuotaAlteration{ent(client, sp("app")), []QuotaOp{{Key: "producer_byte_rate"}}})
	if c.Image().Offset != im.Offset {
		t.Fatal("removing an unset key wrote an entry")
	}
	// Removing the last key drops the entity.
	alter(false, QuotaAlteration{ent(client, sp("app")), []QuotaOp{{Key: "consumer_byte_rate"}}})
	for i := range 4 { // past SnapshotEntries, so the restart reads a snapshot
		alter(false, QuotaAlteration{ent(user, nil), []QuotaOp{{Key: "consumer_byte_rate", Value: fp(float64(100 + i))}}})
	}
	want := map[metadata.ClientQuotaEntity]map[string]float64{
		{User: alice}: {"producer_byte_rate": 1024, "request_percentage": math.NaN()},
		{User: metadata.QuotaEntityName{Present: true, Default: true}}: {"consumer_byte_rate": 103},
	}
	check := func(what string, got map[metadata.ClientQuotaEntity]map[string]float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: quotas %v, want %v", what, got, want)
		}
		for e, values := range want {
			for k, v := range values {
				if g, ok := got[e][k]; !ok || math.Float64bits(g) != math.Float64bits(v) || len(got[e]) != len(values) {
					t.Fatalf("%s: quotas %v, want %v", what, got, want)
				}
			}
		}
	}
	check("before the restart", c.Image().ClientQuotas)
	q.stop(1)
	q.start(1, nil)
	check("after the restart", q.active().Image().ClientQuotas)
}

// TestAlterClientQuotasOnAFollowerIsNotController: a node that is not the
// active controller names the one that is, validate_only too.
func TestAlterClientQuotasOnAFollowerIsNotController(t *testing.T) {
	q := newQuorum(t, 3, nil)
	active := q.active()
	for id, c := range q.ctls {
		if c == active {
			continue
		}
		for _, validateOnly := range []bool{false, true} {
			_, err := c.AlterClientQuotas(ctx(t), []QuotaAlteration{{ent(sp(metadata.QuotaUser), nil),
				[]QuotaOp{{Key: "producer_byte_rate", Value: fp(1)}}}}, validateOnly)
			if err == nil && c.Leader() == id {
				continue // leadership moved here meanwhile
			}
			var nc *NotControllerError
			if !errors.As(err, &nc) || !errors.Is(err, kerr.NotController) {
				t.Fatalf("node %d: %v, want NOT_CONTROLLER", id, err)
			}
		}
	}
}

package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func quotaEnt(pairs ...*string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i+1 < len(pairs); i += 2 {
		e = append(e, kadm.ClientQuotaEntityComponent{Type: *pairs[i], Name: pairs[i+1]})
	}
	return e
}

// describedQuotas renders a described set as sorted lines "entity: k=v ...".
func describedQuotas(d kadm.DescribedClientQuotas) []string {
	var out []string
	for _, q := range d {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		sort.Strings(vals)
		out = append(out, q.Entity.String()+": "+strings.Join(vals, " "))
	}
	sort.Strings(out)
	return out
}

func alterQuotas(t *testing.T, ctx context.Context, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// TestClientQuotasStoredDescribedAndPersisted sets quotas through kadm,
// describes them with each match type, removes one, and finds the rest
// after a restart.
func TestClientQuotasStoredDescribedAndPersisted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	first, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	adm, _ := newAdmin(t, first.Addr())
	user, client, ip := strp("user"), strp("client-id"), strp("ip")
	alterQuotas(t, ctx, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(user, strp("alice")), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 1024}, {Key: "request_percentage", Value: 12.5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(user, nil), Ops: []kadm.AlterClientQuotaOp{
			{Key: "consumer_byte_rate", Value: 2048}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(user, strp("alice"), client, strp("app")), Ops: []kadm.AlterClientQuotaOp{
			{Key: "controller_mutation_rate", Value: 3}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(client, nil), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 100}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(ip, strp("10.0.0.1")), Ops: []kadm.AlterClientQuotaOp{
			{Key: "connection_creation_rate", Value: 7}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(ip, nil), Ops: []kadm.AlterClientQuotaOp{
			{Key: "connection_creation_rate", Value: 20}}},
	)

	all := []string{
		"{client-id=<default>}: producer_byte_rate=100",
		"{ip=10.0.0.1}: connection_creation_rate=7",
		"{ip=<default>}: connection_creation_rate=20",
		"{user=<default>}: consumer_byte_rate=2048",
		"{user=alice, client-id=app}: controller_mutation_rate=3",
		"{user=alice}: producer_byte_rate=1024 request_percentage=12.5",
	}
	exact := kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice"), MatchType: quotaMatchExact}
	tests := []struct {
		name   string
		strict bool
		filter []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{"no filter", false, nil, all},
		{"no filter, strict", true, nil, nil},
		{"exact user", false, []kadm.DescribeClientQuotaComponent{exact}, []string{all[4], all[5]}},
		{"exact user, strict", true, []kadm.DescribeClientQuotaComponent{exact}, []string{all[5]}},
		{"default user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: quotaMatchDefault}}, []string{all[3]}},
		{"any client-id", false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: quotaMatchSpecified}}, []string{all[0], all[4]}},
		{"exact user and any client-id, strict", true, []kadm.DescribeClientQuotaComponent{exact, {Type: "client-id", MatchType: quotaMatchSpecified}}, []string{all[4]}},
		{"any ip", false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: quotaMatchSpecified}}, []string{all[1], all[2]}},
		{"exact unknown user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: strp("bob")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := adm.DescribeClientQuotas(ctx, tt.strict, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if g := describedQuotas(got); fmt.Sprint(g) != fmt.Sprint(tt.want) {
				t.Fatalf("described\n%v\nwant\n%v", strings.Join(g, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	// Removing one key keeps the other; removing the last drops the entity;
	// removing a key that is not set is no error.
	alterQuotas(t, ctx, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(user, strp("alice")), Ops: []kadm.AlterClientQuotaOp{
			{Key: "request_percentage", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEnt(ip, strp("10.0.0.1")), Ops: []kadm.AlterClientQuotaOp{
			{Key: "connection_creation_rate", Remove: true}}},
	)
	// validate_only changes nothing.
	if res, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEnt(user, strp("carol")),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 5}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, res)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := startBroker(t, Config{DataDir: dir})
	adm2, _ := newAdmin(t, second.Addr())
	got, err := adm2.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{all[0], all[2], all[3], all[4], "{user=alice}: producer_byte_rate=1024"}
	if g := describedQuotas(got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("after restart\n%v\nwant\n%v", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// TestAlterClientQuotasRefusals: every refusal is INVALID_REQUEST with
// Kafka's message, per entity, and changes nothing.
func TestAlterClientQuotasRefusals(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	type comp struct {
		typ  string
		name *string
	}
	type op struct {
		key    string
		value  float64
		remove bool
	}
	tests := []struct {
		name   string
		entity []comp
		ops    []op
		msg    string // "" for success
	}{
		{"empty entity", nil, []op{{key: "producer_byte_rate", value: 1}}, "Invalid empty client quota entity"},
		{"unknown entity type", []comp{{"group", strp("g")}}, []op{{key: "producer_byte_rate", value: 1}}, "Unhandled client quota entity type: group"},
		{"empty user name", []comp{{"user", strp("")}}, []op{{key: "producer_byte_rate", value: 1}}, "Empty user not supported"},
		{"ip with user", []comp{{"user", strp("u")}, {"ip", strp("1.2.3.4")}}, []op{{key: "connection_creation_rate", value: 1}},
			"Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{"bad ip", []comp{{"ip", strp("not an address")}}, []op{{key: "connection_creation_rate", value: 1}}, "not an address is not a valid IP or resolvable host."},
		{"user key on ip", []comp{{"ip", strp("1.2.3.4")}}, []op{{key: "producer_byte_rate", value: 1}}, "Invalid configuration key producer_byte_rate"},
		{"ip key on user", []comp{{"user", strp("u")}}, []op{{key: "connection_creation_rate", value: 1}}, "Invalid configuration key connection_creation_rate"},
		{"unknown key", []comp{{"client-id", strp("c")}}, []op{{key: "fetch_rate", value: 1}}, "Invalid configuration key fetch_rate"},
		{"zero", []comp{{"user", strp("u")}}, []op{{key: "request_percentage", value: 0}}, "Quota request_percentage must be greater than 0"},
		{"negative", []comp{{"user", strp("u")}}, []op{{key: "producer_byte_rate", value: -5}}, "Quota producer_byte_rate must be greater than 0"},
		{"fraction of a long", []comp{{"user", strp("u")}}, []op{{key: "consumer_byte_rate", value: 1.5}}, "consumer_byte_rate cannot be a fractional value."},
		{"fraction of an int", []comp{{"ip", nil}}, []op{{key: "connection_creation_rate", value: 0.5}}, "connection_creation_rate cannot be a fractional value."},
		{"too large for an int", []comp{{"ip", nil}}, []op{{key: "connection_creation_rate", value: 1 << 31}}, "Proposed value for connection_creation_rate is too large for an INT."},
		{"too large for a long", []comp{{"user", nil}}, []op{{key: "producer_byte_rate", value: math.Inf(1)}}, "Proposed value for producer_byte_rate is too large for a LONG."},
		{"duplicate key", []comp{{"user", strp("u")}}, []op{{key: "producer_byte_rate", value: 1}, {key: "producer_byte_rate", remove: true}},
			"Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"},
		{"removal of an unknown key", []comp{{"user", strp("u")}}, []op{{key: "no_such_key", remove: true}}, ""},
		{"fraction of a double", []comp{{"user", strp("u")}}, []op{{key: "request_percentage", value: 0.25}}, ""},
		{"ip literal v6", []comp{{"ip", strp("::1")}}, []op{{key: "connection_creation_rate", value: 3}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.SetVersion(1)
			req.ValidateOnly = true
			entry := kmsg.NewAlterClientQuotasRequestEntry()
			for _, c := range tt.entity {
				e := kmsg.NewAlterClientQuotasRequestEntryEntity()
				e.Type, e.Name = c.typ, c.name
				entry.Entity = append(entry.Entity, e)
			}
			for _, o := range tt.ops {
				ro := kmsg.NewAlterClientQuotasRequestEntryOp()
				ro.Key, ro.Value, ro.Remove = o.key, o.value, o.remove
				entry.Ops = append(entry.Ops, ro)
			}
			req.Entries = append(req.Entries, entry)
			resp := c.do(req).(*kmsg.AlterClientQuotasResponse)
			if len(resp.Entries) != 1 {
				t.Fatalf("%d entries, want 1", len(resp.Entries))
			}
			got := resp.Entries[0]
			if tt.msg == "" {
				wantCode(t, tt.name, got.ErrorCode, nil)
				return
			}
			wantCode(t, tt.name, got.ErrorCode, kerr.InvalidRequest)
			if got.ErrorMessage == nil || *got.ErrorMessage != tt.msg {
				t.Fatalf("message %v, want %q", got.ErrorMessage, tt.msg)
			}
		})
	}
	// Nothing above was stored (validate_only), nor would be on refusal.
	d := kmsg.NewPtrDescribeClientQuotasRequest()
	if resp := c.do(d).(*kmsg.DescribeClientQuotasResponse); resp.ErrorCode != 0 || len(resp.Entries) != 0 {
		t.Fatalf("stored after validate_only: %+v", resp)
	}
}

// TestAlterClientQuotasDuplicateEntity: as in Kafka, a second entry for an
// entity is refused and its answer replaces the first's, yet the first
// entry's changes are made.
func TestAlterClientQuotasDuplicateEntity(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := startBroker(t, Config{})
	adm, _ := newAdmin(t, b.Addr())
	user, client := strp("user"), strp("client-id")
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: quotaEnt(user, strp("u"), client, strp("c")), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10}}},
		{Entity: quotaEnt(user, strp("v")), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 20}}},
		// The same entity, components in the other order.
		{Entity: quotaEnt(client, strp("c"), user, strp("u")), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 30}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !errors.Is(res[0].Err, kerr.InvalidRequest) || res[1].Err != nil {
		t.Fatalf("results %+v, want the duplicate refused and the other accepted", res)
	}
	got, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"{user=u, client-id=c}: producer_byte_rate=10", "{user=v}: producer_byte_rate=20"}
	if g := describedQuotas(got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("described %v, want %v", g, want)
	}
}

// TestDescribeClientQuotasBadFilters: a bad filter fails the request with
// a top-level error and null entries, as Kafka's getErrorResponse.
func TestDescribeClientQuotasBadFilters(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	comp := func(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
		rc := kmsg.NewDescribeClientQuotasRequestComponent()
		rc.EntityType, rc.MatchType, rc.Match = typ, match, name
		return rc
	}
	tests := []struct {
		name  string
		comps []kmsg.DescribeClientQuotasRequestComponent
		want  *kerr.Error
		msg   string
	}{
		{"empty type", []kmsg.DescribeClientQuotasRequestComponent{comp("", 0, strp("x"))}, kerr.InvalidRequest, "Invalid empty entity type."},
		{"repeated type", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 1, nil)}, kerr.InvalidRequest,
			"Entity type user cannot appear more than once in the filter."},
		{"unknown type", []kmsg.DescribeClientQuotasRequestComponent{comp("group", 2, nil)}, kerr.UnsupportedVersion, "Unsupported entity type group"},
		{"exact without name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}, kerr.InvalidRequest,
			"Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{"default with name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, strp("a"))}, kerr.InvalidRequest,
			"Request specified MATCH_TYPE_DEFAULT, but also specified a match string."},
		{"specified with name", []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, strp("a"))}, kerr.InvalidRequest,
			"Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."},
		{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 9, nil)}, kerr.InvalidRequest, "Unknown match type 9"},
		{"ip with client-id", []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil), comp("client-id", 1, nil)}, kerr.InvalidRequest,
			"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
	}
	for _, tt := range tests {
		for v := int16(0); v <= 1; v++ {
			t.Run(fmt.Sprintf("%s v%d", tt.name, v), func(t *testing.T) {
				req := kmsg.NewPtrDescribeClientQuotasRequest()
				req.SetVersion(v)
				req.Components = tt.comps
				resp := c.do(req).(*kmsg.DescribeClientQuotasResponse)
				wantCode(t, tt.name, resp.ErrorCode, tt.want)
				if resp.ErrorMessage == nil || *resp.ErrorMessage != tt.msg {
					t.Fatalf("message %v, want %q", resp.ErrorMessage, tt.msg)
				}
				if resp.Entries != nil {
					t.Fatalf("entries %+v, want null", resp.Entries)
				}
			})
		}
	}
}

package broker

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestQuotaFilterMatches checks each match type with and without strict
// against the entities Kafka's ClientQuotasImageTest style would use.
func TestQuotaFilterMatches(t *testing.T) {
	alice := quotaName{present: true, name: "alice"}
	def := quotaName{present: true, isDefault: true}
	app := quotaName{present: true, name: "app"}
	entities := map[string]quotaEntity{
		"user=alice":            {user: alice},
		"user=default":          {user: def},
		"user=alice,client=app": {user: alice, clientID: app},
		"client=default":        {clientID: def},
		"ip=default":            {ip: def},
	}
	alicePtr := "alice"
	tests := []struct {
		name   string
		filter quotaFilter
		want   []string
	}{
		{"everything", quotaFilter{}, []string{"client=default", "ip=default", "user=alice", "user=alice,client=app", "user=default"}},
		{"everything, strict", quotaFilter{strict: true}, nil},
		{"exact user", quotaFilter{exact: map[string]*string{quotaUser: &alicePtr}}, []string{"user=alice", "user=alice,client=app"}},
		{"exact user, strict", quotaFilter{exact: map[string]*string{quotaUser: &alicePtr}, strict: true}, []string{"user=alice"}},
		{"default user", quotaFilter{exact: map[string]*string{quotaUser: nil}}, []string{"user=default"}},
		{"any client-id", quotaFilter{specified: map[string]bool{quotaClientID: true}}, []string{"client=default", "user=alice,client=app"}},
		{"any client-id, strict", quotaFilter{specified: map[string]bool{quotaClientID: true}, strict: true}, []string{"client=default"}},
		{"any ip", quotaFilter{specified: map[string]bool{quotaIP: true}}, []string{"ip=default"}},
	}
	for _, tt := range tests {
		var got []string
		for _, name := range []string{"client=default", "ip=default", "user=alice", "user=alice,client=app", "user=default"} {
			if tt.filter.matches(entities[name]) {
				got = append(got, name)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzQuotaRecords feeds arbitrary JSON to the loader of the persisted
// quotas (the client_quotas of gregor-topics.json). Invariants: it never
// panics; what it accepts is saved and loaded back unchanged (NaN compared
// as NaN).
func FuzzQuotaRecords(f *testing.F) {
	f.Add(`[{"entity":{"user":"alice","client-id":null},"values":{"producer_byte_rate":"1024","request_percentage":"NaN"}}]`)
	f.Add(`[{"entity":{"ip":null},"values":{"connection_creation_rate":"+Inf"}}]`)
	f.Add(`[{"entity":{"group":"g"},"values":{}}]`)
	f.Add(`[{"entity":{},"values":{"x":"1e400"}}]`)
	f.Fuzz(func(t *testing.T, doc string) {
		var recs []quotaRecord
		if json.Unmarshal([]byte(doc), &recs) != nil {
			return
		}
		quotas, err := loadQuotaRecords(recs)
		if err != nil {
			return
		}
		again, err := loadQuotaRecords(quotaRecords(quotas))
		if err != nil {
			t.Fatalf("reloading what was saved: %v", err)
		}
		if len(again) != len(quotas) {
			t.Fatalf("%d entities after a round trip, want %d", len(again), len(quotas))
		}
		for e, values := range quotas {
			got := again[e]
			if len(got) != len(values) {
				t.Fatalf("%v: %v after a round trip, want %v", e, got, values)
			}
			for k, v := range values {
				if g, ok := got[k]; !ok || (g != v && !(math.IsNaN(g) && math.IsNaN(v))) {
					t.Fatalf("%v %s: %v after a round trip, want %v", e, k, g, v)
				}
			}
		}
	})
}

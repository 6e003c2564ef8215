package quota

import (
	"encoding/json"
	"math"
	"testing"
)

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
		var recs []Record
		if json.Unmarshal([]byte(doc), &recs) != nil {
			return
		}
		quotas, err := LoadRecords(recs)
		if err != nil {
			return
		}
		again, err := LoadRecords(Records(quotas))
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

// TestEqualComparesBitForBit: an image whose quotas did not change
// (a NaN quota included) does not refresh the enforcement; any change does.
func TestEqualComparesBitForBit(t *testing.T) {
	app := Entity{ClientID: Name{Present: true, Name: "app"}}
	def := Entity{User: Name{Present: true, Default: true}}
	base := map[Entity]map[string]float64{app: {"producer_byte_rate": 1024, "request_percentage": math.NaN()}}
	tests := []struct {
		name  string
		other map[Entity]map[string]float64
		same  bool
	}{
		{"equal, NaN included", map[Entity]map[string]float64{app: {"producer_byte_rate": 1024, "request_percentage": math.NaN()}}, true},
		{"a value changed", map[Entity]map[string]float64{app: {"producer_byte_rate": 1025, "request_percentage": math.NaN()}}, false},
		{"a key removed", map[Entity]map[string]float64{app: {"producer_byte_rate": 1024}}, false},
		{"another entity", map[Entity]map[string]float64{def: {"producer_byte_rate": 1024, "request_percentage": math.NaN()}}, false},
		{"none", map[Entity]map[string]float64{}, false},
	}
	for _, tt := range tests {
		if got := Equal(base, tt.other); got != tt.same {
			t.Errorf("%s: Equal = %v", tt.name, got)
		}
	}
	if !Equal(nil, map[Entity]map[string]float64{}) {
		t.Error("no quotas differ from an empty map")
	}
}

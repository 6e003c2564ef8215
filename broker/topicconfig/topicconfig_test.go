package topicconfig

import (
	"slices"
	"strings"
	"testing"
)

// TestDefsSortedAndLookedUp: the table is sorted by name, every entry is
// found by Lookup, and its default passes its own validation.
func TestDefsSortedAndLookedUp(t *testing.T) {
	if !slices.IsSortedFunc(Defs(), func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("the table is not sorted by name")
	}
	for _, d := range Defs() {
		if Lookup(d.Name) == nil {
			t.Errorf("%s: not found", d.Name)
		}
		if v, err := Lookup(d.Name).Validate(d.Default); err != nil || v != d.Default {
			t.Errorf("%s: default %q validates to %q, %v", d.Name, d.Default, v, err)
		}
	}
	if Lookup("no.such.config") != nil {
		t.Error("an unknown name is found")
	}
}

// TestResolveTakesTopicOverBrokerOverDefault checks each config's value
// and source, and that Value agrees with Resolve.
func TestResolveTakesTopicOverBrokerOverDefault(t *testing.T) {
	c := Configs{"retention.ms": "1000", "segment.bytes": "2097152"}
	brokerDefaults := map[string]string{"retention.ms": "5000", "max.message.bytes": "300"}
	want := map[string]struct {
		value  string
		source int8
	}{
		"retention.ms":      {"1000", SourceDynamicTopic},
		"segment.bytes":     {"2097152", SourceDynamicTopic},
		"max.message.bytes": {"300", SourceStaticBroker},
		"cleanup.policy":    {"delete", SourceDefault},
	}
	resolved := c.Resolve(brokerDefaults)
	if len(resolved) != len(Defs()) {
		t.Fatalf("%d configs resolved, want %d", len(resolved), len(Defs()))
	}
	for _, rc := range resolved {
		if v := c.Value(rc.Def.Name, brokerDefaults); v != rc.Value {
			t.Errorf("%s: Value %q, Resolve %q", rc.Def.Name, v, rc.Value)
		}
		if w, ok := want[rc.Def.Name]; ok && (rc.Value != w.value || rc.Source != w.source) {
			t.Errorf("%s: %q source %d, want %q source %d", rc.Def.Name, rc.Value, rc.Source, w.value, w.source)
		}
	}
}

// TestValidateNormalizesAndRefuses checks a set as CreateTopics receives
// it: values are trimmed, and an unknown name, a null value or a bad
// value is refused with its message.
func TestValidateNormalizesAndRefuses(t *testing.T) {
	s := func(v string) *string { return &v }
	got, err := Validate(map[string]*string{"retention.ms": s(" 1000 "), "preallocate": s("TRUE")})
	if err != nil || got["retention.ms"] != "1000" || got["preallocate"] != "true" {
		t.Fatalf("Validate = %v, %v", got, err)
	}
	for _, tt := range []struct {
		in  map[string]*string
		err string
	}{
		{map[string]*string{"no.such.config": s("1")}, "Unknown topic config name: no.such.config"},
		{map[string]*string{"retention.ms": nil}, "Null value not supported for topic configs: retention.ms"},
		{map[string]*string{"segment.bytes": s("10")}, "invalid value 10 for configuration segment.bytes: value must be at least 1048576"},
		{map[string]*string{"cleanup.policy": s("delete,tiered")}, "invalid value delete,tiered for configuration cleanup.policy: Gregor supports delete, compact"},
		{map[string]*string{LeaderThrottledReplicas: s("x")}, "Invalid value [x] for configuration " + LeaderThrottledReplicas + ": "},
	} {
		_, err := Validate(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
			t.Errorf("%v: error %v, want %q", tt.in, err, tt.err)
		}
	}
}

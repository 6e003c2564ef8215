package topicconfig

import (
	"strconv"
	"strings"
	"testing"
)

func TestThrottledReplicaLists(t *testing.T) {
	const name = LeaderThrottledReplicas
	msg := func(list string) string {
		return "Invalid value " + list + " for configuration " + name + ": " + name +
			" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
	}
	tests := []struct {
		value    string
		err      string
		all      bool
		replicas []replicaKey
	}{
		{value: ""},
		{value: "  "},
		{value: "*", all: true},
		{value: " * ", all: true},
		{value: "*,", all: true}, // Kafka joins the items: "*"
		{value: "0:1,1:2", replicas: []replicaKey{{0, 1}, {1, 2}}},
		{value: "0:1 , 1:2", replicas: []replicaKey{{0, 1}, {1, 2}}},
		{value: "0:1,", replicas: []replicaKey{{0, 1}}},
		{value: "0:1,,3:4", replicas: []replicaKey{{0, 1}, {3, 4}}},
		{value: "99999999999:1,2:3", replicas: []replicaKey{{2, 3}}}, // valid, names no replica
		{value: "x", err: msg("[x]")},
		{value: "0:1,x", err: msg("[0:1, x]")},
		{value: "0:1 ,  1:a", err: msg("[0:1, 1:a]")},
		{value: "-1:2", err: msg("[-1:2]")},
		{value: "0:1:2", err: msg("[0:1:2]")},
		{value: "*,0:1", err: msg("[*, 0:1]")},
		{value: "0", err: msg("[0]")},
	}
	for _, tt := range tests {
		err := validateThrottledReplicas(name, tt.value)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.value, err)
			continue
		}
		r := ParseThrottledReplicas(tt.value)
		if tt.all {
			if !r.Has(5, 7) {
				t.Errorf("%q does not throttle every replica", tt.value)
			}
			continue
		}
		if len(tt.replicas) == 0 {
			if r != nil {
				t.Errorf("%q parsed to %+v, want nil", tt.value, r)
			}
			continue
		}
		if len(r.replicas) != len(tt.replicas) {
			t.Errorf("%q parsed to %v, want %v", tt.value, r.replicas, tt.replicas)
		}
		for _, k := range tt.replicas {
			if !r.Has(k.partition, k.broker) {
				t.Errorf("%q does not name %d:%d", tt.value, k.partition, k.broker)
			}
			if r.Has(k.broker, k.partition+100) {
				t.Errorf("%q names %d:%d", tt.value, k.broker, k.partition+100)
			}
		}
	}
	var none *ThrottledReplicas
	if none.Has(0, 0) {
		t.Fatal("a nil list throttles")
	}
}

// FuzzThrottledReplicaList checks the throttled-replica list parser on any
// value a client may send. Invariants: validation and parsing never panic;
// a value validation accepts parses; a parsed list names exactly entries
// of the value (every replica when "*"); a refusal carries Kafka's message.
func FuzzThrottledReplicaList(f *testing.F) {
	for _, s := range []string{"", "*", "0:1,1:2", " 0:1 , 1:2 ", "*,", "0:1,,3:4", "x", "0:1:2", "99999999999:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		err := validateThrottledReplicas(LeaderThrottledReplicas, value)
		if err != nil {
			if !strings.Contains(err.Error(), "must be the literal '*' or a list of replicas") {
				t.Fatalf("%q: unexpected message %q", value, err)
			}
			return
		}
		r := ParseThrottledReplicas(value)
		if r == nil || r.all {
			return
		}
		for k := range r.replicas {
			entry := strconv.Itoa(int(k.partition)) + ":" + strconv.Itoa(int(k.broker))
			found := false
			for _, it := range listItems(value) {
				p, b, _ := strings.Cut(it, ":")
				pn, _ := strconv.ParseInt(p, 10, 64)
				bn, _ := strconv.ParseInt(b, 10, 64)
				if strconv.Itoa(int(pn))+":"+strconv.Itoa(int(bn)) == entry {
					found = true
				}
			}
			if !found {
				t.Fatalf("%q parsed to %s, which it does not list", value, entry)
			}
		}
	})
}

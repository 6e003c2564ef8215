package broker

import (
	"reflect"
	"testing"

	"github.com/gregor-broker/gregor/broker/quota"
)

// TestQuotaFilterMatches checks each match type with and without strict
// against the entities Kafka's ClientQuotasImageTest style would use.
func TestQuotaFilterMatches(t *testing.T) {
	t.Parallel()
	alice := quota.Name{Present: true, Name: "alice"}
	def := quota.Name{Present: true, Default: true}
	app := quota.Name{Present: true, Name: "app"}
	entities := map[string]quota.Entity{
		"user=alice":            {User: alice},
		"user=default":          {User: def},
		"user=alice,client=app": {User: alice, ClientID: app},
		"client=default":        {ClientID: def},
		"ip=default":            {IP: def},
	}
	alicePtr := "alice"
	tests := []struct {
		name   string
		filter quotaFilter
		want   []string
	}{
		{"everything", quotaFilter{}, []string{"client=default", "ip=default", "user=alice", "user=alice,client=app", "user=default"}},
		{"everything, strict", quotaFilter{strict: true}, nil},
		{"exact user", quotaFilter{exact: map[string]*string{quota.EntityUser: &alicePtr}}, []string{"user=alice", "user=alice,client=app"}},
		{"exact user, strict", quotaFilter{exact: map[string]*string{quota.EntityUser: &alicePtr}, strict: true}, []string{"user=alice"}},
		{"default user", quotaFilter{exact: map[string]*string{quota.EntityUser: nil}}, []string{"user=default"}},
		{"any client-id", quotaFilter{specified: map[string]bool{quota.EntityClientID: true}}, []string{"client=default", "user=alice,client=app"}},
		{"any client-id, strict", quotaFilter{specified: map[string]bool{quota.EntityClientID: true}, strict: true}, []string{"client=default"}},
		{"any ip", quotaFilter{specified: map[string]bool{quota.EntityIP: true}}, []string{"ip=default"}},
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

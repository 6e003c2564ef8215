package controller

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

func brokers(racks ...string) []PlacementBroker {
	var out []PlacementBroker
	for i, r := range racks {
		out = append(out, PlacementBroker{ID: int32(i + 1), Rack: r})
	}
	return out
}

func TestPlaceSpreadsLeadersAndReplicas(t *testing.T) {
	cases := []struct {
		name       string
		brokers    []PlacementBroker
		partitions int
		rf         int
	}{
		{"one broker", brokers(""), 4, 1},
		{"three brokers rf3", brokers("", "", ""), 6, 3},
		{"five brokers rf2", brokers("", "", "", "", ""), 10, 2},
		{"six brokers rf3 many partitions", brokers("", "", "", "", "", ""), 60, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Place(tc.brokers, tc.partitions, tc.rf, 0, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			leaders := map[int32]int{}
			replicas := map[int32]int{}
			for _, r := range got {
				if len(r) != tc.rf {
					t.Fatalf("replicas %v, want %d", r, tc.rf)
				}
				leaders[r[0]]++
				for _, b := range r {
					replicas[b]++
				}
			}
			n := len(tc.brokers)
			if tc.partitions%n == 0 {
				for _, b := range tc.brokers {
					if leaders[b.ID] != tc.partitions/n {
						t.Errorf("broker %d leads %d partitions, want %d (%v)", b.ID, leaders[b.ID], tc.partitions/n, got)
					}
					if replicas[b.ID] != tc.partitions*tc.rf/n {
						t.Errorf("broker %d holds %d replicas, want %d", b.ID, replicas[b.ID], tc.partitions*tc.rf/n)
					}
				}
			}
		})
	}
}

func TestPlaceIsRackAware(t *testing.T) {
	bs := brokers("a", "a", "b", "b", "c", "c")
	rack := map[int32]string{}
	for _, b := range bs {
		rack[b.ID] = b.Rack
	}
	got, err := Place(bs, 12, 3, 0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	for pid, r := range got {
		seen := map[string]bool{}
		for _, b := range r {
			if seen[rack[b]] {
				t.Fatalf("partition %d: replicas %v put two on rack %s", pid, r, rack[b])
			}
			seen[rack[b]] = true
		}
	}
}

func TestPlaceErrors(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		name    string
		brokers []PlacementBroker
		n, rf   int
		want    *kerr.Error
	}{
		{"no brokers", nil, 1, 1, kerr.InvalidReplicationFactor},
		{"rf above brokers", brokers("", ""), 1, 3, kerr.InvalidReplicationFactor},
		{"zero rf", brokers(""), 1, 0, kerr.InvalidReplicationFactor},
		{"zero partitions", brokers(""), 0, 1, kerr.InvalidPartitions},
	}
	for _, tc := range cases {
		if _, err := Place(tc.brokers, tc.n, tc.rf, 0, rnd); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want.Message)
		}
	}
}

// TestPlaceProperties: for any brokers, racks, partition count and
// replication factor up to the broker count, every partition gets rf
// distinct registered brokers, spread over min(rf, racks) racks, and the
// same random state gives the same placement.
func TestPlaceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 9).Draw(t, "brokers")
		var bs []PlacementBroker
		racks := map[int32]string{}
		rackSet := map[string]bool{}
		for i := range n {
			r := rapid.SampledFrom([]string{"", "a", "b", "c"}).Draw(t, "rack")
			id := int32(i*3 + 1)
			bs = append(bs, PlacementBroker{ID: id, Rack: r})
			racks[id] = r
			rackSet[r] = true
		}
		rf := rapid.IntRange(1, n).Draw(t, "rf")
		parts := rapid.IntRange(1, 30).Draw(t, "partitions")
		start := rapid.IntRange(0, 10).Draw(t, "start")
		seed := rapid.Uint64().Draw(t, "seed")
		got, err := Place(bs, parts, rf, start, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Place(bs, parts, rf, start, rand.New(rand.NewPCG(seed, 0)))
		if len(got) != parts {
			t.Fatalf("%d partitions placed, want %d", len(got), parts)
		}
		anyRack := len(rackSet) > 1 || !rackSet[""]
		for i, r := range got {
			if !slices.Equal(r, again[i]) {
				t.Fatal("placement is not deterministic")
			}
			if len(r) != rf {
				t.Fatalf("partition %d: %v", i, r)
			}
			used := map[string]bool{}
			for j, b := range r {
				if _, ok := racks[b]; !ok || slices.Contains(r[:j], b) {
					t.Fatalf("partition %d: bad replicas %v", i, r)
				}
				used[racks[b]] = true
			}
			if anyRack && len(used) != min(rf, len(rackSet)) {
				t.Fatalf("partition %d: replicas %v span %d racks, want %d", i, r, len(used), min(rf, len(rackSet)))
			}
		}
	})
}

package share

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestJavaHashOrder: java.util.HashMap's iteration order over topic ids
// and partition numbers, as Kafka's own JVM iterated them. The fixture's
// colliding keys make tree bins in some cases, which javaHashOrder says
// it does not model (exact false); every other case must match.
func TestJavaHashOrder(t *testing.T) {
	lines := fixtureLines(t, "hashorder.txt")
	trees := 0
	for i, f := range lines {
		keys := strings.Split(f[1], ",")
		seen := map[string]bool{}
		var hashes []int32
		var first []int
		for j, k := range keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			first = append(first, j)
			switch f[0] {
			case "uuid":
				var id [16]byte
				copy(id[:], unhex(t, k))
				hashes = append(hashes, javaUUIDHash(id))
			case "int":
				hashes = append(hashes, atoi[int32](t, k))
			}
		}
		order, exact := javaHashOrder(hashes)
		if !exact {
			trees++
			continue
		}
		var got []string
		for _, x := range order {
			got = append(got, strconv.Itoa(first[x]))
		}
		if want := strings.Split(f[2], ","); !slices.Equal(got, want) {
			t.Errorf("case %d (%s, %d keys): got %v, want %v", i, f[0], len(hashes), got, want)
		}
	}
	if trees > len(lines)/10 {
		t.Fatalf("%d of %d cases had tree bins", trees, len(lines))
	}
	t.Logf("%d cases, %d with tree bins not compared", len(lines), trees)
}

package share

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// modelCombine is the combiner's meaning, offset by offset: every offset
// at or after startOffset that some batch covers takes the state and
// count of the covering batch with the highest delivery count, then the
// highest state; runs of offsets with the same state and count are one
// batch. Batches must not end before they begin.
func modelCombine(soFar, newer []Batch, startOffset int64) []Batch {
	type cell struct {
		state int8
		count int16
	}
	cells := map[int64]cell{}
	lo, hi := int64(1<<62), int64(-1)
	for _, list := range [][]Batch{soFar, newer} {
		for _, b := range list {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if startOffset != -1 && o < startOffset {
					continue
				}
				c, ok := cells[o]
				if !ok || b.DeliveryCount > c.count || (b.DeliveryCount == c.count && b.DeliveryState > c.state) {
					cells[o] = cell{b.DeliveryState, b.DeliveryCount}
				}
				lo, hi = min(lo, o), max(hi, o)
			}
		}
	}
	var out []Batch
	for o := lo; o <= hi; o++ {
		c, ok := cells[o]
		if !ok {
			continue
		}
		if n := len(out); n > 0 && out[n-1].LastOffset == o-1 && out[n-1].DeliveryState == c.state && out[n-1].DeliveryCount == c.count {
			out[n-1].LastOffset = o
			continue
		}
		out = append(out, Batch{o, o, c.state, c.count})
	}
	return out
}

func randomBatches(r *rand.Rand, max int, span int64) []Batch {
	n := r.IntN(max + 1)
	out := make([]Batch, 0, n)
	states := []int8{0, 2, 4}
	for range n {
		first := r.Int64N(span)
		out = append(out, Batch{first, first + r.Int64N(span/3+1), states[r.IntN(3)], int16(r.IntN(4))})
	}
	return out
}

// TestCombineModel checks Combine against modelCombine on random batches.
// With batches that begin before they end, Kafka's sweep and shortcuts
// (none or one batch left after pruning: returned as they are) all agree
// with the model.
func TestCombineModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 10000 {
		a, b := randomBatches(r, 6, 80), randomBatches(r, 6, 80)
		start := int64(-1)
		if r.IntN(3) > 0 {
			start = r.Int64N(60)
		}
		got, err := Combine(a, b, start)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want := modelCombine(a, b, start)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %v + %v from %d:\n got %v\nwant %v", i, a, b, start, got, want)
		}
	}
}

// TestCombineCases: hand-picked cases of Kafka's combiner.
func TestCombineCases(t *testing.T) {
	for _, tc := range []struct {
		soFar, newer []Batch
		start        int64
		want         []Batch
		fails        bool
	}{
		{nil, nil, 0, []Batch{}, false},
		// A single batch is kept as is, even one that ends before it begins.
		{nil, []Batch{{9, 3, 0, 1}}, -1, []Batch{{9, 3, 0, 1}}, false},
		// Pruned below the start offset; a batch straddling it is cut.
		{[]Batch{{0, 4, 2, 1}, {5, 9, 0, 1}}, nil, 7, []Batch{{7, 9, 0, 1}}, false},
		{[]Batch{{0, 4, 2, 1}}, []Batch{{10, 12, 0, 1}}, 20, []Batch{}, false},
		// The higher delivery count wins, whichever came first.
		{[]Batch{{0, 9, 0, 3}}, []Batch{{2, 4, 2, 1}}, -1, []Batch{{0, 9, 0, 3}}, false},
		{[]Batch{{0, 9, 0, 1}}, []Batch{{2, 4, 0, 2}}, -1, []Batch{{0, 1, 0, 1}, {2, 4, 0, 2}, {5, 9, 0, 1}}, false},
		// At equal counts the higher state wins: acknowledged over available.
		{[]Batch{{0, 9, 2, 1}}, []Batch{{0, 9, 0, 1}}, -1, []Batch{{0, 9, 2, 1}}, false},
		// Adjacent equal batches coalesce; a gap stays.
		{[]Batch{{0, 4, 0, 1}, {5, 9, 0, 1}, {11, 12, 0, 1}}, nil, -1, []Batch{{0, 9, 0, 1}, {11, 12, 0, 1}}, false},
		// An ending before a beginning among two or more: Kafka throws.
		{[]Batch{{0, 20, 2, 1}}, []Batch{{10, 5, 0, 1}}, -1, nil, true},
	} {
		t.Run(fmt.Sprint(tc.soFar, tc.newer, tc.start), func(t *testing.T) {
			got, err := Combine(tc.soFar, tc.newer, tc.start)
			if tc.fails {
				if err == nil {
					t.Fatalf("got %v, want the failure", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

package main

import (
	"math"
	"slices"
	"time"
)

// median returns the middle of xs (the mean of the two middle values for an
// even count), or NaN for no values. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is gregor/kafka, or NaN when either side is missing or kafka is 0.
func ratio(gregor, kafka float64) float64 {
	if math.IsNaN(gregor) || math.IsNaN(kafka) || kafka == 0 {
		return math.NaN()
	}
	return gregor / kafka
}

// percentile returns the value at quantile q (0 < q <= 1) of sorted by the
// nearest-rank method: the smallest value with at least q of the samples at
// or below it. sorted must be in ascending order; zero for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(rank, 1)
	rank = min(rank, len(sorted))
	return sorted[rank-1]
}

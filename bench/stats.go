package main

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// summary is the median, minimum and maximum of a set of values.
type summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize returns the summary of xs, ignoring NaNs. An empty set gives
// N == 0 and NaN statistics.
func summarize(xs []float64) summary {
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	sort.Float64s(vals)
	return summary{N: len(vals), Median: median(vals), Min: vals[0], Max: vals[len(vals)-1]}
}

// median returns the median of sorted values (the mean of the two middle
// ones for an even count); NaN for none.
func median(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
}

// ratio returns a/b, or NaN when either is unknown or b is zero.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// topN sorts s by weight, heaviest first, ties in the order tie gives,
// and returns its first n.
func topN[T any, W cmp.Ordered](s []T, n int, weight func(T) W, tie func(a, b T) int) []T {
	slices.SortFunc(s, func(a, b T) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), tie(a, b))
	})
	return s[:min(n, len(s))]
}

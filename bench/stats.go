package bench

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Summary describes one latency sample in milliseconds, with vllm bench serve's statistics: the
// mean, the population standard deviation (numpy's std) and percentiles by numpy's default
// linear interpolation.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// Percentiles returns the reported percentiles, in Summary's order.
func Percentiles() []float64 { return []float64{50, 90, 95, 99, 99.9} }

// Values returns the percentiles in the order of Percentiles.
func (s Summary) Values() []float64 { return []float64{s.P50, s.P90, s.P95, s.P99, s.P999} }

// summarize sorts xs in place and describes it; an empty sample is the zero Summary.
func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	sort.Float64s(xs)
	mean, std := stat.PopMeanStdDev(xs, nil)
	return Summary{
		N: len(xs), Mean: mean, Std: std, Min: xs[0], Max: xs[len(xs)-1],
		P50: Quantile(xs, 0.50), P90: Quantile(xs, 0.90), P95: Quantile(xs, 0.95),
		P99: Quantile(xs, 0.99), P999: Quantile(xs, 0.999),
	}
}

// Quantile is numpy's default percentile (Hyndman and Fan's type 7: the order statistic at
// position h = (n-1)p + 1, interpolated linearly), the definition vllm bench serve reports. It is
// read through gonum's stat.Quantile with stat.LinInterp, which places the order statistic
// x[k] (1-based) at cumulative weight k and interpolates between them: asking it for
// p' = h/n lands exactly on numpy's position. sorted must be sorted and non-empty; p is in [0, 1].
func Quantile(sorted []float64, p float64) float64 {
	n := float64(len(sorted))
	h := float64(p*(n-1)) + 1 // explicit rounding: no fused multiply-add, the same bits everywhere
	return stat.Quantile(math.Min(h/n, 1), stat.LinInterp, sorted, nil)
}

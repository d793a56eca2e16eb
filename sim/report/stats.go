package report

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/anvil-llm/anvil/engine"
)

// Quantiles summarize one latency sample, in seconds.
type Quantiles struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
}

// sample is a latency sample with optional weights (ITL weighs each request's mean gap by its
// number of gaps).
type sample struct {
	x, w []float64
}

func (s *sample) add(v float64)            { s.x = append(s.x, v) }
func (s *sample) addWeighted(v, w float64) { s.x, s.w = append(s.x, v), append(s.w, w) }

// quantiles sorts the sample and reads gonum's empirical quantiles.
func (s *sample) quantiles() Quantiles {
	if len(s.x) == 0 {
		return Quantiles{}
	}
	if s.w == nil {
		sort.Float64s(s.x)
	} else {
		sort.Sort(byValue{s.x, s.w})
	}
	q := func(p float64) float64 { return stat.Quantile(p, stat.Empirical, s.x, s.w) }
	return Quantiles{
		N: len(s.x), Mean: stat.Mean(s.x, s.w),
		P50: q(0.50), P90: q(0.90), P99: q(0.99), P999: q(0.999),
	}
}

type byValue struct{ x, w []float64 }

func (b byValue) Len() int           { return len(b.x) }
func (b byValue) Less(i, j int) bool { return b.x[i] < b.x[j] || b.x[i] == b.x[j] && b.w[i] < b.w[j] }
func (b byValue) Swap(i, j int) {
	b.x[i], b.x[j] = b.x[j], b.x[i]
	b.w[i], b.w[j] = b.w[j], b.w[i]
}

// jain is Jain's fairness index (Σx)²/(n·Σx²): 1 when every x is equal, 1/n when one takes all.
// It is 0 when there is nothing to share.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += float64(x * x) // explicit rounding: no FMA fusion, the same bits on every architecture
	}
	if sq == 0 || len(xs) == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// queueTime reads the exact mean of a vLLM histogram: sum / count.
func queueTime(h engine.Histogram) QueueTime {
	if h.Count == 0 {
		return QueueTime{}
	}
	return QueueTime{N: int(min(h.Count, math.MaxInt32)), Mean: h.SumSeconds() / float64(h.Count)}
}

// mergeHist adds b into a (same bucket layout).
func mergeHist(a *engine.Histogram, b engine.Histogram) {
	if a.N == 0 {
		*a = b
		return
	}
	for i := 0; i < a.N; i++ {
		a.Cumulative[i] += b.Cumulative[i]
	}
	a.Count += b.Count
	a.Sum += b.Sum
}

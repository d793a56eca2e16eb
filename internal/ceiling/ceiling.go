package ceiling

import (
	"math"
	"strconv"
	"time"
)

// Defaults of a sweep's analysis.
const (
	DefaultKneeShare = 0.95
	DefaultTolerance = 0.05
)

// Point is one step of a sweep: the member held at Ceiling requests in flight. Rates are per second
// of the measured windows; latencies are milliseconds.
type Point struct {
	Ceiling    int     `json:"ceiling"`
	Throughput float64 `json:"output_tokens_per_s"`
	Requests   float64 `json:"requests_per_s"`
	Goodput    float64 `json:"goodput_requests_per_s"`
	TTFTP50    float64 `json:"ttft_p50_ms"`
	TTFTP99    float64 `json:"ttft_p99_ms"`
	ITLP50     float64 `json:"itl_p50_ms"`
	ITLP99     float64 `json:"itl_p99_ms"`
	// Windows is how many windows the step was held; Stable whether its last two agreed.
	Windows int  `json:"windows"`
	Stable  bool `json:"stable"`
	// Failed counts the step's requests that did not succeed (a real member's errors; the
	// engine model has none).
	Failed int `json:"failed,omitempty"`
}

// Stable reports whether two consecutive windows' throughputs differ by less than tol of the larger
// one. Two idle windows (both zero) are stable; a non-finite value never is.
func Stable(prev, cur, tol float64) bool {
	if !finite(prev) || !finite(cur) || prev < 0 || cur < 0 {
		return false
	}
	hi := max(prev, cur)
	if hi == 0 {
		return true
	}
	return math.Abs(cur-prev) < tol*hi
}

// Held reports whether a step measured in windows (throughput per window, in order, the warm-up
// window excluded) may end: its last two windows are Stable.
func Held(windows []float64, tol float64) bool {
	n := len(windows)
	return n >= 2 && Stable(windows[n-2], windows[n-1], tol)
}

// Knee returns the smallest ceiling of points (ascending by ceiling) whose throughput is at least
// share of the sweep's largest; false when there is no point or no throughput at all.
func Knee(points []Point, share float64) (int, bool) {
	best := 0.0
	for _, p := range points {
		if finite(p.Throughput) {
			best = max(best, p.Throughput)
		}
	}
	if best <= 0 {
		return 0, false
	}
	for _, p := range points {
		if finite(p.Throughput) && p.Throughput >= share*best {
			return p.Ceiling, true
		}
	}
	return 0, false // unreachable: the best point qualifies
}

// SLOLimit returns the largest ceiling of points (ascending) such that it and every smaller one
// meet slo, and whether the sweep broke the SLO at all (broken: a point failed it). It returns 0
// when the first point already fails.
func SLOLimit(points []Point, slo SLO) (limit int, broken bool) {
	for _, p := range points {
		if !slo.Met(p) {
			return limit, true
		}
		limit = p.Ceiling
	}
	return limit, false
}

// Reasons of a Recommendation: fixed words for reports.
const (
	ReasonKnee    = "the knee: past it added slots add little throughput and queue inside the engine"
	ReasonSLO     = "the largest ceiling whose TTFT and ITL p99 meet the SLO"
	ReasonNoSLO   = "no ceiling of the sweep meets the SLO, not even the smallest"
	ReasonNoPoint = "the sweep measured no throughput"
)

// Recommendation is the max_concurrency a sweep implies and why.
type Recommendation struct {
	MaxConcurrency int    `json:"max_concurrency"` // 0: none
	Knee           int    `json:"knee"`
	SLOLimit       int    `json:"slo_limit"`  // largest ceiling meeting the SLO (every one when unset)
	SLOBroken      bool   `json:"slo_broken"` // some swept ceiling broke the SLO
	Reason         string `json:"reason"`
}

// Recommend is the smaller of the knee (at share of the best throughput) and the SLO limit.
func Recommend(points []Point, slo SLO, share float64) Recommendation {
	knee, ok := Knee(points, share)
	if !ok {
		return Recommendation{Reason: ReasonNoPoint}
	}
	limit, broken := SLOLimit(points, slo)
	r := Recommendation{Knee: knee, SLOLimit: limit, SLOBroken: broken}
	switch {
	case limit == 0:
		r.Reason = ReasonNoSLO
	case limit < knee:
		r.MaxConcurrency, r.Reason = limit, ReasonSLO
	default:
		r.MaxConcurrency, r.Reason = knee, ReasonKnee
	}
	return r
}

// Header names the columns of Cells.
func Header() []string {
	return []string{"ceiling", "tok/s", "req/s", "goodput/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms",
		"ITL p99 ms", "SLO", "windows"}
}

// Cells are a point's row of a table; slo decides the SLO column ("met", "broken", "-" when unset).
func (p Point) Cells(slo SLO) []string {
	verdict := "-"
	if slo.Set() {
		verdict = "broken"
		if slo.Met(p) {
			verdict = "met"
		}
	}
	win := strconv.Itoa(p.Windows)
	if !p.Stable {
		win += " (unstable)"
	}
	return []string{strconv.Itoa(p.Ceiling), f1(p.Throughput), f2(p.Requests), f2(p.Goodput), f2(p.TTFTP50),
		f2(p.TTFTP99), f2(p.ITLP50), f2(p.ITLP99), verdict, win}
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Steps are the ceilings of a sweep from 1 to bound: 1, step, 2·step, ... and bound itself, in
// ascending order without repeats; nil unless 1 <= step and 1 <= bound.
func Steps(step, bound int) []int {
	if step < 1 || bound < 1 {
		return nil
	}
	out := []int{1}
	for c := step; c < bound; c += step {
		if c > 1 {
			out = append(out, c)
		}
	}
	if bound > 1 {
		out = append(out, bound)
	}
	return out
}

// StepCount is len(Steps(step, bound)) without building the list, for bounding a sweep an outside
// file asks for.
func StepCount(step, bound int) int {
	switch {
	case step < 1 || bound < 1:
		return 0
	case bound == 1:
		return 1
	}
	between := (bound - 1) / step // multiples of step below bound
	if step == 1 {
		between-- // 1 itself is listed once
	}
	return 2 + between
}

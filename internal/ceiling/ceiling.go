package ceiling

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Defaults of a sweep's analysis.
const (
	DefaultKneeShare = 0.95
	DefaultTolerance = 0.05
)

// Point is one step of a sweep: the member held at Ceiling requests in flight. Rates are per second
// of the measured windows; latencies are milliseconds, over the requests that ended in the windows
// (Samples of them): TTFT of each, TPOT of each that had more than one output token. A latency of
// no sample is NaN (JSON null).
type Point struct {
	Ceiling    int     `json:"ceiling"`
	Throughput float64 `json:"output_tokens_per_s"`
	Requests   float64 `json:"requests_per_s"`
	Goodput    float64 `json:"goodput_requests_per_s"`
	Samples    int     `json:"samples"`
	TTFTP50    float64 `json:"ttft_p50_ms"`
	TTFTP99    float64 `json:"ttft_p99_ms"`
	TPOTP50    float64 `json:"tpot_p50_ms"`
	TPOTP99    float64 `json:"tpot_p99_ms"`
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
	limit, at := sloLimit(points, slo)
	return limit, at >= 0
}

// sloLimit is SLOLimit with the index of the first point breaking slo (-1: none).
func sloLimit(points []Point, slo SLO) (limit, at int) {
	for i, p := range points {
		if !slo.Met(p) {
			return limit, i
		}
		limit = p.Ceiling
	}
	return limit, -1
}

// Reasons of a Recommendation: fixed words for reports.
const (
	ReasonKnee    = "the knee: past it added slots add little throughput and queue inside the engine"
	ReasonSLO     = "the largest ceiling whose TTFT and TPOT p99 meet the SLO"
	ReasonFailed  = "the largest ceiling below the first step whose requests failed"
	ReasonNoSLO   = "no ceiling of the sweep meets the SLO, not even the smallest"
	ReasonNoPoint = "the sweep measured no throughput"
)

// Recommendation is the max_concurrency a sweep implies and why.
type Recommendation struct {
	MaxConcurrency int    `json:"max_concurrency"` // 0: none
	Knee           int    `json:"knee"`            // 0: not found
	SLOLimit       int    `json:"slo_limit"`       // largest ceiling meeting the SLO (every one when unset)
	SLOBroken      bool   `json:"slo_broken"`      // some swept ceiling broke the SLO
	FailedAt       int    `json:"failed_at,omitempty"`
	Reason         string `json:"reason"`
}

// Recommend is the smaller of the knee (at share of the best throughput) and the SLO limit, over
// the points below the first one whose requests failed (FailedAt; a failing member is no evidence
// of the SLO or of throughput). A sweep that ended early (at that failure, or with its first SLO
// break as its last point, as the real sweep stops) and whose best throughput is its last point
// has not seen the curve flatten: its knee is not found and the limit is recommended.
func Recommend(points []Point, slo SLO, share float64) Recommendation {
	var r Recommendation
	if i := slices.IndexFunc(points, func(p Point) bool { return p.Failed > 0 }); i >= 0 {
		r.FailedAt, points = points[i].Ceiling, points[:i]
	}
	knee, ok := Knee(points, share)
	if !ok {
		r.Reason = ReasonNoPoint
		return r
	}
	limit, at := sloLimit(points, slo)
	r.SLOLimit, r.SLOBroken = limit, at >= 0
	early := r.FailedAt > 0 || at == len(points)-1
	if !(early && bestIsLast(points)) {
		r.Knee = knee
	}
	capped := ReasonSLO
	if !r.SLOBroken {
		capped = ReasonFailed
	}
	switch {
	case limit == 0:
		r.Reason = ReasonNoSLO
	case r.Knee == 0 || limit < r.Knee:
		r.MaxConcurrency, r.Reason = limit, capped
	default:
		r.MaxConcurrency, r.Reason = r.Knee, ReasonKnee
	}
	return r
}

// bestIsLast reports whether the last point's throughput exceeds every earlier one's: the curve
// was still rising where the sweep ended.
func bestIsLast(points []Point) bool {
	last := points[len(points)-1].Throughput
	for _, p := range points[:len(points)-1] {
		if !(p.Throughput < last) && finite(p.Throughput) {
			return false
		}
	}
	return finite(last)
}

// Header names the columns of Cells.
func Header() []string {
	return []string{"ceiling", "tok/s", "req/s", "goodput/s", "samples", "TTFT p50 ms", "TTFT p99 ms",
		"TPOT p50 ms", "TPOT p99 ms", "SLO", "windows"}
}

// Cells are a point's row of a table; slo decides the SLO column ("met", "broken", "-" when unset,
// "failed" when a request failed); a latency of no sample is "-".
func (p Point) Cells(slo SLO) []string {
	verdict := "-"
	switch {
	case p.Failed > 0:
		verdict = "failed"
	case slo.Set() && slo.Met(p):
		verdict = "met"
	case slo.Set():
		verdict = "broken"
	}
	win := strconv.Itoa(p.Windows)
	if !p.Stable {
		win += " (unstable)"
	}
	return []string{strconv.Itoa(p.Ceiling), f1(p.Throughput), f2(p.Requests), f2(p.Goodput), strconv.Itoa(p.Samples),
		f2(p.TTFTP50), f2(p.TTFTP99), f2(p.TPOTP50), f2(p.TPOTP99), verdict, win}
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string {
	if !finite(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

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

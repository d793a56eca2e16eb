package ceiling

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// sweepGen draws a sweep: ascending distinct ceilings with any non-negative throughput and
// latencies, and an SLO that may set either target.
func sweepGen(t *rapid.T) ([]Point, SLO) {
	n := rapid.IntRange(0, 20).Draw(t, "points")
	var points []Point
	c := 0
	for range n {
		c += rapid.IntRange(1, 16).Draw(t, "gap")
		points = append(points, Point{Ceiling: c,
			Throughput: rapid.Float64Range(0, 1e5).Draw(t, "tput"),
			TTFTP99:    rapid.Float64Range(0, 1e4).Draw(t, "ttft"),
			TPOTP99:    rapid.Float64Range(0, 1e3).Draw(t, "tpot"),
			Failed:     rapid.IntRange(0, 1).Draw(t, "failed") * rapid.IntRange(0, 1).Draw(t, "failed too")})
	}
	slo := SLO{TTFT: time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "slo ttft")),
		TPOT: time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "slo tpot"))}
	return points, slo
}

// The recommendation is a swept ceiling (or none), never above the knee or the SLO limit; every
// ceiling up to it meets the SLO; the knee reaches the share of the best throughput and no smaller
// ceiling does.
func TestRecommendProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		points, slo := sweepGen(t)
		share := rapid.Float64Range(0.5, 1).Draw(t, "share")
		r := Recommend(points, slo, share)
		if r.MaxConcurrency == 0 {
			return
		}
		if r.Knee > 0 && r.MaxConcurrency > r.Knee || r.MaxConcurrency > r.SLOLimit ||
			r.FailedAt > 0 && r.MaxConcurrency >= r.FailedAt {
			t.Fatalf("recommended %d above knee %d or SLO limit %d", r.MaxConcurrency, r.Knee, r.SLOLimit)
		}
		if i := slices.IndexFunc(points, func(p Point) bool { return p.Failed > 0 }); i >= 0 {
			points = points[:i] // a failed step and those after it are no evidence
		}
		best := 0.0
		for _, p := range points {
			best = max(best, p.Throughput)
		}
		swept := false
		for _, p := range points {
			if p.Ceiling == r.MaxConcurrency {
				swept = true
			}
			if p.Ceiling <= r.MaxConcurrency && !slo.Met(p) {
				t.Fatalf("ceiling %d at or below the recommendation breaks the SLO", p.Ceiling)
			}
			if r.Knee == 0 {
				continue
			}
			if p.Ceiling < r.Knee && p.Throughput >= share*best {
				t.Fatalf("ceiling %d below the knee %d already reaches the share", p.Ceiling, r.Knee)
			}
			if p.Ceiling == r.Knee && p.Throughput < share*best {
				t.Fatalf("the knee %d does not reach the share", r.Knee)
			}
		}
		if !swept {
			t.Fatalf("recommended %d is not a swept ceiling", r.MaxConcurrency)
		}
	})
}

// Loosening the SLO never lowers the recommendation.
func TestRecommendMonotoneInTheSLO(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		points, slo := sweepGen(t)
		looser := SLO{TTFT: slo.TTFT * 2, TPOT: slo.TPOT * 2}
		a, b := Recommend(points, slo, DefaultKneeShare), Recommend(points, looser, DefaultKneeShare)
		if b.MaxConcurrency < a.MaxConcurrency {
			t.Fatalf("a looser SLO lowered the recommendation from %d to %d", a.MaxConcurrency, b.MaxConcurrency)
		}
	})
}

package ceiling

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur float64
		tol       float64
		want      bool
	}{
		{"equal", 100, 100, 0.05, true},
		{"4.9% apart", 100, 95.1, 0.05, true},
		{"exactly 5% of the larger is not less than 5%", 100, 95, 0.05, false},
		{"rising 6%", 94, 100, 0.05, false},
		{"both idle", 0, 0, 0.05, true},
		{"from idle", 0, 1, 0.05, false},
		{"NaN", math.NaN(), 100, 0.05, false},
		{"infinite", math.Inf(1), math.Inf(1), 0.05, false},
		{"negative", -1, -1, 0.05, false},
		{"a looser tolerance", 100, 85, 0.2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Stable(tc.prev, tc.cur, tc.tol))
		})
	}
}

func TestHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		windows []float64
		want    bool
	}{
		{"none", nil, false},
		{"one window is never enough", []float64{100}, false},
		{"two that agree", []float64{100, 101}, true},
		{"rising, then settled", []float64{50, 80, 99, 100}, true},
		{"settled, then disturbed", []float64{100, 100, 80}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Held(tc.windows, DefaultTolerance))
		})
	}
}

// curve is a member whose throughput grows by 100 tokens/s per slot up to sat slots, then stays;
// its TTFT p99 is 10 ms up to sat and grows by 50 ms per slot beyond; its TPOT p99 is 5 ms plus 1 ms
// per slot.
func curve(sat int, ceilings ...int) []Point {
	var out []Point
	for _, c := range ceilings {
		out = append(out, Point{Ceiling: c, Throughput: float64(100 * min(c, sat)), TTFTP99: 10 + 50*float64(max(c-sat, 0)),
			TPOTP99: 5 + float64(c)})
	}
	return out
}

func TestKnee(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points []Point
		share  float64
		want   int
		ok     bool
	}{
		{"saturates at 8", curve(8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.95, 8, true},
		{"95% of 40 slots is reached at 38", curve(40, 1, 10, 20, 30, 38, 39, 40, 50), 0.95, 38, true},
		{"share 1 is the saturation itself", curve(40, 1, 10, 20, 30, 38, 39, 40, 50), 1, 40, true},
		{"a coarse sweep rounds up to its next step", curve(12, 1, 8, 16, 24), 0.95, 16, true},
		{"never saturated: the bound", curve(100, 1, 2, 3), 0.95, 3, true},
		{"noise past the knee does not move it", []Point{{Ceiling: 1, Throughput: 10}, {Ceiling: 2, Throughput: 20},
			{Ceiling: 3, Throughput: 20.5}, {Ceiling: 4, Throughput: 19.8}}, 0.95, 2, true},
		{"no points", nil, 0.95, 0, false},
		{"no throughput", []Point{{Ceiling: 1}, {Ceiling: 2}}, 0.95, 0, false},
		{"a NaN point is ignored", []Point{{Ceiling: 1, Throughput: math.NaN()}, {Ceiling: 2, Throughput: 5}}, 0.95, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Knee(tc.points, tc.share)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSLOLimitAndRecommend(t *testing.T) {
	sweep := curve(8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for _, tc := range []struct {
		name   string
		points []Point
		slo    SLO
		want   Recommendation
	}{
		{"no SLO: the knee", sweep, SLO{},
			Recommendation{MaxConcurrency: 8, Knee: 8, SLOLimit: 10, Reason: ReasonKnee}},
		{"an SLO looser than the knee: still the knee", sweep, SLO{TTFT: 100 * time.Millisecond},
			Recommendation{MaxConcurrency: 8, Knee: 8, SLOLimit: 9, SLOBroken: true, Reason: ReasonKnee}},
		{"a tight TPOT target binds first", sweep, SLO{TPOT: 10 * time.Millisecond},
			Recommendation{MaxConcurrency: 5, Knee: 8, SLOLimit: 5, SLOBroken: true, Reason: ReasonSLO}},
		{"the target is inclusive", sweep, SLO{TPOT: 11 * time.Millisecond},
			Recommendation{MaxConcurrency: 6, Knee: 8, SLOLimit: 6, SLOBroken: true, Reason: ReasonSLO}},
		{"the first break ends the limit even if a later point meets it",
			[]Point{{Ceiling: 1, Throughput: 1, TTFTP99: 5}, {Ceiling: 2, Throughput: 2, TTFTP99: 50}, {Ceiling: 3, Throughput: 3, TTFTP99: 5}},
			SLO{TTFT: 10 * time.Millisecond}, Recommendation{MaxConcurrency: 1, Knee: 3, SLOLimit: 1, SLOBroken: true, Reason: ReasonSLO}},
		{"nothing meets the SLO", sweep, SLO{TTFT: time.Millisecond},
			Recommendation{Knee: 8, SLOBroken: true, Reason: ReasonNoSLO}},
		{"a sweep stopped at its break", curve(8, 1, 2, 3, 4, 5, 6, 7, 8, 9), SLO{TTFT: 20 * time.Millisecond},
			Recommendation{MaxConcurrency: 8, Knee: 8, SLOLimit: 8, SLOBroken: true, Reason: ReasonKnee}},
		{"no points", nil, SLO{}, Recommendation{Reason: ReasonNoPoint}},
		{"a step without samples does not meet the SLO",
			[]Point{{Ceiling: 1, Throughput: 1, TTFTP99: 5, TPOTP99: 1}, {Ceiling: 2, Throughput: 2, TTFTP99: math.NaN(), TPOTP99: math.NaN()}, {Ceiling: 3, Throughput: 2}},
			SLO{TTFT: 10 * time.Millisecond}, Recommendation{MaxConcurrency: 1, Knee: 2, SLOLimit: 1, SLOBroken: true, Reason: ReasonSLO}},
		{"a failed step caps the limit below it", withFailure(sweep, 6), SLO{},
			Recommendation{MaxConcurrency: 5, SLOLimit: 5, FailedAt: 6, Reason: ReasonFailed}},
		{"a failure past the knee leaves the knee", withFailure(sweep, 10), SLO{},
			Recommendation{MaxConcurrency: 8, Knee: 8, SLOLimit: 9, FailedAt: 10, Reason: ReasonKnee}},
		{"a failed first step: nothing", withFailure(sweep, 1), SLO{}, Recommendation{FailedAt: 1, Reason: ReasonNoPoint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Recommend(tc.points, tc.slo, DefaultKneeShare))
		})
	}
}

func withFailure(points []Point, at int) []Point {
	out := slices.Clone(points)
	out[slices.IndexFunc(out, func(p Point) bool { return p.Ceiling == at })].Failed = 1
	return out
}

// A sweep stopped at its first SLO break has not seen the curve flatten: the knee over the
// shortened sweep would be a false one. Throughput rising linearly to 64 with the SLO broken at 40
// recommends 39 for the SLO, whether the sweep ran on (the simulator) or stopped at 40 (the
// qualification).
func TestAStoppedSweepHasNoFalseKnee(t *testing.T) {
	var full []Point
	for c := 1; c <= 64; c++ {
		full = append(full, Point{Ceiling: c, Throughput: float64(100 * c), TTFTP99: 5, TPOTP99: float64(c)})
	}
	slo := SLO{TPOT: 39500 * time.Microsecond}
	for name, points := range map[string][]Point{"full": full, "stopped": full[:40]} {
		t.Run(name, func(t *testing.T) {
			r := Recommend(points, slo, DefaultKneeShare)
			assert.Equal(t, 39, r.MaxConcurrency)
			assert.Equal(t, ReasonSLO, r.Reason)
			assert.Equal(t, 39, r.SLOLimit)
			assert.True(t, r.SLOBroken)
		})
	}
	assert.Equal(t, 61, Recommend(full, slo, DefaultKneeShare).Knee, "the full sweep's knee")
	assert.Zero(t, Recommend(full[:40], slo, DefaultKneeShare).Knee, "the stopped sweep's knee is not found")
}

func TestSteps(t *testing.T) {
	for _, tc := range []struct {
		step, bound int
		want        []int
	}{
		{1, 5, []int{1, 2, 3, 4, 5}},
		{8, 20, []int{1, 8, 16, 20}},
		{8, 16, []int{1, 8, 16}},
		{4, 3, []int{1, 3}},
		{1, 1, []int{1}},
		{0, 5, nil},
		{1, 0, nil},
	} {
		assert.Equal(t, tc.want, Steps(tc.step, tc.bound), "step %d bound %d", tc.step, tc.bound)
		assert.Equal(t, len(tc.want), StepCount(tc.step, tc.bound), "step %d bound %d", tc.step, tc.bound)
	}
	for step := 1; step <= 12; step++ {
		for bound := 1; bound <= 40; bound++ {
			assert.Equal(t, len(Steps(step, bound)), StepCount(step, bound), "step %d bound %d", step, bound)
		}
	}
}

func TestCells(t *testing.T) {
	p := Point{Ceiling: 4, Throughput: 1234.56, Requests: 3.456, Goodput: 3, Samples: 7, TTFTP50: 1, TTFTP99: 2, TPOTP50: 0.5, TPOTP99: 0.75, Windows: 3, Stable: true}
	assert.Equal(t, []string{"4", "1234.6", "3.46", "3.00", "7", "1.00", "2.00", "0.50", "0.75", "-", "3"}, p.Cells(SLO{}))
	p.Stable = false
	assert.Equal(t, "broken", p.Cells(SLO{TTFT: time.Millisecond})[9])
	assert.Equal(t, "met", p.Cells(SLO{TTFT: 2 * time.Millisecond})[9])
	assert.Equal(t, "3 (unstable)", p.Cells(SLO{})[10])
	assert.Len(t, Header(), len(p.Cells(SLO{})))
	p.Failed = 1
	assert.Equal(t, "failed", p.Cells(SLO{TTFT: 2 * time.Millisecond})[9])
	empty := Point{Ceiling: 1, TTFTP50: math.NaN(), TTFTP99: math.NaN(), TPOTP50: math.NaN(), TPOTP99: math.NaN()}
	assert.Equal(t, []string{"-", "-", "-", "-", "broken"}, empty.Cells(SLO{TPOT: time.Hour})[5:10], "no sample: no figure, and not met")
}

// NaN (no sample) is null in JSON, which encoding/json cannot write for a float, and reads back.
func TestPointJSON(t *testing.T) {
	p := Point{Ceiling: 2, Throughput: 10, Samples: 3, TTFTP50: 1, TTFTP99: math.NaN(), TPOTP50: 0.5, TPOTP99: math.NaN(), Windows: 3}
	data, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"ttft_p99_ms":null`)
	assert.Contains(t, string(data), `"ttft_p50_ms":1`)
	assert.Contains(t, string(data), `"samples":3`)
	var back Point
	require.NoError(t, json.Unmarshal(data, &back))
	assert.True(t, math.IsNaN(back.TTFTP99))
	back.TTFTP99, back.TPOTP99, p.TTFTP99, p.TPOTP99 = 0, 0, 0, 0
	assert.Equal(t, p, back)
}

package qualification

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/ceiling"
)

// withCalibration adds a phases.calibration section (one flow mapping) to the minimal file, and
// SLO targets the calibration defaults to.
func withCalibration(cal string) string {
	s := strings.Replace(minimal, "  failure: {duration: 5m}\n", "  failure: {duration: 5m}\n  calibration: "+cal+"\n", 1)
	return strings.Replace(s, "  min_success: 0.999\n", "  min_success: 0.999\n  ttft_p99: 800ms\n  tpot_p99: 40ms\n", 1)
}

func TestCalibrationDefaults(t *testing.T) {
	p, err := Parse([]byte(withCalibration("{max_concurrency: 64}")))
	require.NoError(t, err)
	c := p.Phases.Calibration
	require.NotNil(t, c)
	assert.Equal(t, Calibration{Member: "vllm-0", MaxConcurrency: 64, Step: 1, Window: DefaultCalibrationWindow,
		MaxStepDuration: DefaultCalibrationMax, Tolerance: ceiling.DefaultTolerance, KneeShare: ceiling.DefaultKneeShare,
		SLO: ceiling.SLO{TTFT: 800 * time.Millisecond, TPOT: 40 * time.Millisecond}}, *c, "the SLO defaults to the gate's TTFT and TPOT p99")
	assert.Len(t, c.Steps(), 64)

	bp := p.calibrationPlan(c, 12)
	require.NoError(t, bp.Validate())
	assert.Equal(t, 12, bp.Workload.Closed.Clients)
	assert.Zero(t, bp.Workload.Closed.Think, "a ceiling is held saturated")
	assert.Equal(t, 1.0, *bp.Workload.Streaming, "every request streams: TTFT and TPOT need chunks")
	assert.Nil(t, bp.Workload.Cancel)
	assert.True(t, bp.IgnoreEOS)
	assert.Equal(t, DefaultCalibrationMax, bp.Duration)
	assert.Equal(t, bench.SLO{TTFT: 800 * time.Millisecond, TPOT: 40 * time.Millisecond}, bp.SLO)

	own, err := Parse([]byte(withCalibration("{member: vllm-1, max_concurrency: 40, step: 8, window: 2s, max_step_duration: 30s, tolerance: 0.1, knee_share: 0.9, ttft_p99: 1s, tpot_p99: 20ms}")))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 8, 16, 24, 32, 40}, own.Phases.Calibration.Steps())
	assert.Equal(t, ceiling.SLO{TTFT: time.Second, TPOT: 20 * time.Millisecond}, own.Phases.Calibration.SLO)
	assert.Equal(t, "vllm-1", own.Phases.Calibration.Member)
}

// A file without a calibration section resolves as before: no phase, the same plan JSON, so the
// approvals recorded for existing files stay valid.
func TestNoCalibrationLeavesThePlanAlone(t *testing.T) {
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Nil(t, p.Phases.Calibration)
	assert.NotContains(t, string(p.JSON()), "calibration")
	with, err := Parse([]byte(withCalibration("{max_concurrency: 8}")))
	require.NoError(t, err)
	assert.NotEqual(t, p.Fingerprint(), with.Fingerprint(), "planning a calibration voids an approval")
}

func TestCalibrationRefusals(t *testing.T) {
	for _, tc := range []struct{ cal, path string }{
		{"{}", "phases.calibration.max_concurrency"},
		{"{max_concurrency: 0}", "phases.calibration.max_concurrency"},
		{"{max_concurrency: 100001}", "phases.calibration.max_concurrency"},
		{"{max_concurrency: 8, member: nobody}", "phases.calibration.member"},
		{"{max_concurrency: 8, step: 9}", "phases.calibration.step"},
		{"{max_concurrency: 8, step: -1}", "phases.calibration.step"},
		{"{max_concurrency: 100000}", "phases.calibration.step"},
		{"{max_concurrency: 8, window: 1ms}", "phases.calibration.window"},
		{"{max_concurrency: 8, window: 1s, max_step_duration: 2s}", "phases.calibration.max_step_duration"},
		{"{max_concurrency: 8, max_step_duration: 2h}", "phases.calibration.max_step_duration"},
		{"{max_concurrency: 8, tolerance: 1}", "phases.calibration.tolerance"},
		{"{max_concurrency: 8, knee_share: 1.5}", "phases.calibration.knee_share"},
		{"{max_concurrency: 8, ttft_p99: -1s}", "phases.calibration"},
		{"{max_concurrency: 8, bogus: 1}", "phases.calibration.bogus"},
	} {
		t.Run(tc.cal, func(t *testing.T) {
			_, err := Parse([]byte(withCalibration(tc.cal)))
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.path, e.Path)
		})
	}
}

// StepPoint attributes to the measured span what happened in it: tokens counted live, and the
// successful requests that ended in it, with their TTFT and TPOT (what the gate's tpot_p99 judges).
func TestStepPoint(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	recs := []bench.Record{
		// Starts in the warm-up, ends inside: a sample; TTFT 10, TPOT (90-10)/2 = 40.
		{Outcome: bench.OK, Stream: true, Start: ms(50), Chunks: []time.Duration{ms(10), ms(60), ms(80)}, End: ms(90), OutputTokens: 3},
		// Entirely inside, meets a 20 ms TTFT target: TTFT 15, TPOT 15.
		{Outcome: bench.OK, Stream: true, Start: ms(200), Chunks: []time.Duration{ms(15), ms(25)}, End: ms(30), OutputTokens: 2},
		// Entirely inside, misses it: TTFT 40, TPOT 10.
		{Outcome: bench.OK, Stream: true, Start: ms(300), Chunks: []time.Duration{ms(40), ms(45)}, End: ms(50), OutputTokens: 2},
		// Ends after the span: no sample, though its first chunk is inside.
		{Outcome: bench.OK, Stream: true, Start: ms(380), Chunks: []time.Duration{ms(5), ms(30)}, End: ms(40), OutputTokens: 2},
		// A failure anywhere in the step counts, and is no sample.
		{Outcome: bench.HTTP5xx, Status: 500, Start: ms(150), End: ms(1)},
	}
	p := StepPoint(4, recs, ms(100), ms(400), 30, bench.SLO{TTFT: ms(20)})
	assert.Equal(t, 4, p.Ceiling)
	assert.InDelta(t, 100, p.Throughput, 1e-9, "30 tokens in 0.3 s")
	assert.Equal(t, 3, p.Samples)
	assert.InDelta(t, 10, p.Requests, 1e-9, "3 requests ended in the span")
	assert.InDelta(t, 20.0/3, p.Goodput, 1e-9, "2 of them met the SLO")
	assert.Equal(t, 1, p.Failed)
	assert.InDelta(t, 15, p.TTFTP50, 1e-9, "TTFTs 10, 15, 40")
	assert.InDelta(t, 15, p.TPOTP50, 1e-9, "TPOTs 40, 15, 10")
	assert.InDelta(t, 39.5, p.TPOTP99, 1e-9, "the p99 of the requests' TPOT, not of the chunk gaps (50 at most)")

	none := StepPoint(4, recs, ms(1000), ms(2000), 0, bench.SLO{})
	assert.Zero(t, none.Samples)
	assert.True(t, math.IsNaN(none.TTFTP99) && math.IsNaN(none.TPOTP99), "no sample: no figure")
	assert.False(t, ceiling.SLO{TTFT: time.Hour}.Met(none), "and no evidence that the SLO holds")
}

// A step whose bound is exactly three windows (the least validation allows) is measured: each
// window ends at start + k·window on the bench's clock, and the third, ending at the bound, counts
// even though its timer fires after it. The window clock is the bench's start, however late the
// step's goroutine began.
func TestHoldStepTakesTheBoundsLastWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Calibration{Window: time.Second, MaxStepDuration: 3 * time.Second, Tolerance: 0.05}
		live := &bench.Live{}
		start := time.Now().Add(-5 * time.Millisecond) // the bench began before holdStep was called
		done := make(chan stepOutcome, 1)
		go func() { // tokens at a rate that never settles, then the run's drain past the bound
			for i := range 40 {
				time.Sleep(100 * time.Millisecond)
				live.Tokens.Add(int64(1 + i*i))
			}
			done <- stepOutcome{}
		}()
		w := holdStep(done, live, c, start)
		require.Len(t, w.marks, 3, "three windows within a bound of three")
		for k, at := range w.marks {
			assert.Equal(t, time.Duration(k+1)*time.Second, at, "window %d ends on the bench's clock", k+1)
		}
		assert.Nil(t, w.outcome, "the run was still draining")
		<-done
	})
}

func TestCalibrationMarkdownAndDescribe(t *testing.T) {
	p, err := Parse([]byte(withCalibration("{max_concurrency: 16, step: 4}")))
	require.NoError(t, err)
	var plan bytes.Buffer
	require.NoError(t, p.Describe(&plan, nil))
	assert.Contains(t, plan.String(), "5. **calibration**")
	assert.Contains(t, plan.String(), "6. **restoration**")
	assert.Contains(t, plan.String(), "7. **gate**")
	assert.Contains(t, plan.String(), "Changes no configuration")

	res := CalibrationResult{Member: "vllm-0", SLO: p.Phases.Calibration.SLO,
		Points:         []ceiling.Point{{Ceiling: 1, Throughput: 10, TTFTP99: 5, Windows: 3, Stable: true}, {Ceiling: 4, Throughput: 40, TTFTP99: 900, Windows: 12}},
		BrokenAt:       4,
		Recommendation: ceiling.Recommendation{MaxConcurrency: 1, Knee: 4, SLOLimit: 1, SLOBroken: true, Reason: ceiling.ReasonSLO}}
	rep := PhaseReport{Phase: PhaseCalibration, Index: 5, Status: StatusPassed, Calibration: &res, Note: calibrationNote(&res)}
	var md bytes.Buffer
	require.NoError(t, rep.Markdown(&md))
	assert.Contains(t, md.String(), "Recommended max_concurrency for member vllm-0: **1**")
	assert.Contains(t, md.String(), "concurrency 4 broke the SLO and ended the sweep")
	assert.Contains(t, md.String(), "| 4 | 40.0 |")
	assert.Contains(t, md.String(), "12 (unstable)")
}

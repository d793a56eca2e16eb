package qualification_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/qualification"
	"github.com/anvil-llm/anvil/sim/calibrate"
)

// calibrationProfile is the tiny profile with 2 ms steps and 4 sequences. Its knee is not sharp in
// real time: in one measured run on a loaded machine, ceiling 4 reached 94.4% of ceiling 5's
// throughput, just under the 95% knee share, so the measured knee landed at 5, one step above the
// model's 4. That one step is what the test allows.
func calibrationProfile() engine.Profile {
	p := engine.TinyProfile()
	p.Name, p.StepBase, p.MaxNumSeqs = "tiny-calibration", 2*time.Millisecond, 4
	return p
}

// Calibration sweep bounds of the rig: windows of about a hundred tokens at concurrency 1, and
// answers of about 128 tokens, long against the client's turnaround between two requests (which a
// loaded machine stretches: below the knee each slot idles for it, above it the engine's queue
// hides it, so a short answer pushes the measured knee up).
const (
	rigCalBound   = 6
	rigCalWindow  = 250 * time.Millisecond
	rigCalOutputs = "{dist: uniform, min: 96, max: 160}"
)

// The calibration phase against real fake-vLLM members recommends the ceiling the engine model
// implies: the simulator's sweep of the same profile, workload, seed and SLO, within one step. The
// SLO is placed from the simulated curve, well above its TTFT p99 at the sweep's bound (a real-time
// p99 on a loaded machine has outliers the model has not), so the knee decides on both sides;
// nothing here is a hard-coded ceiling.
func TestCalibrationRecommendsTheEngineCeiling(t *testing.T) {
	prof := calibrationProfile()
	rg := startRig(t, rigOptions{profile: &prof})
	base, err := qualification.Parse([]byte(rg.qualYAMLWith(t, t.TempDir(), rigFailure, qualExtra{outputTokens: rigCalOutputs})))
	require.NoError(t, err)
	simulated, err := calibrate.Run(calibrate.Options{Profile: prof, Workload: base.Workload, Seed: base.Seed,
		Ceilings: ceiling.Steps(1, rigCalBound), Window: rigCalWindow, MaxWindows: 20})
	require.NoError(t, err)
	last := simulated.Points[len(simulated.Points)-1]
	slo := ceiling.SLO{TTFT: time.Duration(4 * last.TTFTP99 * float64(time.Millisecond))}
	implied := ceiling.Recommend(simulated.Points, slo, ceiling.DefaultKneeShare)
	require.Equal(t, prof.MaxNumSeqs, implied.MaxConcurrency, "the model's own answer: max_num_seqs, as the rig's requests all fit the KV pool")

	res, rep := runCalibration(t, rg, slo, rigCalOutputs)
	got := rep.Calibration.Recommendation
	t.Logf("simulated: %+v; measured: %+v; curve: %+v", implied, got, rep.Calibration.Points)
	assert.InDelta(t, implied.MaxConcurrency, got.MaxConcurrency, 1, "within one step of the engine model's ceiling")
	assert.Equal(t, qualification.VerdictPass, res.Verdict.Result, "%v", res.Verdict.Reasons)
	for _, f := range []string{"calibration/curve.json", "plots/calibration-latency-throughput.png", "raw/calibration-1.jsonl",
		"phases/5-calibration.md", "phases/6-restoration.json", "phases/7-gate.json"} {
		assert.FileExists(t, filepath.Join(res.Dir, f))
	}
	assert.Contains(t, rep.Note, "Nothing was changed")
}

// An SLO the member cannot meet ends the sweep at its first step, with no recommendation; the
// phase still passes (the finding is the result) and the run's verdict is untouched.
func TestCalibrationStopsWhenTheSLOBreaks(t *testing.T) {
	prof := calibrationProfile()
	rg := startRig(t, rigOptions{profile: &prof})
	res, rep := runCalibration(t, rg, ceiling.SLO{TTFT: time.Microsecond}, "") // the rig's short answers: one step is all it sends
	c := rep.Calibration
	require.Len(t, c.Points, 1, "stopped at the first step")
	assert.Equal(t, 1, c.BrokenAt)
	assert.Zero(t, c.Recommendation.MaxConcurrency)
	assert.Equal(t, ceiling.ReasonNoSLO, c.Recommendation.Reason)
	assert.Equal(t, qualification.VerdictPass, res.Verdict.Result, "%v", res.Verdict.Reasons)
}

// runCalibration runs the rig's qualification with a calibration of member m0 under slo, the
// workload's answers drawn from outputs ("" for the rig's), and returns the run and its calibration
// phase, which must have passed.
func runCalibration(t *testing.T, rg *rig, slo ceiling.SLO, outputs string) (*qualification.Result, *qualification.PhaseReport) {
	t.Helper()
	res, rep := runCalibrationWith(t, rg, calibrationLine(slo, rigCalBound, rigCalWindow, 3*time.Second), outputs, nil)
	require.Equal(t, qualification.StatusPassed, rep.Status, "%+v", rep.Checks)
	return res, rep
}

// calibrationLine is the qualification file's calibration of member m0.
func calibrationLine(slo ceiling.SLO, bound int, window, maxStep time.Duration) string {
	return fmt.Sprintf("  calibration: {member: m0, max_concurrency: %d, window: %s, max_step_duration: %s, ttft_p99: %s}\n",
		bound, window, maxStep, slo.TTFT)
}

// runCalibrationWith runs the calibration cal, with an observer and without the passing requirement.
func runCalibrationWith(t *testing.T, rg *rig, cal, outputs string, observe func(qualification.Event)) (*qualification.Result, *qualification.PhaseReport) {
	t.Helper()
	p, err := qualification.Parse([]byte(rg.qualYAMLWith(t, t.TempDir(), rigFailure, qualExtra{phases: cal, outputTokens: outputs})))
	require.NoError(t, err)
	a, err := p.Approve(true, rigApproval)
	require.NoError(t, err)
	res, err := qualification.Run(t.Context(), p, a, qualification.Options{Secrets: rigSecrets(), Observe: observe})
	require.NoError(t, err, "every artifact was written")
	for i := range res.Phases {
		if rep := &res.Phases[i]; rep.Phase == qualification.PhaseCalibration {
			require.NotNil(t, rep.Calibration)
			return res, rep
		}
	}
	require.FailNow(t, "the planned calibration phase did not run")
	return nil, nil
}

// A member that fails every request during the sweep: the sweep stops at its first step, the
// phase fails (and with it the verdict), the plot of a curve with no latency is still written, and
// restoration runs as ever.
func TestCalibrationStopsAtAFailingMember(t *testing.T) {
	prof := calibrationProfile()
	rg := startRig(t, rigOptions{profile: &prof})
	res, rep := runCalibrationWith(t, rg, calibrationLine(ceiling.SLO{TTFT: time.Second}, rigCalBound, rigCalWindow, 3*time.Second), "", func(e qualification.Event) {
		if e.Phase == qualification.PhaseCalibration && e.Step == qualification.StepStart {
			require.NoError(t, rg.members[0].Server().SetFaults(fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}}))
		}
	})
	assert.Equal(t, qualification.StatusFailed, rep.Status)
	require.Len(t, rep.Calibration.Points, 1, "no further step against a failing member")
	assert.Positive(t, rep.Calibration.Points[0].Failed)
	assert.Equal(t, qualification.VerdictFail, res.Verdict.Result)
	assert.True(t, res.Verdict.Restored)
	assert.FileExists(t, filepath.Join(res.Dir, "plots/calibration-latency-throughput.png"))
	assert.Equal(t, 1, rep.Calibration.Recommendation.FailedAt)
	assert.Zero(t, rep.Calibration.Recommendation.MaxConcurrency, "a failed step is no evidence")
	assert.Contains(t, rep.Note, "requests failed at concurrency 1")
}

// A step bound of exactly three windows, the least the file may set, measures every step: the
// third window ends at the bound and counts.
func TestCalibrationAtTheLeastStepBound(t *testing.T) {
	prof := calibrationProfile()
	rg := startRig(t, rigOptions{profile: &prof})
	const window = 400 * time.Millisecond
	_, rep := runCalibrationWith(t, rg, calibrationLine(ceiling.SLO{TTFT: time.Hour}, 2, window, 3*window), "", nil)
	require.Equal(t, qualification.StatusPassed, rep.Status, "%+v", rep.Checks)
	require.Len(t, rep.Calibration.Points, 2)
	for _, p := range rep.Calibration.Points {
		assert.Equal(t, 3, p.Windows, "concurrency %d held its three windows", p.Ceiling)
		assert.Positive(t, p.Samples)
	}
}

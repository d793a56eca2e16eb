package qualification

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
)

// phasesWith are the seven phase reports of a run: every phase passed, with the given statuses
// overriding some, and the routed and sustained phases carrying a bench result of ok of 10.
func phasesWith(ok int, status map[string]string) []PhaseReport {
	var out []PhaseReport
	for _, name := range PhaseNames()[:6] { // the gate judges the six before it
		ph := PhaseReport{Phase: name, Status: StatusPassed}
		if s, set := status[name]; set {
			ph.Status = s
		}
		if name == PhaseRouted || name == PhaseSustained {
			ph.Bench = &bench.Result{Requests: 10, Completed: ok, Failed: 10 - ok}
		}
		out = append(out, ph)
	}
	return out
}

// The gate is promotable only for a passing run on real evidence that restored the router: a
// synthetic or undetermined run never is, whatever else holds.
func TestDecide(t *testing.T) {
	p, err := Parse([]byte(minimal)) // slo: min_success 0.999 only
	require.NoError(t, err)
	cases := []struct {
		name        string
		phases      []PhaseReport
		interrupted bool
		evidence    string
		result      string
		promotable  bool
		reason      string
	}{
		{"real pass", phasesWith(10, nil), false, EvidenceReal, VerdictPass, true, ""},
		{"synthetic pass", phasesWith(10, nil), false, EvidenceSynthetic, VerdictPass, false, "synthetic evidence"},
		{"undetermined pass", phasesWith(10, nil), false, EvidenceUndetermined, VerdictPass, false, "not every member was observed"},
		{"SLO missed", phasesWith(9, nil), false, EvidenceReal, VerdictFail, false, "SLO not met: routed: success share"},
		{"a phase failed", phasesWith(10, map[string]string{PhaseFailure: StatusFailed}), false, EvidenceReal, VerdictFail, false, "phase failure failed"},
		{"a phase skipped", phasesWith(10, map[string]string{PhaseSustained: StatusSkipped}), false, EvidenceReal, VerdictFail, false, "phase sustained skipped"},
		{"not restored", phasesWith(10, map[string]string{PhaseRestoration: StatusFailed}), false, EvidenceReal, VerdictFail, false, "restoration failed"},
		{"interrupted", phasesWith(10, map[string]string{PhaseFailure: StatusInterrupted}), true, EvidenceReal, VerdictInterrupted, false, "the run was interrupted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := decide(p, c.phases, c.interrupted, c.evidence)
			assert.Equal(t, c.result, v.Result)
			assert.Equal(t, c.promotable, v.Promotable)
			assert.Equal(t, c.evidence, v.Evidence)
			assert.Equal(t, p.Fingerprint(), v.Fingerprint)
			if c.reason == "" {
				assert.Empty(t, v.Reasons)
			} else {
				assert.Condition(t, func() bool {
					for _, r := range v.Reasons {
						if strings.Contains(r, c.reason) {
							return true
						}
					}
					return false
				}, "reasons %q name %q", v.Reasons, c.reason)
			}
			pr := promotionRequest(p, v, time.Unix(0, 0))
			var md bytes.Buffer
			require.NoError(t, pr.Markdown(&md))
			if c.promotable {
				assert.Equal(t, PromotionReady, pr.Status)
				assert.Contains(t, md.String(), "## Signature")
			} else {
				assert.Equal(t, PromotionNot, pr.Status)
				assert.Contains(t, md.String(), "NOT PROMOTABLE")
				assert.NotContains(t, md.String(), "## Signature")
			}
		})
	}
}

// No combination of phase statuses makes anything but real evidence promotable.
func TestDecideNeverPromotesWithoutRealEvidence(t *testing.T) {
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	statuses := []string{StatusPassed, StatusFailed, StatusSkipped, StatusInterrupted}
	for _, evidence := range []string{EvidenceSynthetic, EvidenceUndetermined, EvidenceReal} {
		for _, phase := range PhaseNames()[:6] {
			for _, s := range statuses {
				for _, interrupted := range []bool{false, true} {
					v := decide(p, phasesWith(10, map[string]string{phase: s}), interrupted, evidence)
					want := evidence == EvidenceReal && s == StatusPassed && !interrupted
					assert.Equal(t, want, v.Promotable, "evidence %s, %s %s, interrupted %t", evidence, phase, s, interrupted)
				}
			}
		}
	}
}

// The latency SLOs compare a p99 in milliseconds with the target duration, inclusively, and need
// samples; the added-latency SLO is routed minus direct p50. Targets left at zero are not checked.
func TestSLOChecks(t *testing.T) {
	s := SLOPlan{MinSuccess: 0.9, TTFTP99: 500 * time.Millisecond, E2ELP99: 2 * time.Second}
	result := func(ok int, ttft, e2el float64, n int) *bench.Result {
		return &bench.Result{Requests: 10, Completed: ok, TTFT: bench.Summary{N: n, P99: ttft}, E2EL: bench.Summary{N: n, P99: e2el}}
	}
	cases := []struct {
		name   string
		result *bench.Result
		passed []bool // success share, TTFT p99, E2EL p99
	}{
		{"all within", result(10, 499, 2000, 10), []bool{true, true, true}},
		{"at the targets", result(9, 500, 2000, 10), []bool{true, true, true}},
		{"over the targets", result(8, 500.001, 2000.5, 10), []bool{false, false, false}},
		{"no samples", result(10, 0, 0, 0), []bool{true, false, false}},
		{"no requests", &bench.Result{}, []bool{false, false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checks := sloChecks(PhaseRouted, s, c.result)
			require.Len(t, checks, 3, "TPOT has no target and is not checked")
			for i, want := range c.passed {
				assert.Equal(t, want, checks[i].Passed, "%s: %s", checks[i].Name, checks[i].Detail)
			}
		})
	}

	_, ok := addedCheck(s, nil)
	assert.False(t, ok, "no target, no check")
	s.MaxAddedE2ELP50 = 50 * time.Millisecond
	cmp := func(direct, routed float64) *bench.Comparison {
		return &bench.Comparison{Direct: bench.Result{E2EL: bench.Summary{N: 5, P50: direct}}, Routed: bench.Result{E2EL: bench.Summary{N: 5, P50: routed}}}
	}
	for _, c := range []struct {
		direct, routed float64
		passed         bool
	}{{100, 150, true}, {100, 150.5, false}, {100, 90, true}} {
		got, ok := addedCheck(s, cmp(c.direct, c.routed))
		require.True(t, ok)
		assert.Equal(t, c.passed, got.Passed, got.Detail)
	}
}

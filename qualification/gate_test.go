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

package qualification_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/qualification"
	"github.com/anvil-llm/anvil/router/manage"
)

// The fake's identity header is the one the run looks for (this package may not import the fake).
func TestFakeHeaderIsTheFakesIdentity(t *testing.T) {
	assert.Equal(t, fakevllm.IdentityHeader, qualification.FakeHeader)
}

func planFor(t *testing.T, rg *rig, failure string) (*qualification.Plan, qualification.Approval, string) {
	t.Helper()
	out := t.TempDir()
	p, err := qualification.Parse([]byte(rg.qualYAML(t, out, failure)))
	require.NoError(t, err)
	a, err := p.Approve(true, rigApproval)
	require.NoError(t, err)
	return p, a, out
}

// Ctrl-C while a member is out: the load stops, the failure phase is recorded as interrupted, and
// restoration still readmits the member, so the tier's state and persisted intent end as preflight
// found them; the verdict is "interrupted" and the artifact set is sealed.
func TestInterruptedRunStillRestores(t *testing.T) {
	rg := startRig(t, rigOptions{})
	p, a, _ := planFor(t, rg, rigFailure)
	require.Empty(t, persisted(t, rg.intent), "nothing quiesced before the run")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var events []qualification.Event
	res, err := qualification.Run(ctx, p, a, qualification.Options{Secrets: rigSecrets(),
		Observe: func(e qualification.Event) {
			events = append(events, e)
			if e.Phase == qualification.PhaseFailure && e.Step == qualification.StepQuiesced {
				// The member is out and its drain is next: the operator presses Ctrl-C.
				st := status(t, rg, "m1")
				require.Equal(t, "quiesced", st, "the run's quiesce took effect")
				cancel()
			}
		}})
	require.NoError(t, err)

	byName := phases(res)
	for _, name := range []string{qualification.PhasePreflight, qualification.PhaseBaseline, qualification.PhaseRouted, qualification.PhaseSustained} {
		assert.Equal(t, qualification.StatusPassed, byName[name].Status, "%s: %s", name, explain(res))
	}
	assert.Equal(t, qualification.StatusInterrupted, byName[qualification.PhaseFailure].Status, explain(res))
	rest := byName[qualification.PhaseRestoration]
	assert.Equal(t, qualification.StatusPassed, rest.Status, explain(res))
	require.Len(t, rest.Actions, 1, "restoration undid the one quiesce")
	assert.Equal(t, manage.ActionReadmit, rest.Actions[0].Action)
	assert.Equal(t, "m1", rest.Actions[0].Member)
	assert.Equal(t, manage.ResultChanged, rest.Actions[0].Result)
	assert.Equal(t, qualification.VerdictInterrupted, res.Verdict.Result, explain(res))
	assert.True(t, res.Verdict.Restored)
	assert.False(t, res.Verdict.Promotable)
	assert.Equal(t, qualification.EvidenceSynthetic, res.Verdict.Evidence)

	// The router is as preflight found it: both members admitting, intent file as before.
	assert.Equal(t, "admitting", status(t, rg, "m0"))
	assert.Equal(t, "admitting", status(t, rg, "m1"))
	assert.Empty(t, persisted(t, rg.intent), "the persisted intent holds no quiesce again")

	// Restoration and the gate ran after the interruption, in order.
	tail := events[len(events)-4:]
	assert.Equal(t, []qualification.Event{{Phase: "restoration", Step: "start"}, {Phase: "restoration", Step: "end"},
		{Phase: "gate", Step: "start"}, {Phase: "gate", Step: "end"}}, tail)
	m, err := qualification.Verify(res.Dir)
	require.NoError(t, err)
	assert.Equal(t, qualification.VerdictInterrupted, m.Verdict)
	assert.FileExists(t, filepath.Join(res.Dir, "phases", "5-restoration.md"))
}

// A member serving another model: preflight fails on its identity, nothing is sent to any model
// endpoint, the router is never changed, and no later load phase runs.
func TestWrongIdentityStopsAtPreflight(t *testing.T) {
	rg := startRig(t, rigOptions{models: [2]string{"", "qual/some-other-model"}})
	p, a, _ := planFor(t, rg, rigFailure)
	res, err := qualification.Run(t.Context(), p, a, qualification.Options{Secrets: rigSecrets()})
	require.NoError(t, err)

	byName := phases(res)
	pre := byName[qualification.PhasePreflight]
	assert.Equal(t, qualification.StatusFailed, pre.Status)
	failed := map[string]string{}
	for _, c := range pre.Checks {
		if !c.Passed {
			failed[c.Name] = c.Detail
		}
	}
	assert.Contains(t, failed, "member m1: served identity")
	assert.Contains(t, failed["member m1: served identity"], "qual/some-other-model")
	assert.NotContains(t, failed, "member m0: served identity")
	for _, name := range []string{qualification.PhaseBaseline, qualification.PhaseRouted, qualification.PhaseSustained, qualification.PhaseFailure} {
		assert.Equal(t, qualification.StatusSkipped, byName[name].Status, name)
		assert.Nil(t, byName[name].Bench, name)
	}
	rest := byName[qualification.PhaseRestoration]
	assert.Equal(t, qualification.StatusPassed, rest.Status, "%+v", rest.Checks)
	assert.Empty(t, rest.Actions, "nothing to undo")
	assert.Equal(t, qualification.VerdictFail, res.Verdict.Result)
	assert.False(t, res.Verdict.Promotable)

	// No generation request reached any member, and the router recorded none.
	for i, m := range rg.members {
		assert.Equal(t, 0.0, counter(t, m.URL(), "vllm:request_success_total"), "member %d", i)
	}
	assert.Empty(t, rg.srv.Decisions().Recent(1<<20))
	_, err = qualification.Verify(res.Dir)
	require.NoError(t, err)
}

// A failure phase whose load reaches its bound (phases.failure.duration) before the member is back
// ends there instead of hanging: here the hold outlasts the bound, so the bound always passes
// first, whatever the machine's speed. The phase fails and says why, the member is readmitted and
// the router is restored; no request was cut.
func TestFailureLoadBoundEndsAStuckPhase(t *testing.T) {
	rg := startRig(t, rigOptions{})
	p, a, _ := planFor(t, rg, "{member: m1, duration: 1s, hold: 1h, drain_wait: 10m}")
	res, err := qualification.Run(t.Context(), p, a, qualification.Options{Secrets: rigSecrets()})
	require.NoError(t, err)

	fail := phases(res)[qualification.PhaseFailure]
	assert.Equal(t, qualification.StatusFailed, fail.Status, explain(res))
	checks := map[string]qualification.Check{}
	for _, c := range fail.Checks {
		checks[c.Name] = c
	}
	lasted, ok := checks["the load lasted until the member was back"]
	require.True(t, ok, explain(res))
	assert.False(t, lasted.Passed)
	assert.Contains(t, lasted.Detail, "its bound passed first")
	assert.True(t, checks["no request was cut"].Passed, explain(res))
	assert.Equal(t, qualification.StatusPassed, phases(res)[qualification.PhaseRestoration].Status, explain(res))
	assert.Equal(t, qualification.VerdictFail, res.Verdict.Result)
	assert.True(t, res.Verdict.Restored)
	assert.Contains(t, strings.Join(res.Verdict.Reasons, "\n"), "the load lasted until the member was back")
	assert.Equal(t, "admitting", status(t, rg, "m1"))
	assert.Empty(t, persisted(t, rg.intent))
}

// explain is a run's verdict with its reasons and every failed check of every phase: what a test's
// failure message must show, since a verdict alone does not say why.
func explain(res *qualification.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s (restored %t)", res.Verdict.Result, res.Verdict.Restored)
	for _, r := range res.Verdict.Reasons {
		fmt.Fprintf(&b, "\n  reason: %s", r)
	}
	for _, ph := range res.Phases {
		for _, c := range ph.Checks {
			if !c.Passed {
				fmt.Fprintf(&b, "\n  %s failed %q: %s", ph.Phase, c.Name, c.Detail)
			}
		}
	}
	return b.String()
}

func phases(res *qualification.Result) map[string]qualification.PhaseReport {
	out := map[string]qualification.PhaseReport{}
	for _, p := range res.Phases {
		out[p.Phase] = p
	}
	return out
}

// status reads one member's admission state through the transition API.
func status(t *testing.T, rg *rig, member string) string {
	t.Helper()
	c, err := manage.NewClient(http.DefaultClient, rg.url, rigAdmin)
	require.NoError(t, err)
	resp, err := c.Transition(context.Background(), manage.Request{Action: manage.ActionStatus, Tier: rigTier, MemberID: member})
	require.NoError(t, err)
	return resp.Scope.State
}

// persisted lists the quiesced scopes of the router's intent file ("tier" or "tier/member"); a
// missing file holds none.
func persisted(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var doc struct {
		Tiers   map[string]string            `json:"tiers"`
		Members map[string]map[string]string `json:"members"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	var out []string
	for tier := range doc.Tiers {
		out = append(out, tier)
	}
	for tier, ms := range doc.Members {
		for m := range ms {
			out = append(out, tier+"/"+m)
		}
	}
	return out
}

// counter sums a member's counter over its series.
func counter(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	total := 0.0
	for _, m := range fams[name].GetMetric() {
		total += value(m)
	}
	return total
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

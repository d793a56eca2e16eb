package report

import (
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

func liveReload(t testing.TB) *scenarios.Scenario {
	t.Helper()
	data, err := os.ReadFile("../../scenarios/testdata/live-reload.yaml")
	require.NoError(t, err)
	sc, err := scenarios.Parse(data)
	require.NoError(t, err)
	return sc
}

// A scenario with reloads has the reload metrics and the added members' metrics in its vocabulary,
// so its gates check when it loads; a scenario without reloads has neither.
func TestReloadVocabulary(t *testing.T) {
	sc := liveReload(t)
	require.NoError(t, CheckGates(sc))
	names := Names(sc)
	for _, n := range []string{"reloads.applied", "reloads.reconcile_violations", "reloads.ceiling_admit_violations",
		"reloads.added_late", "reloads.removed_in_flight_failed", "reloads.refused", "member.vllm-4.succeeded"} {
		assert.Contains(t, names, n)
	}
	assert.False(t, slices.ContainsFunc(Names(lookup(t, "twenty-concurrent")), func(n string) bool { return n == "reloads.count" }))
}

// The reload gates fail when the reload is wrong: rebuilding the router from the new file forgets
// the leases, so tier active disagrees with the members' sum and admissions pass the ceilings.
func TestReloadGatesFailOnARebuild(t *testing.T) {
	sc := liveReload(t)
	res, err := sim.Run(sc, sim.Options{ReloadFault: sim.ReloadFaultRebuild})
	require.NoError(t, err)
	r := Build(sc, []*sim.Result{res})
	assert.False(t, r.Passed)
	failed := map[string]bool{}
	for _, g := range r.Gates {
		if g.Status == GateFail {
			failed[g.Metric] = true
		}
	}
	assert.True(t, failed["reloads.reconcile_violations"])
	assert.True(t, failed["reloads.ceiling_admit_violations"])
	assert.False(t, failed["reloads.applied"], "the reloads themselves went through")
	run := r.Runs[0]
	require.Len(t, run.Reloads, 3)
	require.NotNil(t, run.ReloadAudit)
	assert.Contains(t, r.Markdown(), "reload at (s)")
}

package report

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

func liveReload(t testing.TB) *scenarios.Scenario { return lookup(t, "live-reload") }

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

// Every reload gate can fail: each way of getting a reload wrong (sim.ReloadFault) fails the gates
// that say so, and the correct reload passes them all.
func TestReloadGatesCanFail(t *testing.T) {
	sc := liveReload(t)
	tests := []struct {
		name  string
		fault sim.ReloadFault
		fails []string // gate metrics that must fail
	}{
		{"next generation over live state", sim.ReloadFaultNone, nil},
		{"a rebuilt router forgets the leases", sim.ReloadFaultRebuild,
			[]string{"tier.unreleased", "reloads.reconcile_violations", "tier.reconcile_violations", "reloads.ceiling_admit_violations"}},
		{"the removed member's requests are cut", sim.ReloadFaultCutRemoved,
			[]string{"reloads.removed_in_flight_failed", "tier.failed"}},
		{"the added member is ready before its probe", sim.ReloadFaultReadyAtOnce, []string{"reloads.admitted_unready"}},
		{"the lowered ceiling is not applied", sim.ReloadFaultKeepCeilings,
			[]string{"reloads.config_mismatches", "reloads.ceiling_admit_violations"}},
		{"the added member is never probed", sim.ReloadFaultNoProbe,
			[]string{"reloads.added_late", "member.vllm-4.succeeded", "reloads.refused"}},
		{"the reload forgets readiness", sim.ReloadFaultResetReadiness, []string{"reloads.refused", "tier.not_admitted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sim.Run(sc, sim.Options{ReloadFault: tt.fault})
			require.NoError(t, err)
			r := Build(sc, []*sim.Result{res})
			var failed []string
			for _, g := range r.Gates {
				if g.Status == GateFail {
					failed = append(failed, g.Metric)
				}
			}
			assert.Equal(t, len(tt.fails) == 0, r.Passed, "failed: %v", failed)
			for _, m := range tt.fails {
				assert.Contains(t, failed, m)
			}
			assert.NotContains(t, failed, "reloads.applied", "the router took every reload")
		})
	}
}

func TestReloadReport(t *testing.T) {
	r := build(t, liveReload(t))
	run := r.Runs[0]
	require.Len(t, run.Reloads, 3)
	require.NotNil(t, run.ReloadAudit)
	assert.Equal(t, []string{"vllm-4"}, run.Reloads[1].Added)
	assert.Equal(t, []string{"vllm-1"}, run.Reloads[2].Removed)
	assert.Positive(t, run.ReloadAudit.Checks)
	md := r.Markdown()
	assert.Contains(t, md, "reload at (s)")
	assert.Contains(t, md, "Reload audit")
	js, _ := encode(t, r)
	assert.Contains(t, js, `"reload_audit"`)
	plain, _ := encode(t, build(t, lookup(t, "twenty-concurrent")))
	assert.NotContains(t, plain, `"reload`, "a scenario without reloads reports none")
}

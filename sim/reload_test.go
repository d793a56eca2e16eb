package sim

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// liveReload is the live-reload scenario.
func liveReload(t testing.TB) *scenarios.Scenario {
	t.Helper()
	data, err := os.ReadFile("../scenarios/testdata/live-reload.yaml")
	require.NoError(t, err)
	sc, err := scenarios.Parse(data)
	require.NoError(t, err)
	return sc
}

func TestReloadsNeedTheReloadCore(t *testing.T) {
	sc := liveReload(t)
	_, err := Run(sc, Options{})
	require.ErrorIs(t, err, ErrReloadCore)
	require.ErrorIs(t, err, ErrScenario)
	require.ErrorIs(t, Check(sc, scenarios.StrategyCapacity), ErrReloadCore)
}

// Every generation's configuration goes through the real config model before the run, as a reload
// validates the whole new file before anything changes: a reload the router would refuse refuses
// the scenario, and Check says so before any run.
func TestReloadGenerationsAreValidatedUpFront(t *testing.T) {
	sc := liveReload(t)
	gens, err := buildGenerations(sc, scenarios.StrategyCapacity, DefaultRingSize)
	require.NoError(t, err)
	require.Len(t, gens, len(sc.Reloads))
	tier, ok := gens[1].Tier(sc.Tier.ID)
	require.True(t, ok)
	m, added := tier.Member("vllm-4")
	require.True(t, added)
	assert.Equal(t, "http://127.0.0.1:20004", m.Endpoint, "a member's endpoint follows its place among all members")
	last, _ := gens[2].Tier(sc.Tier.ID)
	_, kept := last.Member("vllm-1")
	assert.False(t, kept, "the last generation no longer names the removed member")
	assert.Equal(t, int64(3+8+8+8), last.EffectiveMaxConcurrency(), "the default tier ceiling follows the members")

	sc.Tier.MaxConcurrency = 32 // the initial members' sum: valid until the first reload lowers it
	_, err = buildGenerations(sc, scenarios.StrategyCapacity, DefaultRingSize)
	require.ErrorContains(t, err, "after reload 0")
	require.ErrorContains(t, err, "must not exceed the sum of member max_concurrency")
	require.ErrorIs(t, Check(sc, scenarios.StrategyCapacity), ErrScenario)
}

// The readiness source covers exactly the configured members: a member not yet added is no key of
// the snapshot admission reads, and an added one is unready until a probe finds it.
func TestReadinessCoversTheConfiguredMembers(t *testing.T) {
	sc := liveReload(t)
	w, err := newWorld(sc, Options{ReloadFault: ReloadFaultRebuild})
	require.NoError(t, err)
	w.prepare()
	assert.Len(t, w.ready.ids, 5, "every member the scenario ever configures")
	assert.Len(t, w.ready.Snapshot(sc.Tier.ID), 4, "the snapshot: the configured ones")
	w.refreshReadiness()
	assert.Equal(t, map[string]bool{"vllm-0": true, "vllm-1": true, "vllm-2": true, "vllm-3": true}, w.ready.Snapshot(sc.Tier.ID))
}

// Rebuilding the router from the new file instead of taking the next generation forgets every
// lease: the per-event audit sees tier active disagree with the members' sum, and the forgotten
// leases let admissions through above the ceilings in force.
func TestReloadRebuildFailsTheAudit(t *testing.T) {
	r := run(t, liveReload(t), Options{ReloadFault: ReloadFaultRebuild})
	require.Len(t, r.Reloads, 3)
	for _, rl := range r.Reloads {
		assert.Empty(t, rl.Err)
	}
	a := r.ReloadAudit
	assert.Positive(t, a.Checks)
	assert.Positive(t, a.ReconcileViolations)
	assert.Positive(t, a.CeilingAdmitViolations)
	assert.Positive(t, r.Reloads[0].Overhang, "the lowered ceiling was below the member's active leases")
	assert.Positive(t, r.Reloads[2].RemovedInFlight, "the removed member had requests in flight")
	assert.Equal(t, []string{"vllm-4"}, r.Reloads[1].Added)
	assert.Equal(t, []string{"vllm-1"}, r.Reloads[2].Removed)
}

package sim

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// liveReload is the live-reload scenario.
func liveReload(t testing.TB) *scenarios.Scenario { return lookup(t, "live-reload") }

// The live-reload scenario through the router's own reload (Next, then Publish): every lease is
// accounted for, the lowered ceiling admits nothing until the member is under it, the added member
// serves after its first probe, and the removed member admits nothing after its reload while its
// requests in flight finish there.
func TestLiveReloadThroughTheReloadCore(t *testing.T) {
	r := run(t, liveReload(t), Options{})
	assertAccounting(t, r)
	require.Len(t, r.Reloads, 3)
	for _, rl := range r.Reloads {
		assert.Empty(t, rl.Err)
	}
	assert.Equal(t, ReloadAudit{Checks: r.ReloadAudit.Checks, AddedFirstAdmitMax: r.ReloadAudit.AddedFirstAdmitMax}, r.ReloadAudit,
		"no reload audit counter moved")
	assert.Greater(t, r.ReloadAudit.Checks, r.Invariants.Checks, "the reload audit runs after every event")
	assert.Positive(t, r.ReloadAudit.AddedFirstAdmitMax)
	assert.LessOrEqual(t, r.ReloadAudit.AddedFirstAdmitMax, 2*time.Second, "within one readiness interval")

	m0, m1, m4 := memberIndex(t, r, "vllm-0"), memberIndex(t, r, "vllm-1"), memberIndex(t, r, "vllm-4")
	// Replay vllm-0's leases: after its ceiling went to 3 at 15 s, an admission only while fewer
	// than 3 were held (releases at an instant come before admissions, as in the sim's loop).
	type change struct {
		at    time.Duration
		delta int
	}
	var changes []change
	var m1After, m4Before, m4n int
	for _, q := range r.Requests {
		switch q.Member {
		case m0:
			changes = append(changes, change{q.Arrival, +1}, change{q.End, -1})
		case m1:
			if q.Arrival >= 35*time.Second {
				m1After++
			}
		case m4:
			m4n++
			if q.Arrival < 25*time.Second {
				m4Before++
			}
		}
	}
	slices.SortStableFunc(changes, func(a, b change) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	var active0, after0 int
	for _, c := range changes {
		if c.delta > 0 && c.at >= 15*time.Second {
			after0++
			assert.Less(t, active0, 3, "an admission to vllm-0 at %v above its ceiling in force", c.at)
		}
		active0 += c.delta
	}
	assert.Positive(t, after0, "vllm-0 serves again once under its new ceiling")
	assert.Zero(t, m1After, "the removed member admits nothing after its reload")
	assert.Zero(t, m4Before)
	assert.Positive(t, m4n, "the added member serves")
	assert.Positive(t, r.Reloads[2].RemovedInFlight)
	assert.Zero(t, r.Reloads[2].RemovedInFlightFailed)
	assert.Zero(t, r.DecisionLog.EvidenceDiscarded, "records are checked against the generation that admitted them")
}

// Requests waiting in the admission queue when a reload is published keep their place: their next
// Admit meets ErrSuperseded, they rebase onto the generation in force and are admitted there.
func TestLiveReloadKeepsTheQueue(t *testing.T) {
	sc := liveReload(t)
	sc.Tier.Queue = &scenarios.Queue{MaxWaiting: 64, Timeout: 30 * time.Second}
	sc.Workload.Closed.Clients = 40 // more callers than the 27-32 member slots: the queue is never empty
	for _, st := range []string{scenarios.StrategyCapacity, scenarios.StrategyRoundRobin} {
		t.Run(st, func(t *testing.T) {
			r := run(t, sc, Options{Strategy: st})
			assertAccounting(t, r)
			assert.Positive(t, r.Queue.Enqueued)
			assert.Positive(t, r.ReloadAudit.Rebased, "waiters met a published reload")
			assert.Zero(t, r.Queue.Timeouts)
			assert.Zero(t, r.ReloadAudit.Refused)
			assert.Zero(t, r.ReloadAudit.ReconcileViolations+r.ReloadAudit.ConfigMismatches+r.ReloadAudit.CeilingAdmitViolations)
			assert.Zero(t, r.ReloadAudit.AdmittedUnready+r.ReloadAudit.AdmittedRemoved+r.ReloadAudit.AddedLate)
		})
	}
}

// Same scenario and seed, same result: the reloads add no nondeterminism.
func TestLiveReloadIsDeterministic(t *testing.T) {
	a, b := run(t, liveReload(t), Options{}), run(t, liveReload(t), Options{})
	assert.Equal(t, a, b)
}

// Every generation's configuration goes through the real config model before the run, as a reload
// validates the whole new file before anything changes: a reload the router would refuse refuses
// the scenario, and Check says so before any run.
func TestReloadGenerationsAreValidatedUpFront(t *testing.T) {
	sc := liveReload(t)
	gens, _, err := buildGenerations(sc, scenarios.StrategyCapacity, DefaultRingSize, "")
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
	_, _, err = buildGenerations(sc, scenarios.StrategyCapacity, DefaultRingSize, "")
	require.ErrorContains(t, err, "after reload 0")
	require.ErrorContains(t, err, "must not exceed the sum of member max_concurrency")
	require.ErrorIs(t, Check(sc, scenarios.StrategyCapacity), ErrScenario)
}

// The readiness source covers exactly the configured members: a member not yet added is no key of
// the snapshot admission reads, and an added one is unready until a probe finds it.
func TestReadinessCoversTheConfiguredMembers(t *testing.T) {
	sc := liveReload(t)
	w, err := newWorld(sc, Options{})
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

// A restart between reloads loads the generation in force, keeps following the later reloads, and
// cuts what was in flight (the removed member's requests included, when it restarts before they end).
func TestRestartBetweenReloads(t *testing.T) {
	sc := liveReload(t)
	sc.Events = append(sc.Events, scenarios.Event{At: 30 * time.Second, Action: scenarios.ActionRestart})
	r := run(t, sc, Options{})
	assertAccounting(t, r)
	require.Len(t, r.Restarts, 1)
	assert.Positive(t, r.Restarts[0].Cut)
	require.Len(t, r.Reloads, 3)
	for _, rl := range r.Reloads {
		assert.Empty(t, rl.Err)
	}
	a := r.ReloadAudit
	assert.Zero(t, a.ReconcileViolations+a.ConfigMismatches+a.CeilingAdmitViolations, "the restarted router runs the generation in force")
	assert.Zero(t, a.AdmittedUnready+a.AdmittedRemoved+a.AddedLate)
	m4 := memberIndex(t, r, "vllm-4")
	var after int
	for _, q := range r.Requests {
		if q.Member == m4 && q.Arrival > 30*time.Second {
			after++
		}
	}
	assert.Positive(t, after, "the member the reload added serves after the restart too")
	assert.Zero(t, r.Reloads[2].RemovedInFlightFailed, "the last reload came after the restart")
}

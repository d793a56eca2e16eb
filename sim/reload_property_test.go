package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/scenarios"
)

// reloadScenario draws a valid scenario with random reloads: ceilings moved, members added and
// removed (with requests in flight or not), under either strategy, with or without a queue.
func reloadScenario(t *rapid.T) *scenarios.Scenario {
	strategy := rapid.SampledFrom([]string{scenarios.StrategyCapacity, scenarios.StrategyRoundRobin}).Draw(t, "strategy")
	var doc []byte
	doc = fmt.Appendf(doc, "name: prop\nduration: 12s\nseed: %d\ntier:\n  strategy: %s\n", rapid.Uint64Range(1, 1<<40).Draw(t, "seed"), strategy)
	if rapid.Bool().Draw(t, "queue") {
		doc = append(doc, "  queue: {max_waiting: 32, timeout: 5s}\n"...)
	}
	doc = append(doc, "  members:\n"...)
	current := []string{}
	next := 0
	for range rapid.IntRange(2, 5).Draw(t, "members") {
		doc = fmt.Appendf(doc, "    - {id: m%d, max_concurrency: %d}\n", next, rapid.IntRange(1, 6).Draw(t, "ceiling"))
		current = append(current, fmt.Sprintf("m%d", next))
		next++
	}
	doc = fmt.Appendf(doc, "workload:\n  closed: {clients: %d, think: 20ms}\n", rapid.IntRange(1, 24).Draw(t, "clients"))
	doc = append(doc, "  prompt_tokens: {dist: uniform, min: 16, max: 1024}\n  output_tokens: {dist: uniform, min: 16, max: 512}\n"...)
	doc = append(doc, "reloads:\n"...)
	at := time.Duration(0)
	for range rapid.IntRange(1, 6).Draw(t, "reloads") {
		at += time.Duration(rapid.IntRange(100, 1500).Draw(t, "gap")) * time.Millisecond
		if at >= 12*time.Second {
			break
		}
		doc = fmt.Appendf(doc, "  - at: %s\n    changes:\n", at)
		for range rapid.IntRange(1, 3).Draw(t, "changes") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0:
				doc = fmt.Appendf(doc, "      - member_ceiling: {member: %s, max_concurrency: %d}\n",
					rapid.SampledFrom(current).Draw(t, "member"), rapid.IntRange(1, 6).Draw(t, "ceiling"))
			case op == 1 && len(current) < 16:
				doc = fmt.Appendf(doc, "      - add_member: {id: m%d, max_concurrency: %d}\n", next, rapid.IntRange(1, 6).Draw(t, "ceiling"))
				current = append(current, fmt.Sprintf("m%d", next))
				next++
			case op == 2 && len(current) > 2:
				gone := rapid.SampledFrom(current).Draw(t, "member")
				doc = fmt.Appendf(doc, "      - remove_member: {member: %s}\n", gone)
				current = slices.DeleteFunc(current, func(id string) bool { return id == gone })
			}
		}
	}
	sc, err := scenarios.Parse(doc)
	if err != nil {
		t.Skip("drew an invalid scenario") // a reload with no change left in it
	}
	return sc
}

// Over random reload sequences, the router's reload keeps the books: every lease released once, tier
// active the sum of the members' after every event, admission on the configuration in force, no
// admission above a ceiling in force or to an unready or removed member, the removed members'
// requests finishing successfully, and every record's evidence valid for the generation that
// admitted it.
func TestReloadProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := reloadScenario(t)
		r, err := Run(sc, Options{})
		require.NoError(t, err)
		inv := r.Invariants
		require.Equal(t, inv.Acquired, inv.Released, "every lease released")
		require.Zero(t, inv.EndActive+int64(inv.ReleaseMisuse))
		require.Zero(t, inv.CeilingViolations+inv.ReconcileViolations+inv.ScopeViolations+inv.OrderViolations+inv.EvidenceViolations)
		require.Zero(t, inv.Redispatched+inv.Undispatched+inv.Misrouted+inv.Phantom)
		a := r.ReloadAudit
		require.Positive(t, a.Checks)
		require.Zero(t, a.ReconcileViolations, "tier active == sum of members")
		require.Zero(t, a.ConfigMismatches, "admission == the configuration in force")
		require.Zero(t, a.CeilingAdmitViolations, "no admission above the ceiling in force")
		require.Zero(t, a.AdmittedUnready+a.AdmittedRemoved)
		for _, rl := range r.Reloads {
			require.Empty(t, rl.Err)
			require.Zero(t, rl.RemovedInFlightFailed, "a removed member's requests finish")
		}
		require.Zero(t, r.DecisionLog.Rejected+r.DecisionLog.EvidenceDiscarded)
		require.Equal(t, uint64(len(r.Requests)), r.DecisionLog.Added)
	})
}

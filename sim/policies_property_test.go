package sim

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/policy"
)

// policyScenario draws a small saturated tier: members of random ceilings and speeds, more clients
// than slots, and maybe a queue, an erroring member (passive health ejects it), a killed and revived
// member and a quiesced one.
func policyScenario(t *rapid.T) *scenarios.Scenario {
	var doc []byte
	doc = fmt.Appendf(doc, "name: prop\nduration: 10s\nseed: %d\ntier:\n  strategy: capacity\n", rapid.Uint64Range(1, 1<<40).Draw(t, "seed"))
	if rapid.Bool().Draw(t, "queue") {
		doc = append(doc, "  queue: {max_waiting: 16, timeout: 2s}\n"...)
	}
	doc = append(doc, "  members:\n"...)
	n := rapid.IntRange(2, 6).Draw(t, "members")
	for i := range n {
		doc = fmt.Appendf(doc, "    - {id: m%d, max_concurrency: %d, step_scale: %d}\n", i,
			rapid.IntRange(1, 6).Draw(t, "ceiling"), rapid.IntRange(1, 3).Draw(t, "scale"))
	}
	doc = fmt.Appendf(doc, "workload:\n  closed: {clients: %d, think: 10ms}\n", rapid.IntRange(1, 40).Draw(t, "clients"))
	doc = append(doc, "  prompt_tokens: {dist: uniform, min: 16, max: 1024}\n  output_tokens: {dist: uniform, min: 8, max: 256}\n"...)
	doc = append(doc, "events:\n"...)
	member := func(name string) string { return fmt.Sprintf("m%d", rapid.IntRange(0, n-1).Draw(t, name)) }
	doc = fmt.Appendf(doc, "  - {at: 1s, action: errors, member: %s, rate: 1, status: 500, until: 4s}\n", member("failing"))
	if rapid.Bool().Draw(t, "kill") {
		m := member("killed")
		doc = fmt.Appendf(doc, "  - {at: 2s, action: kill, member: %s}\n  - {at: 5s, action: revive, member: %s}\n", m, m)
	}
	if rapid.Bool().Draw(t, "quiesce") {
		m := member("quiesced")
		doc = fmt.Appendf(doc, "  - {at: 3s, action: quiesce, member: %s}\n  - {at: 6s, action: readmit, member: %s}\n", m, m)
	}
	sc, err := scenarios.Parse(doc)
	if err != nil {
		t.Fatalf("drew an invalid scenario: %v\n%s", err, doc)
	}
	return sc
}

// Whatever the snapshot, every reference policy's choice goes through the shared admission: no
// ceiling is ever exceeded, every admission reserves exactly the member the policy chose (which
// the evidence audit checks was eligible: ready, not quiesced, not ejected, below its ceiling), and
// every lease is released once.
func TestPropertyPoliciesRespectEligibilityAndCeilings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := policyScenario(t)
		p := rapid.SampledFrom([]string{policy.LeastConnections, policy.Random, policy.PowerOfTwo, policy.QueueKV, policy.Oracle}).Draw(t, "policy")
		r, err := Run(sc, Options{Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		inv := r.Invariants
		switch {
		case inv.CeilingViolations != 0:
			t.Fatalf("%s: %d ceiling violations", p, inv.CeilingViolations)
		case r.Policy.Mismatches != 0:
			t.Fatalf("%s: admission did not reserve the policy's choice %d times", p, r.Policy.Mismatches)
		case inv.EvidenceViolations != 0 || inv.OrderViolations != 0:
			t.Fatalf("%s: evidence %d, order %d violations", p, inv.EvidenceViolations, inv.OrderViolations)
		case inv.ScopeViolations != 0 || inv.ReconcileViolations != 0:
			t.Fatalf("%s: scope %d, reconcile %d violations", p, inv.ScopeViolations, inv.ReconcileViolations)
		case inv.Acquired != inv.Released || inv.ReleaseMisuse != 0 || inv.EndActive != 0:
			t.Fatalf("%s: leases acquired %d released %d misuse %d", p, inv.Acquired, inv.Released, inv.ReleaseMisuse)
		}
	})
}

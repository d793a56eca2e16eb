package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/policy"
)

// Every reference policy runs through the shared walk and keeps every book the capacity
// scheduler keeps: no ceiling exceeded, every lease released, the evidence of each decision (one
// eligible row: the policy's choice) agreeing with the sim's own view, and admission reserving
// exactly what the policy chose.
func TestReferencePoliciesKeepTheBooks(t *testing.T) {
	for _, name := range []string{"heterogeneous", "failing-member", "burst-queue", "twenty-concurrent"} {
		sc := lookup(t, name)
		sc.Duration = min(sc.Duration, 90*time.Second)
		for _, p := range policy.All() {
			if !policy.Reference(p) {
				continue
			}
			t.Run(name+"/"+p, func(t *testing.T) {
				r := run(t, sc, Options{Policy: p})
				assertAccounting(t, r)
				require.NotNil(t, r.Policy)
				assert.Equal(t, p, r.Strategy)
				assert.Positive(t, r.Policy.Choices)
				assert.Zero(t, r.Policy.Mismatches, "admission reserved what the policy chose")
			})
		}
	}
}

func TestUnknownPolicyIsRefused(t *testing.T) {
	_, err := Run(lookup(t, "heterogeneous"), Options{Policy: "capacity"})
	require.ErrorIs(t, err, ErrPolicy)
}

// Outside load reaches only its member's engine: the router's arrivals and shapes are the same as
// without it, its books stay whole, and the engine's own counts show the extra requests.
func TestOutsideLoadIsInvisibleToTheRouter(t *testing.T) {
	sc := lookup(t, "outside-load")
	sc.Duration = 30 * time.Second
	with := run(t, sc, Options{Strategy: "capacity"})
	assertAccounting(t, with)
	plain := lookup(t, "outside-load")
	plain.Duration = sc.Duration
	for i := range plain.Tier.Members {
		plain.Tier.Members[i].OutsideRate = 0
	}
	without := run(t, plain, Options{Strategy: "capacity"})
	require.Equal(t, len(without.Requests), len(with.Requests))
	for i := range with.Requests {
		require.Equal(t, without.Requests[i].Arrival, with.Requests[i].Arrival)
		require.Equal(t, without.Requests[i].Prompt, with.Requests[i].Prompt)
	}
	i := memberIndex(t, with, "vllm-2")
	assert.InDelta(t, 18*30, float64(with.Members[i].Outside), 18*30*0.25, "about outside_rate per second")
	assert.Zero(t, with.Members[0].Outside)
	assert.Zero(t, without.Members[i].Outside)
}

// The oracle's completion is exact: a member's engine, driven forward with the request added, finishes
// it at exactly the time the oracle computed on its clone, and the clone left the engine untouched.
// A member that would fail the request (an errors window that takes it, a dead engine) never
// completes it.
func TestOracleCompletionIsExact(t *testing.T) {
	sc := lookup(t, "failing-member") // vllm-3 answers 500 to every request from 80 s to 160 s
	w, err := newWorld(sc, Options{Policy: policy.Oracle})
	require.NoError(t, err)
	w.prepare()
	m := w.members[0]
	for i := range 6 {
		require.NoError(t, m.eng.Submit(w.at(0), engine.Request{ID: uint64(1000 + i), PromptTokens: 300 + 50*i, MaxTokens: 60 + 10*i}))
	}
	sh := scenarios.Shape{Prompt: 120, Output: 40, ErrorRoll: 0.5, CutRoll: 1}
	before := m.eng.Metrics()
	got := w.completion(m, sh)
	require.Equal(t, before, m.eng.Metrics(), "the oracle ran a clone")
	require.Less(t, got, policy.Never)

	require.NoError(t, m.eng.Submit(w.at(0), engine.Request{ID: 77, PromptTokens: sh.Prompt + ChatTemplateTokens, MaxTokens: sh.Output}))
	var finished time.Duration = -1
	for finished < 0 {
		at, ok := m.eng.NextEventAt()
		require.True(t, ok, "the request finishes")
		for _, e := range m.eng.Advance(at, nil) {
			if e.ID == 77 && e.Kind == engine.EventFinish {
				finished = e.At.Sub(Epoch)
			}
		}
	}
	assert.Equal(t, finished, got)

	w.now = 100 * time.Second
	assert.Equal(t, policy.Never, w.completion(w.members[3], sh), "inside the errors window")
	w.members[1].alive = false
	assert.Equal(t, policy.Never, w.completion(w.members[1], sh), "a dead engine")
	assert.Positive(t, w.res.Policy.Forward)
}

package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

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

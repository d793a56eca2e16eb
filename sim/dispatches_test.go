package sim

import (
	"testing"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/stretchr/testify/assert"
)

// TestReconcileDispatches feeds the member-side reconciliation every way the one-attempt
// boundary can break; each must be counted.
func TestReconcileDispatches(t *testing.T) {
	admitted := func(member int8) Request { return Request{Member: member, Outcome: decisionlog.OutcomeSuccess} }
	refused := Request{Member: -1, Outcome: decisionlog.OutcomeNotAdmitted}
	reqs := []Request{admitted(0), admitted(1), refused, admitted(0)}
	cases := []struct {
		name     string
		received [][]int32
		want     dispatchCheck
	}{
		{"exact", [][]int32{{0, 3}, {1}}, dispatchCheck{dispatches: 3}},
		{"retried on a peer", [][]int32{{0, 3}, {1, 0}},
			dispatchCheck{dispatches: 4, redispatched: 1, misrouted: 1}},
		{"sent twice to its member", [][]int32{{0, 3, 0}, {1}}, dispatchCheck{dispatches: 4, redispatched: 1}},
		{"never sent", [][]int32{{0}, {1}}, dispatchCheck{dispatches: 2, undispatched: 1}},
		{"sent elsewhere", [][]int32{{0}, {1, 3}}, dispatchCheck{dispatches: 3, misrouted: 1}},
		{"not admitted but sent", [][]int32{{0, 3, 2}, {1}}, dispatchCheck{dispatches: 4, misrouted: 1, phantom: 1}},
		{"no such request", [][]int32{{0, 3, 99, -1}, {1}}, dispatchCheck{dispatches: 5, phantom: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, reconcileDispatches(reqs, c.received))
		})
	}
}

// TestMembersCountWhatArrives: the members' own lists, not the router's attempt field, make the
// one-attempt figures; refused connections to a dead member are arrivals too.
func TestMembersCountWhatArrives(t *testing.T) {
	r := run(t, lookup(t, "upstream-errors"), Options{})
	assertAccounting(t, r)
	var refused uint64
	for _, m := range r.Members {
		refused += m.Refused
		assert.LessOrEqual(t, m.Refused, m.Received)
	}
	assert.Positive(t, refused, "vllm-2 refused connections while dead, before readiness noticed")
	for i, m := range r.Members {
		var selected uint64
		for _, q := range r.Requests {
			if int(q.Member) == i && q.Outcome.Admitted() {
				selected++
			}
		}
		assert.Equal(t, selected, m.Received, m.ID)
	}
}

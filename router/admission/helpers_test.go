package admission

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// memberIDs returns n sorted member IDs m00, m01, ...
func memberIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	return ids
}

// replicaSpec builds a replica tier of the given member ceilings, named m00...
func replicaSpec(id string, s Strategy, tierMax int64, ceilings ...int64) TierSpec {
	spec := TierSpec{ID: id, Kind: KindReplica, Strategy: s, MaxConcurrency: tierMax}
	for i, c := range ceilings {
		spec.Members = append(spec.Members, MemberSpec{ID: fmt.Sprintf("m%02d", i), MaxConcurrency: c})
	}
	return spec
}

// newTierT builds a one-tier Set and returns its tier.
func newTierT(t testing.TB, spec TierSpec) *TierAdmission {
	t.Helper()
	s, err := New([]TierSpec{spec})
	require.NoError(t, err)
	tier, ok := s.Tier(spec.ID)
	require.True(t, ok)
	return tier
}

// allReady marks every given member ready.
func allReady(ids ...string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// fresh returns fresh pressure of ppm, from a valid request signal.
func fresh(t testing.TB, ppm int64) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(scheduler.FreshnessFresh, ppm, true, scheduler.SignalValid, scheduler.SignalMissing)
	require.NoError(t, err)
	return p
}

// stale returns stale pressure (a valid request signal that aged out).
func stale(t testing.TB) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(scheduler.FreshnessStale, 0, false, scheduler.SignalValid, scheduler.SignalMissing)
	require.NoError(t, err)
	return p
}

// mustAcquire acquires a member lease and requires the expected member.
func mustAcquire(t testing.TB, tier *TierAdmission, ready map[string]bool, p map[string]scheduler.Pressure, want string) *Lease {
	t.Helper()
	l, err := acquire(tier, ready, p)
	require.NoError(t, err)
	require.Equal(t, want, l.Member())
	return l
}

// tb is what both *testing.T and *rapid.T offer.
type tb interface {
	require.TestingT
	Helper()
}

// checkInvariants asserts the snapshot invariants every test phase must keep.
func checkInvariants(t tb, s Snapshot) {
	t.Helper()
	if s.Kind == KindReplica {
		var sum int64
		for _, m := range s.Members {
			sum += m.Active
			require.GreaterOrEqual(t, m.Active, int64(0), "member %s", m.ID)
			if m.MaxConcurrency > 0 {
				require.LessOrEqual(t, m.Active, m.MaxConcurrency, "member %s", m.ID)
			}
			require.Equal(t, m.State == StateQuiesced && m.Active > 0, m.Draining, "member %s", m.ID)
		}
		require.Equal(t, s.Active, sum, "tier active must equal the sum of member active")
		require.GreaterOrEqual(t, s.Cursor, 0)
		require.Less(t, s.Cursor, len(s.Members))
	}
	require.GreaterOrEqual(t, s.Active, int64(0))
	if s.MaxConcurrency > 0 {
		require.LessOrEqual(t, s.Active, s.MaxConcurrency)
	}
	require.Equal(t, s.Acquired-s.Released, uint64(s.Active))
	require.Equal(t, s.State == StateQuiesced && s.Active > 0, s.Draining)
}

// acquire calls AcquireMember with the maps completed the way routing builds them: every configured
// member in readiness (absent = not ready) and, when pressure is given, every member in pressure
// (absent = unknown). Keys naming unconfigured members are kept, so invalid maps still refuse.
func acquire(tier *TierAdmission, ready map[string]bool, p map[string]scheduler.Pressure) (*Lease, error) {
	r := make(map[string]bool, len(ready))
	for k, v := range ready {
		r[k] = v
	}
	var q map[string]scheduler.Pressure
	if p != nil {
		q = make(map[string]scheduler.Pressure, len(p))
		for k, v := range p {
			q[k] = v
		}
	}
	for _, id := range tier.Members() {
		if _, ok := r[id]; !ok {
			r[id] = false
		}
		if _, ok := q[id]; !ok && q != nil {
			q[id] = scheduler.UnknownPressure()
		}
	}
	return tier.AcquireMember(r, q, nil)
}

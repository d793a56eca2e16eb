package server

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
)

// drainTier builds a capacity tier of two members with ceiling 2 each, or a direct tier.
func drainTier(t *testing.T, direct bool) *admission.TierAdmission {
	t.Helper()
	spec := admission.TierSpec{ID: "pool", Kind: admission.KindReplica, Strategy: admission.StrategyCapacity,
		Members: []admission.MemberSpec{{ID: "m00", MaxConcurrency: 2}, {ID: "m01", MaxConcurrency: 2}}}
	if direct {
		spec = admission.TierSpec{ID: "pool", Kind: admission.KindDirect}
	}
	set, err := admission.New([]admission.TierSpec{spec})
	require.NoError(t, err)
	tier, ok := set.Tier("pool")
	require.True(t, ok)
	return tier
}

// acquireOn reserves a lease on member (the only ready one) or, with member "", on a direct tier.
func acquireOn(t *testing.T, tier *admission.TierAdmission, member string) *admission.Lease {
	t.Helper()
	if member == "" {
		l, err := tier.Acquire()
		require.NoError(t, err)
		return l
	}
	l, err := tier.AcquireMember(map[string]bool{"m00": member == "m00", "m01": member == "m01"}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, member, l.Member())
	return l
}

func assertPending(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("drain returned early: %v", err)
	default:
	}
}

func TestDrainRefusesAnAdmittingScope(t *testing.T) {
	tier := drainTier(t, false)
	assert.ErrorIs(t, drain(t.Context(), tier, ""), admission.ErrNotQuiesced)
	require.NoError(t, tier.Quiesce("maint"))
	assert.ErrorIs(t, drain(t.Context(), tier, "m00"), admission.ErrNotQuiesced, "the member is the scope")
	assert.ErrorIs(t, drain(t.Context(), tier, "ghost"), admission.ErrUnknownMember)
	assert.ErrorIs(t, drain(t.Context(), drainTier(t, true), "m00"), admission.ErrWrongKind)
}

func TestDrainOfIdleScopeReturnsAtOnce(t *testing.T) {
	tier := drainTier(t, false)
	l := acquireOn(t, tier, "m01")
	done, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, tier.QuiesceMember("m00", "x"))
	assert.NoError(t, drain(done, tier, "m00"), "an idle member drains even with a done context")
	require.NoError(t, tier.Quiesce("x"))
	err := drain(done, tier, "")
	assert.ErrorIs(t, err, context.Canceled, "a busy tier cannot drain with a done context")
	assert.Contains(t, err.Error(), `drain of tier "pool" interrupted`)
	assert.Equal(t, int64(1), tier.Snapshot().Active, "drain never cancels a lease")
	assert.True(t, l.Release())
	assert.NoError(t, drain(done, tier, ""))
}

// TestDrainWaitsWithoutCancelling: a drain blocks while leases are in flight, leaves them alone, and
// returns when the last one is released.
func TestDrainWaitsWithoutCancelling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := drainTier(t, true)
		a, b := acquireOn(t, tier, ""), acquireOn(t, tier, "")
		require.NoError(t, tier.Quiesce("deploy"))
		result := make(chan error, 1)
		go func() { result <- drain(context.Background(), tier, "") }()
		synctest.Wait() // the drain is durably blocked
		assertPending(t, result)
		s := tier.Snapshot()
		assert.True(t, s.Draining)
		assert.Equal(t, int64(2), s.Active)

		require.True(t, a.Release())
		synctest.Wait()
		assertPending(t, result)
		require.True(t, b.Release())
		synctest.Wait()
		require.NoError(t, <-result)
		assert.False(t, tier.Snapshot().Draining)
		assert.Equal(t, admission.StateQuiesced, tier.Snapshot().State, "drain does not readmit")
	})
}

// TestMemberDrainWaitsForThatMemberOnly: releasing other members' leases does not finish a member
// drain, and the tier keeps admitting on the others.
func TestMemberDrainWaitsForThatMemberOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := drainTier(t, false)
		m0, m1 := acquireOn(t, tier, "m00"), acquireOn(t, tier, "m01")
		require.NoError(t, tier.QuiesceMember("m00", "swap"))
		result := make(chan error, 1)
		go func() { result <- drain(context.Background(), tier, "m00") }()
		synctest.Wait()
		assertPending(t, result)

		require.True(t, m1.Release(), "another member going idle")
		synctest.Wait()
		assertPending(t, result)
		other := acquireOn(t, tier, "m01")
		s := tier.Snapshot()
		assert.True(t, s.Members[0].Draining)
		assert.False(t, s.Draining, "the tier is not quiesced")

		require.True(t, m0.Release())
		synctest.Wait()
		require.NoError(t, <-result)
		assert.Equal(t, int64(1), tier.Snapshot().Active, "the other member's lease is untouched")
		assert.True(t, other.Release())
	})
}

func TestTierDrainCoversAllMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := drainTier(t, false)
		leases := []*admission.Lease{acquireOn(t, tier, "m00"), acquireOn(t, tier, "m01"), acquireOn(t, tier, "m00")}
		require.NoError(t, tier.Quiesce("maint"))
		result := make(chan error, 1)
		go func() { result <- drain(context.Background(), tier, "") }()
		for _, l := range leases {
			synctest.Wait()
			assertPending(t, result)
			require.True(t, l.Release())
		}
		synctest.Wait()
		require.NoError(t, <-result)
	})
}

func TestDrainContextEndsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := drainTier(t, true)
		l := acquireOn(t, tier, "")
		require.NoError(t, tier.Quiesce("deploy"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		err := drain(ctx, tier, "") // fake time jumps to the deadline
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 30*time.Second, time.Since(start), "the wait lasts exactly the deadline")
		s := tier.Snapshot()
		assert.Equal(t, int64(1), s.Active, "the lease survives a drain timeout")
		assert.True(t, s.Draining, "still quiesced with work in flight")
		assert.True(t, l.Release())
	})
}

func TestReadmitDuringDrainEndsIt(t *testing.T) {
	for _, scope := range []string{"", "m00"} {
		t.Run("scope="+scope, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tier := drainTier(t, false)
				l := acquireOn(t, tier, "m00")
				require.NoError(t, tier.Quiesce("x"))
				require.NoError(t, tier.QuiesceMember("m00", "x"))
				result := make(chan error, 1)
				go func() { result <- drain(context.Background(), tier, scope) }()
				synctest.Wait()
				assertPending(t, result)
				if scope == "" {
					require.NoError(t, tier.Readmit())
				} else {
					require.NoError(t, tier.ReadmitMember(scope))
				}
				synctest.Wait()
				err := <-result
				assert.ErrorIs(t, err, admission.ErrNotQuiesced)
				assert.ErrorIs(t, err, errReadmitted)
				assert.True(t, l.Release())
			})
		})
	}
}

// TestConcurrentDrainers: drains of different scopes wait together and each returns when its own
// scope is idle.
func TestConcurrentDrainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := drainTier(t, false)
		m0, m1 := acquireOn(t, tier, "m00"), acquireOn(t, tier, "m01")
		require.NoError(t, tier.Quiesce("x"))
		require.NoError(t, tier.QuiesceMember("m01", "y"))
		tierDone, memberDone := make(chan error, 1), make(chan error, 1)
		go func() { tierDone <- drain(context.Background(), tier, "") }()
		go func() { memberDone <- drain(context.Background(), tier, "m01") }()
		synctest.Wait()
		assertPending(t, tierDone)
		assertPending(t, memberDone)
		require.True(t, m1.Release())
		synctest.Wait()
		require.NoError(t, <-memberDone)
		assertPending(t, tierDone)
		require.True(t, m0.Release())
		synctest.Wait()
		require.NoError(t, <-tierDone)
	})
}

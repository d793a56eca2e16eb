package admission

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControlRefusals(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	ctx := t.Context()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"tier quiesce with empty reason", tier.Quiesce(""), ErrInvalidReason},
		{"tier quiesce with bad reason", tier.Quiesce("Bad Reason"), ErrInvalidReason},
		{"member quiesce with bad reason", tier.QuiesceMember("m00", "-x"), ErrInvalidReason},
		{"member quiesce unknown member", tier.QuiesceMember("ghost", "x"), ErrUnknownMember},
		{"member readmit unknown member", tier.ReadmitMember("ghost"), ErrUnknownMember},
		{"member drain unknown member", tier.DrainMember(ctx, "ghost"), ErrUnknownMember},
		{"tier drain while admitting", tier.Drain(ctx), ErrNotQuiesced},
		{"member drain while admitting", tier.DrainMember(ctx, "m00"), ErrNotQuiesced},
		{"tier drain with nil context", drainNil(tier), errNilContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.err, tt.want)
		})
	}
	s := tier.Snapshot()
	assert.Equal(t, StateAdmitting, s.State)
	for _, m := range s.Members {
		assert.Equal(t, StateAdmitting, m.State, "refused transitions mutate nothing")
	}
}

// drainNil passes a nil context on purpose: bad input must not crash.
func drainNil(t *TierAdmission) error {
	var ctx context.Context
	return t.Drain(ctx)
}

func TestMemberDrainWhileOnlyTierQuiesced(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	require.NoError(t, tier.Quiesce("maint"))
	assert.ErrorIs(t, tier.DrainMember(t.Context(), "m00"), ErrNotQuiesced, "the member is the scope")
}

// TestQuiesceScopes: tier and member quiesce each affect only their scope, and
// readmitting one never clears the other.
func TestQuiesceScopes(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, 0, 0, 0))
	ready := allReady(memberIDs(3)...)

	require.NoError(t, tier.QuiesceMember("m01", "swap"))
	mustAcquire(t, tier, ready, nil, "m00")
	mustAcquire(t, tier, ready, nil, "m02")
	mustAcquire(t, tier, ready, nil, "m00")

	require.NoError(t, tier.Quiesce("maint"))
	require.NoError(t, tier.Quiesce("maint2"), "quiescing again replaces the reason")
	_, err := acquire(tier, ready, nil)
	assert.ErrorIs(t, err, errTierQuiesced)
	s := tier.Snapshot()
	assert.Equal(t, StateQuiesced, s.State)
	assert.Equal(t, "maint2", s.Reason)
	assert.Equal(t, StateQuiesced, s.Members[1].State)
	assert.Equal(t, "swap", s.Members[1].Reason)
	assert.Equal(t, StateAdmitting, s.Members[0].State, "tier quiesce is not written into members")

	require.NoError(t, tier.ReadmitMember("m01"))
	_, err = acquire(tier, ready, nil)
	assert.ErrorIs(t, err, ErrQuiesced, "member readmit never clears the tier quiesce")

	require.NoError(t, tier.QuiesceMember("m01", "swap"))
	require.NoError(t, tier.Readmit())
	s = tier.Snapshot()
	assert.Equal(t, StateAdmitting, s.State)
	assert.Empty(t, s.Reason)
	assert.Equal(t, StateQuiesced, s.Members[1].State, "tier readmit never clears member quiesce")
	mustAcquire(t, tier, ready, nil, "m02")

	require.NoError(t, tier.ReadmitMember("m01"))
	require.NoError(t, tier.ReadmitMember("m01"), "readmitting an admitting member is a no-op")
	mustAcquire(t, tier, ready, nil, "m00")
	mustAcquire(t, tier, ready, nil, "m01")
	assert.Empty(t, tier.Snapshot().Members[1].Reason)
	checkInvariants(t, tier.Snapshot())
}

func TestDrainOfIdleScopeReturnsAtOnce(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	l := mustAcquire(t, tier, allReady("m01"), nil, "m01")
	done, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, tier.QuiesceMember("m00", "x"))
	assert.NoError(t, tier.DrainMember(done, "m00"), "idle member drains even with a done context")
	require.NoError(t, tier.Quiesce("x"))
	err := tier.Drain(done)
	assert.ErrorIs(t, err, context.Canceled, "busy tier cannot drain with a done context")
	assert.Equal(t, int64(1), tier.Snapshot().Active, "drain never cancels a lease")
	assert.True(t, l.Release())
	assert.NoError(t, tier.Drain(done))
}

// TestDrainWaitsWithoutCancelling: Drain blocks while leases are in flight,
// leaves them alone, and returns when the last one is released.
func TestDrainWaitsWithoutCancelling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := newTierT(t, TierSpec{ID: "d"})
		a, err := tier.Acquire()
		require.NoError(t, err)
		b, err := tier.Acquire()
		require.NoError(t, err)
		require.NoError(t, tier.Quiesce("deploy"))

		result := make(chan error, 1)
		go func() { result <- tier.Drain(context.Background()) }()
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
		assert.Equal(t, StateQuiesced, tier.Snapshot().State, "drain does not readmit")
	})
}

// TestMemberDrainWaitsForThatMemberOnly: releasing other members' leases does
// not finish a member drain, and the tier keeps admitting on the others.
func TestMemberDrainWaitsForThatMemberOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 2, 2))
		m0 := mustAcquire(t, tier, allReady("m00"), nil, "m00")
		m1 := mustAcquire(t, tier, allReady("m01"), nil, "m01")
		require.NoError(t, tier.QuiesceMember("m00", "swap"))

		result := make(chan error, 1)
		go func() { result <- tier.DrainMember(context.Background(), "m00") }()
		synctest.Wait()
		assertPending(t, result)

		require.True(t, m1.Release(), "another member going idle")
		synctest.Wait()
		assertPending(t, result)
		other := mustAcquire(t, tier, allReady("m00", "m01"), nil, "m01")
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
		tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, 0, 0))
		ready := allReady("m00", "m01")
		leases := []*Lease{
			mustAcquire(t, tier, ready, nil, "m00"),
			mustAcquire(t, tier, ready, nil, "m01"),
			mustAcquire(t, tier, ready, nil, "m00"),
		}
		require.NoError(t, tier.Quiesce("maint"))
		result := make(chan error, 1)
		go func() { result <- tier.Drain(context.Background()) }()
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
		tier := newTierT(t, TierSpec{ID: "d"})
		l, err := tier.Acquire()
		require.NoError(t, err)
		require.NoError(t, tier.Quiesce("deploy"))
		ctx, cancel := context.WithTimeout(context.Background(), 30e9)
		defer cancel()
		err = tier.Drain(ctx) // fake time jumps to the deadline
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		s := tier.Snapshot()
		assert.Equal(t, int64(1), s.Active, "the lease survives a drain timeout")
		assert.True(t, s.Draining, "still quiesced with work in flight")
		assert.True(t, l.Release())
	})
}

func TestReadmitDuringDrainEndsIt(t *testing.T) {
	tests := []struct {
		name    string
		drain   func(*TierAdmission) error
		readmit func(*TierAdmission) error
	}{
		{"tier", func(t *TierAdmission) error { return t.Drain(context.Background()) }, (*TierAdmission).Readmit},
		{"member", func(t *TierAdmission) error { return t.DrainMember(context.Background(), "m00") },
			func(t *TierAdmission) error { return t.ReadmitMember("m00") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
				l := mustAcquire(t, tier, allReady("m00"), nil, "m00")
				require.NoError(t, tier.Quiesce("x"))
				require.NoError(t, tier.QuiesceMember("m00", "x"))
				result := make(chan error, 1)
				go func() { result <- tt.drain(tier) }()
				synctest.Wait()
				assertPending(t, result)
				require.NoError(t, tt.readmit(tier))
				synctest.Wait()
				err := <-result
				assert.ErrorIs(t, err, ErrNotQuiesced)
				assert.ErrorIs(t, err, errReadmitted)
				assert.True(t, l.Release())
			})
		})
	}
}

// TestConcurrentDrainers: several drains of different scopes wait together and
// each returns when its own scope is idle.
func TestConcurrentDrainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
		m0 := mustAcquire(t, tier, allReady("m00"), nil, "m00")
		m1 := mustAcquire(t, tier, allReady("m01"), nil, "m01")
		require.NoError(t, tier.Quiesce("x"))
		require.NoError(t, tier.QuiesceMember("m01", "y"))
		tierDone := make(chan error, 1)
		memberDone := make(chan error, 1)
		go func() { tierDone <- tier.Drain(context.Background()) }()
		go func() { memberDone <- tier.DrainMember(context.Background(), "m01") }()
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

func assertPending(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("drain returned early: %v", err)
	default:
	}
}

func TestDrainErrorWrapsContext(t *testing.T) {
	tier := newTierT(t, TierSpec{ID: "d"})
	l, err := tier.Acquire()
	require.NoError(t, err)
	defer l.Release()
	require.NoError(t, tier.Quiesce("x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = tier.Drain(ctx)
	assert.True(t, errors.Is(err, context.Canceled))
	assert.Contains(t, err.Error(), `drain of tier "d" interrupted`)
}

package admission

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirectAcquireRespectsCeiling(t *testing.T) {
	tier := newTierT(t, TierSpec{ID: "d", MaxConcurrency: 2})
	a, err := tier.Acquire()
	require.NoError(t, err)
	b, err := tier.Acquire()
	require.NoError(t, err)
	assert.Equal(t, "d", a.Tier())
	assert.Equal(t, "", a.Member())
	_, ok := a.Decision()
	assert.False(t, ok)

	c, err := tier.Acquire()
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Nil(t, c)
	s := tier.Snapshot()
	assert.Equal(t, int64(2), s.Active)
	assert.Equal(t, uint64(2), s.Acquired)
	checkInvariants(t, s)

	require.True(t, a.Release())
	c, err = tier.Acquire()
	require.NoError(t, err)
	require.True(t, b.Release())
	require.True(t, c.Release())
	s = tier.Snapshot()
	assert.Equal(t, int64(0), s.Active)
	assert.Equal(t, uint64(3), s.Acquired)
	assert.Equal(t, uint64(3), s.Released)
	checkInvariants(t, s)
}

func TestDirectUnlimited(t *testing.T) {
	tier := newTierT(t, TierSpec{ID: "d"})
	var leases []*Lease
	for range 1000 {
		l, err := tier.Acquire()
		require.NoError(t, err)
		leases = append(leases, l)
	}
	assert.Equal(t, int64(1000), tier.Snapshot().Active)
	for _, l := range leases {
		require.True(t, l.Release())
	}
	checkInvariants(t, tier.Snapshot())
}

func TestReleaseIsIdempotentAndCountsMisuse(t *testing.T) {
	tests := []struct {
		name    string
		spec    TierSpec
		acquire func(*TierAdmission) (*Lease, error)
	}{
		{"direct", TierSpec{ID: "d", MaxConcurrency: 1}, (*TierAdmission).Acquire},
		{"round robin", replicaSpec("r", StrategyRoundRobin, 0, 1, 1), func(t *TierAdmission) (*Lease, error) {
			return acquire(t, allReady("m00", "m01"), nil)
		}},
		{"capacity", replicaSpec("r", StrategyCapacity, 0, 1, 1), func(t *TierAdmission) (*Lease, error) {
			return acquire(t, allReady("m00", "m01"), nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tier := newTierT(t, tt.spec)
			a, err := tt.acquire(tier)
			require.NoError(t, err)
			b, err := tt.acquire(tier)
			if tt.spec.Kind == KindDirect {
				require.ErrorIs(t, err, ErrExhausted)
			} else {
				require.NoError(t, err)
				defer b.Release()
			}
			assert.True(t, a.Release())
			assert.False(t, a.Release())
			assert.False(t, a.Release())
			s := tier.Snapshot()
			assert.Equal(t, uint64(1), s.Released)
			assert.Equal(t, uint64(2), s.ReleaseMisuse)
			checkInvariants(t, s)
			if s.Kind == KindReplica {
				// the other member's lease is untouched by the misuse
				assert.Equal(t, int64(1), s.Active)
			} else {
				assert.Equal(t, int64(0), s.Active)
			}
		})
	}
}

func TestReleaseOfNilOrZeroLease(t *testing.T) {
	var nilLease *Lease
	assert.False(t, nilLease.Release())
	assert.False(t, (&Lease{}).Release())
	for _, l := range []*Lease{nilLease, {}} {
		assert.Empty(t, l.Tier())
		assert.Empty(t, l.Member())
		_, ok := l.Decision()
		assert.False(t, ok)
	}
}

func TestWrongKind(t *testing.T) {
	set, err := New([]TierSpec{{ID: "d"}, replicaSpec("r", StrategyRoundRobin, 0, 1, 1)})
	require.NoError(t, err)
	d, _ := set.Tier("d")
	r, _ := set.Tier("r")

	_, err = r.Acquire()
	assert.ErrorIs(t, err, ErrWrongKind)
	_, err = acquire(d, allReady("m00"), nil)
	assert.ErrorIs(t, err, ErrWrongKind)
	assert.ErrorIs(t, d.QuiesceMember("m00", "x"), ErrWrongKind)
	assert.ErrorIs(t, d.ReadmitMember("m00"), ErrWrongKind)
	assert.ErrorIs(t, idleErr(d, "m00"), ErrWrongKind)
	assert.Nil(t, d.Members())
	for _, s := range set.Snapshots() {
		assert.Equal(t, int64(0), s.Active)
		assert.Equal(t, StateAdmitting, s.State)
		for _, m := range s.Members {
			assert.Equal(t, StateAdmitting, m.State)
		}
	}
}

func TestDirectQuiesceRefusesWithoutReserving(t *testing.T) {
	tier := newTierT(t, TierSpec{ID: "d"})
	require.NoError(t, tier.Quiesce("maintenance"))
	l, err := tier.Acquire()
	assert.Nil(t, l)
	assert.ErrorIs(t, err, ErrQuiesced)
	assert.False(t, errors.Is(err, ErrExhausted))
	s := tier.Snapshot()
	assert.Equal(t, StateQuiesced, s.State)
	assert.Equal(t, "maintenance", s.Reason)
	assert.Equal(t, uint64(0), s.Acquired)
	require.NoError(t, tier.Readmit())
	l, err = tier.Acquire()
	require.NoError(t, err)
	assert.True(t, l.Release())
}

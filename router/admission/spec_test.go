package admission

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRefusesInvalidSpecs(t *testing.T) {
	direct := TierSpec{ID: "d", Kind: KindDirect}
	tooMany := replicaSpec("r", StrategyCapacity, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	tests := []struct {
		name  string
		specs []TierSpec
		msg   string
	}{
		{"empty tier id", []TierSpec{{ID: "", Kind: KindDirect}}, `tier #0: invalid tier id`},
		{"uppercase tier id", []TierSpec{{ID: "Big", Kind: KindDirect}}, `tier #0: invalid tier id`},
		{"tier id too long", []TierSpec{{ID: strings.Repeat("a", 65), Kind: KindDirect}}, `tier #0: invalid tier id`},
		{"duplicate tier id", []TierSpec{direct, direct}, `tier "d": duplicate tier id`},
		{"negative tier ceiling", []TierSpec{{ID: "d", MaxConcurrency: -1}}, `max_concurrency must be >= 0`},
		{"unknown kind", []TierSpec{{ID: "d", Kind: 7}}, `unknown tier kind`},
		{"unknown strategy", []TierSpec{replicaSpec("r", 9, 0, 1, 1)}, `unknown replica strategy`},
		{"capacity on direct", []TierSpec{{ID: "d", Strategy: StrategyCapacity}}, `replica strategy is refused on direct tiers`},
		{"members on direct", []TierSpec{{ID: "d", Members: []MemberSpec{{ID: "a", MaxConcurrency: 1}}}}, `direct tiers have no members`},
		{"no members", []TierSpec{{ID: "r", Kind: KindReplica}}, `replica tiers need 2-16 members, got 0`},
		{"one member", []TierSpec{replicaSpec("r", StrategyRoundRobin, 0, 1)}, `got 1`},
		{"seventeen members", []TierSpec{tooMany}, `got 17`},
		{"invalid member id", []TierSpec{{ID: "r", Kind: KindReplica, Members: []MemberSpec{{ID: "a"}, {ID: "-b"}}}}, `member #1: invalid member id`},
		{"duplicate member id", []TierSpec{{ID: "r", Kind: KindReplica, Members: []MemberSpec{{ID: "a"}, {ID: "a"}}}}, `member "a": duplicate member id`},
		{"negative member ceiling", []TierSpec{replicaSpec("r", StrategyRoundRobin, 0, 1, -1)}, `member "m01": max_concurrency must be 1-100000`},
		{"member ceiling too large", []TierSpec{replicaSpec("r", StrategyCapacity, 0, 1, 100001)}, `member "m01": max_concurrency must be 1-100000`},
		{"capacity without member ceiling", []TierSpec{replicaSpec("r", StrategyCapacity, 0, 2, 0)}, `member "m01": max_concurrency is mandatory in capacity mode`},
		{"later tier is named", []TierSpec{direct, {ID: "e", MaxConcurrency: -5}}, `tier "e": max_concurrency`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.specs)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.True(t, errors.Is(err, ErrInvalidSpec), "%v", err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestNewEffectiveCeilings(t *testing.T) {
	tests := []struct {
		name string
		spec TierSpec
		want int64
	}{
		{"direct unlimited", TierSpec{ID: "d"}, 0},
		{"direct limited", TierSpec{ID: "d", MaxConcurrency: 3}, 3},
		{"round robin unlimited even with member ceilings", replicaSpec("r", StrategyRoundRobin, 0, 2, 2), 0},
		{"round robin limited", replicaSpec("r", StrategyRoundRobin, 5, 0, 0), 5},
		{"capacity defaults to the sum, never multiplied", replicaSpec("r", StrategyCapacity, 0, 2, 3, 4), 9},
		{"capacity explicit below the sum", replicaSpec("r", StrategyCapacity, 4, 2, 3, 4), 4},
		{"capacity explicit above the sum", replicaSpec("r", StrategyCapacity, 100, 2, 3), 100},
		{"sixteen members at the maximum ceiling", replicaSpec("r", StrategyCapacity, 0,
			1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5), 1_600_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTierT(t, tt.spec).Snapshot()
			assert.Equal(t, tt.want, s.MaxConcurrency)
			assert.Equal(t, StateAdmitting, s.State)
			checkInvariants(t, s)
		})
	}
}

func TestNewCopiesAndSortsMembers(t *testing.T) {
	members := []MemberSpec{{ID: "zeta", MaxConcurrency: 3}, {ID: "alpha", MaxConcurrency: 1}, {ID: "mid", MaxConcurrency: 2}}
	specs := []TierSpec{{ID: "r", Kind: KindReplica, Strategy: StrategyCapacity, Members: members}, {ID: "a-direct"}}
	set, err := New(specs)
	require.NoError(t, err)
	members[0].ID, members[0].MaxConcurrency = "changed", 99 // the Set must not see this
	specs[1].ID = "changed"

	tier, ok := set.Tier("r")
	require.True(t, ok)
	assert.Equal(t, "r", tier.ID())
	assert.Equal(t, KindReplica, tier.Kind())
	assert.Equal(t, StrategyCapacity, tier.Strategy())
	assert.Equal(t, []string{"alpha", "mid", "zeta"}, tier.Members())
	tier.Members()[0] = "mutated"
	assert.Equal(t, "alpha", tier.Members()[0], "Members returns a copy")
	snap := tier.Snapshot()
	require.Len(t, snap.Members, 3)
	assert.Equal(t, MemberSnapshot{ID: "alpha", State: StateAdmitting, MaxConcurrency: 1}, snap.Members[0])
	assert.Equal(t, MemberSnapshot{ID: "zeta", State: StateAdmitting, MaxConcurrency: 3}, snap.Members[2])
	assert.Equal(t, int64(6), snap.MaxConcurrency)

	assert.Equal(t, []string{"a-direct", "r"}, set.IDs())
	snaps := set.Snapshots()
	require.Len(t, snaps, 2)
	assert.Equal(t, "a-direct", snaps[0].ID)
	assert.Nil(t, snaps[0].Members)
	assert.Equal(t, "r", snaps[1].ID)
	_, ok = set.Tier("changed")
	assert.False(t, ok)
}

func TestNewEmpty(t *testing.T) {
	set, err := New(nil)
	require.NoError(t, err)
	assert.Empty(t, set.Snapshots())
	assert.Empty(t, set.IDs())
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, "round_robin", StrategyRoundRobin.String())
	assert.Equal(t, "capacity", StrategyCapacity.String())
	assert.Equal(t, "strategy(7)", Strategy(7).String())
	assert.Equal(t, "direct", KindDirect.String())
	assert.Equal(t, "replica", KindReplica.String())
	assert.Equal(t, "kind(9)", Kind(9).String())
}

package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// TestCapacityDecisiveCases drives the spec's decisive counterexamples through
// admission: real counts, real cursor, real reservation.
func TestCapacityDecisiveCases(t *testing.T) {
	ab := allReady("m00", "m01")
	type step struct {
		ready    map[string]bool
		pressure func(t *testing.T) map[string]scheduler.Pressure
		want     string // "" = refused with ErrExhausted
	}
	none := func(*testing.T) map[string]scheduler.Pressure { return nil }
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "0/2 beats 1/2, then the tie rotates fairly",
			steps: []step{
				{ready: map[string]bool{"m01": true}, pressure: none, want: "m01"}, // loads 0/2, 1/2; cursor 0
				{ready: ab, pressure: none, want: "m00"},                           // 0/2 beats 1/2 although m01 is not first in rotation
				{ready: ab, pressure: none, want: "m01"},                           // 1/2 vs 1/2: cursor 1 after m00
				{ready: ab, pressure: none, want: "m00"},                           // m00 1/2 vs m01 2/2 (full)
				{ready: ab, pressure: none, want: ""},                              // both full
			},
		},
		{
			name: "unknown at 0/2 beats fresh at 1/2",
			steps: []step{
				{ready: map[string]bool{"m01": true}, pressure: none, want: "m01"},
				{ready: ab, pressure: func(t *testing.T) map[string]scheduler.Pressure {
					return map[string]scheduler.Pressure{"m01": fresh(t, 0)} // m00 absent = unknown
				}, want: "m00"},
			},
		},
		{
			name: "stale at 0/2 also beats fresh at 1/2",
			steps: []step{
				{ready: map[string]bool{"m01": true}, pressure: none, want: "m01"},
				{ready: ab, pressure: func(t *testing.T) map[string]scheduler.Pressure {
					return map[string]scheduler.Pressure{"m00": stale(t), "m01": fresh(t, 0)}
				}, want: "m00"},
			},
		},
		{
			name: "fresh beats unknown at 0/2 even when unknown is first in rotation",
			steps: []step{
				{ready: ab, pressure: func(t *testing.T) map[string]scheduler.Pressure {
					return map[string]scheduler.Pressure{"m01": fresh(t, 999999)}
				}, want: "m01"},
			},
		},
		{
			name: "lower fresh ppm wins at equal local load",
			steps: []step{
				{ready: ab, pressure: func(t *testing.T) map[string]scheduler.Pressure {
					return map[string]scheduler.Pressure{"m00": fresh(t, 500000), "m01": fresh(t, 400000)}
				}, want: "m01"},
			},
		},
		{
			name: "all unknown falls to local load then rotation",
			steps: []step{
				{ready: ab, pressure: none, want: "m00"},
				{ready: ab, pressure: none, want: "m01"},
				{ready: ab, pressure: none, want: "m00"},
				{ready: ab, pressure: none, want: "m01"},
				{ready: ab, pressure: none, want: ""},
			},
		},
		{
			name: "not ready members are never picked",
			steps: []step{
				{ready: map[string]bool{"m00": false, "m01": true}, pressure: none, want: "m01"},
				{ready: map[string]bool{"m00": false, "m01": true}, pressure: none, want: "m01"},
				{ready: map[string]bool{"m00": false, "m01": true}, pressure: none, want: ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 2, 2))
			for k, st := range tt.steps {
				before := tier.Snapshot()
				l, err := acquire(tier, st.ready, st.pressure(t))
				if st.want == "" {
					require.ErrorIs(t, err, ErrExhausted, "step %d", k)
					assert.Nil(t, l)
					assert.Equal(t, before, tier.Snapshot(), "step %d: refusal changed state", k)
					continue
				}
				require.NoError(t, err, "step %d", k)
				require.Equal(t, st.want, l.Member(), "step %d", k)
				d, ok := l.Decision()
				require.True(t, ok)
				sel, ok := d.SelectedMemberID()
				require.True(t, ok)
				assert.Equal(t, st.want, sel)
				assert.Equal(t, scheduler.ReasonSelected, d.Reason())
				after := tier.Snapshot()
				assert.Equal(t, (indexOf(after, st.want)+1)%2, after.Cursor, "cursor = selected+1")
				checkInvariants(t, after)
			}
		})
	}
}

func indexOf(s Snapshot, member string) int {
	for i, m := range s.Members {
		if m.ID == member {
			return i
		}
	}
	return -1
}

// TestCapacityDecisionEvidence checks the decision on the lease: pre-reservation
// numerators, configured denominators, sorted eligible IDs, winning order.
func TestCapacityDecisionEvidence(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 2, 3, 4))
	mustAcquire(t, tier, map[string]bool{"m01": true}, nil, "m01")
	require.NoError(t, tier.QuiesceMember("m02", "swap"))

	l := mustAcquire(t, tier, allReady("m00", "m01", "m02"), map[string]scheduler.Pressure{"m01": fresh(t, 10)}, "m00")
	d, ok := l.Decision()
	require.True(t, ok)
	assert.Equal(t, []string{"m00", "m01"}, d.EligibleMemberIDs(), "quiesced m02 is not eligible")
	scores := d.Scores()
	require.Len(t, scores, 2)
	assert.Equal(t, "m00", scores[0].MemberID())
	assert.Equal(t, int64(0), scores[0].LocalActive(), "numerator is the pre-reservation count")
	assert.Equal(t, int64(2), scores[0].LocalCapacity())
	assert.True(t, scores[0].UpstreamUnknown())
	assert.Equal(t, "m01", scores[1].MemberID())
	assert.Equal(t, int64(1), scores[1].LocalActive())
	assert.Equal(t, int64(3), scores[1].LocalCapacity())
	ppm, has := scores[1].UpstreamPressurePPM()
	assert.True(t, has)
	assert.Equal(t, int64(10), ppm)
	assert.Equal(t, scheduler.FreshnessFresh, scores[1].Freshness())
	assert.Equal(t, 2, scores[1].RotatingRank(), "cursor 2 after m01: rank of m01 = (1-2+3)%3")
	assert.Equal(t, 1, scores[0].RotatingRank(), "rank of m00 = (0-2+3)%3")

	// The decision is immutable: later admissions do not change it.
	mustAcquire(t, tier, allReady("m00", "m01"), nil, "m01") // 1/3 beats 1/2
	d2, _ := l.Decision()
	assert.True(t, d.Equal(d2))
	assert.Equal(t, int64(0), d2.Scores()[0].LocalActive())
}

func TestCapacityCeilings(t *testing.T) {
	t.Run("member ceilings bound the default tier ceiling", func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 2))
		ready := allReady("m00", "m01")
		var got []string
		for range 3 {
			l, err := acquire(tier, ready, nil)
			require.NoError(t, err)
			got = append(got, l.Member())
		}
		assert.ElementsMatch(t, []string{"m00", "m01", "m01"}, got)
		_, err := acquire(tier, ready, nil)
		assert.ErrorIs(t, err, ErrExhausted)
		assert.ErrorIs(t, err, errTierFull, "the default tier ceiling is the sum 3")
		checkInvariants(t, tier.Snapshot())
	})
	t.Run("explicit tier ceiling below the sum", func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 2, 5, 5))
		ready := allReady("m00", "m01")
		for range 2 {
			_, err := acquire(tier, ready, nil)
			require.NoError(t, err)
		}
		before := tier.Snapshot()
		_, err := acquire(tier, ready, nil)
		assert.ErrorIs(t, err, errTierFull)
		assert.Equal(t, before, tier.Snapshot())
	})
	t.Run("full member is not eligible", func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 10, 1, 5))
		mustAcquire(t, tier, allReady("m00"), nil, "m00")
		_, err := acquire(tier, allReady("m00"), nil)
		assert.ErrorIs(t, err, errNoEligible)
		l := mustAcquire(t, tier, allReady("m00", "m01"), nil, "m01")
		d, _ := l.Decision()
		assert.Equal(t, []string{"m01"}, d.EligibleMemberIDs())
	})
	t.Run("every member quiesced", func(t *testing.T) {
		tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
		require.NoError(t, tier.QuiesceMember("m00", "a"))
		require.NoError(t, tier.QuiesceMember("m01", "b"))
		_, err := acquire(tier, allReady("m00", "m01"), nil)
		assert.ErrorIs(t, err, ErrQuiesced)
		assert.ErrorIs(t, err, errMembersQuiesced)
	})
}

// TestInvalidSnapshotsChangeNothing: malformed maps refuse before the lock,
// leaving counts, counters and cursor exactly as they were.
func TestInvalidSnapshotsChangeNothing(t *testing.T) {
	tests := []struct {
		name     string
		ready    map[string]bool
		pressure func(t *testing.T) map[string]scheduler.Pressure
		want     error
	}{
		{"unknown member in readiness", map[string]bool{"m00": true, "ghost": true}, nil, errIncompleteReady},
		{"unknown member false in readiness", map[string]bool{"m00": true, "ghost": false}, nil, errIncompleteReady},
		{"tier id in readiness", map[string]bool{"r": true}, nil, errIncompleteReady},
		{"empty key in readiness", map[string]bool{"": true}, nil, errIncompleteReady},
		{"unknown member in pressure", allReady("m00", "m01"), func(t *testing.T) map[string]scheduler.Pressure {
			return map[string]scheduler.Pressure{"m00": fresh(t, 0), "ghost": fresh(t, 0)}
		}, errIncompletePressure},
		{"unknown pressure even with unknown value", allReady("m00"), func(*testing.T) map[string]scheduler.Pressure {
			return map[string]scheduler.Pressure{"M00": scheduler.UnknownPressure()}
		}, errIncompletePressure},
	}
	for _, strategy := range []Strategy{StrategyCapacity, StrategyRoundRobin} {
		for _, tt := range tests {
			t.Run(strategy.String()+"/"+tt.name, func(t *testing.T) {
				tier := newTierT(t, replicaSpec("r", strategy, 0, 2, 2, 2))
				mustAcquire(t, tier, allReady("m00"), nil, "m00") // cursor 1, m00 1/2
				before := tier.Snapshot()
				var p map[string]scheduler.Pressure
				if tt.pressure != nil {
					p = tt.pressure(t)
				}
				l, err := acquire(tier, tt.ready, p)
				assert.Nil(t, l)
				assert.ErrorIs(t, err, ErrInvalidSnapshot)
				assert.ErrorIs(t, err, tt.want)
				assert.Equal(t, before, tier.Snapshot())
			})
		}
	}
}

// TestAcquireCopiesCallerMaps: the lease and later decisions do not depend on
// the caller's maps after AcquireMember returns.
func TestAcquireCopiesCallerMaps(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 2, 2))
	ready := allReady("m00", "m01")
	p := map[string]scheduler.Pressure{"m01": fresh(t, 0)}
	l := mustAcquire(t, tier, ready, p, "m01")
	ready["m01"] = false
	p["m01"] = scheduler.UnknownPressure()
	d, _ := l.Decision()
	assert.False(t, d.Scores()[0].UpstreamUnknown())
	assert.Equal(t, "m01", l.Member())
}

// The spec's "incomplete mappings refuse": a readiness map must name every configured member, and a
// pressure map must be nil (all unknown) or name every member. A missing member would otherwise read
// silently as not ready or as unknown.
func TestIncompleteSnapshotsRefuse(t *testing.T) {
	for _, s := range []Strategy{StrategyRoundRobin, StrategyCapacity} {
		t.Run(s.String(), func(t *testing.T) {
			tier := newTierT(t, replicaSpec("r", s, 0, 2, 2))
			before := tier.Snapshot()
			cases := []struct {
				name  string
				ready map[string]bool
				p     map[string]scheduler.Pressure
			}{
				{"nil readiness", nil, nil},
				{"readiness missing a member", map[string]bool{"m00": true}, nil},
				{"pressure missing a member", map[string]bool{"m00": true, "m01": true}, map[string]scheduler.Pressure{"m00": fresh(t, 0)}},
				{"empty non-nil pressure", map[string]bool{"m00": true, "m01": true}, map[string]scheduler.Pressure{}},
			}
			for _, c := range cases {
				_, err := tier.AcquireMember(c.ready, c.p, nil)
				assert.ErrorIs(t, err, ErrInvalidSnapshot, c.name)
			}
			assert.Equal(t, before, tier.Snapshot(), "refusals change no count and no cursor")
			l, err := tier.AcquireMember(map[string]bool{"m00": false, "m01": true}, nil, nil)
			require.NoError(t, err, "complete readiness with nil pressure is valid")
			assert.Equal(t, "m01", l.Member())
			l.Release()
		})
	}
}

// TestTrialMembersHoldOneLease: a member on trial (passive health's half-open member) is eligible
// only while it holds no lease, in either strategy, so concurrent requests send it one trial at a time.
func TestTrialMembersHoldOneLease(t *testing.T) {
	for _, strategy := range []Strategy{StrategyRoundRobin, StrategyCapacity} {
		t.Run(strategy.String(), func(t *testing.T) {
			tier := newTierT(t, replicaSpec("r", strategy, 0, 4, 4))
			ready := allReady("m00", "m01")
			trial := map[string]bool{"m00": true}
			first, err := tier.AcquireMember(map[string]bool{"m00": true, "m01": false}, nil, trial)
			require.NoError(t, err)
			assert.Equal(t, "m00", first.Member(), "an idle trial member is eligible")
			for range 3 {
				l, err := tier.AcquireMember(ready, nil, trial)
				require.NoError(t, err)
				assert.Equal(t, "m01", l.Member(), "while its trial runs, the member takes nothing more")
			}
			_, err = tier.AcquireMember(map[string]bool{"m00": true, "m01": false}, nil, trial)
			assert.ErrorIs(t, err, ErrExhausted, "the trial member alone cannot take a second request")
			assert.True(t, first.Release())
			l, err := tier.AcquireMember(map[string]bool{"m00": true, "m01": false}, nil, trial)
			require.NoError(t, err)
			assert.Equal(t, "m00", l.Member(), "the next trial once the first ended")
			l2, err := tier.AcquireMember(map[string]bool{"m00": true, "m01": false}, nil, nil)
			require.NoError(t, err)
			assert.Equal(t, "m00", l2.Member(), "off trial, the member ceiling applies again")
		})
	}
}

func TestTrialMapIsValidated(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 4, 4))
	before := tier.Snapshot()
	_, err := tier.AcquireMember(allReady("m00", "m01"), nil, map[string]bool{"ghost": true})
	assert.ErrorIs(t, err, ErrInvalidSnapshot)
	_, err = tier.AcquireMember(allReady("m00", "m01"), nil, map[string]bool{"m00": true, "ghost": false})
	assert.ErrorIs(t, err, ErrInvalidSnapshot)
	assert.Equal(t, before, tier.Snapshot(), "a refused input changes nothing")
}

package scheduler

import (
	"fmt"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rank(t *testing.T, cursor int, cands ...Candidate) Decision {
	t.Helper()
	d, err := Rank(cands, cursor)
	require.NoError(t, err)
	return d
}

// TestRankDecisive covers the spec's acceptance cases by name.
func TestRankDecisive(t *testing.T) {
	fresh0 := freshP(t, 0)
	t.Run("loads 0/2 and 1/2 pick the first", func(t *testing.T) {
		d := rank(t, 0, cand(t, "a", true, 0, 2, fresh0), cand(t, "b", true, 1, 2, fresh0))
		assert.Equal(t, "a", selected(d))
		// Whatever the cursor says: local ratio comes before rotation.
		d = rank(t, 1, cand(t, "a", true, 0, 2, fresh0), cand(t, "b", true, 1, 2, fresh0))
		assert.Equal(t, "a", selected(d))
	})
	t.Run("after the reservation the tie rotates fairly", func(t *testing.T) {
		// "a" (sorted index 0) was reserved from cursor 0: loads are now 1/2 and 1/2 and
		// admission advanced the cursor to (0+1)%2 = 1, so "b" wins the tie.
		d := rank(t, 1, cand(t, "a", true, 1, 2, fresh0), cand(t, "b", true, 1, 2, fresh0))
		assert.Equal(t, "b", selected(d))
		assert.Equal(t, []int{0, 1}, ranks(d))
		// Next the cursor is (1+1)%2 = 0: the tie would go back to "a".
		d = rank(t, 0, cand(t, "a", true, 0, 2, fresh0), cand(t, "b", true, 0, 2, fresh0))
		assert.Equal(t, "a", selected(d))
	})
	t.Run("unknown at 0/2 beats fresh at 1/2", func(t *testing.T) {
		for _, f := range []Freshness{FreshnessUnknown, FreshnessStale, FreshnessFailed} {
			d := rank(t, 0, cand(t, "a", true, 1, 2, fresh0), cand(t, "b", true, 0, 2, classP(t, f)))
			assert.Equal(t, "b", selected(d), f.String())
		}
	})
	t.Run("fresh beats unknown when both are 0/2", func(t *testing.T) {
		for _, f := range []Freshness{FreshnessUnknown, FreshnessStale, FreshnessFailed} {
			// The unknown member also holds the better rotating rank.
			d := rank(t, 0, cand(t, "a", true, 0, 2, classP(t, f)), cand(t, "b", true, 0, 2, fresh0))
			assert.Equal(t, "b", selected(d), f.String())
			// Even very high fresh pressure beats unknown telemetry.
			d = rank(t, 0, cand(t, "a", true, 0, 2, classP(t, f)), cand(t, "b", true, 0, 2, freshP(t, MaxPressurePPM)))
			assert.Equal(t, "b", selected(d), f.String())
		}
	})
	t.Run("all unknown falls to local pressure then rotation", func(t *testing.T) {
		u := UnknownPressure()
		d := rank(t, 0, cand(t, "a", true, 1, 2, u), cand(t, "b", true, 1, 4, u), cand(t, "c", true, 1, 4, u))
		assert.Equal(t, []string{"b", "c", "a"}, rowIDs(d), "1/4 before 1/2, then rotation")
		d = rank(t, 2, cand(t, "a", true, 1, 2, u), cand(t, "b", true, 1, 4, u), cand(t, "c", true, 1, 4, u))
		assert.Equal(t, []string{"c", "b", "a"}, rowIDs(d), "cursor 2 puts c first among equals")
	})
}

// TestRankScoreDimensions isolates each key component: all earlier components tie.
func TestRankScoreDimensions(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		cur   int
		want  []string
	}{
		{"local ratio by cross-product, not equal actives", []Candidate{
			cand(t, "a", true, 2, 3, freshP(t, 0)), // 0.667
			cand(t, "b", true, 3, 5, freshP(t, 0)), // 0.6
		}, 0, []string{"b", "a"}},
		{"local ratios equal across different ceilings", []Candidate{
			cand(t, "a", true, 2, 4, freshP(t, 0)),
			cand(t, "b", true, 1, 2, freshP(t, 0)),
		}, 1, []string{"b", "a"}},
		{"ratios closer than one ppm stay distinct", []Candidate{
			cand(t, "a", true, 99_999, 100_000, freshP(t, 0)),
			cand(t, "b", true, 99_998, 99_999, freshP(t, 0)),
		}, 0, []string{"b", "a"}},
		{"upstream unknown after fresh", []Candidate{
			cand(t, "a", true, 0, 1, UnknownPressure()),
			cand(t, "b", true, 0, 1, freshP(t, 1_500_000)),
		}, 0, []string{"b", "a"}},
		{"ppm ascending", []Candidate{
			cand(t, "a", true, 0, 1, freshP(t, 500_001)),
			cand(t, "b", true, 0, 1, freshP(t, 500_000)),
			cand(t, "c", true, 0, 1, freshP(t, 2_000_000)),
		}, 0, []string{"b", "a", "c"}},
		{"non-fresh classes tie on upstream", []Candidate{
			cand(t, "a", true, 0, 1, classP(t, FreshnessStale)),
			cand(t, "b", true, 0, 1, classP(t, FreshnessFailed)),
			cand(t, "c", true, 0, 1, classP(t, FreshnessUnknown)),
		}, 1, []string{"b", "c", "a"}},
		{"rotating rank ascending", []Candidate{
			cand(t, "a", true, 0, 1, freshP(t, 5)),
			cand(t, "b", true, 0, 1, freshP(t, 5)),
			cand(t, "c", true, 0, 1, freshP(t, 5)),
			cand(t, "d", true, 0, 1, freshP(t, 5)),
		}, 3, []string{"d", "a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rank(t, tt.cur, tt.cands...)
			assert.Equal(t, tt.want, rowIDs(d))
			assert.Equal(t, tt.want[0], selected(d))
		})
	}
}

func TestRankFilteringAndEvidence(t *testing.T) {
	stale := classP(t, FreshnessStale)
	d := rank(t, 1,
		cand(t, "m3", true, 2, 2, freshP(t, 0)),  // full
		cand(t, "m1", false, 0, 2, freshP(t, 0)), // not eligible
		cand(t, "m4", true, 1, 2, stale),
		cand(t, "m2", true, 1, 2, freshP(t, 250_000)),
		cand(t, "m0", true, 9, 2, freshP(t, 0)), // over its ceiling
	)
	assert.Equal(t, ReasonSelected, d.Reason())
	id, ok := d.SelectedMemberID()
	assert.True(t, ok)
	assert.Equal(t, "m2", id)
	assert.Equal(t, []string{"m2", "m4"}, d.EligibleMemberIDs())
	assert.Equal(t, 2, d.EligibleCount())
	// Sorted membership m0..m4, cursor 1: m2 has rank 1, m4 rank 3.
	want := []Score{
		mustScore(t, "m2", 1, 2, false, 250_000, true, FreshnessFresh, 1),
		mustScore(t, "m4", 1, 2, true, 0, false, FreshnessStale, 3),
	}
	assert.Equal(t, want, d.Scores())
}

func TestRankNoEligibleMember(t *testing.T) {
	d := rank(t, 0,
		cand(t, "a", false, 0, 2, freshP(t, 0)),
		cand(t, "b", true, 2, 2, freshP(t, 0)),
	)
	assert.Equal(t, ReasonNoEligible, d.Reason())
	id, ok := d.SelectedMemberID()
	assert.False(t, ok)
	assert.Empty(t, id)
	assert.Empty(t, d.EligibleMemberIDs())
	assert.Empty(t, d.Scores())
	assert.True(t, d.Equal(Decision{}))
}

func TestRankRotationIsFair(t *testing.T) {
	// Equal members: each round picks one, "reserves and releases" it, and advances the
	// cursor past its sorted index. Every member must win once per N rounds, in order.
	for n := ident.MinMembers; n <= ident.MaxMembers; n++ {
		cands := make([]Candidate, n)
		for i := range cands {
			// Input in reverse ID order: rotation must follow sorted IDs, not input.
			cands[n-1-i] = cand(t, fmt.Sprintf("m%02d", i), true, 3, 8, freshP(t, 100))
		}
		cursor := 0
		for round := 0; round < 2*n; round++ {
			d := rank(t, cursor, cands...)
			want := fmt.Sprintf("m%02d", round%n)
			require.Equal(t, want, selected(d), "n=%d round=%d", n, round)
			i := (cursor + d.Scores()[0].RotatingRank()) % n // selected sorted index
			cursor = (i + 1) % n
		}
	}
}

func TestRankValidation(t *testing.T) {
	p := freshP(t, 0)
	many := make([]Candidate, ident.MaxMembers+1)
	for i := range many {
		many[i] = cand(t, fmt.Sprintf("m%d", i), true, 0, 1, p)
	}
	tests := []struct {
		name   string
		cands  []Candidate
		cursor int
		err    error
	}{
		{"nil", nil, 0, ErrCandidates},
		{"one", many[:1], 0, ErrCandidates},
		{"seventeen", many, 0, ErrCandidates},
		{"zero candidate", []Candidate{many[0], {}}, 0, ErrCandidates},
		{"duplicate", []Candidate{many[0], many[1], many[0]}, 0, ErrDuplicateMember},
		{"duplicate with different data", []Candidate{many[0], cand(t, "m0", false, 1, 3, UnknownPressure())}, 0, ErrDuplicateMember},
		{"negative cursor", many[:2], -1, ErrCursor},
		{"cursor N", many[:2], 2, ErrCursor},
		{"cursor far out", many[:16], 1 << 40, ErrCursor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Rank(tt.cands, tt.cursor)
			assert.ErrorIs(t, err, tt.err)
			assert.True(t, d.Equal(Decision{}))
		})
	}
	_, err := Rank(many[:16], 15)
	assert.NoError(t, err, "16 members and cursor N-1 are in range")
}

func TestRankDoesNotRetainInput(t *testing.T) {
	cands := []Candidate{cand(t, "a", true, 0, 2, freshP(t, 0)), cand(t, "b", true, 1, 2, freshP(t, 0))}
	d := rank(t, 0, cands...)
	before := d.Scores()
	cands[0] = cand(t, "z", true, 1, 9, UnknownPressure())
	assert.Equal(t, before, d.Scores())
	rows := d.Scores()
	rows[0] = Score{}
	ids := d.EligibleMemberIDs()
	ids[0] = "mutated"
	assert.Equal(t, before, d.Scores())
	assert.Equal(t, []string{"a", "b"}, d.EligibleMemberIDs())
}

func rowIDs(d Decision) []string {
	var ids []string
	for _, s := range d.Scores() {
		ids = append(ids, s.MemberID())
	}
	return ids
}

func ranks(d Decision) []int {
	var r []int
	for _, s := range d.Scores() {
		r = append(r, s.RotatingRank())
	}
	return r
}

func mustScore(t testing.TB, id string, active, capacity int64, unknown bool, ppm int64, has bool, f Freshness, rank int) Score {
	t.Helper()
	s, err := NewScore(id, active, capacity, unknown, ppm, has, f, rank)
	require.NoError(t, err)
	return s
}

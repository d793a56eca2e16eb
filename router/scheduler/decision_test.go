package scheduler

import (
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reconstitute rebuilds d through NewDecision, as decision-log ingestion does.
func reconstitute(d Decision) (Decision, error) {
	id, ok := d.SelectedMemberID()
	return NewDecision(id, ok, d.Reason(), d.EligibleMemberIDs(), d.Scores())
}

func TestNewDecisionRoundTrip(t *testing.T) {
	d := rank(t, 2,
		cand(t, "a", true, 0, 2, UnknownPressure()),
		cand(t, "b", true, 1, 2, freshP(t, 0)),
		cand(t, "c", true, 0, 2, freshP(t, 10)),
		cand(t, "d", true, 0, 2, freshP(t, 10)),
	)
	require.Equal(t, []string{"c", "d", "a", "b"}, rowIDs(d))
	got, err := reconstitute(d)
	require.NoError(t, err)
	assert.True(t, got.Equal(d))
	assert.Equal(t, d.EligibleMemberIDs(), got.EligibleMemberIDs())

	empty, err := NewDecision("", false, ReasonNoEligible, nil, nil)
	require.NoError(t, err)
	assert.True(t, empty.Equal(Decision{}))
	empty, err = NewDecision("", false, ReasonNoEligible, []string{}, []Score{})
	require.NoError(t, err)
	assert.True(t, empty.Equal(Decision{}))
}

func TestNewDecisionCopiesInput(t *testing.T) {
	rows := []Score{mustScore(t, "a", 0, 1, false, 0, true, FreshnessFresh, 0)}
	ids := []string{"a"}
	d, err := NewDecision("a", true, ReasonSelected, ids, rows)
	require.NoError(t, err)
	rows[0] = mustScore(t, "b", 0, 1, false, 0, true, FreshnessFresh, 0)
	ids[0] = "b"
	assert.Equal(t, []string{"a"}, d.EligibleMemberIDs())
	assert.Equal(t, "a", d.Scores()[0].MemberID())
}

func TestNewDecisionValidation(t *testing.T) {
	fresh := func(id string, active int64, ppm int64, rank int) Score {
		return mustScore(t, id, active, 4, false, ppm, true, FreshnessFresh, rank)
	}
	a0, b1, c2 := fresh("a", 0, 0, 0), fresh("b", 0, 0, 1), fresh("c", 0, 0, 2)
	many := make([]string, ident.MaxMembers+1)
	manyRows := make([]Score, ident.MaxMembers+1)
	for i := range many {
		many[i] = string(rune('a' + i))
		manyRows[i] = fresh(many[i], 0, 0, i%ident.MaxMembers)
	}
	tests := []struct {
		name     string
		selected string
		has      bool
		r        Reason
		eligible []string
		scores   []Score
		err      error
	}{
		{"bad reason", "a", true, Reason(2), []string{"a"}, []Score{a0}, ErrOutOfRange},
		{"17 eligible", "a", true, ReasonSelected, many, manyRows, ErrOutOfRange},
		{"bad eligible id", "a", true, ReasonSelected, []string{"A"}, []Score{a0}, ErrInvalidID},
		{"duplicate eligible id", "a", true, ReasonSelected, []string{"a", "a"}, []Score{a0, b1}, ErrDuplicateMember},
		{"unsorted eligible ids", "a", true, ReasonSelected, []string{"b", "a"}, []Score{a0, b1}, ErrInconsistent},
		{"fewer rows than eligible", "a", true, ReasonSelected, []string{"a", "b"}, []Score{a0}, ErrInconsistent},
		{"more rows than eligible", "a", true, ReasonSelected, []string{"a"}, []Score{a0, b1}, ErrInconsistent},
		{"zero score row", "a", true, ReasonSelected, []string{"a", "b"}, []Score{a0, {}}, ErrInvalidID},
		{"row for a non-eligible member", "a", true, ReasonSelected, []string{"a", "c"}, []Score{a0, b1}, ErrInconsistent},
		{"duplicate rows", "a", true, ReasonSelected, []string{"a", "b"}, []Score{a0, a0}, ErrDuplicateMember},
		{"duplicate rotating rank", "a", true, ReasonSelected, []string{"a", "b"}, []Score{a0, fresh("b", 0, 0, 0)}, ErrInconsistent},
		{"rows out of winning order", "b", true, ReasonSelected, []string{"a", "b"}, []Score{b1, a0}, ErrInconsistent},
		{"higher ratio first", "a", true, ReasonSelected, []string{"a", "b"}, []Score{fresh("a", 1, 0, 0), b1}, ErrInconsistent},
		{"higher ppm first", "a", true, ReasonSelected, []string{"a", "b"}, []Score{fresh("a", 0, 9, 0), b1}, ErrInconsistent},
		{"unknown before fresh", "a", true, ReasonSelected, []string{"a", "b"},
			[]Score{mustScore(t, "a", 0, 4, true, 0, false, FreshnessStale, 0), b1}, ErrInconsistent},
		{"ranks not a rotation of id order", "b", true, ReasonSelected, []string{"a", "b", "c"},
			[]Score{fresh("b", 0, 0, 0), fresh("a", 0, 0, 1), fresh("c", 0, 0, 2)}, ErrInconsistent},
		{"ranks wrap twice", "c", true, ReasonSelected, []string{"a", "b", "c", "d"},
			[]Score{fresh("b", 0, 0, 0), fresh("d", 0, 0, 1), fresh("a", 0, 0, 2), fresh("c", 0, 0, 3)}, ErrInconsistent},
		{"selection not the first row", "b", true, ReasonSelected, []string{"a", "b"}, []Score{a0, b1}, ErrInconsistent},
		{"no selection with rows", "", false, ReasonSelected, []string{"a"}, []Score{a0}, ErrInconsistent},
		{"no-eligible reason with rows", "a", true, ReasonNoEligible, []string{"a"}, []Score{a0}, ErrInconsistent},
		{"selection without rows", "a", true, ReasonSelected, nil, nil, ErrInconsistent},
		{"selected reason without rows", "", false, ReasonSelected, nil, nil, ErrInconsistent},
		{"stray selected id", "a", false, ReasonNoEligible, nil, nil, ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecision(tt.selected, tt.has, tt.r, tt.eligible, tt.scores)
			assert.ErrorIs(t, err, tt.err)
			assert.True(t, d.Equal(Decision{}))
		})
	}
	// A wrapped rotation is legal: sorted a,b,c with cursor 1 gives ranks 2,0,1.
	_, err := NewDecision("b", true, ReasonSelected, []string{"a", "b", "c"},
		[]Score{fresh("b", 0, 0, 0), fresh("c", 0, 0, 1), fresh("a", 0, 0, 2)})
	assert.NoError(t, err)
	_, err = NewDecision("a", true, ReasonSelected, []string{"a", "b", "c"}, []Score{a0, b1, c2})
	assert.NoError(t, err)
}

func TestDecisionEqual(t *testing.T) {
	mk := func(cursor int, bActive int64) Decision {
		return rank(t, cursor, cand(t, "a", true, 0, 2, freshP(t, 0)), cand(t, "b", true, bActive, 2, freshP(t, 0)))
	}
	assert.True(t, mk(0, 0).Equal(mk(0, 0)))
	x, y := mk(0, 0), mk(0, 0)
	assert.True(t, x == y, "== agrees with Equal")
	back, err := reconstitute(mk(1, 1))
	require.NoError(t, err)
	assert.True(t, back == mk(1, 1), "reconstitution yields an identical value")
	assert.False(t, mk(0, 0).Equal(mk(1, 0)), "different ranks")
	assert.False(t, mk(0, 0).Equal(mk(0, 1)), "different counts")
	assert.False(t, mk(0, 0).Equal(mk(0, 2)), "different row count")
	assert.False(t, mk(0, 0).Equal(Decision{}))
}

func TestIndexedAccessorsMatchTheCopies(t *testing.T) {
	p := UnknownPressure()
	var cands []Candidate
	for i, id := range []string{"c", "a", "b"} {
		c, err := NewCandidate(id, true, int64(i), 4, p)
		require.NoError(t, err)
		cands = append(cands, c)
	}
	d, err := Rank(cands, 1)
	require.NoError(t, err)
	require.Equal(t, 3, d.EligibleCount())
	for i, s := range d.Scores() {
		assert.Equal(t, s, d.Score(i))
	}
	for j, id := range d.EligibleMemberIDs() {
		assert.Equal(t, id, d.EligibleID(j))
	}
	assert.Panics(t, func() { d.Score(3) })
	assert.Panics(t, func() { d.EligibleID(3) })
}

// Evidence Rank can never produce is refused: a, b, c with ranks 0, 0, 1 (b and a share rank 0, which
// no rotation of three members gives).
func TestNewDecisionRefusesDuplicateRanks(t *testing.T) {
	a, err := NewScore("a", 0, 2, true, 0, false, FreshnessUnknown, 0)
	require.NoError(t, err)
	c, err := NewScore("c", 1, 2, true, 0, false, FreshnessUnknown, 1)
	require.NoError(t, err)
	b, err := NewScore("b", 2, 3, true, 0, false, FreshnessUnknown, 0)
	require.NoError(t, err)
	_, err = NewDecision("a", true, ReasonSelected, []string{"a", "b", "c"}, []Score{a, c, b})
	assert.ErrorIs(t, err, ErrInconsistent)
}

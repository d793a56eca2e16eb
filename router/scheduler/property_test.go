package scheduler

import (
	"math/big"
	"slices"
	"sort"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// pressureGen draws every freshness class; fresh ppm is drawn from a tiny range half
// the time so that ties (and hence deeper key components) are common.
func pressureGen() *rapid.Generator[Pressure] {
	return rapid.Custom(func(t *rapid.T) Pressure {
		switch rapid.IntRange(0, 4).Draw(t, "class") {
		case 0, 1:
			ppm := rapid.OneOf(rapid.Int64Range(0, 2), rapid.Int64Range(0, MaxPressurePPM)).Draw(t, "ppm")
			return Pressure{freshness: FreshnessFresh, requests: SignalValid, hasPPM: true, ppm: ppm}
		case 2:
			return Pressure{freshness: FreshnessStale, requests: SignalValid, kv: SignalValid}
		case 3:
			return Pressure{freshness: FreshnessFailed}
		}
		return UnknownPressure()
	})
}

type rankInput struct {
	cands  []Candidate
	cursor int
}

func rankInputGen() *rapid.Generator[rankInput] {
	return rapid.Custom(func(t *rapid.T) rankInput {
		n := rapid.IntRange(ident.MinMembers, ident.MaxMembers).Draw(t, "n")
		ids := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9][a-z0-9._-]{0,4}`), n, n, rapid.ID[string]).Draw(t, "ids")
		cands := make([]Candidate, n)
		for i, id := range ids {
			capacity := rapid.OneOf(rapid.Int64Range(1, 4), rapid.Int64Range(1, ident.MaxCeiling)).Draw(t, "capacity")
			active := rapid.Int64Range(0, capacity+1).Draw(t, "active")
			c, err := NewCandidate(id, rapid.Bool().Draw(t, "eligible"), active, capacity, pressureGen().Draw(t, "pressure"))
			if err != nil {
				t.Fatalf("generator built an invalid candidate: %v", err)
			}
			cands[i] = c
		}
		return rankInput{cands: cands, cursor: rapid.IntRange(0, n-1).Draw(t, "cursor")}
	})
}

func TestPropertyRankPermutationInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := rankInputGen().Draw(t, "input")
		want, err := Rank(in.cands, in.cursor)
		require.NoError(t, err)
		perm := rapid.Permutation(in.cands).Draw(t, "perm")
		got, err := Rank(perm, in.cursor)
		require.NoError(t, err)
		require.True(t, want.Equal(got), "decision changed under permutation")
		require.Equal(t, want.EligibleMemberIDs(), got.EligibleMemberIDs())
	})
}

// TestPropertyRankMatchesModel checks Rank against an independent, obviously correct
// model: exact rational local ratios (math/big), the documented key, a library sort.
func TestPropertyRankMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := rankInputGen().Draw(t, "input")
		d, err := Rank(in.cands, in.cursor)
		require.NoError(t, err)

		model := modelRank(in.cands, in.cursor)
		require.Equal(t, model, rowIDs(d), "winning order")

		eligible := d.EligibleMemberIDs()
		require.True(t, slices.IsSorted(eligible), "eligible ids sorted")
		want := slices.Clone(model)
		slices.Sort(want)
		require.Equal(t, want, eligible, "eligible = schedulable members")

		byID := map[string]Candidate{}
		for _, c := range in.cands {
			byID[c.MemberID()] = c
		}
		id, ok := d.SelectedMemberID()
		require.Equal(t, len(model) > 0, ok)
		if !ok {
			require.Equal(t, ReasonNoEligible, d.Reason())
			return
		}
		require.Equal(t, ReasonSelected, d.Reason())
		winner := byID[id]
		require.True(t, winner.Eligible(), "winner is eligible")
		require.Less(t, winner.Active(), winner.Capacity(), "winner is not full")
		for _, s := range d.Scores() {
			c := byID[s.MemberID()]
			require.Equal(t, c.Active(), s.LocalActive())
			require.Equal(t, c.Capacity(), s.LocalCapacity())
			require.Equal(t, c.Pressure().Freshness(), s.Freshness())
			require.Equal(t, c.Pressure().Unknown(), s.UpstreamUnknown())
			if s.MemberID() != id {
				require.False(t, s.less(d.Scores()[0]), "winner is minimal")
			}
		}
		back, err := reconstitute(d)
		require.NoError(t, err, "Rank output must pass NewDecision")
		require.True(t, back.Equal(d))
	})
}

func modelRank(cands []Candidate, cursor int) []string {
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.MemberID()
	}
	sort.Strings(ids)
	n := len(ids)
	type row struct {
		id      string
		ratio   *big.Rat
		unknown bool
		ppm     int64
		rank    int
	}
	var rows []row
	for _, c := range cands {
		if !c.Eligible() || c.Active() >= c.Capacity() {
			continue
		}
		i := sort.SearchStrings(ids, c.MemberID())
		ppm, _ := c.Pressure().PPM()
		rows = append(rows, row{c.MemberID(), big.NewRat(c.Active(), c.Capacity()),
			c.Pressure().Freshness() != FreshnessFresh, ppm, ((i-cursor)%n + n) % n})
	}
	sort.Slice(rows, func(a, b int) bool {
		x, y := rows[a], rows[b]
		if c := x.ratio.Cmp(y.ratio); c != 0 {
			return c < 0
		}
		if x.unknown != y.unknown {
			return y.unknown
		}
		if x.ppm != y.ppm {
			return x.ppm < y.ppm
		}
		return x.rank < y.rank
	})
	out := []string{}
	for _, r := range rows {
		out = append(out, r.id)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// TestPropertyRotationServesEveryTiedMember: with the cursor advanced after each
// selection, N successive decisions over N tied members select each exactly once.
func TestPropertyRotationServesEveryTiedMember(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(ident.MinMembers, ident.MaxMembers).Draw(t, "n")
		ids := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9]{0,3}`), n, n, rapid.ID[string]).Draw(t, "ids")
		p := pressureGen().Draw(t, "shared pressure")
		cands := make([]Candidate, n)
		for i, id := range ids {
			cands[i], _ = NewCandidate(id, true, 1, 3, p)
		}
		cursor := rapid.IntRange(0, n-1).Draw(t, "cursor")
		seen := map[string]bool{}
		for range n {
			d, err := Rank(cands, cursor)
			require.NoError(t, err)
			id, _ := d.SelectedMemberID()
			require.False(t, seen[id], "member %s served twice in one rotation", id)
			seen[id] = true
			cursor = (cursor + d.Scores()[0].RotatingRank() + 1) % n
		}
		require.Len(t, seen, n)
	})
}

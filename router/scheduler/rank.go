package scheduler

import (
	"fmt"

	"github.com/anvil-llm/anvil/router/ident"
)

// Rank is the fixed scheduling function. cands must be the tier's full configured
// membership (2..16 unique, constructed candidates, in any order) and cursor the
// tier's rotation cursor in 0..N-1; otherwise it returns ErrCandidates,
// ErrDuplicateMember or ErrCursor and no decision.
//
// Members are sorted by ID; member i gets rotating rank (i - cursor + N) % N. Members
// that are not Schedulable are dropped, the rest are ordered by the score order in the
// package comment, and the first is selected. An empty schedulable set is not an error:
// it is a Decision with ReasonNoEligible. The result never depends on the order of
// cands. After reserving the selected member (sorted index i = (cursor+rank) % N) the
// caller advances its cursor to (i+1) % N.
//
// Rank does not allocate: it runs under admission's tier lock, where a heap
// allocation (and a possible GC assist) would lengthen the critical section.
func Rank(cands []Candidate, cursor int) (Decision, error) {
	n := len(cands)
	if n < ident.MinMembers || n > ident.MaxMembers {
		return Decision{}, ErrCandidates
	}
	order, err := sortByID(cands)
	if err != nil {
		return Decision{}, err
	}
	if cursor < 0 || cursor >= n {
		return Decision{}, ErrCursor
	}
	// sched holds the sorted indices of schedulable members, in ID order.
	var sched [ident.MaxMembers]uint8
	k := 0
	for i := 0; i < n; i++ {
		if cands[order[i]].Schedulable() {
			sched[k] = uint8(i)
			k++
		}
	}
	if k == 0 {
		return Decision{}, nil
	}
	// win holds positions into sched, insertion-sorted into winning order. Keys are
	// compared straight from the candidates, so no Score is built until the result.
	var win [ident.MaxMembers]uint8
	for j := 0; j < k; j++ {
		win[j] = uint8(j)
		for p := j; p > 0; p-- {
			a, b := int(sched[win[p]]), int(sched[win[p-1]])
			if !candLess(&cands[order[a]], &cands[order[b]], rotate(a, cursor, n), rotate(b, cursor, n)) {
				break
			}
			win[p], win[p-1] = win[p-1], win[p]
		}
	}
	d := Decision{reason: ReasonSelected, n: uint8(k)}
	for pos := 0; pos < k; pos++ {
		i := int(sched[win[pos]])
		d.scores[pos] = scoreOf(&cands[order[i]], rotate(i, cursor, n))
		d.byID[win[pos]] = uint8(pos)
	}
	return d, nil
}

// rotate is the rotating rank (i - cursor + n) % n of sorted index i, for
// 0 <= i, cursor < n, without a division.
func rotate(i, cursor, n int) int {
	if r := i - cursor; r >= 0 {
		return r
	}
	return i - cursor + n
}

// candLess is Score.less evaluated on candidates (ra, rb are their rotating ranks);
// TestPropertyRankMatchesModel and NewDecision's order check keep the two in step.
func candLess(a, b *Candidate, ra, rb int) bool {
	// Cross-products are at most MaxActive*ident.MaxCeiling = 1e14: exact in int64.
	if l, r := a.active*b.capacity, b.active*a.capacity; l != r {
		return l < r
	}
	if ua, ub := a.pressure.Unknown(), b.pressure.Unknown(); ua != ub {
		return !ua
	}
	if a.pressure.ppm != b.pressure.ppm {
		return a.pressure.ppm < b.pressure.ppm
	}
	return ra < rb
}

// sortByID returns candidate indices sorted by member ID, rejecting zero candidates
// and duplicates. Insertion sort: N <= 16 and no allocation.
func sortByID(cands []Candidate) ([ident.MaxMembers]uint8, error) {
	var order [ident.MaxMembers]uint8
	for i := range cands {
		if cands[i].capacity == 0 { // only the zero Candidate lacks a capacity
			return order, fmt.Errorf("%w: candidate was never constructed", ErrCandidates)
		}
		order[i] = uint8(i)
		for p := i; p > 0 && cands[order[p]].id < cands[order[p-1]].id; p-- {
			order[p], order[p-1] = order[p-1], order[p]
		}
	}
	for i := 1; i < len(cands); i++ {
		if cands[order[i]].id == cands[order[i-1]].id {
			return order, ErrDuplicateMember
		}
	}
	return order, nil
}

func scoreOf(c *Candidate, rank int) Score {
	ppm, has := c.pressure.PPM()
	return Score{
		id:       c.id,
		active:   int32(c.active), // schedulable: active < capacity <= ident.MaxCeiling
		capacity: int32(c.capacity),
		ppm:      ppm,
		hasPPM:   has,
		unknown:  c.pressure.Unknown(),
		fresh:    c.pressure.freshness,
		rank:     uint8(rank),
	}
}

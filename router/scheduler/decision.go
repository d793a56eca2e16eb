package scheduler

import (
	"fmt"

	"github.com/anvil-llm/anvil/router/ident"
)

// Decision is the immutable outcome of one Rank call and the evidence attached to a
// capacity lease. Its four canonical fields are the selected member (if any), the
// reason, the sorted eligible IDs and the score rows in winning order.
//
// The zero value is the consistent "no eligible member" decision. A Decision is a
// plain value (664 bytes on 64-bit, rows held inline, no shared backing array), so Rank
// needs no allocation and copies are independent; accessors return fresh slices.
// Decisions are comparable with ==, which agrees with Equal.
type Decision struct {
	reason Reason
	n      uint8 // number of rows = number of eligible members
	// byID[j] is the row of the j-th eligible member in ID order, so the sorted
	// eligible list is derived rather than stored.
	byID   [ident.MaxMembers]uint8
	scores [ident.MaxMembers]Score // rows[0:n] in winning order; the rest stay zero
}

// rows returns the used part of d.scores.
func (d *Decision) rows() []Score { return d.scores[:d.n] }

// SelectedMemberID returns the chosen member and true, or "" and false when no member
// was eligible.
func (d Decision) SelectedMemberID() (string, bool) {
	if d.reason != ReasonSelected || d.n == 0 {
		return "", false
	}
	return d.scores[0].id, true
}

// Reason returns ReasonSelected or ReasonNoEligible.
func (d Decision) Reason() Reason { return d.reason }

// EligibleMemberIDs returns a new slice of the members that were eligible and below
// their ceilings, sorted by ID. It is nil when none was.
func (d Decision) EligibleMemberIDs() []string {
	if d.n == 0 {
		return nil
	}
	ids := make([]string, d.n)
	for j := range ids {
		ids[j] = d.scores[d.byID[j]].id
	}
	return ids
}

// EligibleCount returns the number of eligible members (and of score rows) without
// allocating.
func (d Decision) EligibleCount() int { return int(d.n) }

// Score returns row i in winning order (0 = selected) without allocating. It panics when i is outside
// 0..EligibleCount()-1, as indexing a slice would.
func (d Decision) Score(i int) Score { return d.rows()[i] }

// EligibleID returns the j-th eligible member ID in sorted order without allocating. It panics when j
// is outside 0..EligibleCount()-1.
func (d Decision) EligibleID(j int) string { return d.scores[d.byID[:d.n][j]].id }

// Scores returns a new slice of the score rows in winning order (first = selected).
// It is nil when no member was eligible.
func (d Decision) Scores() []Score {
	if d.n == 0 {
		return nil
	}
	return append([]Score(nil), d.rows()...)
}

// Equal reports whether d and o carry the same four canonical fields. Equal rows
// imply equal eligible lists, which are derived from them.
func (d Decision) Equal(o Decision) bool {
	return d.reason == o.reason && d.n == o.n && d.scores == o.scores
}

// NewDecision validates and copies a decision's four fields (for reconstitution from
// captured evidence; Rank builds decisions directly). It accepts exactly what Rank can
// produce:
//   - at most ident.MaxMembers eligible IDs, each valid, strictly ascending (ErrOutOfRange,
//     ErrInvalidID, ErrDuplicateMember, ErrInconsistent);
//   - one constructed score row per eligible ID and no other rows;
//   - rows strictly in winning order under the score order, with unique rotating ranks
//     that form one rotation of the sorted membership;
//   - selected exactly when some member was eligible, naming the first row, with
//     ReasonSelected; otherwise "" and ReasonNoEligible.
func NewDecision(selected string, hasSelected bool, r Reason, eligible []string, scores []Score) (Decision, error) {
	if !r.Valid() {
		return Decision{}, fmt.Errorf("%w: reason", ErrOutOfRange)
	}
	if len(eligible) > ident.MaxMembers || len(scores) > ident.MaxMembers {
		return Decision{}, fmt.Errorf("%w: more than 16 eligible members or score rows", ErrOutOfRange)
	}
	if err := checkSortedIDs(eligible); err != nil {
		return Decision{}, err
	}
	if len(scores) != len(eligible) {
		return Decision{}, fmt.Errorf("%w: one score row per eligible member", ErrInconsistent)
	}
	d := Decision{reason: r, n: uint8(len(scores))}
	copy(d.scores[:], scores)
	if err := d.indexRows(eligible); err != nil {
		return Decision{}, err
	}
	if err := d.checkOrder(); err != nil {
		return Decision{}, err
	}
	if err := d.checkSelection(selected, hasSelected); err != nil {
		return Decision{}, err
	}
	return d, nil
}

func checkSortedIDs(ids []string) error {
	for i, id := range ids {
		if !ident.ValidID(id) {
			return ErrInvalidID
		}
		if i == 0 {
			continue
		}
		switch prev := ids[i-1]; {
		case prev == id:
			return fmt.Errorf("%w: eligible ids", ErrDuplicateMember)
		case prev > id:
			return fmt.Errorf("%w: eligible ids not sorted", ErrInconsistent)
		}
	}
	return nil
}

// indexRows matches every score row to its sorted eligible ID and fills byID.
func (d *Decision) indexRows(eligible []string) error {
	var seen [ident.MaxMembers]bool
	for pos, s := range d.rows() {
		if s.capacity == 0 { // only the zero Score lacks a capacity
			return fmt.Errorf("%w: score row was never constructed", ErrInvalidID)
		}
		j := indexOf(eligible, s.id)
		if j < 0 {
			return fmt.Errorf("%w: score row for a member that is not eligible", ErrInconsistent)
		}
		if seen[j] {
			return fmt.Errorf("%w: score rows", ErrDuplicateMember)
		}
		seen[j] = true
		d.byID[j] = uint8(pos)
	}
	return nil
}

func indexOf(sorted []string, id string) int {
	for j, e := range sorted {
		if e == id {
			return j
		}
	}
	return -1
}

// checkOrder verifies winning order and that rotating ranks, read in ID order, are a
// rotation of increasing sorted indices: ascending with at most one wrap, after which
// every rank is below the first.
func (d *Decision) checkOrder() error {
	rows := d.rows()
	var seen [ident.MaxMembers]bool
	for i, r := range rows {
		if int(r.rank) >= ident.MaxMembers || seen[r.rank] {
			return fmt.Errorf("%w: duplicate rotating rank", ErrInconsistent)
		}
		seen[r.rank] = true
		if i > 0 && !rows[i-1].less(r) {
			return fmt.Errorf("%w: score rows not in winning order", ErrInconsistent)
		}
	}
	wraps := 0
	n := len(rows)
	for j := 1; j < n; j++ {
		if d.scores[d.byID[j]].rank <= d.scores[d.byID[j-1]].rank {
			wraps++
		}
	}
	if wraps > 1 || (wraps == 1 && d.scores[d.byID[n-1]].rank >= d.scores[d.byID[0]].rank) {
		return fmt.Errorf("%w: rotating ranks do not follow member id order", ErrInconsistent)
	}
	return nil
}

func (d *Decision) checkSelection(selected string, hasSelected bool) error {
	if d.n == 0 {
		if hasSelected || selected != "" || d.reason != ReasonNoEligible {
			return fmt.Errorf("%w: no eligible member means no selection", ErrInconsistent)
		}
		return nil
	}
	if !hasSelected || d.reason != ReasonSelected || selected != d.scores[0].id {
		return fmt.Errorf("%w: the first score row must be the selected member", ErrInconsistent)
	}
	return nil
}

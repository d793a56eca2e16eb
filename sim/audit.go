package sim

import (
	"errors"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// intent is what the scenario's operator asked for: which scopes are quiesced. The sim keeps it
// independently of admission, so a scope admission admits against intent, or a readmit that
// clears the wrong scope, is counted as a violation.
type intent struct {
	tier    bool
	members []bool
}

// audit reads one admission snapshot and checks the T012 invariants: no member or tier above its
// ceiling, tier active equal to the sum of member active, and both equal to the sim's own count.
func (w *world) audit() {
	snap := w.adm.Snapshot()
	inv := &w.res.Invariants
	inv.Checks++
	var sum int64
	for _, ms := range snap.Members {
		sum += ms.Active
		if ms.MaxConcurrency > 0 && ms.Active > ms.MaxConcurrency {
			inv.CeilingViolations++
			if mi, ok := w.byID[ms.ID]; ok {
				w.res.Members[mi].CeilingViolations++
			}
		}
		if mi, ok := w.byID[ms.ID]; !ok || w.acct.active[mi] != ms.Active {
			inv.ReconcileViolations++
		}
	}
	if sum != snap.Active || snap.Active != w.acct.tierActive {
		inv.ReconcileViolations++
	}
	if snap.MaxConcurrency > 0 && snap.Active > snap.MaxConcurrency {
		inv.CeilingViolations++
	}
}

// auditIntent compares admission's quiesce states with the operator's intent after every action.
func (w *world) auditIntent() {
	snap := w.adm.Snapshot()
	if (snap.State == admission.StateQuiesced) != w.intent.tier {
		w.res.Invariants.ScopeViolations++
	}
	for _, ms := range snap.Members {
		mi := w.byID[ms.ID]
		if (ms.State == admission.StateQuiesced) != w.intent.members[mi] {
			w.res.Invariants.ScopeViolations++
		}
	}
}

// auditScope checks that an admission to member mi was allowed by the operator's intent.
func (w *world) auditScope(mi int) {
	if w.intent.tier || w.intent.members[mi] {
		w.res.Invariants.ScopeViolations++
	}
}

// notAdmitted counts a refused admission by cause.
func (w *world) notAdmitted(err error) {
	d := &w.res.Decisions
	switch {
	case errors.Is(err, admission.ErrQuiesced):
		d.Quiesced++
	case errors.Is(err, admission.ErrExhausted) && w.res.TierCeiling > 0 && w.acct.tierActive >= w.res.TierCeiling:
		d.TierFull++
		w.res.Invariants.TierCeilingHits++
	default:
		d.NoEligible++
	}
}

// auditDecision checks and classifies a capacity lease's evidence: the rows must be in the
// documented score order (local ratio by cross-product, upstream unknown after fresh, pressure
// ppm, rotating rank) with the selected member first, every row a configured member whose
// denominator is its configured ceiling and whose numerator is below it, and every unknown flag
// matching its freshness.
func (w *world) auditDecision(lease *admission.Lease) {
	d, ok := lease.Decision()
	if !ok {
		return
	}
	st := &w.res.Decisions
	st.Capacity++
	rows := d.Scores()
	st.EligibleSizes[min(len(rows), scheduler.MaxMembers)]++
	sel, hasSel := d.SelectedMemberID()
	if len(rows) == 0 || !hasSel || rows[0].MemberID() != sel || d.Reason() != scheduler.ReasonSelected ||
		lease.Member() != sel {
		w.res.Invariants.OrderViolations++
		return
	}
	for i, r := range rows {
		st.RowFreshness[r.Freshness()]++
		_, hasPPM := r.UpstreamPressurePPM()
		mi, member := w.byID[r.MemberID()]
		if !member || r.LocalCapacity() != w.members[mi].ceiling || r.LocalActive() >= r.LocalCapacity() ||
			r.UpstreamUnknown() != (r.Freshness() != scheduler.FreshnessFresh) ||
			hasPPM == r.UpstreamUnknown() || i > 0 && !scoreLess(rows[i-1], r) {
			w.res.Invariants.OrderViolations++
		}
	}
	st.SelectedFreshness[rows[0].Freshness()]++
	w.classify(rows)
}

// classify records which component decided between the winner and the runner-up, and the spec's
// two decisive unknown-telemetry cases.
func (w *world) classify(rows []scheduler.Score) {
	st := &w.res.Decisions
	if len(rows) == 1 {
		st.DecidedBy[DecidedOnlyEligible]++
		return
	}
	a, b := rows[0], rows[1]
	switch {
	case ratioCmp(a, b) != 0:
		st.DecidedBy[DecidedLocal]++
		if a.UpstreamUnknown() {
			for _, r := range rows[1:] {
				if !r.UpstreamUnknown() {
					st.UnknownLowerLocalWins++ // a fresh member lost on local load to an unknown one
					break
				}
			}
		}
	case a.UpstreamUnknown() != b.UpstreamUnknown():
		st.DecidedBy[DecidedUnknown]++
		st.FreshBeatsUnknown++
	case ppm(a) != ppm(b):
		st.DecidedBy[DecidedPressure]++
	default:
		st.DecidedBy[DecidedRotation]++
	}
}

// scoreLess is the documented order, written out independently of the scheduler's own code.
func scoreLess(a, b scheduler.Score) bool {
	if c := ratioCmp(a, b); c != 0 {
		return c < 0
	}
	if a.UpstreamUnknown() != b.UpstreamUnknown() {
		return !a.UpstreamUnknown()
	}
	if ppm(a) != ppm(b) {
		return ppm(a) < ppm(b)
	}
	return a.RotatingRank() < b.RotatingRank()
}

// ratioCmp compares local ratios active/capacity exactly by cross-multiplication.
func ratioCmp(a, b scheduler.Score) int {
	l, r := a.LocalActive()*b.LocalCapacity(), b.LocalActive()*a.LocalCapacity()
	switch {
	case l < r:
		return -1
	case l > r:
		return 1
	}
	return 0
}

func ppm(s scheduler.Score) int64 {
	v, _ := s.UpstreamPressurePPM()
	return v
}

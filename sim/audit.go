package sim

import (
	"errors"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/routing"
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
		mi, known := w.byID[ms.ID]
		var overhang int64
		if known {
			overhang = w.overhang(mi)
		}
		if ms.MaxConcurrency > 0 && ms.Active > ms.MaxConcurrency+overhang {
			inv.CeilingViolations++
			if known {
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
	w.tierOverhang = min(w.tierOverhang, max(w.acct.tierActive-w.tierCeiling, 0))
	if snap.MaxConcurrency > 0 && snap.Active > snap.MaxConcurrency+w.tierOverhang {
		inv.CeilingViolations++
	}
}

// overhang is how many of member mi's leases a lowered ceiling left above it and are still held:
// a reload cuts no request, so those are not violations. It only shrinks, as leases are released;
// an admission above the ceiling is counted at admission (admittedReload). Without reloads it is 0.
func (w *world) overhang(mi int) int64 {
	m := w.members[mi]
	m.overhang = min(m.overhang, max(w.acct.active[mi]-m.ceiling, 0))
	return m.overhang
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
	case errors.Is(err, admission.ErrExhausted) && w.tierCeiling > 0 && w.acct.tierActive >= w.tierCeiling:
		d.TierFull++
		w.res.Invariants.TierCeilingHits++
	default:
		d.NoEligible++
	}
}

// memberView is the sim's own book on one member at a selection, kept independently of admission
// and of the pressure cache: the evidence must agree with it.
type memberView struct {
	ceiling   int64
	active    int64 // leases the sim holds on the member
	eligible  bool  // ready, not quiesced, below its ceiling
	freshness scheduler.Freshness
	ppm       int64 // expected pressure when fresh
}

// evidenceCheck counts what one decision's evidence got wrong.
type evidenceCheck struct {
	order    uint64 // rows out of the documented order, or not a well-formed selection
	evidence uint64 // rows (or missing rows) that disagree with the sim's books
}

// checkEvidence audits a capacity decision against the sim's books, member by member (views is in
// configured order, index maps a member ID to it). Order: the selected member first and equal to
// the lease's, every row a configured member whose denominator is its ceiling and whose numerator
// is below it, unknown flags matching freshness, rows in the documented score order. Evidence:
// every row's numerator equal to the leases the sim holds, exactly the eligible members present,
// and each row's freshness and ppm what the sample the pressure cache holds implies.
func checkEvidence(d scheduler.Decision, leaseMember string, views []memberView, index func(string) (int, bool)) evidenceCheck {
	var c evidenceCheck
	n := d.EligibleCount() // rows read in place with d.Score: Scores would copy them
	sel, hasSel := d.SelectedMemberID()
	if n == 0 || !hasSel || d.Score(0).MemberID() != sel || d.Reason() != scheduler.ReasonSelected ||
		leaseMember != sel {
		c.order++
		return c
	}
	eligible := 0
	for _, v := range views {
		if v.eligible {
			eligible++
		}
	}
	if n != eligible {
		c.evidence++
	}
	for i := range n {
		r := d.Score(i)
		_, hasPPM := r.UpstreamPressurePPM()
		mi, member := index(r.MemberID())
		if !member || r.LocalCapacity() != views[mi].ceiling || r.LocalActive() >= r.LocalCapacity() ||
			r.UpstreamUnknown() != (r.Freshness() != scheduler.FreshnessFresh) ||
			hasPPM == r.UpstreamUnknown() || i > 0 && !scoreLess(d.Score(i-1), r) {
			c.order++
			continue
		}
		v := views[mi]
		if r.LocalActive() != v.active || !v.eligible || r.Freshness() != v.freshness ||
			v.freshness == scheduler.FreshnessFresh && ppm(r) != v.ppm {
			c.evidence++
		}
	}
	return c
}

// auditDecision checks and classifies a capacity lease's evidence. It runs right after admission
// and before the sim books the new lease, so the sim's counts are the ones admission ranked.
func (w *world) auditDecision(at *routing.Attempt, member string) {
	d, ok := at.Decision()
	if !ok {
		return
	}
	st := &w.res.Decisions
	st.Capacity++
	rows := d.Scores()
	st.EligibleSizes[min(len(rows), ident.MaxMembers)]++
	hv := w.healthView()
	for i := range w.views {
		w.views[i] = w.view(i, hv)
	}
	c := checkEvidence(d, member, w.views, w.index)
	w.res.Invariants.OrderViolations += c.order
	w.res.Invariants.EvidenceViolations += c.evidence
	if len(rows) == 0 {
		return
	}
	for _, r := range rows {
		st.RowFreshness[r.Freshness()]++
	}
	st.SelectedFreshness[rows[0].Freshness()]++
	w.classify(rows)
}

// index maps a member ID to its configured position.
func (w *world) index(id string) (int, bool) {
	i, ok := w.byID[id]
	return i, ok
}

// view is member i as the sim's own books see it now. Passive health is the router's own state (hv,
// nil when every member is healthy): the audit checks that admission honours it, the health core's
// own tests and the scenarios' gates check what it decides.
func (w *world) view(i int, hv []health.MemberHealth) memberView {
	m := w.members[i]
	v := memberView{ceiling: m.ceiling, active: w.acct.active[i]}
	v.eligible = w.ready.ready[i] && !w.intent.members[i] && !w.intent.tier && v.active < m.ceiling
	for _, h := range hv {
		if h.ID != m.id {
			continue
		}
		switch h.State {
		case health.Ejected:
			v.eligible = false
		case health.HalfOpen:
			v.eligible = v.eligible && v.active == 0
		}
	}
	if w.press != nil {
		v.freshness, v.ppm = w.press.expected(i, w.now)
	}
	if p := w.pol; p != nil && p.pick >= 0 && p.pick != i {
		v.eligible = false // the policy's snapshot left only its choice ready
	}
	return v
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

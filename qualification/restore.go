package qualification

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/router/manage"
)

// restore undoes every quiesce the run made (through router/manage, as an operator would), waits
// for the tier to hold no lease, records the router's views after the run and checks that the
// tier's admission state and quiesce intent (states and reasons of the tier and every member, which
// the router persists) and its members and ceilings are what preflight saw. It runs after every
// run, failed or interrupted, on a context of its own.
func (r *runner) restore(ctx context.Context, rep *PhaseReport) {
	for _, member := range slices.Clone(r.quiesced) {
		r.send(ctx, rep, manage.ActionReadmit, member, 0)
	}
	if len(rep.Actions) == 0 {
		rep.Note = "The phases before left no quiesce to undo (a failure phase that ran readmitted its member itself)."
	}
	rep.check("every quiesce this run made is undone", len(r.quiesced) == 0,
		"still quiesced by this run: %s", orNone(r.quiesced))
	tier, err := r.waitIdle(ctx)
	if err != nil {
		rep.check("no request left in flight", false, "%v", err)
	} else {
		rep.check("no request left in flight", idle(tier), "%s", activeText(tier))
	}
	after, _ := r.snapshot(ctx, rep, "after")
	st, err := r.router.status(ctx)
	if err != nil {
		rep.check("tier status after the run (router/manage)", false, "%v", err)
		return
	}
	r.recordJSON(rep, "router/status-after.json", st)
	if r.before == nil {
		rep.check("state matches the preflight", len(r.quiesced) == 0 && r.transitions == 0,
			"preflight could not read the tier's state; this run sent %d transition(s)", r.transitions)
		return
	}
	want, got := intent(r.before.Snapshot), intent(st.Snapshot)
	rep.check("admission state and intent match the preflight", want == got, "before: %s; after: %s", want, got)
	if after != nil && r.before != nil {
		rep.check("members and ceilings match the preflight", shape(r.before.Snapshot) == shape(*after),
			"before: %s; after: %s", shape(r.before.Snapshot), shape(*after))
	}
}

// waitIdle re-reads the capacity view until the tier holds no lease (an interrupted load's
// requests end as the router sees their clients go) or ctx ends; it returns the last reading.
func (r *runner) waitIdle(ctx context.Context) (manage.Tier, error) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		_, t, err := r.router.capacity(ctx)
		if err == nil && idle(t) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, err
		case <-tick.C:
		}
	}
}

// intent is the tier's quiesce intent as text: the tier's and each member's state and reason.
func intent(t manage.Tier) string {
	parts := []string{fmt.Sprintf("tier %s %s", t.State, dash(t.Reason))}
	for _, m := range t.Members {
		parts = append(parts, fmt.Sprintf("%s %s %s", shown(m.ID), m.State, dash(shown(m.Reason))))
	}
	return strings.Join(parts, "; ")
}

// shape is the tier's members and ceilings as text.
func shape(t manage.Tier) string {
	parts := []string{fmt.Sprintf("tier ceiling %d", t.MaxConcurrency)}
	for _, m := range t.Members {
		parts = append(parts, fmt.Sprintf("%s %d", shown(m.ID), m.MaxConcurrency))
	}
	return strings.Join(parts, ", ")
}

// gate turns the phases into the verdict (decide) and writes it with the promotion request.
func (r *runner) gate(phases []PhaseReport, interrupted bool, rep *PhaseReport) Verdict {
	v := decide(r.p, phases, interrupted, r.evidence)
	rep.Status = StatusFailed
	switch v.Result {
	case VerdictPass:
		rep.Status = StatusPassed
	case VerdictInterrupted:
		rep.Status = StatusInterrupted
	}
	rep.Checks = v.SLO
	rep.Verdict = &v
	r.recordJSON(rep, "verdict.json", v)
	pr := promotionRequest(r.p, v, r.now())
	r.recordJSON(rep, "promotion-request.json", pr)
	r.recordFunc(rep, "promotion-request.md", pr.Markdown)
	return v
}

// decide is the promotion gate, a pure function of the phase reports. A run passes only when every
// phase passed and every SLO held; it is promotable only when it passed, its evidence is real and
// the router was restored. Nothing is promoted.
func decide(p *Plan, phases []PhaseReport, interrupted bool, evidence string) Verdict {
	v := Verdict{Evidence: evidence, Fingerprint: p.Fingerprint(), SLO: []Check{}}
	for _, ph := range phases {
		switch {
		case ph.Phase == PhaseRestoration:
			v.Restored = ph.Status == StatusPassed
			if !v.Restored {
				v.Reasons = append(v.Reasons, "restoration failed: check the tier's state now (router/status-after.json)")
			}
		case ph.Status != StatusPassed:
			v.Reasons = append(v.Reasons, fmt.Sprintf("phase %s %s%s", ph.Phase, ph.Status, failedText(ph.Checks)))
		}
		if ph.Bench == nil || ph.Status != StatusPassed {
			continue
		}
		switch ph.Phase {
		case PhaseRouted:
			v.SLO = append(v.SLO, sloChecks(ph.Phase, p.SLO, ph.Bench)...)
			if c, ok := addedCheck(p.SLO, ph.Comparison); ok {
				v.SLO = append(v.SLO, c)
			}
		case PhaseSustained:
			v.SLO = append(v.SLO, sloChecks(ph.Phase, p.SLO, ph.Bench)...)
		}
	}
	sloOK := true
	for _, c := range v.SLO {
		if !c.Passed {
			sloOK = false
			v.Reasons = append(v.Reasons, "SLO not met: "+c.Name+" ("+c.Detail+")")
		}
	}
	switch {
	case interrupted:
		v.Result = VerdictInterrupted
		v.Reasons = append(v.Reasons, "the run was interrupted")
	case len(v.Reasons) == 0 && sloOK:
		v.Result = VerdictPass
	default:
		v.Result = VerdictFail
	}
	v.Promotable = v.Result == VerdictPass && v.Evidence == EvidenceReal && v.Restored
	switch v.Evidence {
	case EvidenceSynthetic:
		v.Reasons = append(v.Reasons, "not promotable: the members observed were fake vLLM servers (synthetic evidence)")
	case EvidenceUndetermined:
		v.Reasons = append(v.Reasons, "not promotable: not every member was observed")
	}
	return v
}

// failedText names a phase's failed checks, so a verdict's reasons say what failed without the
// phase report at hand: ": name (detail); ...", or "" when none failed.
func failedText(checks []Check) string {
	var parts []string
	for _, c := range checks {
		if !c.Passed {
			parts = append(parts, c.Name+" ("+c.Detail+")")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

package sim

import (
	"errors"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/scenarios"
)

// drainWatch follows one drain until its scope has no active lease.
type drainWatch struct {
	Drain
	member   int // -1 for the tier
	done     bool
	inflight []int32 // requests in flight in the scope when the drain started
}

// action applies scenario event i through admission's own transition methods (the admin API's
// calls) or to the member's virtual engine.
func (w *world) action(i int) {
	e := &w.sc.Events[i]
	mi := -1
	if e.Member != "" {
		mi = w.byID[e.Member]
	}
	var err error
	switch e.Action {
	case scenarios.ActionQuiesce:
		if err = w.quiesce(mi, e.Reason); err == nil {
			err = w.saveIntent()
		}
	case scenarios.ActionReadmit:
		if err = w.readmit(mi); err == nil {
			err = w.saveIntent()
		}
	case scenarios.ActionDrain:
		w.startDrain(mi)
	case scenarios.ActionKill:
		w.kill(w.members[mi])
	case scenarios.ActionRevive:
		err = w.revive(w.members[mi])
	case scenarios.ActionSlow:
		m := w.members[mi]
		m.slow = e.Factor
		if m.alive {
			err = m.eng.SetStepScale(w.at(w.now), m.spec.StepScale*m.slow)
			w.reschedule(m)
		}
	case scenarios.ActionErrors, scenarios.ActionStreamClose:
		// Windows are consulted at each dispatch; nothing changes now.
	case scenarios.ActionRestart:
		err = w.restart()
	}
	a := Action{At: w.now, Action: e.Action, Member: e.Member}
	if err != nil {
		a.Err = err.Error()
	}
	w.res.Actions = append(w.res.Actions, a)
	w.auditIntent()
	w.audit()
	w.checkDrains()
	w.retryQueue() // a readmission or a quiesce changes what the queue's head may get
}

func (w *world) quiesce(mi int, reason string) error {
	if mi < 0 {
		if err := w.adm.Quiesce(reason); err != nil {
			return err
		}
		w.intent.tier = true
		return nil
	}
	if err := w.adm.QuiesceMember(w.members[mi].id, reason); err != nil {
		return err
	}
	w.intent.members[mi] = true
	return nil
}

// readmit clears exactly one scope: a tier readmit never clears member quiesce and vice versa.
func (w *world) readmit(mi int) error {
	if mi < 0 {
		if err := w.adm.Readmit(); err != nil {
			return err
		}
		w.intent.tier = false
		return nil
	}
	if err := w.adm.ReadmitMember(w.members[mi].id); err != nil {
		return err
	}
	w.intent.members[mi] = false
	return nil
}

func (w *world) startDrain(mi int) {
	d := &drainWatch{member: mi, Drain: Drain{Start: w.now}}
	if mi >= 0 {
		d.Member = w.members[mi].id
		d.ActiveAtStart = w.acct.active[mi]
	} else {
		d.ActiveAtStart = w.acct.tierActive
	}
	d.inflight = w.activeIn(mi)
	w.drains = append(w.drains, d)
	w.stepDrain(d, true)
	if d.Refused {
		d.inflight = nil // a refused drain waited for nothing
	}
}

// activeIn lists the requests holding a lease on member mi (every member for -1). The scan starts
// at the oldest request that may still be active, so it costs the in-flight window, not the run.
func (w *world) activeIn(mi int) []int32 {
	for w.oldest < len(w.reqs) && !w.reqs[w.oldest].active {
		w.oldest++
	}
	var out []int32
	for id := w.oldest; id < len(w.reqs); id++ {
		if w.reqs[id].active && (mi < 0 || int(w.res.Requests[id].Member) == mi) {
			out = append(out, int32(id))
		}
	}
	return out
}

// checkDrains advances every unfinished drain after a lease change or an action.
func (w *world) checkDrains() {
	for _, d := range w.drains {
		if !d.done {
			w.stepDrain(d, false)
		}
	}
}

// stepDrain asks admission's non-blocking drain question for the scope: drained (idle), still
// draining, or not quiesced (refused when the drain starts, aborted when the scope was readmitted
// while the drain waited). Admission announces every lease change; the sim asks again after each
// one (checkDrains), as the server's drain does after each announcement. A drain never cancels an
// in-flight request; the watch only observes.
func (w *world) stepDrain(d *drainWatch, first bool) {
	scope := ""
	if d.member >= 0 {
		scope = d.Member
	}
	idle, err := w.adm.Idle(scope)
	switch {
	case err == nil && idle:
		d.done, d.Completed, d.End = true, true, w.now
		if d.member >= 0 {
			d.OthersActiveEnd = w.acct.tierActive - w.acct.active[d.member]
		}
	case err == nil:
		// still draining
	case errors.Is(err, admission.ErrNotQuiesced):
		d.done, d.End = true, w.now
		d.Refused, d.Aborted = first, !first
	default:
		d.done, d.End, d.Refused = true, w.now, true
	}
}

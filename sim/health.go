package sim

import (
	"github.com/anvil-llm/anvil/router/health"
)

// healthEvent books one passive-health transition the router reported. It runs synchronously inside
// the walk's Finish (or ProbePassed), at virtual now.
func (w *world) healthEvent(ev health.Event) {
	mi, ok := w.byID[ev.Member]
	if !ok || w.res == nil {
		return
	}
	m := &w.res.Members[mi]
	switch ev.Kind {
	case health.EventEjected:
		if ev.Reason == health.ReasonConsecutiveFailures {
			w.sick++ // a trial failure re-ejects a member already counted
		}
		m.Ejections = append(m.Ejections, Ejection{At: w.now, Duration: ev.Duration, Reason: ev.Reason})
	case health.EventRecovered:
		w.sick--
		m.Recoveries++
	case health.EventHeld:
		m.Held++
	}
}

// healthView returns, when any member is out of health, each member's passive-health state at now
// (sorted by configured ID, as w.members); nil when every member is healthy, which is the common case
// and costs nothing.
func (w *world) healthView() []health.MemberHealth {
	if w.sick == 0 {
		return nil
	}
	hs, err := w.router.Health(w.tier.ID, w.at(w.now))
	if err != nil {
		return nil
	}
	return hs
}

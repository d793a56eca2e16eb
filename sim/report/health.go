package report

import (
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// Health is what passive health did in a run, from the router's own events. It is omitted from a
// report whose run ejected nothing and held nothing.
type Health struct {
	Ejections  uint64         `json:"ejections"`
	Recoveries uint64         `json:"recoveries"`
	Held       uint64         `json:"held"`
	Members    []MemberHealth `json:"members"`
}

// MemberHealth is one member's ejections, in seconds since the run's start.
type MemberHealth struct {
	ID         string     `json:"id"`
	Ejections  []Ejection `json:"ejections,omitempty"`
	Recoveries uint64     `json:"recoveries"`
	Held       uint64     `json:"held"`
	EjectedS   float64    `json:"ejected_s"` // time held out within the run (ejections clipped to its end)
}

// Ejection is one ejection of a member.
type Ejection struct {
	AtS       float64 `json:"at_s"`
	DurationS float64 `json:"duration_s"`
	Reason    string  `json:"reason"`
}

func healthOf(res *sim.Result) *Health {
	h := &Health{}
	for _, m := range res.Members {
		mh := MemberHealth{ID: m.ID, Recoveries: m.Recoveries, Held: m.Held}
		for _, e := range m.Ejections {
			mh.Ejections = append(mh.Ejections, Ejection{AtS: e.At.Seconds(), DurationS: e.Duration.Seconds(), Reason: e.Reason})
			mh.EjectedS += (min(e.At+e.Duration, res.Duration) - min(e.At, res.Duration)).Seconds()
		}
		h.Ejections += uint64(len(m.Ejections))
		h.Recoveries += m.Recoveries
		h.Held += m.Held
		h.Members = append(h.Members, mh)
	}
	if h.Ejections == 0 && h.Held == 0 {
		return nil
	}
	return h
}

// healthMetrics adds the passive-health numbers: tier totals and per member the number of ejections,
// the first and the longest ejection and the time held out. They exist for every run, ejections or
// not, so a gate on them never names an unknown metric.
func healthMetrics(m *metricSet, run *Run) {
	var total, recoveries, held float64
	for i, id := range run.ids {
		var mh MemberHealth
		if run.Health != nil {
			mh = run.Health.Members[i]
		}
		var first, longest float64
		for k, e := range mh.Ejections {
			if k == 0 {
				first = e.DurationS
			}
			longest = max(longest, e.DurationS)
		}
		p := "member." + id + "."
		m.add(p+"ejections", float64(len(mh.Ejections)))
		m.add(p+"ejection_first_s", first)
		m.add(p+"ejection_max_s", longest)
		m.add(p+"ejected_s", mh.EjectedS)
		total += float64(len(mh.Ejections))
		recoveries += float64(mh.Recoveries)
		held += float64(mh.Held)
	}
	m.add("tier.ejections", total)
	m.add("tier.recoveries", recoveries)
	m.add("tier.ejections_held", held)
}

// windowMetrics measures the arrivals of each of the scenario's windows on their own: arrivals,
// successes and success rate for the tier; per member the requests admitted to it and its share of
// the window's arrivals (the share of the tier's traffic it received).
func windowMetrics(m *metricSet, windows []scenarios.Window, res *sim.Result) {
	for _, w := range windows {
		var arrivals, succeeded float64
		perMember := make([]float64, len(res.Members))
		for i := range res.Requests {
			q := &res.Requests[i]
			if q.Arrival < w.From || q.Arrival >= w.Until {
				continue
			}
			arrivals++
			if q.Outcome == decisionlog.OutcomeSuccess {
				succeeded++
			}
			if q.Member >= 0 {
				perMember[q.Member]++
			}
		}
		p := "window." + w.Name + "."
		m.add(p+"tier.requests", arrivals)
		m.add(p+"tier.succeeded", succeeded)
		m.add(p+"tier.success_rate", ratio(succeeded, arrivals))
		m.add(p+"duration_s", (w.Until - w.From).Seconds())
		for i, mr := range res.Members {
			m.add(p+"member."+mr.ID+".requests", perMember[i])
			m.add(p+"member."+mr.ID+".share", ratio(perMember[i], arrivals))
		}
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

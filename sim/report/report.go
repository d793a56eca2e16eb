package report

import (
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// Report is one scenario's report: one Run per strategy, the comparison between them and the
// gates. It holds no wall-clock reading: equal inputs give byte-identical JSON and Markdown.
type Report struct {
	Scenario    string       `json:"scenario"`
	Description string       `json:"description,omitempty"`
	Seed        uint64       `json:"seed"`
	DurationS   float64      `json:"duration_s"`
	SLO         SLO          `json:"slo"`
	Runs        []Run        `json:"runs"`
	Comparison  []Ratio      `json:"comparison,omitempty"`
	Gates       []GateResult `json:"gates"`
	Passed      bool         `json:"passed"`
}

// SLO are the goodput targets in seconds (0 = not checked).
type SLO struct {
	TTFT float64 `json:"ttft_s"`
	TPOT float64 `json:"tpot_s"`
	E2E  float64 `json:"e2e_s"`
}

// Run is one strategy's results.
type Run struct {
	Strategy   string          `json:"strategy"`
	Events     uint64          `json:"events"`
	TailS      float64         `json:"tail_s"`
	Tier       Scope           `json:"tier"`
	Members    []Scope         `json:"members"`
	Invariants Invariants      `json:"invariants"`
	Decisions  Decisions       `json:"decisions"`
	Telemetry  Telemetry       `json:"telemetry"`
	Health     *Health         `json:"health,omitempty"`
	Queue      *AdmissionQueue `json:"admission_queue,omitempty"`
	Drains     []Drain         `json:"drains,omitempty"`
	Actions    []Action        `json:"actions,omitempty"`
	Restarts   []Restart       `json:"restarts,omitempty"`
	Reloads    []Reload        `json:"reloads,omitempty"`
	// ReloadAudit is present for a scenario with reloads only.
	ReloadAudit *ReloadAudit `json:"reload_audit,omitempty"`
	Metrics     []Metric     `json:"metrics"` // every gate-able number, sorted by name

	e2e    sample // sorted after Build: the CDF plot reads it
	ttft   sample
	series sim.Series
	ids    []string
}

// Scope is the statistics of the tier or of one member.
type Scope struct {
	ID                string    `json:"id"`
	Ceiling           int64     `json:"ceiling"`  // 0 = none
	Requests          int       `json:"requests"` // arrivals (tier) or selections (member)
	Admitted          int       `json:"admitted"`
	Succeeded         int       `json:"succeeded"`
	Outcomes          []Count   `json:"outcomes"`
	Share             float64   `json:"share"` // of the tier's admitted requests
	PeakActive        int64     `json:"peak_active"`
	MeanActive        float64   `json:"mean_active"` // time-weighted over the run
	Utilization       float64   `json:"utilization"` // mean active / ceiling (0 without a ceiling)
	CeilingViolations uint64    `json:"ceiling_violations"`
	ThroughputRPS     float64   `json:"throughput_rps"` // successes per second of the run
	OutputTPS         float64   `json:"output_tps"`     // generated tokens per second (successes)
	GoodputRPS        float64   `json:"goodput_rps"`    // successes meeting every SLO, per second
	TTFT              Quantiles `json:"ttft_s"`
	TPOT              Quantiles `json:"tpot_s"`
	ITL               Quantiles `json:"itl_s"`
	E2E               Quantiles `json:"e2e_s"`
	Queue             QueueTime `json:"queue_s"`
	Received          uint64    `json:"received,omitempty"` // member only: arrivals it recorded
	Refused           uint64    `json:"refused,omitempty"`  // member only: of those, connections refused
	Scrapes           Scrapes   `json:"scrapes"`
}

// QueueTime is the engines' queue time (arrival at the engine to first scheduling), from vLLM's
// request_queue_time histogram: its count and exact sum give the mean. The engine reports no
// per-request scheduling time and the histogram's first bucket bound is 300 ms, so the report
// carries no queue-time quantiles rather than bucket bounds posing as them.
type QueueTime struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
}

// Scrapes count completed pressure scrapes by class.
type Scrapes struct {
	OK      uint64 `json:"ok"`
	Failed  uint64 `json:"failed"`
	Unknown uint64 `json:"unknown"`
}

// Count is one key's tally.
type Count struct {
	Key string `json:"key"`
	N   uint64 `json:"n"`
}

// Build turns the runs of one scenario into a report and evaluates the scenario's gates. Runs
// whose strategy a gate names must be present; gates on absent runs are reported as skipped.
func Build(sc *scenarios.Scenario, results []*sim.Result) *Report {
	r := &Report{
		Scenario: sc.Name, Description: sc.Description, Seed: sc.Seed, DurationS: sc.Duration.Seconds(),
		SLO: SLO{TTFT: sc.SLO.TTFT.Seconds(), TPOT: sc.SLO.TPOT.Seconds(), E2E: sc.SLO.E2E.Seconds()},
	}
	for _, res := range results {
		r.Runs = append(r.Runs, buildRun(sc, res))
	}
	r.Comparison = compare(r.Runs)
	r.Gates, r.Passed = evaluate(sc.Expect, r.Runs)
	return r
}

func buildRun(sc *scenarios.Scenario, res *sim.Result) Run {
	run := Run{Strategy: res.Strategy, Events: res.Events, TailS: res.Tail.Seconds(), series: res.Series,
		Drains: drains(res.Drains), Actions: actions(res.Actions), Restarts: restarts(res)}
	acc := newAccumulator(sc, res)
	run.Tier = acc.tier()
	for i := range res.Members {
		run.Members = append(run.Members, acc.member(i))
		run.ids = append(run.ids, res.Members[i].ID)
	}
	run.e2e, run.ttft = acc.all.e2e, acc.all.ttft
	run.Invariants = invariants(res.Invariants, acc)
	run.Decisions = decisions(res)
	run.Telemetry = telemetry(res.Telemetry)
	run.Health = healthOf(res)
	run.Queue = admissionQueue(sc, res)
	run.Reloads, run.ReloadAudit = reloads(res)
	run.Metrics = metrics(&run, sc.Windows, res)
	return run
}

func decisions(res *sim.Result) Decisions {
	d := res.Decisions
	out := Decisions{
		Admitted: d.Admitted, Quiesced: d.Quiesced, TierFull: d.TierFull, NoEligible: d.NoEligible,
		Capacity: d.Capacity, UnknownLowerLocalWins: d.UnknownLowerLocalWins, FreshBeatsUnknown: d.FreshBeatsUnknown,
		LogAdded: res.DecisionLog.Added, LogRejected: res.DecisionLog.Rejected,
		EvidenceDiscarded: res.DecisionLog.EvidenceDiscarded,
	}
	for f := range 4 {
		name := scheduler.Freshness(f).String()
		out.SelectedFreshness = append(out.SelectedFreshness, Count{name, d.SelectedFreshness[f]})
		out.RowFreshness = append(out.RowFreshness, Count{name, d.RowFreshness[f]})
	}
	for i, name := range sim.DecidedNames() {
		out.DecidedBy = append(out.DecidedBy, Count{name, d.DecidedBy[i]})
	}
	return out
}

// scopeAcc accumulates one scope's per-request statistics.
type scopeAcc struct {
	requests, admitted, succeeded int
	outcomes                      [decisionlog.NumOutcomes]uint64
	good                          int
	tokens                        int64
	ttft, tpot, itl, e2e          sample
}

type accumulator struct {
	sc       *scenarios.Scenario
	res      *sim.Result
	all      scopeAcc
	members  []scopeAcc
	admitted uint64
}

func newAccumulator(sc *scenarios.Scenario, res *sim.Result) *accumulator {
	a := &accumulator{sc: sc, res: res, members: make([]scopeAcc, len(res.Members))}
	for i := range res.Requests {
		a.add(&res.Requests[i])
	}
	return a
}

func (a *accumulator) add(q *sim.Request) {
	a.all.requests++
	if q.Outcome.Admitted() {
		a.admitted++
	}
	a.all.record(q, a.sc.SLO)
	if q.Member >= 0 {
		m := &a.members[q.Member]
		m.requests++
		m.record(q, a.sc.SLO)
	}
}

// record adds a request's outcome and, for a success, its latencies. TTFT is when the first
// token existed; TPOT is the mean gap after it, (end - first token) / (output - 1); without
// per-token events ITL is that same mean gap weighted by the request's number of gaps.
func (s *scopeAcc) record(q *sim.Request, slo scenarios.SLO) {
	if i := q.Outcome.Index(); i >= 0 {
		s.outcomes[i]++
	}
	if q.Outcome.Admitted() {
		s.admitted++
	}
	if q.Outcome != decisionlog.OutcomeSuccess {
		return
	}
	s.succeeded++
	s.tokens += int64(q.Output)
	e2e := q.End - q.Arrival
	s.e2e.add(e2e.Seconds())
	ok := slo.E2E == 0 || e2e <= slo.E2E
	if q.FirstToken >= 0 {
		ttft := q.FirstToken - q.Arrival
		s.ttft.add(ttft.Seconds())
		ok = ok && (slo.TTFT == 0 || ttft <= slo.TTFT)
		if q.Output > 1 {
			gap := (q.End - q.FirstToken) / time.Duration(q.Output-1)
			s.tpot.add(gap.Seconds())
			s.itl.addWeighted(gap.Seconds(), float64(q.Output-1))
			ok = ok && (slo.TPOT == 0 || gap <= slo.TPOT)
		}
	}
	if ok {
		s.good++
	}
}

func (a *accumulator) scope(s *scopeAcc, id string, ceiling, peak int64, seconds float64, queue engine.Histogram) Scope {
	d := a.res.Duration.Seconds()
	out := Scope{
		ID: id, Ceiling: ceiling, Requests: s.requests, Admitted: s.admitted, Succeeded: s.succeeded,
		PeakActive: peak, MeanActive: seconds / d,
		ThroughputRPS: float64(s.succeeded) / d, OutputTPS: float64(s.tokens) / d, GoodputRPS: float64(s.good) / d,
		TTFT: s.ttft.quantiles(), TPOT: s.tpot.quantiles(), ITL: s.itl.quantiles(), E2E: s.e2e.quantiles(),
		Queue: queueTime(queue),
	}
	if ceiling > 0 {
		out.Utilization = out.MeanActive / float64(ceiling)
	}
	for i, o := range decisionlog.Outcomes() {
		if s.outcomes[i] > 0 {
			out.Outcomes = append(out.Outcomes, Count{string(o), s.outcomes[i]})
		}
	}
	return out
}

func (a *accumulator) tier() Scope {
	var queue engine.Histogram
	for _, m := range a.res.Members {
		mergeHist(&queue, m.QueueTime)
	}
	inv := a.res.Invariants
	s := a.scope(&a.all, a.res.TierID, a.res.TierCeiling, inv.PeakTierActive, inv.TierActiveSeconds, queue)
	s.CeilingViolations = inv.CeilingViolations
	t := a.res.Telemetry.Completed
	s.Scrapes = Scrapes{OK: t[pressure.ClassOK], Failed: t[pressure.ClassFailed], Unknown: t[pressure.ClassUnknown]}
	if s.Admitted > 0 {
		s.Share = 1
	}
	return s
}

func (a *accumulator) member(i int) Scope {
	m := a.res.Members[i]
	acc := &a.members[i]
	s := a.scope(acc, m.ID, m.Ceiling, m.PeakActive, m.ActiveSeconds, m.QueueTime)
	s.Requests = int(m.Selected)
	s.Received, s.Refused = m.Received, m.Refused
	s.CeilingViolations = m.CeilingViolations
	s.Scrapes = Scrapes{OK: m.Scrapes[pressure.ClassOK], Failed: m.Scrapes[pressure.ClassFailed],
		Unknown: m.Scrapes[pressure.ClassUnknown]}
	if a.all.admitted > 0 {
		s.Share = float64(acc.admitted) / float64(a.all.admitted)
	}
	return s
}

package report

import (
	"encoding/json"
	"io"

	"github.com/anvil-llm/anvil/internal/figure"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// PolicyReport compares placement policies on one scenario: the router's own strategies and the
// simulator's reference policies, each run on the same arrivals and seed. Every ratio is to the
// first row (the capacity scheduler) and to the oracle's row, when those ran. Like Report it holds
// no wall-clock reading: equal inputs give byte-identical JSON, text and Markdown.
type PolicyReport struct {
	Scenario    string      `json:"scenario"`
	Description string      `json:"description,omitempty"`
	Seed        uint64      `json:"seed"`
	DurationS   float64     `json:"duration_s"`
	SLO         SLO         `json:"slo"`
	Rows        []PolicyRow `json:"policies"`

	report *Report // the runs' full report: the plots read its samples
}

// PolicyRow is one policy's figures.
type PolicyRow struct {
	Policy     string  `json:"policy"`
	Requests   int     `json:"requests"`
	Succeeded  int     `json:"succeeded"`
	GoodputRPS float64 `json:"goodput_rps"` // successes meeting every SLO, per second
	TTFT       P5099   `json:"ttft_s"`
	ITL        P5099   `json:"itl_s"`
	E2E        P5099   `json:"e2e_s"`
	// Refused counts requests the router did not admit (no member eligible, tier full, queue
	// timeout or full); Queued those that waited in the admission queue, QueueP99 how long.
	Refused  uint64  `json:"refused"`
	Queued   uint64  `json:"queued"`
	QueueP99 float64 `json:"queue_wait_p99_s"`
	// EngineQueue is the mean time requests waited in the engines' own queues (vLLM's
	// request_queue_time): where requests wait when the router sends them on.
	EngineQueue float64 `json:"engine_queue_mean_s"`
	// CeilingViolations and Mismatches must be 0: the shared admission kept every ceiling, and
	// reserved exactly what the policy chose.
	CeilingViolations uint64 `json:"ceiling_violations"`
	Mismatches        uint64 `json:"mismatches"`
	// Ratios of goodput and of p99 end-to-end latency to the capacity scheduler's and the oracle's
	// (0 when that run is absent or its figure is 0).
	GoodputVsCapacity float64 `json:"goodput_vs_capacity"`
	GoodputVsOracle   float64 `json:"goodput_vs_oracle"`
	E2EP99VsCapacity  float64 `json:"e2e_p99_vs_capacity"`
	E2EP99VsOracle    float64 `json:"e2e_p99_vs_oracle"`
	// Shares are each member's share of the tier's admitted requests, in configured order.
	Shares []MemberShare `json:"member_shares"`
}

// MemberShare is one member's share of a policy's admitted requests.
type MemberShare struct {
	Member string  `json:"member"`
	Share  float64 `json:"share"`
}

// P5099 is a latency's median and 99th percentile, in seconds.
type P5099 struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Policies builds the comparison from one run per policy (Result.Strategy names the policy). The
// scenario's gates are not evaluated: they name the router's strategies, not the references.
func Policies(sc *scenarios.Scenario, results []*sim.Result) *PolicyReport {
	full := Build(sc, results)
	r := &PolicyReport{Scenario: full.Scenario, Description: full.Description, Seed: full.Seed,
		DurationS: full.DurationS, SLO: full.SLO, report: full}
	for i := range full.Runs {
		r.Rows = append(r.Rows, policyRow(&full.Runs[i], results[i]))
	}
	capRow, oracleRow := r.find("capacity"), r.find("oracle")
	for i := range r.Rows {
		row := &r.Rows[i]
		if capRow != nil {
			row.GoodputVsCapacity = ratio(row.GoodputRPS, capRow.GoodputRPS)
			row.E2EP99VsCapacity = ratio(row.E2E.P99, capRow.E2E.P99)
		}
		if oracleRow != nil {
			row.GoodputVsOracle = ratio(row.GoodputRPS, oracleRow.GoodputRPS)
			row.E2EP99VsOracle = ratio(row.E2E.P99, oracleRow.E2E.P99)
		}
	}
	return r
}

func policyRow(run *Run, res *sim.Result) PolicyRow {
	t := run.Tier
	row := PolicyRow{Policy: run.Strategy, Requests: t.Requests, Succeeded: t.Succeeded, GoodputRPS: t.GoodputRPS,
		TTFT: P5099{t.TTFT.P50, t.TTFT.P99}, ITL: P5099{t.ITL.P50, t.ITL.P99}, E2E: P5099{t.E2E.P50, t.E2E.P99},
		EngineQueue: t.Queue.Mean, CeilingViolations: run.Invariants.CeilingViolations}
	if v, ok := run.Value("tier.not_admitted"); ok {
		row.Refused = uint64(v)
	}
	if q := run.Queue; q != nil {
		row.Queued, row.QueueP99 = q.Enqueued, q.Wait.P99
	}
	if res.Policy != nil {
		row.Mismatches = res.Policy.Mismatches
	}
	for _, m := range run.Members {
		row.Shares = append(row.Shares, MemberShare{Member: m.ID, Share: m.Share})
	}
	return row
}

// find returns the row of a policy, or nil.
func (r *PolicyReport) find(policy string) *PolicyRow {
	for i := range r.Rows {
		if r.Rows[i].Policy == policy {
			return &r.Rows[i]
		}
	}
	return nil
}

// Row returns the row of a policy.
func (r *PolicyReport) Row(policy string) (PolicyRow, bool) {
	if p := r.find(policy); p != nil {
		return *p, true
	}
	return PolicyRow{}, false
}

// WriteJSON writes the comparison as indented JSON.
func (r *PolicyReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Text renders the comparison for a terminal.
func (r *PolicyReport) Text() string { return r.render(false) }

// Markdown renders the comparison as Markdown.
func (r *PolicyReport) Markdown() string { return r.render(true) }

func (r *PolicyReport) render(md bool) string {
	w := &writer{md: md}
	w.heading(1, "anvil-sim policies: "+r.Scenario)
	meta := policyPreamble(r)
	if r.Description != "" {
		meta = r.Description + " " + meta
	}
	w.para(meta)
	w.table(r.table())
	w.heading(2, "Share of admitted requests per member")
	w.table(r.shareTable())
	return w.b.String()
}

func policyPreamble(r *PolicyReport) string {
	s := "Seed " + u(r.Seed) + ", " + f(r.DurationS, 0) + " s of arrivals; goodput counts successes within the SLO"
	if r.SLO.TTFT > 0 {
		s += " (TTFT " + ms(r.SLO.TTFT) + " ms"
		if r.SLO.TPOT > 0 {
			s += ", TPOT " + ms(r.SLO.TPOT) + " ms"
		}
		if r.SLO.E2E > 0 {
			s += ", e2e " + f(r.SLO.E2E, 1) + " s"
		}
		s += ")"
	}
	return s + "; ratios are to capacity and to the clairvoyant greedy oracle."
}

func (r *PolicyReport) table() *table {
	t := &table{head: []string{"policy", "goodput/s", "vs cap", "vs oracle", "ttft p50 ms", "ttft p99 ms",
		"itl p50 ms", "itl p99 ms", "e2e p50 s", "e2e p99 s", "p99 vs cap", "p99 vs oracle",
		"refused", "queued", "engine queue ms", "violations"}, left: 1}
	for _, row := range r.Rows {
		t.row(row.Policy, f(row.GoodputRPS, 2), f(row.GoodputVsCapacity, 3), f(row.GoodputVsOracle, 3),
			ms(row.TTFT.P50), ms(row.TTFT.P99), ms(row.ITL.P50), ms(row.ITL.P99), f(row.E2E.P50, 2), f(row.E2E.P99, 2),
			f(row.E2EP99VsCapacity, 3), f(row.E2EP99VsOracle, 3), u(row.Refused), u(row.Queued),
			ms(row.EngineQueue), u(row.CeilingViolations+row.Mismatches))
	}
	return t
}

// Figures are the comparison's plots: the end-to-end latency CDF and the TTFT CDF, one line per
// policy. They need the in-memory report from Policies.
func (r *PolicyReport) Figures() ([]Figure, error) {
	var out []Figure
	for _, m := range []struct{ name, title string }{{"e2e", "end-to-end latency"}, {"ttft", "TTFT"}} {
		c := figure.NewCDF(r.Scenario+": "+m.title+" CDF per policy", "latency (s, log scale)")
		for i := range r.report.Runs {
			run := &r.report.Runs[i]
			s := run.e2e.x
			if m.name == "ttft" {
				s = run.ttft.x
			}
			if err := c.Add(run.Strategy, s, i, 0); err != nil {
				return nil, err
			}
		}
		out = append(out, c.Figure(r.Scenario+"-policies-"+m.name+"-cdf"))
	}
	return out, nil
}

func (r *PolicyReport) shareTable() *table {
	t := &table{head: []string{"policy"}, left: 1}
	if len(r.Rows) > 0 {
		for _, m := range r.Rows[0].Shares {
			t.head = append(t.head, m.Member)
		}
	}
	for _, row := range r.Rows {
		cells := []string{row.Policy}
		for _, m := range row.Shares {
			cells = append(cells, pct(m.Share))
		}
		t.row(cells...)
	}
	return t
}

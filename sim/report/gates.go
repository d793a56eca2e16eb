package report

import (
	"math"

	"github.com/anvil-llm/anvil/scenarios"
)

// Gate statuses.
const (
	GatePass = "pass"
	GateFail = "fail"
	GateSkip = "skip" // a run the gate names is not in this report (compare with other strategies)
)

// GateResult is one evaluated expectation.
type GateResult struct {
	Name   string  `json:"name"`
	Metric string  `json:"metric"`
	Run    string  `json:"run"`
	Vs     string  `json:"vs,omitempty"`
	Op     string  `json:"op"`
	Want   float64 `json:"want"`
	Actual float64 `json:"actual"`
	Status string  `json:"status"`
	Note   string  `json:"note,omitempty"` // why a gate failed without a value
}

// evaluate checks every gate; the report passes when none fails. An unknown metric fails its gate:
// a typo must not pass silently.
func evaluate(gates []scenarios.Gate, runs []Run) ([]GateResult, bool) {
	out := make([]GateResult, 0, len(gates))
	passed := true
	for _, g := range gates {
		res := GateResult{Name: g.Name, Metric: g.Metric, Run: g.Run, Vs: g.Vs, Op: g.Op, Want: g.Value}
		res.Status, res.Actual, res.Note = check(g, runs)
		if res.Status == GateFail {
			passed = false
		}
		out = append(out, res)
	}
	return out, passed
}

func check(g scenarios.Gate, runs []Run) (status string, actual float64, note string) {
	run, ok := findRun(runs, g.Run)
	if !ok {
		return GateSkip, 0, "run not in this report"
	}
	v, ok := run.Value(g.Metric)
	if !ok {
		return GateFail, 0, "unknown metric"
	}
	if g.Vs != "" {
		vs, ok := findRun(runs, g.Vs)
		if !ok {
			return GateSkip, 0, "run not in this report"
		}
		d, _ := vs.Value(g.Metric)
		if d == 0 {
			return GateFail, 0, "ratio over zero"
		}
		v /= d
	}
	if math.IsNaN(v) || !g.Holds(v) {
		return GateFail, v, ""
	}
	return GatePass, v, ""
}

func findRun(runs []Run, strategy string) (*Run, bool) {
	for i := range runs {
		if runs[i].Strategy == strategy {
			return &runs[i], true
		}
	}
	return nil, false
}

// Ratio compares one metric across runs: values in run order and last/first.
type Ratio struct {
	Metric string    `json:"metric"`
	Values []float64 `json:"values"`
	Ratio  float64   `json:"ratio"` // last run / first run; 0 when the first is 0
}

// comparedMetrics are the side-by-side rows of a comparison.
func comparedMetrics() []string {
	return []string{
		"e2e.p50", "e2e.p90", "e2e.p99", "e2e.p99.9", "ttft.p50", "ttft.p99", "tpot.p50", "tpot.p99",
		"itl.p99", "queue.mean", "tier.throughput_rps", "tier.output_tps", "tier.goodput_rps",
		"tier.mean_active", "tier.peak_active", "tier.fairness_requests", "tier.fairness_utilization",
		"tier.not_admitted", "tier.ceiling_violations",
	}
}

func compare(runs []Run) []Ratio {
	if len(runs) < 2 {
		return nil
	}
	var out []Ratio
	for _, name := range comparedMetrics() {
		r := Ratio{Metric: name}
		for i := range runs {
			v, _ := runs[i].Value(name)
			r.Values = append(r.Values, v)
		}
		if first := r.Values[0]; first != 0 {
			r.Ratio = r.Values[len(r.Values)-1] / first
		}
		out = append(out, r)
	}
	return out
}

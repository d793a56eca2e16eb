package fidelity

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// Format names the comparison's JSON.
const Format = "anvil-sim-fidelity/1"

// ErrMismatch is wrapped by Match's errors: a bench result that is not of the simulated run.
var ErrMismatch = errors.New("the bench result does not match the simulation")

// Verdicts of a row.
const (
	Within  = "within"
	Outside = "outside"
	NoData  = "no data" // neither side has a sample: nothing to compare
)

// Report is the side by side of one scenario's simulated and real runs, one per strategy.
type Report struct {
	Format   string  `json:"format"`
	Scenario string  `json:"scenario"`
	Seed     uint64  `json:"seed"`
	WindowS  float64 `json:"arrival_window_s"`
	Runs     []Run   `json:"runs"`
	Rows     []Row   `json:"rows"`
	Bounded  int     `json:"bounded"` // rows with a bound
	Within   int     `json:"within"`  // of those, within it
	Passed   bool    `json:"passed"`  // every bounded row within its bound
}

// Run is one strategy's figures on both sides.
type Run struct {
	Strategy string  `json:"strategy"`
	Sim      Figures `json:"sim"`
	Real     Figures `json:"real"`
	// SendLag is how late the bench sent the real run's requests against their schedule: the
	// bench's own delay, which grows when the machine stalls it, so a loaded machine shows here.
	SendLag Lag `json:"real_send_lag_ms"`
}

// Lag summarizes a delay in milliseconds.
type Lag struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Row is one figure of one strategy, simulated and real.
type Row struct {
	Strategy string  `json:"strategy"`
	Figure   string  `json:"figure"` // "ttft_p50", "e2e_p99", "succeeded", ...
	Unit     string  `json:"unit"`   // "ms" or "" for a count
	Sim      float64 `json:"sim"`
	Real     float64 `json:"real"`
	Diff     float64 `json:"diff"`            // real - sim
	Relative float64 `json:"relative"`        // diff / sim; 0 when sim is 0
	Bound    float64 `json:"bound,omitempty"` // the largest |relative| allowed; 0: shown, not bounded
	Verdict  string  `json:"verdict,omitempty"`
}

// Match checks that every bench result is of the simulation sc describes: the same scenario, seed,
// arrival window (sc.Duration), loop and endpoint, a run that was not cut short, labelled with a
// strategy (round_robin or capacity), one result per strategy.
func Match(sc *scenarios.Scenario, results []bench.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("%w: no bench result", ErrMismatch)
	}
	mode := "open"
	if sc.Workload.Closed != nil {
		mode = "closed"
	}
	var seen []string
	for i, r := range results {
		n := i + 1
		switch {
		case r.Scenario != sc.Name:
			return fmt.Errorf("%w: result %d is a run of scenario %q, the simulation is of %q", ErrMismatch, n, r.Scenario, sc.Name)
		case r.Seed != sc.Seed:
			return fmt.Errorf("%w: result %d was sent with seed %d, the simulation runs seed %d (give --seed %d)", ErrMismatch, n, r.Seed, sc.Seed, r.Seed)
		case r.ArrivalWindowS == 0:
			return fmt.Errorf("%w: result %d sent a request count; the simulation needs an arrival window (anvil-bench run --scenario ... --duration D)", ErrMismatch, n)
		case r.ArrivalWindowS != sc.Duration.Seconds():
			return fmt.Errorf("%w: result %d sent arrivals for %g s, the simulation runs %g s", ErrMismatch, n, r.ArrivalWindowS, sc.Duration.Seconds())
		case r.Mode != mode:
			return fmt.Errorf("%w: result %d is a %s loop, the scenario's workload a %s loop", ErrMismatch, n, r.Mode, mode)
		case r.Endpoint != bench.Chat.String():
			return fmt.Errorf("%w: result %d sent %s requests; the simulation sends chat completions", ErrMismatch, n, r.Endpoint)
		case r.Target.Stopped != "":
			return fmt.Errorf("%w: result %d is of a run that stopped early", ErrMismatch, n)
		case r.Label != scenarios.StrategyRoundRobin && r.Label != scenarios.StrategyCapacity:
			return fmt.Errorf("%w: result %d is labelled %q; label each run with the router's strategy (--label round_robin or --label capacity)", ErrMismatch, n, r.Label)
		case slices.Contains(seen, r.Label):
			return fmt.Errorf("%w: two results of strategy %s", ErrMismatch, r.Label)
		}
		seen = append(seen, r.Label)
	}
	return nil
}

// Strategies are the strategies of the results, in their order: the runs to simulate.
func Strategies(results []bench.Result) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = r.Label
	}
	return out
}

// bound is one bounded statistic: issue 15's p50 within 10%, p99 within 20%.
type bound struct {
	stat  string
	limit float64
}

func bounds() []bound { return []bound{{"p50", 0.10}, {"p90", 0}, {"p99", 0.20}} }

// Build puts simulated runs (sims[i] of results[i]'s strategy, as Match and Strategies arrange)
// beside the bench results.
func Build(sc *scenarios.Scenario, sims []*sim.Result, results []bench.Result) Report {
	r := Report{Format: Format, Scenario: sc.Name, Seed: sc.Seed, WindowS: sc.Duration.Seconds()}
	for i, res := range results {
		run := Run{Strategy: res.Label, Sim: Simulated(sims[i]), Real: Real(res),
			SendLag: Lag{P50: res.SendLag.P50, P99: res.SendLag.P99, Max: res.SendLag.Max}}
		r.Runs = append(r.Runs, run)
		r.Rows = append(r.Rows, rows(run)...)
	}
	r.Bounded, r.Within, r.Passed = tally(r.Rows)
	return r
}

// tally counts the bounded rows (with data) and those within their bound; passed when every one
// of at least one is.
func tally(rows []Row) (bounded, within int, passed bool) {
	for _, row := range rows {
		if row.Bound > 0 && row.Verdict != NoData {
			bounded++
			if row.Verdict == Within {
				within++
			}
		}
	}
	return bounded, within, bounded > 0 && within == bounded
}

// rows lists a run's figures: the counts, then TTFT, end-to-end latency and TPOT at each statistic.
func rows(run Run) []Row {
	out := []Row{
		count(run.Strategy, "requests", run.Sim.Requests, run.Real.Requests),
		count(run.Strategy, "succeeded", run.Sim.Succeeded, run.Real.Succeeded),
	}
	for _, m := range []struct {
		name    string
		bounded bool
		get     func(Figures) Latency
	}{
		{"ttft", true, func(f Figures) Latency { return f.TTFT }},
		{"e2e", true, func(f Figures) Latency { return f.E2E }},
		{"tpot", false, func(f Figures) Latency { return f.TPOT }},
	} {
		s, q := m.get(run.Sim), m.get(run.Real)
		for _, b := range bounds() {
			row := Row{Strategy: run.Strategy, Figure: m.name + "_" + b.stat, Unit: "ms", Sim: s.stat(b.stat), Real: q.stat(b.stat)}
			row.difference()
			if m.bounded && b.limit > 0 {
				row.Bound = b.limit
				row.Verdict = verdict(row, s.N > 0, q.N > 0)
			}
			out = append(out, row)
		}
	}
	return out
}

func count(strategy, name string, sim, real int) Row {
	row := Row{Strategy: strategy, Figure: name, Sim: float64(sim), Real: float64(real)}
	row.difference()
	return row
}

func (r *Row) difference() {
	r.Diff = r.Real - r.Sim
	if r.Sim != 0 {
		r.Relative = r.Diff / r.Sim
	}
}

// verdict judges a bounded row: within when |relative| is at most the bound; a side without a
// sample is outside when the other has one (a run that failed every request does not pass).
func verdict(r Row, sim, real bool) string {
	switch {
	case !sim && !real:
		return NoData
	case sim != real:
		return Outside
	case math.Abs(r.Relative) <= r.Bound:
		return Within
	}
	return Outside
}

func (l Latency) stat(name string) float64 {
	switch name {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	}
	return l.P99
}

// Window is a bench result's arrival window as a duration (0 for a request count).
func Window(r bench.Result) time.Duration {
	return time.Duration(math.Round(r.ArrivalWindowS * float64(time.Second)))
}

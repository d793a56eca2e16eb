package fidelity

import (
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/sim"
)

// Figures are one side's figures of one strategy's run. Latencies are in milliseconds.
type Figures struct {
	Requests  int     `json:"requests"`  // measured requests sent (arrivals, for the simulation)
	Succeeded int     `json:"succeeded"` // of those, successful
	TTFT      Latency `json:"ttft_ms"`
	TPOT      Latency `json:"tpot_ms"`
	E2E       Latency `json:"e2e_ms"`
}

// Latency summarizes one latency sample.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Simulated computes the figures of a simulated run with the bench's definitions: TTFT from the
// arrival to the first token of every successful streamed request, TPOT (end - first token) /
// (tokens - 1) of those with more than one token, end-to-end latency of every success.
func Simulated(res *sim.Result) Figures {
	f := Figures{Requests: len(res.Requests)}
	var ttft, tpot, e2e []float64
	for i := range res.Requests {
		q := &res.Requests[i]
		if q.Outcome != decisionlog.OutcomeSuccess {
			continue
		}
		f.Succeeded++
		e2e = append(e2e, millis(q.End-q.Arrival))
		if !q.Stream || q.FirstToken < 0 {
			continue
		}
		ttft = append(ttft, millis(q.FirstToken-q.Arrival))
		if q.Output > 1 {
			tpot = append(tpot, millis((q.End-q.FirstToken)/time.Duration(q.Output-1)))
		}
	}
	f.TTFT, f.TPOT, f.E2E = summarize(ttft), summarize(tpot), summarize(e2e)
	return f
}

// Real reads the same figures from a bench result.
func Real(r bench.Result) Figures {
	lat := func(s bench.Summary) Latency { return Latency{N: s.N, P50: s.P50, P90: s.P90, P99: s.P99} }
	return Figures{Requests: r.Requests, Succeeded: r.Completed, TTFT: lat(r.TTFT), TPOT: lat(r.TPOT), E2E: lat(r.E2EL)}
}

func summarize(xs []float64) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	slices.Sort(xs)
	return Latency{N: len(xs), P50: bench.Quantile(xs, 0.50), P90: bench.Quantile(xs, 0.90), P99: bench.Quantile(xs, 0.99)}
}

// millis converts like the bench does: exact nanoseconds over 1e6.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

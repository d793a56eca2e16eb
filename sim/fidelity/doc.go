// Package fidelity checks the simulator against real time: a simulated run of a scenario beside
// anvil-bench's result of the same scenario, seed and arrival window sent to a real router in front
// of real fake-vLLM members (bench/sim-vs-real.sh runs both). The simulator and the fake vLLM share
// the engine model (package engine), and the simulator drives the router's own walk, so what the
// comparison measures is what real time adds: HTTP, goroutine scheduling and timers, and the
// decisions that follow from them (which member a request went to, when a scrape landed).
//
// Both columns use the bench's definitions, computed from the simulated requests here and from the
// bench's records there: TTFT of every successful streamed request (to its first token), TPOT of
// those with more than one token, end-to-end latency of every success, percentiles by numpy's
// linear interpolation (bench.Quantile). The simulator's own report differs slightly: it counts
// every success's first token and reads empirical quantiles.
//
// The bounds are issue 15's: p50 within 10% and p99 within 20% of the simulated figure, for TTFT and
// end-to-end latency, per strategy. Counts, p90 and TPOT are shown without a bound.
//
// Reading guide: figures.go (one side's figures), compare.go (matching a bench result to a
// simulation, the rows and their verdicts), render.go (text, Markdown; the Report marshals to JSON).
package fidelity

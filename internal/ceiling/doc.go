// Package ceiling is the pure analysis of a ceiling sweep: one member held at concurrency 1, 2, ...
// up to a bound, each step measured in windows. It decides when a step's figures are stable, where
// the throughput curve's knee is, and which max_concurrency to recommend for an SLO. The simulator's
// sweep over the engine model (anvil-sim calibrate) and the qualification's sweep against a real
// member (anvil-qualify's calibration phase) both call it, so the two apply one definition.
//
// Definitions (docs/benchmarks/methodology.md, "Ceiling calibration", says the same in prose):
//
//   - Stable: a step is held window after window; it is stable once two consecutive windows'
//     output-token throughputs differ by less than the tolerance (default 5%) of the larger one.
//     The figures of a step are those of its last two windows.
//   - Knee: the smallest swept ceiling whose throughput reaches KneeShare (default 95%) of the
//     largest throughput of the sweep. Past it, each added slot buys at most the remaining 5%.
//   - Figures: throughput over the two windows; the requests that ended in them (the samples)
//     give requests and goodput per second and the p50 and p99 of their TTFT and TPOT (each
//     request's time per output token after the first, what the bench's goodput and the
//     qualification gate's tpot_p99 judge). A figure of no sample is NaN and meets no target.
//   - SLO limit: the largest swept ceiling such that it and every smaller one meet the SLO (TTFT
//     p99 and TPOT p99 at most their targets). The first break ends it, as it ends the real sweep.
//   - Recommendation: the smaller of the knee and the SLO limit, over the points below the first
//     step whose requests failed. Above the knee extra slots add little throughput but let
//     requests queue inside the engine, where the router's scheduler can neither see nor move
//     them; above the SLO limit admitted requests miss the SLO. A sweep that ended early (at its
//     first break, or at a failure) while still rising has no knee: the limit is recommended.
//
// The package imports the standard library only; it reads no clock and does no I/O.
package ceiling

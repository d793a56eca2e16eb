// Package report turns simulator runs into statistics, gate verdicts, text, JSON, Markdown and
// plots.
//
// Per member and for the tier: requests and share, peak and time-weighted active leases against
// the ceilings, ceiling violations, throughput, goodput under the scenario's SLOs, TTFT, TPOT, ITL
// and end-to-end latency quantiles (p50/p90/p99/p99.9 with gonum/stat), the engines' mean queue
// time (exact from vLLM's histogram; no quantiles, as the engine reports no per-request scheduling
// time), Jain's fairness index; the T012 invariants, freshness classes seen at
// selection, decision-reason counts and one-attempt accounting. Every number a gate may read is in
// Run.Metrics under a stable name (tier.ceiling_violations, e2e.p99, member.vllm-0.share, ...);
// Names lists them for a scenario and CheckGates refuses gates naming anything else.
//
// Reports hold no wall-clock reading, iterate no map and format floats with strconv, so equal runs
// give byte-identical JSON and Markdown.
//
// Reading guide: report.go (Build and the per-scope statistics), stats.go (quantiles, fairness,
// queue-time mean), metrics.go (the flat metric names), gates.go (gate evaluation and the
// strategy comparison), render.go and table.go (terminal text, Markdown, JSON), plot.go (PNG and
// SVG plots), types.go (report-side views of the raw counters), vocabulary.go (metric names and
// load-time gate checks).
package report

// Package calibrate sweeps one member's ceiling over the engine model: for each ceiling C it holds
// a closed loop of exactly C requests in flight on one virtual engine (what a saturated router
// ceiling of C does to the member it guards), window after window on virtual time until the
// step's throughput is stable, and measures throughput, goodput, TTFT and inter-token latency. The
// knee, the stability rule and the recommended max_concurrency come from internal/ceiling, the
// definitions anvil-qualify's calibration phase applies to a real member.
//
// The router is left out on purpose: under a ceiling of C with more callers than C, the member
// sees exactly C requests at a time and a new one whenever one ends; the router's own queue adds
// waiting before dispatch, which no ceiling choice on the member removes. Every request is streamed
// and runs to its drawn output length (ignore_eos, no cancellations): the sweep measures capacity.
// The prompt carries the chat template's tokens as the fake vLLM counts them
// (sim.ChatTemplateTokens), so the sweep and a real-time sweep of a fake member agree.
//
// Determinism: virtual time only, the workload's lengths from the seed's own stream (each ceiling
// draws the same sequence of shapes), the engine's jitter from the seed; the same options give the
// same Report, byte for byte in every format.
//
// Reading guide: sweep.go (Options, defaults, Run), step.go (one ceiling's closed loop and its
// windows), report.go (the report's text, Markdown, JSON and its plot).
package calibrate

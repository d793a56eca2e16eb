// Package bench is a black-box load generator for OpenAI-compatible URLs: a real vLLM, the fake
// one, or the Anvil router. It imports nothing of the router, the simulator or the fake vLLM, so
// its figures mean the same against any of them. It takes its arrivals and request shapes from
// package scenarios, so a run of a scenario sends the arrivals and shapes the simulator simulates
// for the same seed.
//
// A run is a Plan (the load: closed loop of N clients with think time and backoff, or open loop
// with Poisson, gamma or constant gaps; the prompt and output lengths, the streaming share, the
// scenario's client cancellations; a request count or a duration; warm-up; the over-saturation
// stop) sent to a Target (base URLs, round robin on the client side, a model name, a token).
// Closed-loop clients honour Retry-After on retryable errors as OpenAI's SDKs do: a wait in
// (0, 60 s] is kept before the client's next request, anything else falls back to the backoff.
// Open-loop arrivals are a schedule and are never delayed.
//
// Every request leaves a Record with its raw per-chunk timestamps; every figure is computed from
// records, with vllm bench serve's names and definitions: TTFT is the first content chunk, ITL
// the gaps between content chunks, TPOT (E2EL - TTFT) / (output tokens - 1), E2EL the time to the
// complete answer; tokens from the usage the server reports; goodput the requests per second
// meeting every SLO; percentiles by numpy's linear interpolation. Only successful requests enter
// latency figures; every other ending is counted in a fixed set of outcome classes.
//
// Reading guide: the pure core is plan.go and schedule.go (what is sent when), body.go (request
// bodies), sse.go, answer.go and answerscan.go (reading streams and answers, over the shared
// internal/sse reader and internal/jsonscan scanner), record.go (a request's raw data and its
// metrics), stats.go (summaries), report.go, summary.go, render.go and plot.go (results,
// comparisons, the report a command prints and writes, tables and CDF plots), raw.go and rawdecode.go (the raw
// JSONL format and its strict reader), retryafter.go, dist.go and outcome.go. The shell is client.go (one request over a tuned HTTP/1.1 transport), runner.go
// (closed and open loops, warm-up, stops), pair.go (a matched comparison's rounds, alternating
// which target goes first) and progress.go (the live bar).
package bench

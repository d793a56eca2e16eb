// Package fakevllm is a vLLM-compatible HTTP server that drives the pure
// fakevllm/engine model in real time, so the router can be tested, demonstrated
// and benchmarked without a GPU.
//
// Reading guide:
//
//   - server.go: Options, Server, NewServer, the routes, /v1/models, /health.
//   - driver.go: the real-time shell around the engine. One goroutine owns the
//     engine; handlers talk to it over channels; a timer advances it at
//     NextEventAt; events land in per-request tickets.
//   - generate.go: the generation handler: gates, submission, the streaming
//     and ordinary loops, client-disconnect aborts.
//   - request.go, prompt.go, tokens.go: decoding and validating the three OpenAI request
//     shapes into one generation request (engine untouched on bad input), the
//     prompt-token estimate, the natural stop length and the filler text.
//   - chat.go (chat and completions), responses.go, sse.go: vLLM's ordinary
//     and SSE response framing.
//   - metrics.go: vLLM's /metrics families on a private Prometheus registry.
//   - faults.go, faultstate.go, admin.go: seeded fault injection, settable by
//     Options, a YAML/JSON file and /admin/faults.
//   - cluster.go: several members in one process on loopback listeners.
//
// Prompt tokens are estimated, not tokenized: see EstimateTextTokens.
package fakevllm

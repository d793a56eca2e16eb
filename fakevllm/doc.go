// Package fakevllm is a vLLM-compatible HTTP server that drives the pure
// fakevllm/engine model in real time, so the router can be tested, demonstrated
// and benchmarked without a GPU.
//
// Reading guide:
//
//   - server.go: Options, Server, NewServer, the routes, /health.
//   - models.go: the model names a member answers to and GET /v1/models.
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
// # Model names
//
// Which option lists what in /v1/models (vLLM's shape: every field present,
// base entries first, then adapters):
//
//   - Options.Models (--model): served names of the one base model, like
//     vLLM's --served-model-name. Each is a base entry (parent null,
//     max_model_len set) with the same root, the first name. Responses report
//     the first name whichever one was asked for, as vLLM does.
//   - Options.LoRA (--lora): LoRA adapters, like vLLM's --lora-modules.
//     Each entry has parent = the first served name, root = LoRARoot+name and
//     max_model_len null. Requests may name an adapter; responses then report
//     the adapter's name.
//   - Options.ExtraModels (--extra-model): unrelated base models (root =
//     their own name, parent null), for a member that lists a model other
//     than the one it is meant to serve. Requests naming one are served by
//     the same engine and report its name.
//
// Prompt tokens are estimated, not tokenized: see EstimateTextTokens.
package fakevllm

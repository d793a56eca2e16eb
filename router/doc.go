// Package router is the root of Anvil's production router. It holds no code; this file is the reading
// guide.
//
// A request walks these packages in order:
//
//   - server: the gin engine. Authenticates the caller, bounds the body, and runs the request's
//     routing.Attempt, whose Finish (in the handler's one defer) releases the lease.
//   - request: the body parsed once in place (exact keys, nothing materialized, the prompt measured
//     conservatively) and the request-wide gates, shared with the simulator.
//   - routing: the walk itself, shared with the simulator: resolves the alias to one tier, applies the
//     request's gates, takes the latest completed readiness and pressure snapshots (never waiting on I/O), calls
//     admission once, and finishes with one decision record.
//   - admission: the only owner of counts, quiesce, drain and the rotating cursor. Under one tier lock it
//     rechecks ceilings, ranks (capacity) or advances the cursor (round robin), and reserves tier and
//     member together.
//   - scheduler: the pure capacity scheduler: pressure normalization, candidates, scores, Rank.
//   - relay: exactly one upstream attempt, ordinary, SSE (read by internal/sse, the reader the bench
//     shares) or passed through (audio); its ending is classified by decisionlog.Terminal.
//   - decisionlog: outcomes, the terminal classification, one bounded, metadata-only record per request.
//
// Around that path: ident (the contract's grammars and bounds, a pure leaf), config (the validated
// model) and config/load (YAML files and viper, the only viper user), readiness (member served-model
// probes, core plus prober shell), health (the pure passive-health core that ejects a member after
// consecutive failures; routing applies it to each readiness snapshot), pressure (the single-flight
// cache core) and pressure/scrape (its HTTP shell and the vLLM /metrics parser), capacity (the
// operator views: the validated capacity JSON and the Prometheus collector, read from the same
// snapshots without scheduling anything), and audioform (the audio upload's multipart form, read in
// one streaming pass).
//
// The operator's controls: manage (the one transition request: its grammar, which the server's
// endpoint decodes with, and the client the CLI verbs and the MCP tool send it with), mcp (the
// router_transition tool over manage) and intent (tier and member quiesce intent persisted across
// restarts, restored into admission at start); statuspage (the embedded status page under /admin/ui/,
// which reads the capacity JSON and calls the transition endpoint like any other client).
//
// Pure cores take time as a value; shells own goroutines, clocks and I/O. The simulator drives the same
// cores on virtual time.
package router

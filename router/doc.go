// Package router is the root of Anvil's production router. It holds no code; this file is the reading
// guide.
//
// A request walks these packages in order:
//
//   - server: the gin engine. Authenticates the caller, bounds and parses the body once, applies the
//     request-wide gates, and owns the lease for the whole response (one defer releases it).
//   - routing: resolves the alias to one tier, takes the latest completed readiness and pressure
//     snapshots (never waiting on I/O), and calls admission once.
//   - admission: the only owner of counts, quiesce, drain and the rotating cursor. Under one tier lock it
//     rechecks ceilings, ranks (capacity) or advances the cursor (round robin), and reserves tier and
//     member together.
//   - scheduler: the pure capacity scheduler: pressure normalization, candidates, scores, Rank.
//   - relay: exactly one upstream attempt, ordinary or SSE, with its terminal outcome classified.
//   - decisionlog: one bounded, metadata-only record per request.
//
// Around that path: config (viper plus closed validation, the only viper user), readiness (member
// served-model probes, core plus prober shell), pressure (vLLM /metrics adapter and the single-flight
// cache), capacity (JSON and Prometheus projections), intent (persisted quiesce intent), manage and mcp
// (the transition client for the CLI and the MCP tool).
//
// Pure cores take time as a value; shells own goroutines, clocks and I/O. The simulator drives the same
// cores on virtual time.
package router

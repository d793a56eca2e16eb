// Package sim is Anvil's deterministic discrete-event simulator: it runs one scenario on virtual
// time through the real router code, not a model of it.
//
// Every request walks the server's path: a real chat-completion body parsed by routing.ParseRequest,
// the tier resolved and gated by routing.Router.Resolve, one lease taken by routing.Router.Admit
// (real admission, real scheduler.Rank, the real pressure cache core for capacity tiers), exactly
// one dispatch to the chosen member's fakevllm engine, one lease release on whatever terminal path,
// and one decisionlog record. The tier comes from a real router configuration rendered from the
// scenario and validated by config.Parse. Members are fakevllm/engine instances stepped on the
// virtual clock; the pressure core is driven by two virtual workers whose scrapes read an engine's
// metrics view after a modeled latency.
//
// Determinism: one event loop over sim/event's queue ordered by (time, priority, sequence); every
// random draw comes from the scenario's per-subsystem streams; no map is iterated on any output
// path; nothing reads the wall clock, starts a goroutine or does I/O (except writing decision
// records to an optional sink). The same scenario and seed give the same Result.
//
// Reading guide: sim.go (Run, Options, wiring the real router pieces), config.go (the rendered
// router config), loop.go (event kinds, priorities, the loop), requests.go (one request's walk and
// its terminal paths), parse.go (the memoized real request parser), members.go (engines on virtual
// time, kill and revive), telemetry.go (readiness and the pressure core's two virtual workers),
// ops.go (timed operator actions, drains), audit.go (the T012 invariants and decision evidence
// checks), series.go (lease accounting and timelines), result.go (what a run returns).
package sim

// Package sim is Anvil's deterministic discrete-event simulator: it runs one scenario on virtual
// time through the real router code, not a model of it.
//
// Every request walks the server's path: a real chat-completion body parsed by request.Parse,
// the tier resolved and gated by routing.Router.Resolve, one lease taken by routing.Router.Admit
// (real admission, real scheduler.Rank, the real pressure cache core for capacity tiers), exactly
// one dispatch to the chosen member's fakevllm engine under the router's upstream first-byte and
// overall timers, one lease release on whatever terminal path, classified as the relay classifies
// it (Classify, pinned against router/relay by the module root's simrelay_test.go), and one
// decisionlog record, checked against the configured membership as the server's log does. The
// tier comes from a real router configuration rendered from the scenario and validated by
// config.Build; Check builds all of it without running, so a bad scenario fails before any run. Members are engine instances stepped on the
// virtual clock, each prefilling a request's prompt with the chat template's tokens as the fake vLLM
// counts them (ChatTemplateTokens); the pressure core is driven by two virtual workers whose scrapes read an engine's
// metrics view after a modeled latency.
//
// Determinism: one event loop over sim/event's queue ordered by (time, priority, sequence); every
// random draw comes from the scenario's per-subsystem streams; no map is iterated on any output
// path; nothing reads the wall clock, starts a goroutine or does I/O (except writing decision
// records to an optional sink). The same scenario and seed give the same Result.
//
// The sim checks the router rather than trusting it: every lease change is audited against its own
// lease books; every capacity decision's evidence against its own view of each member (held
// leases, eligibility, and the freshness and ppm implied by the sample the pressure cache holds);
// and the one-attempt boundary on the member side, where each member records the request IDs it
// receives, reconciled against admission at the end.
//
// Reading guide: sim.go (Run, Check, Options, wiring the real router pieces), config.go (the
// rendered router config, and RouterDocument: the same config placed on real endpoints), loop.go (event kinds, priorities, the loop), requests.go (one request's
// walk and its terminal paths), classify.go (the relay's outcome rules), timeouts.go (the upstream
// timers), parse.go (the memoized real request parser), members.go (engines on virtual time, kill
// and revive, what each member received), telemetry.go (readiness and the pressure core's two
// virtual workers), ops.go (timed operator actions, drains), restart.go (a router restart on virtual
// time: in-flight requests cut, the intent file restored from an in-memory file system), reload.go
// (live configuration reloads through the router's own Next and Publish, the readiness source and
// the pressure cache following each generation as routing.Followers; each generation validated up
// front, the sim's books of the ceilings and members in force, the reload audit after every event,
// and ReloadFault, the wrong reloads the gates must catch), audit.go (the T012 invariants and
// decision evidence checks), dispatches.go (the member-side one-attempt reconciliation), series.go
// (lease accounting and timelines), result.go (what a run returns), policies.go (a reference
// placement policy of sim/policy choosing the member through the same walk, and the oracle's
// forward runs on cloned engines), outside.go (members' outside load, which the router never sees).
package sim

// Package scenarios defines what the simulator runs: the scenario schema, its strict loader, the
// seeded workload generators, and the scenarios shipped with Anvil (the *.yaml files of this
// directory, embedded).
//
// A scenario declares one replica tier (members, ceilings, strategy, an engine profile per member),
// a workload (closed loop of N clients, or open loop with Poisson, gamma-burst or constant
// arrivals; prompt and output length distributions; the streaming share; client cancellations),
// telemetry behaviour (scrape latency and jitter, per-member metrics outages, slowness, malformed
// pages, hung scrapes), timed events (quiesce, drain and readmit a member or the tier, kill, revive
// or slow a member, upstream error and stream-close windows), live configuration reloads (reloads:
// at a virtual time, one or more changes applied as one new generation: member_ceiling, add_member,
// remove_member; see Reload), the router's upstream timeouts, the duration and seed, the SLOs and
// the expect: gates the report must pass.
//
// Loading is strict: exactly the documented keys, no duplicates, no anchors, the right YAML type
// for every value, then semantic checks; every error names the path of the offending field and
// wraps ErrInvalid. A run's total work is bounded at MaxRequests (rate x duration, or the closed
// loop's equivalent), so a typo cannot start a run of hours. Randomness comes from five PCG streams
// derived from the seed (arrivals, lengths, faults, scrape jitter, engine seeds), so a draw added
// in one subsystem never shifts another, and the arithmetic on the draws is written so that no
// compiler fuses it into FMA instructions.
//
// Reading guide: schema.go (the types and their YAML keys), decode.go (the strict gate),
// validate.go and workload.go (defaults and semantic checks), reloads.go (the reload timeline:
// each change checked against the membership in force, Generations, AllMembers), generate.go (streams, distributions,
// arrival processes, request shapes), embed.go (the shipped scenarios).
package scenarios

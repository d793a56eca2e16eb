// Package capacity projects what the router holds right now (admission snapshots, cached upstream
// pressure, member readiness, decision-log counters) into the two operator surfaces that read it: the
// capacity JSON of GET /admin/v1/capacity and the Prometheus collector behind GET /metrics.
//
// Reading never changes anything: one admission snapshot per tier, then the pressure cache's Peek once
// per capacity tier (never Snapshot, which would schedule a scrape), with no lock held across the two.
// Nothing is reserved, released, quiesced or reranked, and no new selection score is invented: the
// telemetry is the current cached signal, not the previous decision.
//
// Everything read is validated against the configuration before it is shown (the spec's T011):
// exact configured tier and member IDs, matching ceilings, valid states, draining consistent with
// state and active count, member counts that sum to the tier's, at most 16 members per tier and 256
// capacity members in all. A tier whose snapshot is absent or malformed is shown unavailable (every
// number null, never 0); a bad pressure envelope makes every member's telemetry unknown, a bad single
// value only that member's. Only safe IDs (router/ident) ever become JSON values or metric labels.
//
// Reading guide:
//
//   - plan.go: TierSpec, the configuration's expectation each snapshot is checked against (Plan).
//   - view.go: the JSON model (Document, Tier, Member, Telemetry) and AdmissionTier, the admission
//     view's projection of one snapshot, shared by the admission and transition answers.
//   - build.go: Build, the validated capacity projection, and the pressure envelope check.
//   - collector.go: Collector, a prometheus.Collector over the same sources, registered by the server
//     on its own registry.
package capacity

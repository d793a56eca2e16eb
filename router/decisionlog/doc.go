// Package decisionlog keeps one bounded, metadata-only record per routed request.
//
// A Record names the request (the router's validated request ID, and the caller's own
// as an optional correlation value in the same grammar), where it went (alias, tier,
// member, route kind, replica strategy), how it ended (a closed outcome class,
// attempts 0 or 1, the status sent to the client) and when (start, duration, first
// byte). For capacity tiers it may carry the scheduler's validated Decision as
// replica_scheduler evidence. Every field is a validated ID, a closed enum or a number,
// so URLs, addresses, credentials, prompts, bodies and raw errors have nowhere to go.
//
// Reading guide:
//
//   - record.go: Record, its enums, the ID grammars and the cross-field invariants.
//   - evidence.go: when replica_scheduler evidence is kept, and ValidateEvidence for
//     checking it against configured membership and ceilings.
//   - encode.go: the canonical JSONL encoding and the key=value Line formatter.
//   - log.go: Log, a bounded ring buffer plus an optional JSONL sink.
//   - ingest.go: ReadJSONL, strict ingestion of captured JSONL; decode.go is its
//     token-level decoder (the authority for errors) over tokens.go's typed reader, canonical.go its fast path for
//     the writer's own layout, errors.go the fixed error values.
//   - summary.go: Summarize and the text/JSON summary.
//
// Storage, the line formatter, the summary and the JSONL writer share one
// normalization: invalid IDs become InvalidMarker (an invalid caller request ID is
// dropped instead: present means kept), malformed optional scheduler evidence
// is discarded (the record itself is kept), and records that break an invariant are
// refused. Ingestion is stricter: it accepts exactly the bytes the writer produces.
package decisionlog

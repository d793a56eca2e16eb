// Package pressure collects upstream pressure for capacity-mode replica tiers: the
// vLLM /metrics adapter and the single-flight pressure cache.
//
// Reading guide:
//
//   - parse.go, fetch.go: the adapter. Fetch GETs a member's /metrics (1 s, 1 MiB+1
//     byte bound) and Parse extracts running and waiting requests and KV usage for
//     the tier's served model with prometheus/common/expfmt, matching whole metric
//     names, summing requests over vLLM's engine label. Outcomes are classified
//     (ClassOK, ClassFailed, ClassUnknown); no raw text, label or error escapes.
//   - register.go, core.go, fifo.go: Core, the deterministic cache. It owns the
//     registration, the last completed sample per (tier, member), one single-flight
//     marker per member shared by queued and running refreshes, the bounded FIFO of
//     due refreshes and the freshness projection through
//     scheduler.NormalizePressure. Time is a parameter; Core starts no goroutines and
//     does no I/O, so the simulator drives it on virtual time with two virtual
//     workers (Snapshot, Next, Complete).
//   - cache.go: Cache, the production shell. It reads the clock outside its lock,
//     holds the lock only around Core calls, and runs at most two worker goroutines
//     for the whole cache, started lazily on the first scheduled refresh.
//
// The request path calls Cache.Snapshot, which never waits on I/O: it returns the
// latest completed samples (fresh for 5 s after observation, then stale), failed
// for a refresh running past its 1 s budget, and unknown for anything else.
package pressure

// Package pressure is the deterministic core of upstream pressure collection for capacity-mode replica
// tiers: the registration, the last completed sample per (tier, member), the single-flight refresh
// queue and the freshness projection. Its shell, with the HTTP fetch, the vLLM /metrics page parser and
// the two worker goroutines, is router/pressure/scrape; this package does no I/O, reads no clock and
// starts no goroutine, so the simulator drives the same Core on virtual time.
//
// Reading guide:
//
//   - sample.go: Sample (numbers and presence only, never metric text) and Class, the outcome of one
//     collection (ok, failed, unknown).
//   - register.go, core.go, fifo.go: Core. It owns the registration, the last completed sample per
//     (tier, member), one single-flight marker per member shared by queued and running refreshes, the
//     bounded FIFO of due refreshes and the freshness projection through scheduler.NormalizePressure.
//     Time is a parameter (Snapshot, Peek, Next, Complete).
//
// A Snapshot never waits on I/O: it returns the latest completed samples (fresh for 5 s after
// observation, then stale), failed for a refresh running past its 1 s budget, and unknown for anything
// else.
package pressure

// Package engine is a pure, deterministic model of a vLLM V1 engine on
// explicit time: an FCFS waiting queue, a running set bounded by
// max_num_seqs, a paged KV block pool, a per-step token budget with chunked
// prefill, recompute preemption, and vLLM's scheduler metrics.
//
// Time enters only as values. A driver submits requests at a time, asks when
// the next step ends (NextEventAt) and advances the engine to a time
// (Advance), receiving the events that happened up to then. The HTTP server
// drives it with the wall clock; the simulator with virtual time. The package
// imports the standard library only, reads no clock, starts no goroutines
// and does no I/O. An Engine is not safe for concurrent use: the driver
// serializes calls.
//
// Reading guide: profile.go (the cost model and its limits), request.go
// (requests and events), engine.go (the driver-facing API), step.go (one
// scheduler step, the heart of the model), metrics.go (the metrics view with
// vLLM's histogram buckets).
package engine

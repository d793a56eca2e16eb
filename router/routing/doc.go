// Package routing turns one parsed request into one admitted lease: it resolves the alias to a tier,
// applies the request-wide gates, takes the latest completed readiness and pressure snapshots without
// waiting on I/O, and calls admission exactly once. The server and the simulator share it, so the
// simulator exercises the real gates and the real admission path.
package routing

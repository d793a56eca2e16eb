// Package routing is the walk of one request between the front door and the relay, shared by the
// server and the simulator so that both run the same code. It is quiet: no goroutines, no clock
// reads, no printing; time comes in as values.
//
// A request's walk is an Attempt: Begin; Resolve (alias to one tier, then every request-wide gate of
// router/request, which parsed the body); Admit (the latest completed readiness and pressure
// snapshots, never waiting on I/O, then exactly one atomic admission call that reserves tier and
// member together); Relayed (how the one upstream attempt ended, classified by
// decisionlog.Terminal); Finish (release the lease exactly once, store the one decision record).
// The server adds HTTP around it, the simulator virtual time; neither builds a decision record or
// maps an outcome itself.
//
// Reading guide:
//
//   - walk.go: Attempt.
//   - router.go: Router (aliases, admission, the snapshot sources, the decision log), Resolve, admit.
//   - generation.go: a Router is one configuration generation; Next builds the next over the same
//     live state (admission, passive health, followers such as readiness and pressure), Publish
//     brings it into force, and an admission racing it retries under the generation in force.
//   - health.go: passive health applied to each readiness snapshot.
//   - plan.go: the one place a config becomes admission specs, pressure specs and the decision log's
//     membership.
package routing

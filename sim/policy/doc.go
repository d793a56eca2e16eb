// Package policy holds the reference placement policies the simulator compares the capacity
// scheduler against: least connections, random, power-of-two choices, a weighted queue+KV scorer
// and a clairvoyant greedy oracle. They live in the simulator only: nothing under router/ imports
// this package (deps_test.go), no router configuration names them, and the production scheduler
// stays the spec's fixed lexicographic one.
//
// Each policy is a small pure function over a Snapshot the simulator builds at one arrival. The
// walk, admission and the ceilings are shared with the capacity scheduler: the simulator marks the
// members admission would consider eligible (ready, not quiesced, not ejected by passive health,
// one lease at most on trial, below its ceiling), the policy chooses one of them, and the real
// admission then reserves exactly that member under its own lock and rechecks every ceiling. A
// policy can therefore only choose among eligible members with room; when none is eligible the
// request meets the same refusal (or queue) as under the capacity scheduler.
//
// The package is pure: standard library only, no clock, no global random source (every random
// choice draws from the *rand.Rand the caller seeds), no I/O.
package policy

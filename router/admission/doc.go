// Package admission owns tier admission for the router: per-tier and per-member
// concurrency ceilings, quiesce/readmit transitions and the drain question, the rotating member
// cursor of replica tiers, and the compound tier/member leases that callers hold
// for the whole life of one upstream request.
//
// Three tier shapes are served by one type, TierAdmission:
//
//   - direct tiers (KindDirect): one upstream, tier ceiling only, Acquire;
//   - round-robin replica tiers (KindReplica, StrategyRoundRobin): the cursor
//     walks the sorted configured membership and skips members that are not
//     ready, quiesced or at their ceiling, AcquireMember;
//   - capacity replica tiers (KindReplica, StrategyCapacity): candidates are
//     built from current counts and ranked by the pure scheduler.Rank, the
//     resulting immutable scheduler.Decision travels on the lease.
//
// # Lock discipline
//
// Every TierAdmission owns exactly one sync.Mutex. It guards all mutable state of
// that tier and of its members: quiesce flags and reasons, active counts,
// counters, the cursor and the change channel. A Set holds no lock; it is
// immutable after New. No operation ever holds two tier locks, so there is no
// lock order to get wrong.
//
// # Generations
//
// A Set is one generation of configuration over live state that outlives it
// (reconfigure.go): Reconfigure validates the next generation's specs and
// prepares a new Set over the same tiers and members, keyed by identity (tier ID
// and kind; member ID and endpoint), changing nothing; Commit installs it, one
// tier lock at a time. Counts, quiesce, the cursor, the queue and its waiters
// carry over; members and tiers that left retire with their leases and stay
// visible until the last is released. An admission through a replaced
// generation is refused with ErrSuperseded under the tier lock, so every lease is
// granted against the ceilings and membership in force; the caller retries
// through the generation in force (a queue ticket keeps its place).
//
// Inputs from callers (the readiness and pressure maps) are copied and validated
// into fixed-size, per-call arrays before the lock is taken, so a caller mutating
// its map concurrently cannot affect a decision and a malformed map is refused
// without touching counts or the cursor. Under the lock the package only does
// arithmetic, builds scheduler.Candidate values and calls the pure
// scheduler.Rank: no I/O, no clock, no caller callback, no blocking channel
// operation. The check (quiesce, tier ceiling, member eligibility), the selection
// and the reservation of tier and member happen in one critical section, so
// concurrent acquirers can never all observe the same stale count, and the cursor
// advances only after a reservation succeeded.
//
// # Answers, never waits
//
// The package never blocks: it answers questions and tells when the answer may have changed. Idle
// says whether a quiesced scope (the tier, or one member) has drained; Changed hands out a channel
// that the next release, quiesce or readmission closes under the lock. A waiter (the server's drain,
// an admission queue) takes the channel, asks its question, and waits on the channel outside the
// package; a spurious wake-up only costs a re-check. Nothing here cancels an in-flight lease. The
// simulator asks the same questions on virtual time after each lease change.
package admission

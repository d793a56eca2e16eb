// Package scheduler is Anvil's pure capacity scheduler for replica tiers.
//
// It holds the closed, immutable value types of the capacity-scheduling contract
// (Freshness, SignalState, Pressure, Candidate, Score, Decision), the normalizer that
// turns one adapter observation into a Pressure (NormalizePressure) and the fixed
// ranking function (Rank). The package is deliberately inert: standard library only,
// no clock (time enters as values), no goroutines, no randomness, no I/O, no logging
// and no package-level mutable state. router/admission calls Rank under its tier lock;
// the simulator calls the very same function on virtual time.
//
// # Score order
//
// Rank first filters the configured membership to the members that can take a request
// now: Eligible (ready and not quiesced, decided by the caller) and active < capacity.
// The remaining members are ordered lexicographically, lowest first, by
//
//  1. local ratio active/capacity, compared exactly by integer cross-products
//     (a.active*b.capacity vs b.active*a.capacity), never by rounded fractions;
//  2. upstream unknown: a member whose pressure is fresh sorts before one whose pressure
//     is stale, failed or unknown; every non-fresh class ranks identically, so absent or
//     unusable telemetry never beats a fresh member at equal local load, and a lower
//     local ratio still wins whatever its telemetry says;
//  3. upstream pressure in parts per million (fresh members only; non-fresh members tie
//     here because they carry no pressure);
//  4. rotating rank: with members sorted by ID at indices 0..N-1 and the tier cursor c,
//     member i has rank (i - c + N) % N. Ranks are unique, so the order is total and
//     the decision never depends on candidate input order. Admission advances the
//     cursor to (i+1) % N only after reserving sorted index i, which rotates ties fairly.
//
// Local load is the safety floor; upstream pressure only orders members at equal local
// load. No floating weights, learning or prompt-derived cost enter the score.
//
// # Pressure
//
// Upstream pressure is the maximum of request pressure
// ceil((running+waiting)*1e6/scheduler_capacity), which is not clamped at 1e6, and KV
// pressure ceil(kv_usage*1e6). It is present only for fresh samples. See
// NormalizePressure for the freshness and signal-state rules.
//
// Every integer this package produces or accepts is below 2^53, so evidence survives
// JSON round trips through float64 decoders.
package scheduler

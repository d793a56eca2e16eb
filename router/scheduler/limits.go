package scheduler

import (
	"errors"
	"time"
)

// Scheduler bounds. The bounds shared with configuration, admission and the decision log (members per
// tier, ceilings, ID grammar) live in router/ident.
const (
	// MaxAge is the oldest a successful observation may be and still count as fresh
	// (inclusive): fresh iff 0 <= now-observedAt <= MaxAge.
	MaxAge = 5 * time.Second

	MaxActive = 1_000_000_000 // most active reservations a candidate may report.

	// MaxRequestCount bounds running and waiting request counts in an Observation.
	MaxRequestCount = 1_000_000_000
	// MaxKVPPM is the largest KV pressure: a fully used cache.
	MaxKVPPM = 1_000_000
	// MaxPressurePPM is the largest request pressure: (1e9+1e9)*1e6/1. It is not
	// clamped at 1e6 so an overloaded engine stays distinguishable from a full one.
	MaxPressurePPM = 2_000_000_000_000_000
)

// Sentinel errors. Every validation failure wraps exactly one of them (errors.Is);
// the wrapped text names the offending field but never echoes a raw value.
var (
	// ErrCandidates: Rank got fewer than ident.MinMembers or more than ident.MaxMembers candidates,
	// or a zero (never constructed) Candidate.
	ErrCandidates = errors.New("scheduler: candidates must be 2-16 constructed members")
	// ErrDuplicateMember: a member ID occurs twice where IDs must be unique.
	ErrDuplicateMember = errors.New("scheduler: duplicate member id")
	// ErrCursor: the rotation cursor is not in 0..N-1.
	ErrCursor = errors.New("scheduler: cursor out of range")
	// ErrInvalidID: an ID does not match the shared identifier grammar (see ValidID).
	ErrInvalidID = errors.New("scheduler: invalid member id")
	// ErrOutOfRange: a number or enum value is outside its contract bounds.
	ErrOutOfRange = errors.New("scheduler: value out of range")
	// ErrInconsistent: individually valid fields that cannot occur together.
	ErrInconsistent = errors.New("scheduler: inconsistent values")
	// ErrUnknownName: Parse* got a name that is not one of the enum's strings.
	ErrUnknownName = errors.New("scheduler: unknown name")
)

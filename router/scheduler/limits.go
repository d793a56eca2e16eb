package scheduler

import (
	"errors"
	"net/netip"
	"time"
)

// Contract bounds. They are exported so configuration, admission and decision-log
// ingestion validate against the same numbers.
const (
	// MaxAge is the oldest a successful observation may be and still count as fresh
	// (inclusive): fresh iff 0 <= now-observedAt <= MaxAge.
	MaxAge = 5 * time.Second

	MinMembers = 2  // fewest members of a replica tier.
	MaxMembers = 16 // most members of a replica tier; also the evidence row bound.

	MaxIDLength = 64 // longest tier or member ID.

	MaxActive   = 1_000_000_000 // most active reservations a candidate may report.
	MaxCapacity = 100_000       // largest member ceiling (and scheduler capacity).

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
	// ErrCandidates: Rank got fewer than MinMembers or more than MaxMembers candidates,
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

// ValidID reports whether s is a valid tier or member ID: 1-64 characters matching
// ^[a-z0-9][a-z0-9._-]{0,63}$. The grammar is shared by config, admission,
// decisionlog, intent and capacity; it keeps IDs safe as log fields and metric labels.
// An ID is never an address literal: the grammar admits exactly one address form, dotted
// IPv4 ("10.0.0.5"), and evidence that names an address must not exist.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return !ipv4Literal(s)
}

// ipv4Literal reports whether s, already within the ID grammar, is an IPv4 address.
func ipv4Literal(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

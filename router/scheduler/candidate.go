package scheduler

import (
	"fmt"

	"github.com/anvil-llm/anvil/router/ident"
)

// Candidate is one configured member as admission sees it at selection time, under
// the tier lock: whether it may take a request at all, its pre-reservation active
// count, its configured ceiling and its latest normalized pressure. The zero value is
// not a valid candidate; build one with NewCandidate.
type Candidate struct {
	id       string
	eligible bool
	active   int64
	capacity int64
	pressure Pressure
}

// NewCandidate validates and builds a candidate: memberID per ValidID, active
// 0..MaxActive, capacity 1..ident.MaxCeiling. eligible is the caller's verdict on
// readiness and quiesce; a member with active >= capacity is filtered by Rank whatever
// eligible says, so callers need not pre-filter full members.
func NewCandidate(memberID string, eligible bool, active, capacity int64, p Pressure) (Candidate, error) {
	if !ident.ValidID(memberID) {
		return Candidate{}, ErrInvalidID
	}
	if active < 0 || active > MaxActive {
		return Candidate{}, fmt.Errorf("%w: active", ErrOutOfRange)
	}
	if capacity < 1 || capacity > ident.MaxCeiling {
		return Candidate{}, fmt.Errorf("%w: capacity", ErrOutOfRange)
	}
	return Candidate{id: memberID, eligible: eligible, active: active, capacity: capacity, pressure: p}, nil
}

// MemberID returns the member's ID.
func (c Candidate) MemberID() string { return c.id }

// Eligible returns the caller's eligibility verdict (ready and not quiesced).
func (c Candidate) Eligible() bool { return c.eligible }

// Active returns the pre-reservation active count.
func (c Candidate) Active() int64 { return c.active }

// Capacity returns the member's configured ceiling.
func (c Candidate) Capacity() int64 { return c.capacity }

// Pressure returns the member's normalized upstream pressure.
func (c Candidate) Pressure() Pressure { return c.pressure }

// Schedulable reports whether Rank will consider c: eligible and below its ceiling.
func (c Candidate) Schedulable() bool { return c.eligible && c.active < c.capacity }

// Score is one evidence row of a Decision: the components Rank compared for one
// schedulable member. Its seven fields are the canonical serialized score.
type Score struct {
	id       string
	ppm      int64
	active   int32 // < capacity <= ident.MaxCeiling: packed so a Decision stays small
	capacity int32
	hasPPM   bool
	unknown  bool
	fresh    Freshness
	rank     uint8
}

// NewScore validates and builds a score row (for reconstitution from captured
// evidence). Bounds: memberID per ValidID; capacity 1..ident.MaxCeiling; active
// 0..capacity-1, because only members below their ceiling get a row; rotatingRank
// 0..ident.MaxMembers-1; f a defined class. Consistency: unknown is exactly f != fresh, a
// ppm (0..MaxPressurePPM) is present exactly when fresh, and an absent ppm is 0.
func NewScore(memberID string, active, capacity int64, unknown bool, ppm int64, hasPPM bool, f Freshness, rotatingRank int) (Score, error) {
	switch {
	case !ident.ValidID(memberID):
		return Score{}, ErrInvalidID
	case capacity < 1 || capacity > ident.MaxCeiling:
		return Score{}, fmt.Errorf("%w: local capacity", ErrOutOfRange)
	case active < 0 || active > MaxActive:
		return Score{}, fmt.Errorf("%w: local active", ErrOutOfRange)
	case active >= capacity:
		return Score{}, fmt.Errorf("%w: local active must be below local capacity", ErrInconsistent)
	case rotatingRank < 0 || rotatingRank >= ident.MaxMembers:
		return Score{}, fmt.Errorf("%w: rotating rank", ErrOutOfRange)
	case !f.Valid():
		return Score{}, fmt.Errorf("%w: freshness", ErrOutOfRange)
	case ppm < 0 || ppm > MaxPressurePPM:
		return Score{}, fmt.Errorf("%w: upstream pressure ppm", ErrOutOfRange)
	case unknown != (f != FreshnessFresh):
		return Score{}, fmt.Errorf("%w: upstream unknown must equal non-fresh", ErrInconsistent)
	case hasPPM != (f == FreshnessFresh):
		return Score{}, fmt.Errorf("%w: upstream pressure is present exactly when fresh", ErrInconsistent)
	case !hasPPM && ppm != 0:
		return Score{}, fmt.Errorf("%w: absent upstream pressure must be zero", ErrInconsistent)
	}
	return Score{id: memberID, active: int32(active), capacity: int32(capacity), ppm: ppm, hasPPM: hasPPM,
		unknown: unknown, fresh: f, rank: uint8(rotatingRank)}, nil
}

// MemberID returns the scored member's ID.
func (s Score) MemberID() string { return s.id }

// LocalActive returns the pre-reservation active count (the local ratio's numerator).
func (s Score) LocalActive() int64 { return int64(s.active) }

// LocalCapacity returns the member ceiling (the local ratio's denominator).
func (s Score) LocalCapacity() int64 { return int64(s.capacity) }

// UpstreamUnknown reports whether the member's pressure was not fresh.
func (s Score) UpstreamUnknown() bool { return s.unknown }

// UpstreamPressurePPM returns the fresh pressure in ppm and true, or 0 and false.
func (s Score) UpstreamPressurePPM() (int64, bool) { return s.ppm, s.hasPPM }

// Freshness returns the freshness class copied from the member's pressure.
func (s Score) Freshness() Freshness { return s.fresh }

// RotatingRank returns (i - cursor + N) % N for the member's sorted index i.
func (s Score) RotatingRank() int { return int(s.rank) }

// less is the score order documented in the package comment. Ranks are unique within
// one decision, so it is a strict total order there.
func (s Score) less(o Score) bool {
	// Cross-products are below ident.MaxCeiling^2 = 1e10: exact in int64.
	if l, r := int64(s.active)*int64(o.capacity), int64(o.active)*int64(s.capacity); l != r {
		return l < r
	}
	if s.unknown != o.unknown {
		return !s.unknown
	}
	if s.ppm != o.ppm {
		return s.ppm < o.ppm
	}
	return s.rank < o.rank
}

package scheduler

import "fmt"

// Freshness classifies an upstream pressure sample. The zero value is FreshnessUnknown,
// so a Pressure nobody filled in is conservatively unknown.
type Freshness uint8

const (
	FreshnessUnknown Freshness = iota // no usable sample (missing, malformed or unplaceable in time)
	FreshnessFresh                    // successful, 0-5 s old, at least one valid signal
	FreshnessStale                    // successful and valid but older than MaxAge
	FreshnessFailed                   // the collection itself failed
)

var freshnessNames = [...]string{"unknown", "fresh", "stale", "failed"}

// String returns "unknown", "fresh", "stale" or "failed", or "invalid" for a value
// outside the enum.
func (f Freshness) String() string { return enumName(freshnessNames[:], uint8(f)) }

// Valid reports whether f is one of the four defined classes.
func (f Freshness) Valid() bool { return int(f) < len(freshnessNames) }

// ParseFreshness is the inverse of String for the four valid names.
func ParseFreshness(s string) (Freshness, error) {
	v, err := parseEnum(freshnessNames[:], s, "freshness")
	return Freshness(v), err
}

// MarshalText encodes f by name; it refuses values outside the enum.
func (f Freshness) MarshalText() ([]byte, error) {
	return marshalEnum(freshnessNames[:], uint8(f), "freshness")
}

// UnmarshalText decodes a name accepted by ParseFreshness.
func (f *Freshness) UnmarshalText(b []byte) error {
	v, err := ParseFreshness(string(b))
	if err == nil {
		*f = v
	}
	return err
}

// SignalState says whether one upstream signal (the request tuple or KV usage) was
// usable. The zero value is SignalMissing.
type SignalState uint8

const (
	SignalMissing SignalState = iota // not supplied, or the request tuple was incomplete
	SignalValid                      // supplied and within its bounds
	SignalInvalid                    // supplied but malformed (non-finite, fractional, out of range)
)

var signalNames = [...]string{"missing", "valid", "invalid"}

// String returns "missing", "valid" or "invalid", or "invalid-state" for a value
// outside the enum (kept distinct from the legitimate "invalid").
func (s SignalState) String() string {
	if !s.Valid() {
		return "invalid-state"
	}
	return signalNames[s]
}

// Valid reports whether s is one of the three defined states.
func (s SignalState) Valid() bool { return int(s) < len(signalNames) }

// ParseSignalState is the inverse of String for the three valid names.
func ParseSignalState(s string) (SignalState, error) {
	v, err := parseEnum(signalNames[:], s, "signal state")
	return SignalState(v), err
}

// MarshalText encodes s by name; it refuses values outside the enum.
func (s SignalState) MarshalText() ([]byte, error) {
	return marshalEnum(signalNames[:], uint8(s), "signal state")
}

// UnmarshalText decodes a name accepted by ParseSignalState.
func (s *SignalState) UnmarshalText(b []byte) error {
	v, err := ParseSignalState(string(b))
	if err == nil {
		*s = v
	}
	return err
}

// Reason says why a Decision came out as it did. The zero value is ReasonNoEligible so
// that the zero Decision (no selection, no rows) is itself a consistent decision.
type Reason uint8

const (
	ReasonNoEligible Reason = iota // no member was eligible and below its ceiling
	ReasonSelected                 // the first score row's member was selected
)

var reasonNames = [...]string{"no-eligible-member", "selected"}

// String returns "selected" or "no-eligible-member", or "invalid" outside the enum.
func (r Reason) String() string { return enumName(reasonNames[:], uint8(r)) }

// Valid reports whether r is one of the two defined reasons.
func (r Reason) Valid() bool { return int(r) < len(reasonNames) }

// ParseReason is the inverse of String for the two valid names.
func ParseReason(s string) (Reason, error) {
	v, err := parseEnum(reasonNames[:], s, "reason")
	return Reason(v), err
}

// MarshalText encodes r by name; it refuses values outside the enum.
func (r Reason) MarshalText() ([]byte, error) {
	return marshalEnum(reasonNames[:], uint8(r), "reason")
}

// UnmarshalText decodes a name accepted by ParseReason.
func (r *Reason) UnmarshalText(b []byte) error {
	v, err := ParseReason(string(b))
	if err == nil {
		*r = v
	}
	return err
}

func enumName(names []string, v uint8) string {
	if int(v) >= len(names) {
		return "invalid"
	}
	return names[v]
}

func parseEnum(names []string, s, what string) (uint8, error) {
	for i, n := range names {
		if n == s {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrUnknownName, what)
}

func marshalEnum(names []string, v uint8, what string) ([]byte, error) {
	if int(v) >= len(names) {
		return nil, fmt.Errorf("%w: %s", ErrOutOfRange, what)
	}
	return []byte(names[v]), nil
}

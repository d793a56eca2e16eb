package scheduler

import "fmt"

// Pressure is one member's normalized upstream pressure: a freshness class, the
// pressure in parts per million (fresh samples only) and the state of each signal.
// It never holds raw metric values. The zero value equals UnknownPressure().
//
// Signal states are kept for every class, because evidence should say why a sample
// was not usable ("missing and invalid signals retain typed signal state"):
//   - fresh and stale: at least one signal valid and none invalid;
//   - failed: both missing, because a failed collection carries no trusted data;
//   - unknown: any combination (for example requests invalid, or both valid but the
//     observation time unusable). UnknownPressure() is the fixed missing/missing form
//     used when no sample exists at all.
type Pressure struct {
	freshness Freshness
	requests  SignalState
	kv        SignalState
	hasPPM    bool
	ppm       int64
}

// UnknownPressure is the pressure of a member with no sample: freshness unknown, no
// ppm, both signals missing. Admission uses it for members absent from the pressure map.
func UnknownPressure() Pressure { return Pressure{} }

// NewPressure reconstitutes a Pressure from its parts (for example from a captured
// decision log) and validates that the parts can come out of NormalizePressure:
//   - every enum value is defined (ErrOutOfRange);
//   - fresh has a ppm in 0..MaxPressurePPM, at most MaxKVPPM when only KV is valid;
//     non-fresh has none and ppm must be 0 (ErrInconsistent / ErrOutOfRange);
//   - fresh and stale have at least one valid signal and no invalid one; failed has
//     both signals missing (ErrInconsistent).
func NewPressure(f Freshness, ppm int64, hasPPM bool, requests, kv SignalState) (Pressure, error) {
	if !f.Valid() {
		return Pressure{}, fmt.Errorf("%w: freshness", ErrOutOfRange)
	}
	if !requests.Valid() || !kv.Valid() {
		return Pressure{}, fmt.Errorf("%w: signal state", ErrOutOfRange)
	}
	if ppm < 0 || ppm > MaxPressurePPM {
		return Pressure{}, fmt.Errorf("%w: pressure ppm", ErrOutOfRange)
	}
	if err := checkPressureShape(f, ppm, hasPPM, requests, kv); err != nil {
		return Pressure{}, err
	}
	return Pressure{freshness: f, requests: requests, kv: kv, hasPPM: hasPPM, ppm: ppm}, nil
}

func checkPressureShape(f Freshness, ppm int64, hasPPM bool, requests, kv SignalState) error {
	if hasPPM != (f == FreshnessFresh) {
		return fmt.Errorf("%w: pressure ppm is present exactly when fresh", ErrInconsistent)
	}
	if !hasPPM && ppm != 0 {
		return fmt.Errorf("%w: absent pressure ppm must be zero", ErrInconsistent)
	}
	anyValid := requests == SignalValid || kv == SignalValid
	anyInvalid := requests == SignalInvalid || kv == SignalInvalid
	switch f {
	case FreshnessFresh, FreshnessStale:
		if !anyValid || anyInvalid {
			return fmt.Errorf("%w: %s pressure needs a valid signal and no invalid one", ErrInconsistent, f)
		}
		if f == FreshnessFresh && requests != SignalValid && ppm > MaxKVPPM {
			return fmt.Errorf("%w: kv-only pressure exceeds 1000000 ppm", ErrInconsistent)
		}
	case FreshnessFailed:
		if requests != SignalMissing || kv != SignalMissing {
			return fmt.Errorf("%w: failed pressure has missing signals", ErrInconsistent)
		}
	}
	return nil
}

// Freshness returns the sample's freshness class.
func (p Pressure) Freshness() Freshness { return p.freshness }

// PPM returns the pressure in parts per million and true for fresh pressure, or 0 and
// false otherwise.
func (p Pressure) PPM() (int64, bool) { return p.ppm, p.hasPPM }

// RequestState returns the state of the (running, waiting, capacity) request signal.
func (p Pressure) RequestState() SignalState { return p.requests }

// KVState returns the state of the KV-cache usage signal.
func (p Pressure) KVState() SignalState { return p.kv }

// Unknown reports whether p ranks as upstream unknown: every non-fresh class does.
func (p Pressure) Unknown() bool { return p.freshness != FreshnessFresh }

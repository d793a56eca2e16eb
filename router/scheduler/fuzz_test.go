package scheduler

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
)

func FuzzNormalizePressure(f *testing.F) {
	f.Add(int64(0), int64(0), false, false, true, 1.0, true, 2.0, true, 0.5, true, int64(4), uint8(0))
	f.Add(int64(5e9), int64(0), false, false, true, 0.0, false, 0.0, false, 0.07, true, int64(0), uint8(0))
	f.Add(int64(5e9+1), int64(0), false, false, true, 3.0, true, 0.0, true, 0.0, false, int64(1), uint8(0))
	f.Add(int64(0), int64(1), false, false, true, 1.0, true, 2.0, true, 0.5, true, int64(4), uint8(0))
	f.Add(int64(0), int64(0), true, false, false, math.NaN(), true, -1.0, true, 2.0, true, int64(-3), uint8(0))
	f.Add(int64(1), int64(0), false, false, true, 1e9, true, 1e9, true, 0.000123, true, int64(1), uint8(0))
	f.Add(int64(1), int64(0), false, false, true, 1.0, true, 2.0, true, 0.5, true, int64(4), uint8(1))
	f.Add(int64(1), int64(0), false, false, true, 1.0, true, 2.0, false, 0.5, true, int64(4), uint8(6))
	f.Fuzz(func(t *testing.T, nowNs, obsNs int64, zeroNow, zeroObs, ok bool,
		run float64, runP bool, wait float64, waitP bool, kv float64, kvP bool, capacity int64, malformed uint8) {
		now, obs := t0.Add(time.Duration(nowNs)), t0.Add(time.Duration(obsNs))
		if zeroNow {
			now = time.Time{}
		}
		if zeroObs {
			obs = time.Time{}
		}
		o := Observation{ObservedAt: obs, Successful: ok, RequestsRunning: Metric{run, runP, malformed&1 != 0},
			RequestsWaiting: Metric{wait, waitP, malformed&2 != 0}, KVCacheUsage: Metric{kv, kvP, malformed&4 != 0},
			SchedulerCapacity: capacity}
		p := NormalizePressure(now, o)

		ppm, has := p.PPM()
		back, err := NewPressure(p.Freshness(), ppm, has, p.RequestState(), p.KVState())
		if err != nil || back != p {
			t.Fatalf("normalizer output %+v does not reconstitute: %v", p, err)
		}
		want := modelPressure(now, o)
		if p != want {
			t.Fatalf("got %+v, model says %+v", p, want)
		}
	})
}

// modelPressure restates the normalization rules independently: big.Rat arithmetic
// for both ceilings and the decimal text of kv as written by a metrics exporter.
func modelPressure(now time.Time, o Observation) Pressure {
	clockOK := !now.IsZero() && !o.ObservedAt.IsZero() && !now.Before(o.ObservedAt)
	if !o.Successful {
		if clockOK {
			return Pressure{freshness: FreshnessFailed}
		}
		return Pressure{}
	}
	count := func(m Metric) (bad bool) {
		return m.Malformed || m.Present && (math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 ||
			m.Value > 1e9 || m.Value != math.Floor(m.Value))
	}
	var p Pressure
	var reqPPM, kvPPM int64
	switch {
	case count(o.RequestsRunning) || count(o.RequestsWaiting) || o.SchedulerCapacity < 0 || o.SchedulerCapacity > 100000:
		p.requests = SignalInvalid
	case !o.RequestsRunning.Present || !o.RequestsWaiting.Present || o.SchedulerCapacity == 0:
		p.requests = SignalMissing
	default:
		p.requests = SignalValid
		sum := new(big.Rat).SetFloat64(o.RequestsRunning.Value + o.RequestsWaiting.Value)
		reqPPM = ratCeil(sum.Mul(sum, big.NewRat(1e6, o.SchedulerCapacity)))
	}
	switch kv := o.KVCacheUsage; {
	case kv.Malformed:
		p.kv = SignalInvalid
	case !kv.Present:
	case math.IsNaN(kv.Value) || kv.Value < 0 || kv.Value > 1:
		p.kv = SignalInvalid
	default:
		p.kv = SignalValid
		dec, _ := new(big.Rat).SetString(strconv.FormatFloat(kv.Value, 'g', -1, 64))
		kvPPM = ratCeil(dec.Mul(dec, big.NewRat(1e6, 1)))
	}
	switch {
	case !clockOK || p.requests == SignalInvalid || p.kv == SignalInvalid ||
		(p.requests != SignalValid && p.kv != SignalValid):
	case now.Sub(o.ObservedAt) > 5*time.Second:
		p.freshness = FreshnessStale
	default:
		p.freshness, p.hasPPM, p.ppm = FreshnessFresh, true, max(reqPPM, kvPPM)
	}
	return p
}

func ratCeil(r *big.Rat) int64 {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

func FuzzNewPressure(f *testing.F) {
	f.Add(uint8(1), int64(5), true, uint8(1), uint8(0))
	f.Add(uint8(2), int64(0), false, uint8(1), uint8(2))
	f.Add(uint8(9), int64(-1), true, uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, fr uint8, ppm int64, has bool, req, kv uint8) {
		p, err := NewPressure(Freshness(fr), ppm, has, SignalState(req), SignalState(kv))
		if err != nil {
			if !errors.Is(err, ErrOutOfRange) && !errors.Is(err, ErrInconsistent) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if p != (Pressure{}) {
				t.Fatal("error with a non-zero pressure")
			}
			return
		}
		gotPPM, gotHas := p.PPM()
		if p.Freshness() != Freshness(fr) || gotPPM != ppm || gotHas != has ||
			p.RequestState() != SignalState(req) || p.KVState() != SignalState(kv) {
			t.Fatalf("accessors disagree with inputs: %+v", p)
		}
		if has && (ppm < 0 || ppm > MaxPressurePPM || p.Freshness() != FreshnessFresh) {
			t.Fatalf("accepted invalid ppm: %+v", p)
		}
		// Accepted pressure must behave in Rank like any other.
		c, err := NewCandidate("m", true, 0, 1, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Rank([]Candidate{c, unknownCandidateForFuzz()}, 0); err != nil {
			t.Fatal(err)
		}
	})
}

// unknownCandidateForFuzz is a fixed second member for Rank.
func unknownCandidateForFuzz() Candidate {
	return Candidate{id: "z", eligible: true, capacity: 1}
}

// FuzzNewDecision feeds arbitrary rows to the reconstitution path decision-log
// ingestion uses: it must never panic, and whatever it accepts must round-trip.
func FuzzNewDecision(f *testing.F) {
	f.Add([]byte{0, 0, 2, 1, 0, 1, 0, 2, 1, 1}, true)    // a: 0/2 fresh rank 0; b: 0/2 fresh rank 1
	f.Add([]byte{1, 1, 2, 0, 1, 0, 0, 2, 2, 0}, true)    // rows out of order
	f.Add([]byte{0, 0, 2, 1, 0, 1, 0, 2, 0x81, 1}, true) // corrupt unknown flag
	f.Add([]byte{0}, false)
	f.Fuzz(func(t *testing.T, data []byte, has bool) {
		var rows []Score
		var eligible []string
		for i := 0; i+5 <= len(data) && len(rows) < ident.MaxMembers+1; i += 5 {
			b := data[i : i+5]
			id := string(rune('a' + b[0]%20))
			fr := Freshness(b[3] % 4)
			unknown := (fr != FreshnessFresh) != (b[3]&0x80 != 0)
			hasPPM := (fr == FreshnessFresh) != (b[3]&0x40 != 0)
			s, err := NewScore(id, int64(b[1]%4), int64(b[2]%4), unknown,
				int64(b[4]/17%3), hasPPM, fr, int(b[4]%17))
			if err != nil {
				continue
			}
			rows = append(rows, s)
			eligible = append(eligible, id)
		}
		slices.Sort(eligible)
		sel := ""
		if len(rows) > 0 {
			sel = rows[0].MemberID()
		}
		r := ReasonNoEligible
		if has {
			r = ReasonSelected
		}
		d, err := NewDecision(sel, has, r, eligible, rows)
		if err != nil {
			return
		}
		back, err := reconstitute(d)
		if err != nil || !back.Equal(d) {
			t.Fatalf("accepted decision does not round-trip: %v", err)
		}
	})
}

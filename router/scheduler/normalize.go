package scheduler

import (
	"math"
	"strconv"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
)

// Metric is one optional numeric signal from the metrics adapter. Present=false means
// missing (the series was absent); Value is then ignored. Malformed marks a signal that
// was supplied but could not be read as one number of its kind (a family of the wrong
// metric type, duplicate series, a non-finite or out-of-range value): it is invalid
// whatever Value and Present hold, so the adapter can say "invalid" without handing raw
// values on. MalformedMetric builds one.
type Metric struct {
	Value     float64
	Present   bool
	Malformed bool
}

// MalformedMetric is a signal that was supplied malformed: NormalizePressure reports it
// as SignalInvalid, never as missing.
func MalformedMetric() Metric { return Metric{Present: true, Malformed: true} }

// Observation is the adapter's output for one member scrape, handed to
// NormalizePressure. It is an input only: Pressure never retains these raw values.
type Observation struct {
	ObservedAt time.Time // when the sample completed; the zero time is an invalid clock
	Successful bool      // false when the collection failed (transport, HTTP, timeout)

	RequestsRunning Metric // vllm:num_requests_running: integral, 0..1e9
	RequestsWaiting Metric // vllm:num_requests_waiting: integral, 0..1e9
	KVCacheUsage    Metric // vllm:kv_cache_usage_perc: a 0..1 fraction

	// SchedulerCapacity is the configured member ceiling (1..100000); 0 means missing.
	SchedulerCapacity int64
}

// NormalizePressure classifies one observation at now (the spec's
// normalize_replica_pressure). It is pure and total: every input, however malformed,
// yields a Pressure. Rules, in precedence order:
//
//  1. a zero now or ObservedAt, or ObservedAt after now: unknown (the sample cannot be
//     placed in time, so it can never be fresh);
//  2. Successful=false: failed, both signals missing;
//  3. any supplied signal malformed: unknown (malformed wins over missing);
//  4. no valid signal: unknown;
//  5. now-ObservedAt > MaxAge: stale, no ppm;
//  6. otherwise fresh, ppm = max of the valid request and KV pressures.
//
// The request signal is the tuple (running, waiting, capacity): invalid if any part is
// supplied malformed, else missing if any part is absent (an incomplete tuple is
// missing, never zero), else valid. KV alone may make a sample fresh. Signal states are
// reported for successful samples whatever their class; see Pressure.
func NormalizePressure(now time.Time, o Observation) Pressure {
	if !o.Successful {
		if !clockUsable(now, o.ObservedAt) {
			return Pressure{}
		}
		return Pressure{freshness: FreshnessFailed}
	}
	req, reqPPM := requestSignal(o)
	kv, kvPPM := kvSignal(o.KVCacheUsage)
	p := Pressure{requests: req, kv: kv}
	switch {
	case !clockUsable(now, o.ObservedAt),
		req == SignalInvalid || kv == SignalInvalid,
		req != SignalValid && kv != SignalValid:
		p.freshness = FreshnessUnknown
	case now.Sub(o.ObservedAt) > MaxAge:
		p.freshness = FreshnessStale
	default:
		p.freshness = FreshnessFresh
		p.hasPPM = true
		p.ppm = max(reqPPM, kvPPM)
	}
	return p
}

// clockUsable reports whether both times are set and the observation is not in the
// future. Both comparisons use the monotonic reading when both values carry one.
func clockUsable(now, observedAt time.Time) bool {
	return !now.IsZero() && !observedAt.IsZero() && !observedAt.After(now)
}

// requestSignal validates the request tuple and returns its state and, when valid,
// ceil((running+waiting)*1e6/capacity). The product is at most 2e15, so int64 integer
// arithmetic is exact.
func requestSignal(o Observation) (SignalState, int64) {
	running, rOK := requestCount(o.RequestsRunning)
	waiting, wOK := requestCount(o.RequestsWaiting)
	capacity := o.SchedulerCapacity
	capOK := capacity >= 0 && capacity <= ident.MaxCeiling
	switch {
	case !rOK || !wOK || !capOK:
		return SignalInvalid, 0
	case !o.RequestsRunning.Present || !o.RequestsWaiting.Present || capacity == 0:
		return SignalMissing, 0
	}
	return SignalValid, ceilDiv((running+waiting)*1_000_000, capacity)
}

// requestCount returns the integral count and whether the metric is well formed; a
// missing metric is well formed (count 0, to be ignored by the caller).
func requestCount(m Metric) (int64, bool) {
	if m.Malformed {
		return 0, false
	}
	if !m.Present {
		return 0, true
	}
	v := m.Value
	// The range check also rejects NaN (every comparison is false) and infinities.
	if !(v >= 0 && v <= MaxRequestCount) || math.Trunc(v) != v {
		return 0, false
	}
	return int64(v), true
}

func kvSignal(m Metric) (SignalState, int64) {
	if m.Malformed {
		return SignalInvalid, 0
	}
	if !m.Present {
		return SignalMissing, 0
	}
	if !(m.Value >= 0 && m.Value <= 1) {
		return SignalInvalid, 0
	}
	return SignalValid, kvCeilPPM(m.Value)
}

// pow10 holds 10^0..10^19, every power of ten that fits in a uint64.
var pow10 = [...]uint64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// kvCeilPPM returns ceil(kv*1e6) for a finite kv in [0, 1].
//
// Computing math.Ceil(kv*1e6) in floating point is wrong at exact ppm boundaries: the
// float nearest a decimal like 0.07 is slightly above it, the product rounds to
// 70000.00000000001 and the ceiling overcounts by one. vLLM writes the fraction as a
// decimal into the metrics text, and both Python's repr and Go's strconv print the
// shortest decimal that round-trips to the same float64. So we recover that decimal
// (strconv 'e' format, precision -1: digits D and exponent), and take the exact
// ceiling of D*10^k in integer arithmetic. Exact decimals (0.5, 0.07, 1) map to their
// exact ppm; anything with a nonzero digit below 1 ppm rounds up, as ceil requires.
func kvCeilPPM(kv float64) int64 {
	if kv == 0 { // also -0
		return 0
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], kv, 'e', -1, 64) // "d.ddde±XX"
	var digits uint64
	n := 0
	i := 0
	for ; i < len(s) && s[i] != 'e'; i++ {
		if s[i] != '.' {
			digits = digits*10 + uint64(s[i]-'0') // at most 17 digits: no overflow
			n++
		}
	}
	exp := parseExp(s[i+1:])
	// kv = digits * 10^(exp-(n-1)), so kv*1e6 = digits * 10^k.
	k := exp - (n - 1) + 6
	if k >= 0 {
		return int64(digits * pow10[k]) // kv <= 1 keeps this <= 1e6, k <= 6
	}
	if -k >= len(pow10) {
		return 1 // 0 < kv*1e6 < 1e17/1e20 < 1
	}
	div := pow10[-k]
	return int64(ceilDivU(digits, div))
}

// parseExp parses strconv's exponent "±dd" or "±ddd"; the input is well formed by
// construction.
func parseExp(b []byte) int {
	e := 0
	for _, c := range b[1:] {
		e = e*10 + int(c-'0')
	}
	if b[0] == '-' {
		return -e
	}
	return e
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func ceilDivU(a, b uint64) uint64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

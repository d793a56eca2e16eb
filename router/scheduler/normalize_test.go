package scheduler

import (
	"math"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
)

// full is a complete, valid request tuple plus KV usage, observed at t0.
func full(running, waiting float64, capacity int64, kv float64) Observation {
	return Observation{
		ObservedAt: t0, Successful: true,
		RequestsRunning: some(running), RequestsWaiting: some(waiting),
		SchedulerCapacity: capacity, KVCacheUsage: some(kv),
	}
}

func TestNormalizePressureFreshness(t *testing.T) {
	ok := full(1, 1, 4, 0.25) // request 500000 ppm, kv 250000 ppm
	mono := time.Now()        // carries a monotonic reading; used only as an input value
	tests := []struct {
		name string
		now  time.Time
		mod  func(o *Observation)
		want Pressure
	}{
		{"age zero is fresh", t0, nil, Pressure{freshness: FreshnessFresh, requests: SignalValid, kv: SignalValid, hasPPM: true, ppm: 500_000}},
		{"age exactly 5s is fresh", t0.Add(MaxAge), nil, Pressure{freshness: FreshnessFresh, requests: SignalValid, kv: SignalValid, hasPPM: true, ppm: 500_000}},
		{"age 5s+1ns is stale", t0.Add(MaxAge + 1), nil, Pressure{freshness: FreshnessStale, requests: SignalValid, kv: SignalValid}},
		{"very old is stale", t0.Add(1000 * time.Hour), nil, Pressure{freshness: FreshnessStale, requests: SignalValid, kv: SignalValid}},
		{"future by 1ns is unknown", t0.Add(-1), nil, Pressure{requests: SignalValid, kv: SignalValid}},
		{"zero observedAt is unknown", t0, func(o *Observation) { o.ObservedAt = time.Time{} }, Pressure{requests: SignalValid, kv: SignalValid}},
		{"zero now is unknown", time.Time{}, nil, Pressure{requests: SignalValid, kv: SignalValid}},
		{"failed", t0, func(o *Observation) { o.Successful = false }, Pressure{freshness: FreshnessFailed}},
		{"failed and old is failed", t0.Add(time.Hour), func(o *Observation) { o.Successful = false }, Pressure{freshness: FreshnessFailed}},
		{"failed with malformed values is failed", t0, func(o *Observation) { o.Successful = false; o.KVCacheUsage = some(math.NaN()) }, Pressure{freshness: FreshnessFailed}},
		{"failed in the future is unknown", t0.Add(-1), func(o *Observation) { o.Successful = false }, Pressure{}},
		{"failed with zero clock is unknown", t0, func(o *Observation) { o.Successful = false; o.ObservedAt = time.Time{} }, Pressure{}},
		{"stale but malformed is unknown", t0.Add(time.Minute), func(o *Observation) { o.KVCacheUsage = some(2) }, Pressure{requests: SignalValid, kv: SignalInvalid}},
		{"stale but all missing is unknown", t0.Add(time.Minute), func(o *Observation) { *o = Observation{ObservedAt: t0, Successful: true} }, Pressure{}},
		{"monotonic clocks, 5s is fresh", mono.Add(MaxAge), func(o *Observation) { o.ObservedAt = mono }, Pressure{freshness: FreshnessFresh, requests: SignalValid, kv: SignalValid, hasPPM: true, ppm: 500_000}},
		{"monotonic clocks, future is unknown", mono, func(o *Observation) { o.ObservedAt = mono.Add(1) }, Pressure{requests: SignalValid, kv: SignalValid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			if tt.mod != nil {
				tt.mod(&o)
			}
			assert.Equal(t, tt.want, NormalizePressure(tt.now, o))
		})
	}
}

func TestNormalizePressureSignals(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	missing := Metric{Value: 7} // Present=false: the value is ignored
	tests := []struct {
		name         string
		run, wait    Metric
		capacity     int64
		kv           Metric
		req, kvState SignalState
		fresh        Freshness
		ppm          int64
	}{
		{"request tuple only", some(3), some(1), 8, Metric{}, SignalValid, SignalMissing, FreshnessFresh, 500_000},
		{"kv only", Metric{}, Metric{}, 0, some(0.5), SignalMissing, SignalValid, FreshnessFresh, 500_000},
		{"kv only with capacity only", Metric{}, Metric{}, 4, some(0.5), SignalMissing, SignalValid, FreshnessFresh, 500_000},
		{"max of both, request wins", some(2), some(0), 2, some(0.5), SignalValid, SignalValid, FreshnessFresh, 1_000_000},
		{"max of both, kv wins", some(0), some(0), 2, some(0.3), SignalValid, SignalValid, FreshnessFresh, 300_000},
		{"zeros are valid zero pressure", some(0), some(0), 1, some(0), SignalValid, SignalValid, FreshnessFresh, 0},
		{"negative zero is zero", some(math.Copysign(0, -1)), some(0), 1, some(math.Copysign(0, -1)), SignalValid, SignalValid, FreshnessFresh, 0},
		{"running missing is missing", Metric{}, some(1), 4, Metric{}, SignalMissing, SignalMissing, FreshnessUnknown, 0},
		{"waiting missing is missing", some(1), missing, 4, Metric{}, SignalMissing, SignalMissing, FreshnessUnknown, 0},
		{"capacity missing is missing", some(1), some(1), 0, Metric{}, SignalMissing, SignalMissing, FreshnessUnknown, 0},
		{"incomplete tuple with kv", some(1000), Metric{}, 0, some(0.1), SignalMissing, SignalValid, FreshnessFresh, 100_000},
		{"all missing is unknown", Metric{}, Metric{}, 0, Metric{}, SignalMissing, SignalMissing, FreshnessUnknown, 0},
		{"fractional running", some(1.5), some(0), 4, some(0.1), SignalInvalid, SignalValid, FreshnessUnknown, 0},
		{"negative waiting", some(1), some(-1), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"running above 1e9", some(1e9 + 1), some(0), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"NaN running", some(nan), some(0), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"Inf waiting", some(0), some(inf), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"negative capacity", some(0), some(0), -1, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"capacity above 100000", some(0), some(0), ident.MaxCeiling + 1, some(0.1), SignalInvalid, SignalValid, FreshnessUnknown, 0},
		{"malformed wins over missing in the tuple", some(-1), Metric{}, 0, some(0.1), SignalInvalid, SignalValid, FreshnessUnknown, 0},
		{"malformed capacity wins over missing counts", Metric{}, Metric{}, -5, some(0.1), SignalInvalid, SignalValid, FreshnessUnknown, 0},
		{"kv above 1", some(0), some(0), 4, some(1.0000001), SignalValid, SignalInvalid, FreshnessUnknown, 0},
		{"kv negative", some(0), some(0), 4, some(-0.1), SignalValid, SignalInvalid, FreshnessUnknown, 0},
		{"kv NaN", Metric{}, Metric{}, 0, some(nan), SignalMissing, SignalInvalid, FreshnessUnknown, 0},
		{"kv -Inf", Metric{}, Metric{}, 0, some(math.Inf(-1)), SignalMissing, SignalInvalid, FreshnessUnknown, 0},
		{"malformed running (no value)", MalformedMetric(), some(0), 4, some(0.1), SignalInvalid, SignalValid, FreshnessUnknown, 0},
		{"malformed waiting wins over missing running", Metric{}, MalformedMetric(), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"malformed kv", some(1), some(1), 4, MalformedMetric(), SignalValid, SignalInvalid, FreshnessUnknown, 0},
		{"malformed flag beats a valid-looking value", Metric{Value: 1, Present: true, Malformed: true}, some(0), 4, Metric{}, SignalInvalid, SignalMissing, FreshnessUnknown, 0},
		{"malformed flag without presence is still invalid", Metric{}, some(0), 4, Metric{Malformed: true}, SignalMissing, SignalInvalid, FreshnessUnknown, 0},
		{"bounds: 1e9+1e9 over capacity 1", some(1e9), some(1e9), 1, some(1), SignalValid, SignalValid, FreshnessFresh, MaxPressurePPM},
		{"bounds: capacity 100000", some(0), some(1), ident.MaxCeiling, Metric{}, SignalValid, SignalMissing, FreshnessFresh, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Observation{ObservedAt: t0, Successful: true, RequestsRunning: tt.run,
				RequestsWaiting: tt.wait, SchedulerCapacity: tt.capacity, KVCacheUsage: tt.kv}
			p := NormalizePressure(t0.Add(time.Second), o)
			assert.Equal(t, tt.fresh, p.Freshness())
			assert.Equal(t, tt.req, p.RequestState(), "request state")
			assert.Equal(t, tt.kvState, p.KVState(), "kv state")
			ppm, has := p.PPM()
			assert.Equal(t, tt.fresh == FreshnessFresh, has)
			assert.Equal(t, tt.ppm, ppm)
		})
	}
}

func TestRequestPPMCeiling(t *testing.T) {
	tests := []struct {
		running, waiting float64
		capacity         int64
		want             int64
	}{
		{0, 0, 7, 0},
		{1, 0, 3, 333_334},                       // 333333.33.. rounds up
		{2, 0, 3, 666_667},                       // 666666.66.. rounds up
		{3, 0, 3, 1_000_000},                     // exact
		{1, 0, 1, 1_000_000},                     // exact at the full point
		{4, 3, 3, 2_333_334},                     // above 1e6: not clamped
		{1, 0, 100_000, 10},                      // exact
		{1, 0, 99_999, 11},                       // 10.0001 rounds up
		{2, 1, 7, 428_572},                       // 428571.43
		{999_999_999, 0, 3, 333_333_333_000_000}, // exact large
		{1e9, 1e9, 3, 666_666_666_666_667},
	}
	for _, tt := range tests {
		o := Observation{ObservedAt: t0, Successful: true, RequestsRunning: some(tt.running),
			RequestsWaiting: some(tt.waiting), SchedulerCapacity: tt.capacity}
		ppm, has := NormalizePressure(t0, o).PPM()
		assert.True(t, has)
		assert.Equal(t, tt.want, ppm, "(%v+%v)/%d", tt.running, tt.waiting, tt.capacity)
	}
}

func TestKVPPMCeiling(t *testing.T) {
	tests := []struct {
		kv   float64
		want int64
	}{
		{0, 0},
		{0.5, 500_000},
		{1, 1_000_000},
		{0.07, 70_000},
		{0.000123, 123}, // float64: 0.000123*1e6 == 123.00000000000001, naive ceil says 124
		{0.000506, 506},
		{0.000001, 1},
		{1e-7, 1}, // any nonzero usage is at least 1 ppm
		{5e-324, 1},
		{0.9999999, 1_000_000},
		{0.1234561, 123_457},
		{0.5000000000000001, 500_001}, // the float after 0.5 really is above 500000 ppm
		{math.Nextafter(1, 0), 1_000_000},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, kvCeilPPM(tt.kv), "kv=%v", tt.kv)
	}
}

// TestKVPPMExactDecimals checks every exact ppm decimal i/1e6: floating-point ceil gets
// 11555 of them wrong; the decimal method must get all of them right.
func TestKVPPMExactDecimals(t *testing.T) {
	if testing.Short() {
		t.Skip("one million conversions")
	}
	bad := 0
	for i := int64(0); i <= 1_000_000; i++ {
		if kvCeilPPM(float64(i)/1e6) != i {
			bad++
		}
	}
	assert.Zero(t, bad)
}

func TestUnknownPressureIsZeroValue(t *testing.T) {
	p := UnknownPressure()
	assert.Equal(t, Pressure{}, p)
	assert.Equal(t, FreshnessUnknown, p.Freshness())
	assert.Equal(t, SignalMissing, p.RequestState())
	assert.Equal(t, SignalMissing, p.KVState())
	ppm, has := p.PPM()
	assert.False(t, has)
	assert.Zero(t, ppm)
	assert.True(t, p.Unknown())
}

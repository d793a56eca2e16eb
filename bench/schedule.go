package bench

import (
	"math/rand/v2"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// warmupSalt derives the warm-up requests' streams from the seed, so warming up never shifts the
// measured requests' shapes.
const warmupSalt = 0x7761726d7570 // "warmup"

// Arrivals is an open loop's schedule: the offsets from the run's start at which requests are
// sent, drawn from the scenario's arrivals stream exactly as the simulator draws them (the first
// arrival one gap after the start, each next one a gap later). Bounded by a request count, it
// yields that many; bounded by a duration, it yields the simulator's arrivals: the first one if it
// falls within the window, every later one strictly before its end.
type Arrivals struct {
	open     scenarios.Open
	r        *rand.Rand
	limit    int
	window   time.Duration
	n        int
	at       time.Duration
	finished bool
}

// NewArrivals is the schedule of open loop o for seed, bounded by requests (> 0) or else by the
// duration window.
func NewArrivals(o scenarios.Open, seed uint64, requests int, window time.Duration) *Arrivals {
	return &Arrivals{open: o, r: scenarios.NewStreams(seed).Arrivals, limit: requests, window: window}
}

// Next returns the next arrival's offset, or false when the schedule is over.
func (a *Arrivals) Next() (time.Duration, bool) {
	if a.finished || (a.limit > 0 && a.n >= a.limit) {
		return 0, false
	}
	a.at += a.open.Gap(a.r)
	if a.limit == 0 && (a.at > a.window || a.n > 0 && a.at == a.window) {
		a.finished = true
		return 0, false
	}
	a.n++
	return a.at, true
}

// Shapes hands out request shapes in request order: request i gets the i-th shape the scenario's
// generator draws for the seed, as the simulator's i-th arrival does.
type Shapes struct {
	gen *scenarios.Generator
}

// NewShapes is the measured requests' shape source.
func NewShapes(w scenarios.Workload, seed uint64) *Shapes {
	return &Shapes{gen: scenarios.NewGenerator(w, scenarios.NewStreams(seed))}
}

// newWarmupShapes is the warm-up requests' shape source: the same distributions on streams of
// their own.
func newWarmupShapes(w scenarios.Workload, seed uint64) *Shapes {
	return &Shapes{gen: scenarios.NewGenerator(w, scenarios.NewStreams(seed^warmupSalt))}
}

// Next draws the next shape. Not safe for concurrent use: the runner calls it under its lock.
func (s *Shapes) Next() scenarios.Shape { return s.gen.Next() }

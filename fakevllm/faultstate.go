package fakevllm

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Independent fault streams: each probabilistic fault draws from its own
// generator seeded from (member seed, stream), so turning one fault on or off
// never shifts another's sequence.
const (
	streamHTTPError uint64 = iota + 1
	streamTruncate
	streamMalformed
	streamErrorEvent
)

// faultState is a member's live faults: the configuration, the moment the
// member becomes ready (slow start) and the seeded generators. Handlers
// consult it concurrently.
type faultState struct {
	mu        sync.Mutex
	f         Faults
	readyAt   time.Time
	httpRand  *rand.Rand
	truncRand *rand.Rand
	malRand   *rand.Rand
	errRand   *rand.Rand
}

func newFaultState(seed uint64) *faultState {
	return &faultState{
		httpRand:  rand.New(rand.NewPCG(seed, streamHTTPError)),
		truncRand: rand.New(rand.NewPCG(seed, streamTruncate)),
		malRand:   rand.New(rand.NewPCG(seed, streamMalformed)),
		errRand:   rand.New(rand.NewPCG(seed, streamErrorEvent)),
	}
}

// set replaces the faults (already normalized); slow start counts from now.
func (s *faultState) set(f Faults, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
	s.readyAt = now.Add(time.Duration(f.SlowStart))
}

func (s *faultState) get() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

// ready reports whether the slow start is over at now.
func (s *faultState) ready(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !now.Before(s.readyAt)
}

// noUsage reports whether answers carry no usage.
func (s *faultState) noUsage() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.NoUsage
}

func (s *faultState) dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.EngineDead
}

// metricsFault returns the /metrics fault.
func (s *faultState) metricsFault() MetricsFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Metrics
}

// drawHTTPError returns the status to fail this request with, or 0. It draws
// once per generation request while any error rate is set.
func (s *faultState) drawHTTPError() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.f.HTTPErrors) == 0 {
		return 0
	}
	u := s.httpRand.Float64()
	acc := 0.0
	for _, e := range s.f.HTTPErrors {
		acc += e.Rate
		if u < acc {
			return e.Status
		}
	}
	return 0
}

// drawStreamPlan decides one stream's truncation, malformed frame and error event.
func (s *faultState) drawStreamPlan() streamPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p streamPlan
	if t := s.f.Truncate; t.Chunk > 0 && s.truncRand.Float64() < t.Rate {
		p.truncateAt = t.Chunk
	}
	if m := s.f.Malformed; m.Chunk > 0 && s.malRand.Float64() < m.Rate {
		p.malformedAt = m.Chunk
	}
	if e := s.f.ErrorEvent; e.Chunk > 0 && s.errRand.Float64() < e.Rate {
		p.errorAt = e.Chunk
	}
	return p
}

// deriveSeed mixes a base seed and an index (member, subsystem) with
// splitmix64, so neighbouring indexes get unrelated streams.
func deriveSeed(base uint64, index uint64) uint64 {
	z := base + (index+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

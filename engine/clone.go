package engine

import "maps"

// Clone returns an independent copy of the engine: same clock, same requests in the same states,
// same step in flight, same jitter state, same metrics. Both then evolve identically under the
// same calls, and nothing done to one is seen by the other. The simulator's clairvoyant oracle
// clones a member's engine to run a candidate placement forward without touching the real one.
func (e *Engine) Clone() *Engine {
	c := *e // the profile, histograms and counters are values
	c.slots = append([]slot(nil), e.slots...)
	c.free = append([]int32(nil), e.free...)
	c.ids = maps.Clone(e.ids)
	c.running = append([]int32(nil), e.running...)
	c.waiting.buf = append([]int32(nil), e.waiting.buf...)
	c.pending = append([]Event(nil), e.pending...)
	return &c
}

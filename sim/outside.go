package sim

import (
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/scenarios"
)

// Outside load: requests other clients send straight to a member's engine (Member.OutsideRate),
// which the router never sees. The engine runs them like any other, so they take its slots, KV
// blocks and step time, and its telemetry (running, waiting, KV) counts them; the router holds no
// lease for them and keeps no record of them. They draw from the scenario's own outside stream,
// so the router's arrivals and shapes are the same with or without them.

// outsideBase is above every request ID of the router's own, and below the oracle's probe: an
// engine event with such an ID is ignored (engineEvent) as an outside request's.
const outsideBase = uint64(1) << 61

// outsideGen draws outside shapes; nil until a member has outside load.
func (w *world) outsideGen() *scenarios.Generator {
	if w.outside.gen == nil {
		st := w.streams.Outside
		w.outside.gen = scenarios.NewGenerator(w.sc.Workload, scenarios.Streams{Lengths: st, Faults: st})
	}
	return w.outside.gen
}

// startOutside queues every member's first outside arrival.
func (w *world) startOutside() {
	for i, m := range w.members {
		if m.spec.OutsideRate > 0 {
			w.push(w.outsideGap(m), prioArrival, ev{kind: evOutside, a: int32(i)})
		}
	}
}

func (w *world) outsideGap(m *member) time.Duration {
	return time.Duration(w.streams.Outside.ExpFloat64() / m.spec.OutsideRate * float64(time.Second))
}

// outsideArrive submits one outside request to member i's engine (a dead engine refuses it) and
// queues the next.
func (w *world) outsideArrive(i int) {
	if !w.arrivals {
		return
	}
	m := w.members[i]
	if next := w.now + w.outsideGap(m); next < w.sc.Duration {
		w.push(next, prioArrival, ev{kind: evOutside, a: int32(i)})
	}
	sh := w.outsideGen().Next()
	if !m.alive {
		return
	}
	w.outside.n++
	req := engine.Request{ID: outsideBase + w.outside.n, PromptTokens: sh.Prompt + ChatTemplateTokens, MaxTokens: sh.Output}
	if m.eng.Submit(w.at(w.now), req) == nil {
		w.res.Members[i].Outside++
		w.reschedule(m)
	}
}

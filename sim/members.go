package sim

import (
	"fmt"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/scenarios"
)

// member is one virtual vLLM replica: an engine on virtual time plus its fault state.
type member struct {
	idx     int
	id      string
	ceiling int64
	spec    scenarios.Member
	prof    engine.Profile

	eng      *engine.Engine
	alive    bool
	wakeGen  uint32 // generation of the one live engine wake event
	wakeAt   time.Duration
	waking   bool             // a wake event is queued for wakeAt
	inflight []int32          // request IDs in the engine, in dispatch order
	received []int32          // every request ID that arrived at this member, in arrival order
	refused  uint64           // arrivals refused because the engine was dead
	dead     []engine.Metrics // metrics of killed engines, summed into the result
	engines  int              // engines created (for distinct jitter seeds)
	slow     float64          // the slow action's factor on top of the profile's step scale
	seedBase uint64

	// Reloads. configured: the configuration in force names the member (initial members from the
	// start; added ones from their reload; removed ones no longer). The other fields are the sim's
	// own books for the reload gates; times are -1 until they happen.
	configured bool
	removed    bool
	addedAt    time.Duration // the reload that added the member
	readyAt    time.Duration // the first probe that found it ready
	firstAdmit time.Duration // its first admission
	overhang   int64         // leases above a lowered ceiling not yet released (see audit)
}

// buildMembers creates one virtual member per member the scenario ever configures, in AllMembers
// order: an engine now for the tier's members, at its reload for an added one. Every member draws
// its engine seed here, so added members never shift the seeds of the others.
func (w *world) buildMembers() error {
	initial := len(w.sc.Tier.Members)
	for i, sm := range w.sc.AllMembers() {
		p, err := profile.Lookup(sm.Profile)
		if err != nil {
			return err
		}
		m := &member{idx: i, id: sm.ID, ceiling: sm.MaxConcurrency, spec: sm, prof: p, slow: 1,
			seedBase: w.streams.Engines.Uint64(), addedAt: -1, readyAt: -1, firstAdmit: -1}
		if i < initial {
			cm, ok := w.tier.Member(sm.ID)
			if !ok {
				return fmt.Errorf("sim: config lost member %q", sm.ID)
			}
			m.ceiling, m.configured = cm.MaxConcurrency, true
			if err := m.newEngine(0); err != nil {
				return err
			}
		}
		w.members = append(w.members, m)
		w.byID[sm.ID] = i
	}
	return nil
}

// newEngine starts an empty engine at virtual time at (the member's boot or revival).
func (m *member) newEngine(at time.Duration) error {
	eng, err := engine.New(m.prof, Epoch.Add(at), m.seedBase+uint64(m.engines))
	if err != nil {
		return err
	}
	if scale := m.spec.StepScale * m.slow; scale != 1 {
		if err := eng.SetStepScale(Epoch.Add(at), scale); err != nil {
			return err
		}
	}
	m.engines++
	m.eng, m.alive = eng, true
	return nil
}

// reschedule queues a wake event for the engine's next event time unless one is already queued
// for exactly that time; a superseded wake is recognized by its stale generation and skipped.
func (w *world) reschedule(m *member) {
	next, ok := m.eng.NextEventAt()
	if !ok {
		m.waking = false
		m.wakeGen++
		return
	}
	at := next.Sub(Epoch)
	if m.waking && m.wakeAt == at {
		return
	}
	m.wakeGen++
	m.waking, m.wakeAt = true, at
	w.push(at, prioEngine, ev{kind: evEngine, a: int32(m.idx), b: m.wakeGen})
}

// engineWake advances the member's engine to the wake time and handles its events. While the
// engine's next step end would also be the very next event popped from the queue, it keeps
// stepping inline: the same order as queueing it, without the heap round trip per step.
func (w *world) engineWake(idx int, gen uint32) {
	m := w.members[idx]
	if gen != m.wakeGen || !m.waking {
		return // superseded
	}
	m.waking = false
	for {
		w.buf = m.eng.Advance(w.at(w.now), w.buf[:0])
		for i := range w.buf {
			w.engineEvent(m, &w.buf[i])
		}
		next, ok := m.eng.NextEventAt()
		if !ok {
			return
		}
		at := next.Sub(Epoch)
		if !w.q.Before(at, prioEngine) || at > w.sc.Duration+tailLimit(w.sc.Duration) {
			w.reschedule(m)
			return
		}
		w.now = at
		w.events++
	}
}

func (w *world) engineEvent(m *member, e *engine.Event) {
	if e.ID >= outsideBase {
		return // an outside request's: the router has no record of it (outside.go)
	}
	id := int(e.ID)
	if id < 0 || id >= len(w.reqs) || !w.reqs[id].active {
		return // an aborted request's finish, or a request already ended by a fault
	}
	r := &w.res.Requests[id]
	switch e.Kind {
	case engine.EventFirstToken:
		r.FirstToken = e.At.Sub(Epoch)
	case engine.EventFinish:
		r.Output = int32(e.Generated)
		w.settle(id, decisionlog.OutcomeSuccess, 200)
	}
}

// receive is the member's own record of an arriving request: the member side of the one-attempt
// boundary, reconciled against admission at the end of the run.
func (m *member) receive(id int) { m.received = append(m.received, int32(id)) }

// track adds request id to the member's in-flight list.
func (m *member) track(w *world, id int) {
	w.reqs[id].slot = int32(len(m.inflight))
	m.inflight = append(m.inflight, int32(id))
}

// untrack removes request id from the in-flight list in O(1); the moved request's slot follows.
func (m *member) untrack(w *world, id int) {
	s := w.reqs[id].slot
	last := len(m.inflight) - 1
	moved := m.inflight[last]
	m.inflight[s] = moved
	w.reqs[moved].slot = s
	m.inflight = m.inflight[:last]
	w.reqs[id].slot = -1
}

// kill is engine death: every in-flight request fails as its transport would see it, the engine
// is discarded and the member's health fails until revival.
func (w *world) kill(m *member) {
	if !m.alive {
		return
	}
	for len(m.inflight) > 0 {
		id := int(m.inflight[len(m.inflight)-1])
		r := &w.res.Requests[id]
		outcome, status := Classify(decisionlog.EndCut, r.Stream, r.FirstToken >= 0, 0)
		w.settle(id, outcome, status) // the engine is discarded below: nothing to abort in it
	}
	m.dead = append(m.dead, m.eng.Metrics())
	m.alive = false
	m.waking = false
	m.wakeGen++
}

// revive boots a fresh engine on a killed member.
func (w *world) revive(m *member) error {
	if m.alive {
		return nil
	}
	return m.newEngine(w.now)
}

// collect sums the engine metrics of every engine lifetime into the member's result.
func (m *member) collect(r *MemberResult) {
	all := append([]engine.Metrics(nil), m.dead...)
	if m.alive {
		all = append(all, m.eng.Metrics())
	}
	r.Received, r.Refused = uint64(len(m.received)), m.refused
	for i, mt := range all {
		r.Preemptions += mt.Preemptions
		r.GenerationTokens += mt.GenerationTokens
		if i == 0 {
			r.QueueTime = mt.QueueTime
			continue
		}
		q := &r.QueueTime
		for b := 0; b < q.N; b++ {
			q.Cumulative[b] += mt.QueueTime.Cumulative[b]
		}
		q.Count += mt.QueueTime.Count
		q.Sum += mt.QueueTime.Sum
	}
}

package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/policy"
)

// A reference placement policy (sim/policy) runs through the same walk as the capacity scheduler:
// the tier is a capacity tier (same ceilings, same telemetry, same queue, same passive health, same
// decision log), and only the choice differs. At each admission the sim builds the policy's
// snapshot from its own books (the audit's view of each member: ready, not quiesced, not ejected,
// one lease on trial, below its ceiling), lets the policy choose, and hands the walk a readiness
// snapshot in which only the chosen member is ready. Admission then runs unchanged: it rechecks
// quiesce and every ceiling under its lock and reserves exactly that member, and the decision
// record carries that one eligible row. When no member is eligible the walk gets the true
// readiness and the request meets the refusal (or the queue) it meets under the capacity scheduler.

// ErrPolicy is wrapped by Run's refusal of an unknown Options.Policy.
var ErrPolicy = errors.New("sim: not a reference policy")

// PolicyStats are a reference policy's own books over a run.
type PolicyStats struct {
	Name       string
	Choices    uint64 // admissions the policy chose a member for
	NoEligible uint64 // admissions with no eligible member: the walk refused or queued them as usual
	// Mismatches counts admissions where admission did not reserve the policy's choice although
	// the tier had room and no waiter was ahead: the policy and admission disagreed on
	// eligibility. It must be 0.
	Mismatches uint64
	Samples    uint64 // the policy's own engine samples (power_of_two, queue_kv)
	Forward    uint64 // oracle: engine steps run forward on cloned engines
	Bounded    uint64 // oracle: forward runs that hit their bound
}

// placement is the state of a run under a reference policy.
type placement struct {
	name     string
	choose   policy.Func
	rng      *rand.Rand
	interval time.Duration // the policy's own telemetry refresh; 0 = none
	loads    []policy.Load
	taken    []time.Duration // when each load was sampled
	snap     []policy.Member
	mask     map[string]bool
	shape    scenarios.Shape
	pick     int  // the member chosen for the admission in progress; -1 none
	head     bool // the admission in progress is the queue's head (or the queue is empty)
	buf      []engine.Event
}

func newPlacement(name string, seed uint64, members int) (*placement, error) {
	f, ok := policy.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w", ErrPolicy)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	p := &placement{name: name, choose: f, pick: -1, loads: make([]policy.Load, members),
		taken: make([]time.Duration, members), mask: map[string]bool{},
		// Its own stream, so the scenario's arrivals, shapes and jitter are the capacity run's.
		rng: rand.New(rand.NewPCG(seed, h.Sum64()))}
	switch name {
	case policy.PowerOfTwo:
		p.interval = policy.LoadCheckInterval
	case policy.QueueKV:
		p.interval = policy.ScorerRefresh
	}
	return p, nil
}

// placing is called right before every Admit of request shape sh: the readiness snapshot Admit
// takes is then the policy's (policySnapshot).
func (w *world) placing(sh scenarios.Shape, head bool) {
	if w.pol != nil {
		w.pol.shape, w.pol.pick, w.pol.head = sh, -1, head
	}
}

// policyReadiness is the readiness source of a run under a reference policy.
type policyReadiness struct{ w *world }

// Snapshot is the true readiness, or, when the policy chose a member, a snapshot in which only
// that member is ready.
func (s policyReadiness) Snapshot(tier string) map[string]bool {
	w := s.w
	snap := w.ready.Snapshot(tier)
	if snap == nil {
		return nil
	}
	p := w.pol
	p.pick = -1 // the audit's view must not mask while the policy looks
	p.pick = w.choosePolicy()
	if p.pick < 0 {
		w.res.Policy.NoEligible++
		return snap
	}
	w.res.Policy.Choices++
	clear(p.mask)
	for id := range snap {
		p.mask[id] = id == w.members[p.pick].id
	}
	return p.mask
}

// choosePolicy builds the policy's snapshot of the configured members and returns its choice (a
// member index) or -1.
func (w *world) choosePolicy() int {
	p := w.pol
	hv := w.healthView()
	p.snap = p.snap[:0]
	var idx []int
	for i, m := range w.members {
		if !w.ready.in[i] {
			continue // not a member of the configuration in force
		}
		v := w.view(i, hv)
		pm := policy.Member{ID: m.id, Eligible: v.eligible, Active: v.active, Ceiling: v.ceiling,
			Load: p.loads[i], Completion: policy.Never}
		pm.Load.Age = w.now - p.taken[i]
		if p.name == policy.Oracle && pm.Eligible {
			pm.Completion = w.completion(m, p.shape)
		}
		p.snap = append(p.snap, pm)
		idx = append(idx, i)
	}
	c := p.choose(p.snap, p.rng)
	if c < 0 {
		return -1
	}
	return idx[c]
}

// checkPick counts an admission that did not reserve the policy's choice although it could have.
func (w *world) checkPick(target routing.Target, err error) {
	p := w.pol
	if p == nil || p.pick < 0 {
		return
	}
	switch {
	case err == nil && target.Member != w.members[p.pick].id:
		w.res.Policy.Mismatches++
	case err != nil && errors.Is(err, admission.ErrExhausted) && p.head &&
		(w.tierCeiling == 0 || w.acct.tierActive < w.tierCeiling):
		w.res.Policy.Mismatches++
	}
}

// startPolicy queues the policy's first telemetry refresh.
func (w *world) startPolicy() {
	if w.pol != nil && w.pol.interval > 0 {
		w.push(0, prioTelemetry, ev{kind: evPolicyRefresh})
	}
}

// policyRefresh is one round of the policy's own telemetry: every configured member's engine
// sampled now, as its poller would read /metrics or /get_load. A dead member, or one whose metrics
// a telemetry fault breaks, keeps its last sample, which ages.
func (w *world) policyRefresh() {
	p := w.pol
	for i, m := range w.members {
		if !w.ready.in[i] || !m.alive {
			continue
		}
		if f := w.press.fault(m.id); f != nil && f.Mode != scenarios.ModeSlow {
			continue
		}
		mt := m.eng.Metrics()
		p.loads[i] = policy.Load{Known: true, Running: int64(mt.Running), Waiting: int64(mt.Waiting), KV: mt.KVUsage}
		p.taken[i] = w.now
		w.res.Policy.Samples++
	}
	if w.arrivals || len(w.queue) > 0 {
		w.push(w.now+p.interval, prioTelemetry, ev{kind: evPolicyRefresh})
	}
}

// oracleProbe is the request ID of the oracle's probe in a cloned engine: above every real one.
const oracleProbe = uint64(1) << 62

// oracleBound bounds one forward run: engine steps, and virtual time ahead.
const (
	oracleMaxSteps = 200_000
	oracleHorizon  = 10 * time.Minute
)

// completion is how long request sh would take to complete on member m if placed there now: a copy
// of the member's engine, with every request in it at its true length, runs forward until the
// probe finishes. A member that would fail the request (dead, an errors or stream-close window
// that takes it, a prompt too long) never completes it.
func (w *world) completion(m *member, sh scenarios.Shape) time.Duration {
	if !m.alive || w.window(scenarios.ActionErrors, m.id, sh.ErrorRoll) != nil ||
		w.window(scenarios.ActionStreamClose, m.id, sh.CutRoll) != nil {
		return policy.Never
	}
	eng := m.eng.Clone()
	now := w.at(w.now)
	if eng.Submit(now, engine.Request{ID: oracleProbe, PromptTokens: sh.Prompt + ChatTemplateTokens, MaxTokens: sh.Output}) != nil {
		return policy.Never
	}
	end := now.Add(oracleHorizon)
	st := w.res.Policy
	for range oracleMaxSteps {
		at, ok := eng.NextEventAt()
		if !ok || at.After(end) {
			break
		}
		st.Forward++
		w.pol.buf = eng.Advance(at, w.pol.buf[:0])
		for _, e := range w.pol.buf {
			if e.ID == oracleProbe && e.Kind == engine.EventFinish {
				return e.At.Sub(now)
			}
		}
	}
	st.Bounded++
	return policy.Never
}

// readinessSource is the readiness the walk reads: the probes' own, or the policy's.
func (w *world) readinessSource() routing.ReadinessSource {
	if w.pol != nil {
		return policyReadiness{w}
	}
	return &w.ready
}

package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/scenarios"
)

// readiness is the sim's routing.ReadinessSource: the latest completed probe verdict per member.
// A probe sees a member ready exactly when its engine is alive (a killed engine fails /health) and
// the configuration in force names it: ids and ready cover every member the scenario ever configures
// (see scenarios.Scenario.AllMembers), the snapshot only the configured ones.
type readiness struct {
	tier  string
	ids   []string
	ready []bool
	in    []bool // configured in the generation in force (the prober's targets)
	snap  map[string]bool
}

func newReadiness(t config.Tier, all []scenarios.Member) readiness {
	r := readiness{tier: t.ID, snap: map[string]bool{}}
	for _, m := range all {
		r.ids = append(r.ids, m.ID)
		r.ready = append(r.ready, false) // unprobed: not ready
		_, in := t.Member(m.ID)
		r.in = append(r.in, in)
	}
	for _, m := range t.Members {
		r.snap[m.ID] = false
	}
	return r
}

// readinessFollower is the readiness source's part of a reload (a routing.Follower), as the
// server's prober is retargeted: a member that stays keeps its verdict, a new one is unready until a
// probe finds it ready, one that left is no longer probed or listed.
type readinessFollower struct{ w *world }

// Stage works out the next generation's probe targets; the commit brings them into force.
func (f readinessFollower) Stage(cfg config.Config) (func(), error) {
	tier, ok := cfg.Tier(f.w.sc.Tier.ID)
	if !ok {
		return nil, fmt.Errorf("sim: the next generation lost tier %q", f.w.sc.Tier.ID)
	}
	r := &f.w.ready
	in := make([]bool, len(r.ids))
	for i, id := range r.ids {
		_, in[i] = tier.Member(id)
	}
	return func() {
		for i := range r.ids {
			if in[i] != r.in[i] {
				r.ready[i] = false // a new target is unprobed; a former one is no longer ready
			}
		}
		r.in = in
		f.w.publishReadiness()
	}, nil
}

// Snapshot returns the completed verdicts. The map is rebuilt only when a probe changes a verdict
// and handed out as is: the sim is single-threaded and admission copies its inputs before use, so
// no caller can observe it changing.
func (r *readiness) Snapshot(tier string) map[string]bool {
	if tier != r.tier {
		return nil
	}
	return r.snap
}

// probe is one readiness round over every member; the next is one interval later.
func (w *world) probe() {
	w.refreshReadiness()
	// Every passed probe tells passive health, as the server's prober does.
	for i, m := range w.members {
		if w.ready.ready[i] {
			w.router.ProbePassed(w.tier.ID, m.id, w.at(w.now))
		}
	}
	if next := w.now + w.cfg.Readiness().Interval; w.arrivals && next <= w.sc.Duration {
		w.push(next, prioProbe, ev{kind: evProbe})
	}
}

// refreshReadiness records every member's verdict now: ready exactly when its engine is alive and
// it is configured in the generation in force. A member added by a reload turns ready here, at the
// first probe after it.
func (w *world) refreshReadiness() {
	r := &w.ready
	changed := false
	for i, m := range w.members {
		if want := m.alive && r.in[i] && w.probes(i); r.ready[i] != want {
			r.ready[i], changed = want, true
			if want && m.readyAt < 0 {
				m.readyAt = w.now
			}
		}
	}
	if changed {
		w.publishReadiness()
	}
}

// publishReadiness rebuilds the snapshot handed to the router from the verdicts of the configured
// members.
func (w *world) publishReadiness() {
	r := &w.ready
	r.snap = make(map[string]bool, len(r.ids))
	for i, id := range r.ids {
		if r.in[i] {
			r.snap[id] = r.ready[i]
		}
	}
}

// telemetry plays the pressure cache's production shell on virtual time: the real pressure.Core
// decides what to refresh and classifies samples; two virtual workers take its jobs and scrape a
// member's engine metrics after a modeled latency.
type telemetry struct {
	gen     uint32 // the router process generation: a restart discards the old one's scrapes
	w       *world
	core    *pressure.Core
	pages   pages // what a scrape reads: each member's page, through the tier's adapter
	workers [2]worker
	held    []heldSample // per member: what the core published last, mirrored for the audit
	// capacity is each member's ceiling in the core in force (0: not a member of it), so a reload
	// knows which samples the next core adopts.
	capacity []int64
}

// heldSample is the sim's own copy of the sample the pressure core holds for a member, kept by the
// documented publication rule (a completion more than FetchTimeout after its start publishes
// failed; the observation is dated at the start), so the audit can check every evidence row's
// freshness and ppm without asking the core.
type heldSample struct {
	published        bool
	class            pressure.Class
	observedAt       time.Duration
	running, waiting int64
	usedBlocks       int64
	totalBlocks      int64
	kv               bool // the page carried a KV signal (every engine's but llama.cpp's current one)
}

type worker struct {
	busy   bool
	stale  bool // the job is a replaced core's: its completion lands in nothing
	job    pressure.Job
	member int
	class  pressure.Class
	since  time.Duration
}

// newTelemetry registers the capacity tiers (the scenario's one) with a real pressure core.
func newTelemetry(w *world, specs []pressure.TierSpec) (*telemetry, error) {
	core, err := pressure.NewCore(specs)
	if err != nil {
		return nil, err
	}
	t := &telemetry{w: w, core: core, held: make([]heldSample, max(core.Members(), len(w.sc.AllMembers())))}
	if t.pages, err = newPages(w, w.cfg); err != nil {
		return nil, err
	}
	t.capacity = make([]int64, len(t.held))
	all := w.sc.AllMembers()
	for _, ts := range specs {
		for _, m := range ts.Members {
			if i := slices.IndexFunc(all, func(o scenarios.Member) bool { return o.ID == m.ID }); i >= 0 {
				t.capacity[i] = m.Capacity
			}
		}
	}
	return t, nil
}

// Snapshot is the routing.PressureSource: the core's snapshot at virtual now, which also queues
// due refreshes (the workers are woken after admission returns, as the shell signals them).
func (t *telemetry) Snapshot(tier string) (map[string]scheduler.Pressure, error) {
	st := &t.w.res.Telemetry
	st.Snapshots++
	p, err := t.core.Snapshot(tier, t.w.at(t.w.now))
	if err != nil {
		st.SnapshotErrors++
	}
	return p, err
}

// afterSnapshot wakes idle workers when the snapshot queued refreshes.
func (t *telemetry) afterSnapshot() {
	st := &t.w.res.Telemetry
	st.MaxPending = max(st.MaxPending, t.core.Pending())
	st.MaxQueued = max(st.MaxQueued, t.core.Queued())
	if t.core.Queued() > 0 && (!t.workers[0].busy || !t.workers[1].busy) {
		t.w.push(t.w.now, prioTelemetry, ev{kind: evWorkers})
	}
}

// kick gives every idle worker the next queued refresh.
func (t *telemetry) kick() {
	for i := range t.workers {
		if t.workers[i].busy {
			continue
		}
		job, ok := t.core.Next(t.w.at(t.w.now))
		if !ok {
			return
		}
		t.start(i, job)
	}
}

// start models one scrape: how long it takes and how it ends, from the member's telemetry fault
// at the scrape's start. The page itself is read when the scrape completes.
func (t *telemetry) start(wi int, job pressure.Job) {
	w := t.w
	mi := w.byID[job.Member]
	m := w.members[mi]
	lat := w.sc.Telemetry.ScrapeLatency
	if j := w.sc.Telemetry.ScrapeJitter; j > 0 {
		lat += time.Duration(w.streams.Jitter.Int64N(int64(j) + 1))
	}
	class, hold := pressure.ClassOK, false
	if f := t.fault(m.id); f != nil {
		switch f.Mode {
		case scenarios.ModeOutage:
			class = pressure.ClassFailed
		case scenarios.ModeMalformed:
			class = pressure.ClassUnknown
		case scenarios.ModeSlow:
			lat = f.Latency
		case scenarios.ModeHung:
			lat, class, hold = f.Latency, pressure.ClassFailed, true
		}
	}
	if !m.alive {
		class = pressure.ClassFailed // connection refused
	}
	if lat > pressure.FetchTimeout && !hold {
		lat, class = pressure.FetchTimeout, pressure.ClassFailed // the fetch's own timeout
	}
	t.workers[wi] = worker{busy: true, job: job, member: mi, class: class, since: w.now}
	w.res.Telemetry.Scrapes++
	w.push(w.now+lat, prioTelemetry, ev{kind: evScrapeDone, a: int32(wi), b: t.gen})
}

// fault returns the member's first telemetry fault covering now.
func (t *telemetry) fault(member string) *scenarios.TelemetryFault {
	for i := range t.w.sc.Telemetry.Faults {
		f := &t.w.sc.Telemetry.Faults[i]
		if f.Member == member && f.From <= t.w.now && t.w.now < f.Until {
			return f
		}
	}
	return nil
}

// scrapeDone reads the member's metrics view now, hands the sample to the core, and lets the
// worker take the next job.
func (t *telemetry) scrapeDone(wi int, gen uint32) {
	w := t.w
	wk := &t.workers[wi]
	if !wk.busy || gen != t.gen {
		return // an idle worker, or a scrape of a router process that has since restarted
	}
	m := w.members[wk.member]
	class := wk.class
	var s pressure.Sample
	if class == pressure.ClassOK && !m.alive {
		class = pressure.ClassFailed // died during the scrape
	}
	held := heldSample{published: true, class: class, observedAt: wk.since}
	if class == pressure.ClassOK {
		mt := m.eng.Metrics()
		s, class = t.pages.sample(wk.member, m.prof, mt)
		held.class, held.kv = class, s.KVUsage.Present
		held.running, held.waiting = int64(mt.Running), int64(mt.Waiting)
		held.usedBlocks, held.totalBlocks = int64(mt.UsedBlocks), int64(mt.TotalBlocks)
	}
	t.core.Complete(wk.job, w.at(w.now), s, class)
	st := &w.res.Telemetry
	if w.now-wk.since > pressure.FetchTimeout {
		st.Overdue++
		held.class = pressure.ClassFailed
	}
	if !wk.stale {
		t.held[wk.member] = held
	}
	st.Completed[class]++
	w.res.Members[wk.member].Scrapes[class]++
	st.WorkerBusy[wi] += w.now - wk.since
	wk.busy = false
	t.kick()
}

// expected is the freshness and, when fresh, the pressure ppm the core must project for member mi
// at now, derived from the sim's own copy of the held sample: a running refresh past FetchTimeout
// reads failed; nothing published reads unknown; a failed scrape reads failed; a page without
// signals reads unknown; a good sample is fresh up to scheduler.MaxAge after its start, with
// ppm = max(ceil((running+waiting)*1e6/capacity), ceil(used_blocks*1e6/total_blocks)) (the KV term
// only where the engine's page carries one), and stale after. The ppm is computed in integers from the engine's own counts, not from the float the
// scrape carried.
func (t *telemetry) expected(mi int, now time.Duration) (scheduler.Freshness, int64) {
	for i := range t.workers {
		wk := &t.workers[i]
		if wk.busy && !wk.stale && wk.member == mi && now-wk.since > pressure.FetchTimeout {
			return scheduler.FreshnessFailed, 0
		}
	}
	h := &t.held[mi]
	switch {
	case !h.published:
		return scheduler.FreshnessUnknown, 0
	case h.class == pressure.ClassFailed:
		return scheduler.FreshnessFailed, 0
	case h.class != pressure.ClassOK:
		return scheduler.FreshnessUnknown, 0
	case now-h.observedAt > scheduler.MaxAge:
		return scheduler.FreshnessStale, 0
	}
	capacity := t.w.members[mi].ceiling
	req := ceilDiv((h.running+h.waiting)*1_000_000, capacity)
	var kv int64
	if h.kv && h.totalBlocks > 0 {
		kv = ceilDiv(h.usedBlocks*1_000_000, h.totalBlocks)
	}
	return scheduler.FreshnessFresh, max(req, kv)
}

// Stage is the pressure cache's part of a reload (a routing.Follower), as the server's scrape cache
// stages it: a new core for the next generation's capacity tiers; the commit adopts the running
// core's samples by identity (pressure.Core.Adopt) and swaps it in. The sim's mirror of the held
// samples follows the documented rule: a member keeps its sample only while its endpoint, served
// model and ceiling stay; a scrape still running completes into nothing.
func (t *telemetry) Stage(cfg config.Config) (func(), error) {
	specs := routing.PressureSpecs(cfg)
	next, err := pressure.NewCore(specs)
	if err != nil {
		return nil, err
	}
	keep := make([]bool, len(t.held))
	for _, ts := range specs {
		for _, m := range ts.Members {
			if mi, ok := t.w.byID[m.ID]; ok && mi < len(t.capacity) && t.capacity[mi] == m.Capacity && t.capacity[mi] > 0 {
				keep[mi] = true // the virtual endpoint and served model never change
			}
		}
	}
	return func() {
		next.Adopt(t.core)
		t.core = next
		for mi := range t.held {
			if !keep[mi] {
				t.held[mi] = heldSample{}
			}
			t.capacity[mi] = 0
		}
		for _, ts := range specs {
			for _, m := range ts.Members {
				t.capacity[t.w.byID[m.ID]] = m.Capacity
			}
		}
		for i := range t.workers {
			if t.workers[i].busy {
				t.workers[i].stale = true
			}
		}
	}, nil
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// probes reports whether the prober probes member i (ReloadFaultNoProbe: never an added member).
func (w *world) probes(i int) bool {
	return w.opts.ReloadFault != ReloadFaultNoProbe || w.members[i].addedAt < 0
}

package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/scenarios"
)

// Reload is one live configuration reload as the run applied it.
type Reload struct {
	At      time.Duration
	Changes int
	Err     string   // "" when the router took the new generation
	Added   []string // members the reload added, in change order
	Removed []string // members it removed
	// Overhang is how far the reload's lowered ceilings fell below the members' active leases at
	// the instant of the reload, summed over members: leases the new ceiling does not cut.
	Overhang int64
	// RemovedInFlight counts the requests holding a lease on a removed member at the reload;
	// RemovedInFlightFailed those of them that did not end in success.
	RemovedInFlight       int64
	RemovedInFlightFailed int64

	inflight []int32
}

// ReloadAudit is what the reload gates count. Only a run of a scenario with reloads audits it, after
// every event, so the other scenarios' results keep their bytes.
type ReloadAudit struct {
	Checks uint64 // admission snapshots audited, one after every event
	// ReconcileViolations: tier active other than the sum of every member's active (members removed
	// with leases still held included) or other than the sim's own books.
	ReconcileViolations uint64
	// ConfigMismatches: admission's members or ceilings other than the configuration in force.
	ConfigMismatches uint64
	// CeilingAdmitViolations: admissions that took a member (or the tier) above the ceiling in
	// force at that instant.
	CeilingAdmitViolations uint64
	AdmittedUnready        uint64 // admissions to an added member before a probe found it ready
	AdmittedRemoved        uint64 // admissions to a member after the reload that removed it
	// Refused counts requests refused or not admitted at or after the first reload, for any cause
	// but a quiesce: a scenario that keeps headroom sees none unless a reload caused it.
	Refused uint64
	// AddedLate counts added members first admitted more than one readiness interval after their
	// reload, or never; AddedFirstAdmitMax is the longest delay from reload to first admission.
	AddedLate          uint64
	AddedFirstAdmitMax time.Duration
	// Rebased counts queued requests whose Admit met a published reload (ErrSuperseded) and that
	// walked on under the generation in force, keeping their place.
	Rebased uint64
}

// ReloadFault breaks the simulator's reload on purpose, so a test can show the reload gates fail
// when the router gets a reload wrong.
type ReloadFault uint8

// Reload faults.
const (
	ReloadFaultNone ReloadFault = iota
	// ReloadFaultRebuild builds a new router from the new configuration instead of the next
	// generation of the running one: leases, counts and health are forgotten.
	ReloadFaultRebuild
	// ReloadFaultCutRemoved ends the removed members' in-flight requests at the reload.
	ReloadFaultCutRemoved
	// ReloadFaultReadyAtOnce reports an added member ready at the reload, before any probe.
	ReloadFaultReadyAtOnce
	// ReloadFaultKeepCeilings applies the reload with the previous generation's member ceilings.
	ReloadFaultKeepCeilings
	// ReloadFaultNoProbe never probes an added member, as a prober that is not retargeted.
	ReloadFaultNoProbe
	// ReloadFaultResetReadiness forgets every member's verdict at the reload: nothing is ready
	// until the next probe.
	ReloadFaultResetReadiness
)

// reloadState is the run's reload bookkeeping.
type reloadState struct {
	gens    []config.Config // gens[i]: the configuration reload i makes the router's
	digests []string        // digests[i]: its digest; digests[len(gens)] the initial one's
	digest  string          // the digest of the generation in force
	applied []*Reload
	audit   ReloadAudit
	first   time.Duration // the first reload's time (-1 without reloads)
}

// reloading reports whether the run audits reloads: only scenarios with reloads do.
func (w *world) reloading() bool { return len(w.sc.Reloads) > 0 }

// reload applies scenario reload i at now: the router takes the next generation, then the sim's
// books follow the changes (ceilings in force, members configured, engines for added members, the
// requests in flight on removed ones).
func (w *world) reload(i int) {
	r := &w.sc.Reloads[i]
	rec := &Reload{At: w.now, Changes: len(r.Changes)}
	w.reloads.applied = append(w.reloads.applied, rec)
	next := w.reloads.gens[i]
	if w.opts.ReloadFault == ReloadFaultKeepCeilings {
		next = w.keepCeilings(i)
	}
	if err := w.publish(next, w.reloads.digests[i]); err != nil {
		rec.Err = err.Error()
		w.audit()
		return
	}
	w.cfg = next
	w.tier, _ = next.Tier(w.sc.Tier.ID)
	w.tierCeiling = w.tier.EffectiveMaxConcurrency()
	for _, c := range r.Changes {
		switch {
		case c.MemberCeiling != nil:
			m := w.members[w.byID[c.MemberCeiling.Member]]
			m.ceiling = c.MemberCeiling.MaxConcurrency
			over := max(w.acct.active[m.idx]-m.ceiling, 0)
			m.overhang = over
			rec.Overhang += over
		case c.AddMember != nil:
			m := w.members[w.byID[c.AddMember.ID]]
			m.configured, m.addedAt = true, w.now
			if err := m.newEngine(w.now); err != nil && rec.Err == "" {
				rec.Err = err.Error()
			}
			rec.Added = append(rec.Added, m.id)
		case c.RemoveMember != nil:
			m := w.members[w.byID[c.RemoveMember.Member]]
			m.configured, m.removed = false, true
			rec.Removed = append(rec.Removed, m.id)
			ids := w.activeIn(m.idx)
			rec.inflight = append(rec.inflight, ids...)
			rec.RemovedInFlight += int64(len(ids))
		}
	}
	w.tierOverhang = max(w.acct.tierActive-w.tierCeiling, 0)
	if w.tierCeiling == 0 {
		w.tierOverhang = 0
	}
	switch w.opts.ReloadFault {
	case ReloadFaultReadyAtOnce:
		for _, id := range rec.Added {
			w.ready.ready[w.byID[id]] = true
		}
		w.publishReadiness()
	case ReloadFaultResetReadiness:
		clear(w.ready.ready)
		w.publishReadiness()
	}
	if w.opts.ReloadFault == ReloadFaultCutRemoved {
		for _, id := range rec.inflight {
			if w.reqs[id].active {
				w.end(int(id), decisionlog.EndCut)
			}
		}
	}
	w.audit()
	w.retryQueue() // a raised ceiling or a new member may let the queue's head in
}

// keepCeilings is generation i with the member ceilings of the generation before it, for the
// ReloadFaultKeepCeilings test variant.
func (w *world) keepCeilings(i int) config.Config {
	gens := w.sc.Generations()
	prev := map[string]int64{}
	for _, m := range gens[i] {
		prev[m.ID] = m.MaxConcurrency
	}
	members := make([]scenarios.Member, len(gens[i+1]))
	copy(members, gens[i+1])
	for k := range members {
		if c, ok := prev[members[k].ID]; ok {
			members[k].MaxConcurrency = c
		}
	}
	doc := generationDocument(w.sc, members, w.strategy, Placement{RingSize: w.opts.RingSize, IntentFile: w.cfg.IntentFile()})
	cfg, err := config.Build(doc, config.Sources{LookupEnv: routerEnv})
	if err != nil {
		return w.reloads.gens[i]
	}
	return cfg
}

// publish makes next the router's configuration the way the server's reload does: the running
// generation builds the next one (admission reconfigured over the same live state, passive health,
// the decision log's membership, and the followers staged: the readiness source and the pressure
// cache), and Publish brings it into force in one step. Requests in flight keep walking under the
// generation that admitted them.
func (w *world) publish(next config.Config, digest string) error {
	if w.opts.ReloadFault == ReloadFaultRebuild {
		return w.rebuild(next)
	}
	gen, err := w.router.Next(next, digest)
	if err != nil {
		return err
	}
	if err := gen.Publish(); err != nil {
		return err
	}
	w.router, w.reloads.digest = gen, digest
	w.adm, _ = gen.Admission().Tier(w.sc.Tier.ID)
	return nil
}

// rebuild is the wrong way to reload, kept as a test variant: a new router from next, as if the
// process restarted without cutting anything. Leases held on the old router release into it, so
// the counters carried over from it (as a restart carries them) never see those releases.
func (w *world) rebuild(next config.Config) error {
	snap := w.adm.Snapshot()
	old, saved := w.cfg, w.tier
	w.cfg = next
	w.tier, _ = next.Tier(w.sc.Tier.ID)
	if err := w.buildRouterKeepingLog(); err != nil {
		w.cfg, w.tier = old, saved
		return err
	}
	w.carried.acquired += snap.Acquired
	w.carried.released += snap.Released
	w.carried.misuse += snap.ReleaseMisuse
	clear(w.ready.in)
	for _, m := range w.tier.Members {
		w.ready.in[w.byID[m.ID]] = true
	}
	w.publishReadiness()
	return nil
}

// admittedReload books an admission to member mi for the reload gates; it runs after the sim
// counted the new lease.
func (w *world) admittedReload(mi int) {
	if !w.reloading() {
		return
	}
	m := w.members[mi]
	a := &w.reloads.audit
	if m.ceiling > 0 && w.acct.active[mi] > m.ceiling || w.tierCeiling > 0 && w.acct.tierActive > w.tierCeiling {
		a.CeilingAdmitViolations++
	}
	if m.removed || !m.configured {
		a.AdmittedRemoved++
	}
	if m.addedAt >= 0 && m.readyAt < m.addedAt {
		a.AdmittedUnready++
	}
	if m.firstAdmit < 0 {
		m.firstAdmit = w.now
	}
}

// refusedReload counts a refusal for the reload gates (quiesce excepted).
func (w *world) refusedReload(quiesced bool) {
	if w.reloading() && !quiesced && w.now >= w.reloads.first {
		w.reloads.audit.Refused++
	}
}

// auditReload is the per-event reload audit: one admission snapshot against the sim's books.
func (w *world) auditReload() {
	snap := w.adm.Snapshot()
	a := &w.reloads.audit
	a.Checks++
	var sum int64
	seen := make([]bool, len(w.members))
	for _, ms := range snap.Members {
		mi, ok := w.byID[ms.ID]
		if !ok {
			a.ConfigMismatches++
			continue
		}
		seen[mi] = true
		sum += ms.Active
		m := w.members[mi]
		if w.acct.active[mi] != ms.Active {
			a.ReconcileViolations++
		}
		if m.configured && ms.MaxConcurrency != m.ceiling || !m.configured && !(m.removed && ms.Active > 0) {
			a.ConfigMismatches++
		}
	}
	for mi, m := range w.members {
		switch {
		case seen[mi]:
		case m.configured:
			a.ConfigMismatches++ // a configured member admission does not know
		default:
			sum += w.acct.active[mi] // a removed member admission no longer lists still holds leases
		}
	}
	if sum != snap.Active || snap.Active != w.acct.tierActive {
		a.ReconcileViolations++
	}
	if snap.MaxConcurrency != w.tierCeiling {
		a.ConfigMismatches++
	}
}

// finishReloads closes the reload books at the end of the run.
func (w *world) finishReloads() {
	interval := w.cfg.Readiness().Interval
	a := &w.reloads.audit
	for _, m := range w.members {
		if m.addedAt < 0 {
			continue
		}
		d := m.firstAdmit - m.addedAt
		if m.firstAdmit < 0 || d > interval {
			a.AddedLate++
		}
		if m.firstAdmit >= 0 {
			a.AddedFirstAdmitMax = max(a.AddedFirstAdmitMax, d)
		}
	}
	for _, rec := range w.reloads.applied {
		for _, id := range rec.inflight {
			if w.res.Requests[id].Outcome != decisionlog.OutcomeSuccess {
				rec.RemovedInFlightFailed++
			}
		}
		rec.inflight = nil
		w.res.Reloads = append(w.res.Reloads, *rec)
	}
	w.res.ReloadAudit = *a
}

// digestOf is a generation's digest as the server computes it from the file it loaded: sha256 of
// the rendered configuration document, in hex.
func digestOf(doc any) (string, error) {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

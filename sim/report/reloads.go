package report

import (
	"strings"

	"github.com/anvil-llm/anvil/sim"
)

// Reload is one live configuration reload in seconds since the run's start: what it changed and
// what became of the requests in flight on the members it removed.
type Reload struct {
	AtS                   float64  `json:"at_s"`
	Changes               int      `json:"changes"`
	Error                 string   `json:"error,omitempty"`
	Added                 []string `json:"added,omitempty"`
	Removed               []string `json:"removed,omitempty"`
	Overhang              int64    `json:"overhang"` // leases above the lowered ceilings at the reload
	RemovedInFlight       int64    `json:"removed_in_flight"`
	RemovedInFlightFailed int64    `json:"removed_in_flight_failed"`
}

// ReloadAudit is the per-event reload audit (see sim.ReloadAudit), present only for a scenario
// with reloads.
type ReloadAudit struct {
	Checks                 uint64  `json:"checks"`
	ReconcileViolations    uint64  `json:"reconcile_violations"`
	ConfigMismatches       uint64  `json:"config_mismatches"`
	CeilingAdmitViolations uint64  `json:"ceiling_admit_violations"`
	AdmittedUnready        uint64  `json:"admitted_unready"`
	AdmittedRemoved        uint64  `json:"admitted_removed"`
	Refused                uint64  `json:"refused"`
	AddedLate              uint64  `json:"added_late"`
	AddedFirstAdmitMaxS    float64 `json:"added_first_admit_max_s"`
	Rebased                uint64  `json:"rebased"` // queued requests that walked on under a new generation
}

func reloads(res *sim.Result) ([]Reload, *ReloadAudit) {
	if len(res.Reloads) == 0 {
		return nil, nil
	}
	var out []Reload
	for _, r := range res.Reloads {
		out = append(out, Reload{AtS: r.At.Seconds(), Changes: r.Changes, Error: r.Err, Added: r.Added, Removed: r.Removed,
			Overhang: r.Overhang, RemovedInFlight: r.RemovedInFlight, RemovedInFlightFailed: r.RemovedInFlightFailed})
	}
	a := res.ReloadAudit
	return out, &ReloadAudit{
		Checks: a.Checks, ReconcileViolations: a.ReconcileViolations, ConfigMismatches: a.ConfigMismatches,
		CeilingAdmitViolations: a.CeilingAdmitViolations, AdmittedUnready: a.AdmittedUnready,
		AdmittedRemoved: a.AdmittedRemoved, Refused: a.Refused, AddedLate: a.AddedLate,
		AddedFirstAdmitMaxS: a.AddedFirstAdmitMax.Seconds(), Rebased: a.Rebased,
	}
}

// reloadMetrics adds the reload metrics of a run that reloaded; a run that did not has none, so
// its report keeps its bytes.
func reloadMetrics(m *metricSet, run *Run) {
	a := run.ReloadAudit
	if a == nil {
		return
	}
	var errs, added, removed, overhang, inFlight, failed float64
	for _, r := range run.Reloads {
		if r.Error != "" {
			errs++
		}
		added += float64(len(r.Added))
		removed += float64(len(r.Removed))
		overhang += float64(r.Overhang)
		inFlight += float64(r.RemovedInFlight)
		failed += float64(r.RemovedInFlightFailed)
	}
	m.add("reloads.count", float64(len(run.Reloads)))
	m.add("reloads.applied", float64(len(run.Reloads))-errs)
	m.add("reloads.errors", errs)
	m.add("reloads.added", added)
	m.add("reloads.removed", removed)
	m.add("reloads.lowered_overhang", overhang)
	m.add("reloads.removed_in_flight", inFlight)
	m.add("reloads.removed_in_flight_failed", failed)
	m.add("reloads.checks", float64(a.Checks))
	m.add("reloads.reconcile_violations", float64(a.ReconcileViolations))
	m.add("reloads.config_mismatches", float64(a.ConfigMismatches))
	m.add("reloads.ceiling_admit_violations", float64(a.CeilingAdmitViolations))
	m.add("reloads.admitted_unready", float64(a.AdmittedUnready))
	m.add("reloads.admitted_removed", float64(a.AdmittedRemoved))
	m.add("reloads.refused", float64(a.Refused))
	m.add("reloads.added_late", float64(a.AddedLate))
	m.add("reloads.added_first_admit_max_s", a.AddedFirstAdmitMaxS)
	m.add("reloads.rebased", float64(a.Rebased))
}

// reloadTable renders the reloads of a run (nil when it had none).
func reloadTable(run *Run) *table {
	if len(run.Reloads) == 0 {
		return nil
	}
	t := &table{head: []string{"reload at (s)", "result", "added", "removed", "changes", "overhang", "removed in flight", "of those failed"}, left: 4}
	for _, r := range run.Reloads {
		res := "applied"
		if r.Error != "" {
			res = r.Error
		}
		t.row(f(r.AtS, 3), res, dash(strings.Join(r.Added, ",")), dash(strings.Join(r.Removed, ",")),
			i64(int64(r.Changes)), i64(r.Overhang), i64(r.RemovedInFlight), i64(r.RemovedInFlightFailed))
	}
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

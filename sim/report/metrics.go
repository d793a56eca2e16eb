package report

import (
	"math"
	"slices"
	"strings"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// Metric is one named number of a run. Gates read metrics by name; the names are the report's
// stable vocabulary (see Names).
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// metricSet collects a run's metrics.
type metricSet []Metric

func (m *metricSet) add(name string, v float64) { *m = append(*m, Metric{name, v}) }

func (m *metricSet) quantiles(prefix string, q Quantiles) {
	m.add(prefix+".n", float64(q.N))
	m.add(prefix+".mean", q.Mean)
	m.add(prefix+".p50", q.P50)
	m.add(prefix+".p90", q.P90)
	m.add(prefix+".p99", q.P99)
	m.add(prefix+".p99.9", q.P999)
}

// scope adds one scope's metrics under prefix ("tier" or "member.<id>").
func (m *metricSet) scope(prefix string, s Scope) {
	m.add(prefix+".requests", float64(s.Requests))
	m.add(prefix+".admitted", float64(s.Admitted))
	m.add(prefix+".succeeded", float64(s.Succeeded))
	m.add(prefix+".share", s.Share)
	m.add(prefix+".ceiling", float64(s.Ceiling))
	m.add(prefix+".peak_active", float64(s.PeakActive))
	m.add(prefix+".mean_active", s.MeanActive)
	m.add(prefix+".utilization", s.Utilization)
	m.add(prefix+".ceiling_violations", float64(s.CeilingViolations))
	m.add(prefix+".throughput_rps", s.ThroughputRPS)
	m.add(prefix+".output_tps", s.OutputTPS)
	m.add(prefix+".goodput_rps", s.GoodputRPS)
	m.add(prefix+".scrapes_ok", float64(s.Scrapes.OK))
	m.add(prefix+".scrapes_failed", float64(s.Scrapes.Failed))
	m.add(prefix+".scrapes_unknown", float64(s.Scrapes.Unknown))
	for _, o := range outcomeNames() {
		m.add(prefix+".outcome."+o, float64(countOf(s.Outcomes, o)))
	}
	// Tier latencies are top-level (e2e.p99); member latencies stay under the member.
	lat := prefix + "."
	if prefix == "tier" {
		lat = ""
	}
	m.quantiles(lat+"ttft", s.TTFT)
	m.quantiles(lat+"tpot", s.TPOT)
	m.quantiles(lat+"itl", s.ITL)
	m.quantiles(lat+"e2e", s.E2E)
	m.add(lat+"queue.n", float64(s.Queue.N))
	m.add(lat+"queue.mean", s.Queue.Mean)
}

func countOf(cs []Count, key string) uint64 {
	for _, c := range cs {
		if c.Key == key {
			return c.N
		}
	}
	return 0
}

func outcomeNames() []string {
	return []string{"success", "refused", "not_admitted", "upstream_http_error", "upstream_timeout",
		"upstream_transport_error", "client_canceled", "malformed_stream", "stream_truncated"}
}

// metrics flattens a run into its named metrics, sorted by name.
func metrics(run *Run, windows []scenarios.Window, res *sim.Result) []Metric {
	var m metricSet
	t := run.Tier
	m.scope("tier", t)
	m.add("tier.not_admitted", float64(countOf(t.Outcomes, "not_admitted")))
	m.add("tier.refused", float64(countOf(t.Outcomes, "refused")))
	m.add("tier.failed", float64(t.Admitted-t.Succeeded-int(countOf(t.Outcomes, "client_canceled"))))
	inv := run.Invariants
	for _, kv := range []struct {
		name string
		v    float64
	}{
		{"checks", float64(inv.Checks)}, {"ceiling_violations", float64(inv.CeilingViolations)},
		{"reconcile_violations", float64(inv.ReconcileViolations)}, {"scope_violations", float64(inv.ScopeViolations)},
		{"order_violations", float64(inv.OrderViolations)}, {"evidence_violations", float64(inv.EvidenceViolations)},
		{"release_misuse", float64(inv.ReleaseMisuse)}, {"redispatches", float64(inv.Redispatches)},
		{"undispatched", float64(inv.Undispatched)}, {"misrouted", float64(inv.Misrouted)},
		{"phantom_dispatches", float64(inv.Phantom)}, {"dispatch_mismatches", float64(inv.DispatchMismatches)},
		{"acquired", float64(inv.Acquired)},
		{"released", float64(inv.Released)}, {"unreleased", float64(inv.Acquired) - float64(inv.Released)},
		{"end_active", float64(inv.EndActive)}, {"attempts", float64(inv.Attempts)},
		{"attempts_minus_admitted", float64(inv.AttemptsMinusAdmits)}, {"tier_ceiling_hits", float64(inv.TierCeilingHits)},
	} {
		if kv.name == "ceiling_violations" {
			continue // already added by scope
		}
		m.add("tier."+kv.name, kv.v)
	}
	members(&m, run)
	decisionMetrics(&m, run.Decisions)
	telemetryMetrics(&m, run.Telemetry)
	drainMetrics(&m, run)
	healthMetrics(&m, run)
	queueMetrics(&m, run.Queue)
	windowMetrics(&m, windows, res)
	restartMetrics(&m, run)
	reloadMetrics(&m, run)
	actionErrors := 0
	for _, a := range run.Actions {
		if a.Error != "" {
			actionErrors++
		}
	}
	m.add("actions.count", float64(len(run.Actions)))
	m.add("actions.errors", float64(actionErrors))
	m.add("run.events", float64(run.Events))
	m.add("run.tail_s", run.TailS)
	slices.SortFunc(m, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return m
}

func members(m *metricSet, run *Run) {
	var reqs, util []float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range run.Members {
		m.scope("member."+s.ID, s)
		m.add("member."+s.ID+".received", float64(s.Received))
		m.add("member."+s.ID+".refused", float64(s.Refused))
		reqs = append(reqs, float64(s.Requests))
		u := s.Utilization
		if s.Ceiling == 0 {
			u = s.MeanActive
		}
		util = append(util, u)
		lo, hi = math.Min(lo, float64(s.Requests)), math.Max(hi, float64(s.Requests))
	}
	m.add("tier.share_spread", hi-lo)
	m.add("tier.fairness_requests", jain(reqs))
	m.add("tier.fairness_utilization", jain(util))
}

func decisionMetrics(m *metricSet, d Decisions) {
	m.add("decisions.admitted", float64(d.Admitted))
	m.add("decisions.not_admitted_quiesced", float64(d.Quiesced))
	m.add("decisions.not_admitted_tier_full", float64(d.TierFull))
	m.add("decisions.not_admitted_no_eligible", float64(d.NoEligible))
	m.add("decisions.capacity", float64(d.Capacity))
	m.add("decisions.added", float64(d.LogAdded))
	m.add("decisions.rejected", float64(d.LogRejected))
	m.add("decisions.evidence_discarded", float64(d.EvidenceDiscarded))
	for _, c := range d.SelectedFreshness {
		m.add("freshness.selected."+c.Key, float64(c.N))
	}
	for _, c := range d.RowFreshness {
		m.add("freshness.rows."+c.Key, float64(c.N))
	}
	for _, c := range d.DecidedBy {
		m.add("decided_by."+c.Key, float64(c.N))
	}
	m.add("decisive.unknown_lower_local_wins", float64(d.UnknownLowerLocalWins))
	m.add("decisive.fresh_beats_unknown", float64(d.FreshBeatsUnknown))
}

func telemetryMetrics(m *metricSet, t Telemetry) {
	m.add("telemetry.snapshots", float64(t.Snapshots))
	m.add("telemetry.snapshot_errors", float64(t.SnapshotErrors))
	m.add("telemetry.scrapes", float64(t.Scrapes))
	m.add("telemetry.ok", float64(t.OK))
	m.add("telemetry.failed", float64(t.Failed))
	m.add("telemetry.unknown", float64(t.Unknown))
	m.add("telemetry.overdue", float64(t.Overdue))
	m.add("telemetry.max_pending", float64(t.MaxPending))
	m.add("telemetry.max_queued", float64(t.MaxQueued))
}

func drainMetrics(m *metricSet, run *Run) {
	var completed, refused, aborted, incomplete int
	var longest, failed float64
	minOthers := math.Inf(1)
	for _, d := range run.Drains {
		failed += float64(d.InFlightFailed)
		switch {
		case d.Completed:
			completed++
			longest = math.Max(longest, d.EndS-d.StartS)
			if d.Scope != "tier" {
				minOthers = math.Min(minOthers, float64(d.OthersActiveAtEnd))
			}
		case d.Refused:
			refused++
		case d.Aborted:
			aborted++
		default:
			incomplete++
		}
	}
	if math.IsInf(minOthers, 1) {
		minOthers = 0
	}
	m.add("drains.count", float64(len(run.Drains)))
	m.add("drains.completed", float64(completed))
	m.add("drains.refused", float64(refused))
	m.add("drains.aborted", float64(aborted))
	m.add("drains.incomplete", float64(incomplete))
	m.add("drains.longest_s", longest)
	m.add("drains.min_others_active_at_end", minOthers)
	m.add("drains.in_flight_failed", failed)
}

// restartMetrics adds the restart metrics of a run that restarted; a run that did not has none, so
// its report keeps its bytes.
func restartMetrics(m *metricSet, run *Run) {
	if len(run.Restarts) == 0 {
		return
	}
	var cut, tiers, members, ignored float64
	for _, r := range run.Restarts {
		cut += float64(r.Cut)
		tiers += float64(r.RestoredTiers)
		members += float64(r.RestoredMembers)
		ignored += float64(r.Ignored)
	}
	m.add("restarts.count", float64(len(run.Restarts)))
	m.add("restarts.cut", cut)
	m.add("restarts.restored_tiers", tiers)
	m.add("restarts.restored_members", members)
	m.add("restarts.ignored", ignored)
	m.add("restarts.admitted_after_last", float64(run.Restarts[len(run.Restarts)-1].AdmittedAfter))
}

// Value returns the run's metric called name.
func (r *Run) Value(name string) (float64, bool) {
	i, ok := slices.BinarySearchFunc(r.Metrics, name, func(m Metric, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return 0, false
	}
	return r.Metrics[i].Value, true
}

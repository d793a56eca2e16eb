package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Text renders the report for a terminal.
func (r *Report) Text() string { return r.render(false) }

// Markdown renders the report as a Markdown document.
func (r *Report) Markdown() string { return r.render(true) }

// writer renders one section either way.
type writer struct {
	b  strings.Builder
	md bool
}

func (w *writer) heading(level int, s string) {
	if w.md {
		w.b.WriteString(strings.Repeat("#", level) + " " + s + "\n\n")
		return
	}
	w.b.WriteString(s + "\n")
	if level <= 2 {
		ch := "="
		if level == 2 {
			ch = "-"
		}
		w.b.WriteString(strings.Repeat(ch, len(s)) + "\n")
	}
}

func (w *writer) para(s string) {
	w.b.WriteString(s + "\n\n")
}

func (w *writer) table(t *table) {
	if w.md {
		t.markdown(&w.b)
	} else {
		t.text(&w.b, "  ")
	}
	w.b.WriteString("\n")
}

func (r *Report) render(md bool) string {
	w := &writer{md: md}
	w.heading(1, fmt.Sprintf("anvil-sim: %s", r.Scenario))
	meta := fmt.Sprintf("Seed %d, %s s of virtual time, runs: %s.", r.Seed, f(r.DurationS, 0), strings.Join(r.strategies(), ", "))
	if r.Description != "" {
		meta = r.Description + " " + meta
	}
	w.para(meta)
	for i := range r.Runs {
		r.Runs[i].render(w)
	}
	if len(r.Comparison) > 0 {
		w.heading(2, "Comparison")
		t := &table{head: append(append([]string{"metric"}, r.strategies()...), "ratio")}
		for _, c := range r.Comparison {
			row := []string{c.Metric}
			for _, v := range c.Values {
				row = append(row, f(v, 4))
			}
			t.row(append(row, f(c.Ratio, 3))...)
		}
		w.table(t)
	}
	r.renderGates(w)
	return w.b.String()
}

func (r *Report) strategies() []string {
	var out []string
	for _, run := range r.Runs {
		out = append(out, run.Strategy)
	}
	return out
}

func (r *Report) renderGates(w *writer) {
	w.heading(2, "Gates")
	t := &table{head: []string{"status", "gate", "actual"}, left: 2}
	for _, g := range r.Gates {
		actual := strconv.FormatFloat(g.Actual, 'g', 6, 64)
		if g.Note != "" {
			actual = g.Note
		}
		t.row(strings.ToUpper(g.Status), g.Name, actual)
	}
	if len(r.Gates) > 0 {
		w.table(t)
	}
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	w.para(fmt.Sprintf("Verdict: %s (%d gates)", verdict, len(r.Gates)))
}

func (run *Run) render(w *writer) {
	w.heading(2, "Run: "+run.Strategy)
	t := &table{head: []string{"scope", "ceiling", "requests", "share", "peak", "mean", "util", "viol",
		"ok/s", "good/s", "ttft p50", "ttft p99", "tpot p50", "e2e p50", "e2e p99", "e2e p99.9"}}
	for _, s := range append([]Scope{run.Tier}, run.Members...) {
		t.row(s.ID, i64(s.Ceiling), strconv.Itoa(s.Requests), pct(s.Share), i64(s.PeakActive), f(s.MeanActive, 2),
			pct(s.Utilization), u(s.CeilingViolations), f(s.ThroughputRPS, 2), f(s.GoodputRPS, 2),
			ms(s.TTFT.P50), ms(s.TTFT.P99), ms(s.TPOT.P50), ms(s.E2E.P50), ms(s.E2E.P99), ms(s.E2E.P999))
	}
	w.para("Leases and latency per scope (times in ms; requests are arrivals for the tier, selections for a member):")
	w.table(t)
	lat := &table{head: []string{"tier latency (ms)", "n", "mean", "p50", "p90", "p99", "p99.9"}}
	for _, q := range []struct {
		name string
		q    Quantiles
	}{{"ttft", run.Tier.TTFT}, {"tpot", run.Tier.TPOT}, {"itl", run.Tier.ITL}, {"e2e", run.Tier.E2E}} {
		lat.row(q.name, strconv.Itoa(q.q.N), ms(q.q.Mean), ms(q.q.P50), ms(q.q.P90), ms(q.q.P99), ms(q.q.P999))
	}
	lat.row("queue (mean only)", strconv.Itoa(run.Tier.Queue.N), ms(run.Tier.Queue.Mean), "-", "-", "-", "-")
	w.table(lat)
	w.para("Queue time is the engines' wait from arrival to first scheduling. Only its mean is exact " +
		"(vLLM's histogram sum over count): the engine reports no per-request scheduling time and the " +
		"histogram's first bucket bound is 300 ms, so no queue-time quantiles are reported.")
	w.para("Outcomes: " + counts(run.Tier.Outcomes) + ".")
	run.renderChecks(w)
	run.renderEvents(w)
}

func counts(cs []Count) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %d", c.Key, c.N))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (run *Run) renderChecks(w *writer) {
	inv := run.Invariants
	t := &table{head: []string{"check", "value"}}
	for _, kv := range [][2]string{
		{"snapshots audited", u(inv.Checks)},
		{"ceiling violations", u(inv.CeilingViolations)},
		{"tier != sum of members", u(inv.ReconcileViolations)},
		{"scope violations", u(inv.ScopeViolations)},
		{"evidence order violations", u(inv.OrderViolations)},
		{"evidence vs the sim's books", u(inv.EvidenceViolations)},
		{"release misuse (admission's count)", u(inv.ReleaseMisuse)},
		{"acquired / released", u(inv.Acquired) + " / " + u(inv.Released)},
		{"member-side attempts / admitted", u(inv.Attempts) + " / " + u(inv.Admitted)},
		{"requests received twice (peer invocations)", u(inv.Redispatches)},
		{"dispatch mismatches", u(inv.DispatchMismatches)},
		{"peak / mean tier active", i64(inv.PeakTierActive) + " / " + f(inv.MeanTierActive, 2)},
	} {
		t.row(kv[0], kv[1])
	}
	w.table(t)
	d := run.Decisions
	w.para(fmt.Sprintf("Decisions: %d admitted; not admitted: %d quiesced, %d tier full, %d no eligible member. "+
		"Capacity evidence: %d decisions; selected freshness: %s; decided by: %s; decisive cases: unknown-lower-local won %d, fresh beat unknown %d. "+
		"Decision log: %d added, %d rejected, %d evidence discarded.",
		d.Admitted, d.Quiesced, d.TierFull, d.NoEligible, d.Capacity, counts(d.SelectedFreshness), counts(d.DecidedBy),
		d.UnknownLowerLocalWins, d.FreshBeatsUnknown, d.LogAdded, d.LogRejected, d.EvidenceDiscarded))
	if tel := run.Telemetry; tel.Enabled {
		w.para(fmt.Sprintf("Telemetry: %d snapshots, %d scrapes (%d ok, %d failed, %d unknown, %d overdue); most pending %d, most queued %d.",
			tel.Snapshots, tel.Scrapes, tel.OK, tel.Failed, tel.Unknown, tel.Overdue, tel.MaxPending, tel.MaxQueued))
	}
}

func (run *Run) renderEvents(w *writer) {
	if len(run.Actions) > 0 {
		t := &table{head: []string{"at (s)", "action", "member", "result"}, left: 4}
		for _, a := range run.Actions {
			res := "ok"
			if a.Error != "" {
				res = a.Error
			}
			member := a.Member
			if member == "" {
				member = "(tier)"
			}
			t.row(f(a.AtS, 3), a.Action, member, res)
		}
		w.table(t)
	}
	if h := run.Health; h != nil {
		t := &table{head: []string{"member", "ejections", "first (s)", "longest (s)", "held out (s)", "recoveries", "held by the cap"}, left: 1}
		for _, m := range h.Members {
			var first, longest float64
			for k, e := range m.Ejections {
				if k == 0 {
					first = e.DurationS
				}
				longest = max(longest, e.DurationS)
			}
			t.row(m.ID, i64(int64(len(m.Ejections))), f(first, 1), f(longest, 1), f(m.EjectedS, 1), i64(int64(m.Recoveries)), i64(int64(m.Held)))
		}
		w.table(t)
	}
	if len(run.Restarts) > 0 {
		t := &table{head: []string{"restart at (s)", "requests cut", "restored tiers", "restored members", "ignored", "admitted after"}, left: 0}
		for _, r := range run.Restarts {
			t.row(f(r.AtS, 3), i64(r.Cut), i64(int64(r.RestoredTiers)), i64(int64(r.RestoredMembers)), i64(int64(r.Ignored)), i64(int64(r.AdmittedAfter)))
		}
		w.table(t)
	}
	if t := reloadTable(run); t != nil {
		w.table(t)
		a := run.ReloadAudit
		w.para(fmt.Sprintf("Reload audit: %d snapshots, one after every event; tier != sum of members %d, admission != the configuration in force %d, "+
			"admissions above the ceiling in force %d, to an unready added member %d, to a removed member %d; refusals after the first reload %d; "+
			"added members late %d (first admission at most %.3f s after its reload); queued requests rebased onto a new generation %d.",
			a.Checks, a.ReconcileViolations, a.ConfigMismatches, a.CeilingAdmitViolations, a.AdmittedUnready, a.AdmittedRemoved,
			a.Refused, a.AddedLate, a.AddedFirstAdmitMaxS, a.Rebased))
	}
	if len(run.Drains) > 0 {
		t := &table{head: []string{"drain", "start (s)", "end (s)", "result", "waited for", "of those failed", "others active at end"}, left: 1}
		for _, d := range run.Drains {
			res := "incomplete"
			switch {
			case d.Completed:
				res = "completed"
			case d.Refused:
				res = "refused (not quiesced)"
			case d.Aborted:
				res = "aborted (readmitted or restarted)"
			}
			t.row(d.Scope, f(d.StartS, 3), f(d.EndS, 3), res, i64(d.ActiveAtStart), i64(d.InFlightFailed), i64(d.OthersActiveAtEnd))
		}
		w.table(t)
	}
}

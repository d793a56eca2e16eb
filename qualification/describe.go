package qualification

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/bench"
)

// Describe writes the exact procedure a run of this plan performs, phase by phase, with what each
// phase reads, sends and changes, as Markdown. It sends nothing. avail, when given, says for each
// token source whether it resolves now (Plan.Availability); tokens are never shown.
func (p *Plan) Describe(w io.Writer, avail map[string]string) error {
	var b bytes.Buffer
	t := p.Tier
	fmt.Fprintf(&b, "# Qualification plan: %s\n\n", p.Qualification)
	fmt.Fprintf(&b, "Plan fingerprint: `%s`\n\n", p.Fingerprint())
	if p.Approval == "" {
		b.WriteString("Approval: **none recorded.** `anvil-qualify run` refuses to start until approval.digest is set (`anvil-qualify digest`).\n\n")
	} else {
		b.WriteString("Approval: a digest is recorded; `anvil-qualify run --approve` starts only with the token it was made from, and only for this fingerprint.\n\n")
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| router | %s, alias `%s`; admin token from %s; caller token from %s |\n",
		p.Router.URL, p.Router.Alias, sourceText(p.Router.AdminToken, avail["router.admin_token"]), sourceText(p.Router.CallerToken, avail["router.caller_token"]))
	ceiling := fmt.Sprint(t.Ceiling)
	if t.Ceiling == 0 {
		ceiling = "none"
	}
	fmt.Fprintf(&b, "| tier | `%s`, strategy %s, effective ceiling %s |\n", t.ID, t.Strategy, ceiling)
	fmt.Fprintf(&b, "| served model | `%s`: every member's /v1/models must list exactly this |\n", t.ServedModel)
	fmt.Fprintf(&b, "| declared provenance | %s |\n", cell(t.Provenance.Statement))
	if t.Provenance.EngineVersion != "" {
		fmt.Fprintf(&b, "| engine version | `%s` on every member's GET /version |\n", t.Provenance.EngineVersion)
	}
	if t.Provenance.MaxModelLen != 0 {
		fmt.Fprintf(&b, "| max_model_len | %d in every member's /v1/models |\n", t.Provenance.MaxModelLen)
	}
	member := "no token"
	if t.MemberToken.Set() {
		member = "token from " + sourceText(t.MemberToken, avail["tier.member_token"])
	}
	for _, m := range t.Members {
		fmt.Fprintf(&b, "| member `%s` | %s, ceiling %d (%s) |\n", m.ID, m.URL, m.MaxConcurrency, member)
	}
	mp := p.matchedPlan()
	fmt.Fprintf(&b, "| workload | %s; %s endpoint; seed %d; request timeout %s |\n", bench.Describe(&mp), p.Endpoint, p.Seed, p.RequestTimeout)
	fmt.Fprintf(&b, "| output | a new directory under `%s` |\n\n", p.Output)

	f := p.Phases.Failure
	sp, fp := p.sustainedPlan(), p.failurePlan()
	b.WriteString("## Procedure\n\n`anvil-qualify plan` sends nothing. `anvil-qualify run --approve` performs these phases in order; a failed phase skips the later load phases, and restoration and the gate always run, even after Ctrl-C.\n\n")
	steps := []struct{ name, what string }{
		{PhasePreflight, "Reads only. Each member: GET /v1/models (exactly the served model, the router's readiness rule), /health, /version. " +
			"The router: GET /readyz, /admin/v1/capacity, /admin/v1/admission, /admin/v1/decisions/summary and a transition `status` of the tier. " +
			"Fails unless identities, declared provenance, members, ceilings and strategy agree, every member is ready and nothing is quiesced, draining or in flight. " +
			"A member answering as the fake vLLM labels the whole run synthetic."},
		{PhaseBaseline, fmt.Sprintf("Sends the matched schedule (%s) to the members directly, client-side round robin, model `%s`. Touches the members only.", loadText(p.Phases.Matched), t.ServedModel)},
		{PhaseRouted, fmt.Sprintf("Sends the same schedule through the router (alias `%s`), then compares it with the baseline and checks the router's accounting: one decision per request, one upstream attempt per admitted request, every lease released once, none left held.", p.Router.Alias)},
		{PhaseSustained, fmt.Sprintf("Holds the tier at its ceiling through the router: %s. Samples the capacity view every %s; no ceiling may be exceeded. Same accounting checks.", bench.Describe(&sp), p.Phases.SampleEvery)},
		{PhaseFailure, fmt.Sprintf("Under the same load (%s; the arrivals end as soon as the member is readmitted, so that duration only bounds a stuck run): waits until member `%s` holds requests, then **quiesces** it (reason `%s`), **drains** it (waits up to %s, cancels nothing), checks for %s that no request reaches it (the member's own /metrics, which also ties its ID to its URL, and the router's leases on it) while the rest of the tier holds requests, and **readmits** it. "+
			"Changes the router's admission state and persisted intent for that member, through router/manage only. Every request must end ok or refused by admission; same accounting checks.",
			bench.Describe(&fp), f.Member, QuiesceReason, f.DrainWait, f.Hold)},
	}
	if c := p.Phases.Calibration; c != nil {
		steps = append(steps, struct{ name, what string }{PhaseCalibration, calibrationText(p, c)})
	}
	steps = append(steps, []struct{ name, what string }{
		{PhaseRestoration, fmt.Sprintf("Readmits every member this run quiesced and has not readmitted, waits for the tier to hold no lease (up to %s in all), records the router's views after the run and checks that the tier's states, reasons, members and ceilings equal the preflight's.", p.Phases.RestoreTimeout)},
		{PhaseGate, fmt.Sprintf("Verdict against the SLOs (%s) on the routed and sustained phases; writes verdict.json and promotion-request.md. Promotes nothing; a synthetic run is never promotable.", sloText(p.SLO))},
	}...)
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. **%s**: %s\n", i, s.name, s.what)
	}
	b.WriteString("\nArtifacts: plan.json and plan.md, phases/N-NAME.json and .md, raw/*.jsonl (anvil-bench raw records: `anvil-bench report` rebuilds any report), router/*-before.json and *-after.json, plots/*.png, verdict.json, promotion-request.json and .md, and manifest.json with the SHA-256 of every file (`anvil-qualify verify DIR`).\n")
	if p.Phases.Calibration != nil {
		b.WriteString("The calibration adds calibration/curve.json (the curve and the recommended max_concurrency), raw/calibration-N.jsonl per step and plots/calibration-latency-throughput.png.\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

func sourceText(s TokenSource, status string) string {
	where := "file " + s.File
	if s.Env != "" {
		where = "environment variable " + s.Env
	}
	if status != "" {
		where += " (" + status + ")"
	}
	return where
}

func loadText(l Load) string {
	var parts []string
	if l.Requests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests", l.Requests))
	} else {
		parts = append(parts, fmt.Sprintf("%s of arrivals", l.Duration))
	}
	if l.Warmup > 0 {
		parts = append(parts, fmt.Sprintf("%d warm-up", l.Warmup))
	}
	return strings.Join(parts, ", ")
}

func sloText(s SLOPlan) string {
	parts := []string{fmt.Sprintf("success share at least %g", s.MinSuccess)}
	for _, t := range []struct {
		name string
		v    time.Duration
	}{{"TTFT p99", s.TTFTP99}, {"TPOT p99", s.TPOTP99}, {"E2EL p99", s.E2ELP99}, {"router's added E2EL p50", s.MaxAddedE2ELP50}} {
		if t.v > 0 {
			parts = append(parts, fmt.Sprintf("%s at most %s", t.name, t.v))
		}
	}
	return strings.Join(parts, ", ")
}

package qualification

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
)

// Approval is a plan's verified approval: only Plan.Approve makes one, and Run refuses to start
// without it, so no code path sends anything for a plan nobody approved.
type Approval struct {
	fingerprint string
}

// Options are a run's dependencies.
type Options struct {
	Secrets Secrets
	// Client sends the run's own GETs and its transitions; nil is a client that follows no redirect.
	// Each read is bounded at 30 s, a drain at its wait plus 30 s, so the client itself should set no
	// overall timeout. The load phases use the bench's own client.
	Client *http.Client
	// Progress receives one line per phase; nil discards them. Nothing secret is ever written.
	Progress io.Writer
	// Now is the clock of the reports and the run directory's name; nil is time.Now.
	Now func() time.Time
	// Observe is called synchronously at each step of the run (tests use it to interrupt a run at
	// a known point, without sleeping).
	Observe func(Event)
}

// Event is one step of a run: a phase starting or ending, a transition taking effect.
type Event struct {
	Phase string
	Step  string
}

// Steps of Event.
const (
	StepStart      = "start"
	StepEnd        = "end"
	StepLoad       = "load_started"
	StepQuiesced   = "quiesced"
	StepDrained    = "drained"
	StepReadmitted = "readmitted"
)

// Result is a finished run: its directory, the phase reports, the verdict and the manifest.
type Result struct {
	Dir      string
	Phases   []PhaseReport
	Verdict  Verdict
	Manifest Manifest
}

// ErrApproval is returned by Run when its approval is not this plan's.
var ErrApproval = errors.New("qualification: the approval does not belong to this plan")

// runner is one run's state.
type runner struct {
	p        *Plan
	o        Options
	web      web
	router   *routerAPI
	dir      *runDir
	now      func() time.Time
	writeErr error

	// What preflight observed: the evidence label and the state restoration must return to.
	evidence string
	before   *manage.Response
	// quiesced are the members this run quiesced and has not readmitted: restoration's ledger.
	quiesced []string
	// transitions counts the transitions sent (status reads excluded).
	transitions int
	// The matched pair's direct half, for the comparison.
	direct     []bench.Record
	directInfo bench.TargetInfo
}

// Run performs an approved plan: preflight, baseline, routed, sustained and failure in order (a
// failed phase skips the later load phases), then restoration and the gate, which always run, on a
// context of their own when ctx was cancelled. Every phase is recorded under one new run directory
// sealed by a manifest. The error is non-nil only when the run could not start (no approval, no
// run directory) or an artifact could not be written; the verdict says everything else.
func Run(ctx context.Context, p *Plan, a Approval, o Options) (*Result, error) {
	if a.fingerprint == "" || a.fingerprint != p.Fingerprint() {
		return nil, ErrApproval
	}
	r := &runner{p: p, o: o, now: o.Now, evidence: EvidenceUndetermined}
	if r.now == nil {
		r.now = time.Now
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	r.web = web{hc: hc}
	var err error
	if r.router, err = newRouterAPI(r.web, p, o.Secrets.Admin); err != nil {
		return nil, err
	}
	if r.dir, err = newRunDir(p.Output, p.Qualification, r.now()); err != nil {
		return nil, err
	}
	r.keep(r.dir.write("plan.json", append(p.JSON(), '\n')))
	r.keep(r.dir.writeFunc("plan.md", func(w io.Writer) error { return p.Describe(w, nil) }))

	res := &Result{Dir: r.dir.path}
	stop := ""
	phases := r.loadPhases()
	for i, ph := range phases {
		rep := r.begin(ph.name, i)
		switch {
		case stop != "":
			rep.Status, rep.Note = StatusSkipped, stop
		case ctx.Err() != nil:
			rep.Status, rep.Note = StatusSkipped, "Not run: the run was interrupted before this phase."
		default:
			ph.run(ctx, rep)
			if ctx.Err() != nil {
				rep.Status = StatusInterrupted
			}
		}
		r.end(rep)
		res.Phases = append(res.Phases, *rep)
		switch {
		case stop != "":
		case rep.Status == StatusFailed:
			stop = fmt.Sprintf("Not run: phase %s failed.", ph.name)
		case rep.Status == StatusInterrupted:
			stop = fmt.Sprintf("Not run: the run was interrupted during phase %s.", ph.name)
		}
	}

	// Restoration and the gate run whatever happened, on a context the interruption does not end.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.Phases.RestoreTimeout)
	defer cancel()
	rest := r.begin(PhaseRestoration, len(phases))
	r.restore(rctx, rest)
	r.end(rest)
	res.Phases = append(res.Phases, *rest)

	gate := r.begin(PhaseGate, len(phases)+1)
	res.Verdict = r.gate(res.Phases, ctx.Err() != nil, gate)
	r.end(gate)
	res.Phases = append(res.Phases, *gate)

	m, err := r.dir.seal(Manifest{Qualification: p.Qualification, Fingerprint: p.Fingerprint(),
		Evidence: r.evidence, Verdict: res.Verdict.Result})
	r.keep(err)
	res.Manifest = m
	return res, r.writeErr
}

// phaseStep is one phase of the sequence before restoration and the gate.
type phaseStep struct {
	name string
	run  func(context.Context, *PhaseReport)
}

// loadPhases is the sequence: preflight, the four load phases and, when planned, calibration.
func (r *runner) loadPhases() []phaseStep {
	phases := []phaseStep{
		{PhasePreflight, r.preflight}, {PhaseBaseline, r.baseline}, {PhaseRouted, r.routed},
		{PhaseSustained, r.sustained}, {PhaseFailure, r.failure},
	}
	if r.p.Phases.Calibration != nil {
		phases = append(phases, phaseStep{PhaseCalibration, r.calibration})
	}
	return phases
}

// keep remembers the first artifact error; the run goes on (restoration must happen) and Run
// returns it at the end.
func (r *runner) keep(err error) {
	if err != nil && r.writeErr == nil {
		r.writeErr = err
	}
}

func (r *runner) observe(phase, step string) {
	if r.o.Observe != nil {
		r.o.Observe(Event{Phase: phase, Step: step})
	}
}

func (r *runner) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, format+"\n", args...)
	}
}

func (r *runner) begin(phase string, index int) *PhaseReport {
	r.observe(phase, StepStart)
	r.progress("phase %d %s: started", index, phase)
	return &PhaseReport{Format: PhaseFormat, Qualification: r.p.Qualification, Phase: phase, Index: index,
		Checks: []Check{}, Started: r.now().UTC()}
}

// end settles a phase and writes its JSON and Markdown reports.
func (r *runner) end(rep *PhaseReport) {
	rep.settle()
	rep.Evidence = r.evidence
	rep.Ended = r.now().UTC()
	stem := fmt.Sprintf("phases/%d-%s", rep.Index, rep.Phase)
	r.keep(r.dir.writeJSON(stem+".json", rep))
	r.keep(r.dir.writeFunc(stem+".md", rep.Markdown))
	r.progress("phase %d %s: %s", rep.Index, rep.Phase, rep.Status)
	r.observe(rep.Phase, StepEnd)
}

// record notes an artifact file in the phase's report and writes it.
func (r *runner) record(rep *PhaseReport, rel string, data []byte) {
	r.keep(r.dir.write(rel, data))
	rep.Files = append(rep.Files, "../"+rel)
}

func (r *runner) recordJSON(rep *PhaseReport, rel string, v any) {
	r.keep(r.dir.writeJSON(rel, v))
	rep.Files = append(rep.Files, "../"+rel)
}

func (r *runner) recordFunc(rep *PhaseReport, rel string, fill func(io.Writer) error) {
	r.keep(r.dir.writeFunc(rel, fill))
	rep.Files = append(rep.Files, "../"+rel)
}

// snapshot records the router's read-only views under router/<name>-<when>.json: capacity,
// admission and the decision summary. It returns the tier's capacity entry and the summary.
func (r *runner) snapshot(ctx context.Context, rep *PhaseReport, when string) (*manage.Tier, *decisionlog.Summary) {
	var cv *manage.Tier
	if body, t, err := r.router.capacity(ctx); err != nil {
		rep.check("router capacity view read", false, "%v", err)
	} else {
		r.record(rep, "router/capacity-"+when+".json", body)
		cv = &t
	}
	if body, err := r.router.read(ctx, pathAdmission); err != nil {
		rep.check("router admission view read", false, "%v", err)
	} else {
		r.record(rep, "router/admission-"+when+".json", body)
	}
	var sum *decisionlog.Summary
	if body, s, err := r.router.summary(ctx); err != nil {
		rep.check("router decision summary read", false, "%v", err)
	} else {
		r.record(rep, "router/decisions-summary-"+when+".json", body)
		sum = &s
	}
	return cv, sum
}

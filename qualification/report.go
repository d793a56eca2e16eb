package qualification

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/bench"
)

// PhaseFormat names a phase report's format.
const PhaseFormat = "anvil-qualify-phase/1"

// Phases, in the order a run performs them.
const (
	PhasePreflight = "preflight"
	PhaseBaseline  = "baseline"
	PhaseRouted    = "routed"
	PhaseSustained = "sustained"
	PhaseFailure   = "failure"
	// PhaseCalibration runs after failure, only when the plan has phases.calibration.
	PhaseCalibration = "calibration"
	PhaseRestoration = "restoration"
	PhaseGate        = "gate"
)

// PhaseNames lists the phases of a run in order, without the optional calibration phase (which,
// when planned, comes after failure).
func PhaseNames() []string {
	return []string{PhasePreflight, PhaseBaseline, PhaseRouted, PhaseSustained, PhaseFailure, PhaseRestoration, PhaseGate}
}

// Statuses of a phase.
const (
	StatusPassed      = "passed"
	StatusFailed      = "failed"
	StatusSkipped     = "skipped"     // not run: an earlier phase failed or the run was interrupted
	StatusInterrupted = "interrupted" // the operator stopped the run while the phase ran
)

// Evidence labels. A run is synthetic when any member answered as the fake vLLM (FakeHeader), real
// when every member answered and none did, undetermined when some member never answered.
const (
	EvidenceSynthetic    = "synthetic"
	EvidenceReal         = "real"
	EvidenceUndetermined = "undetermined"
)

// PhaseReport is one phase's record: its checks, the transitions it made and its measurements.
type PhaseReport struct {
	Format        string    `json:"format"`
	Qualification string    `json:"qualification"`
	Phase         string    `json:"phase"`
	Index         int       `json:"index"`
	Status        string    `json:"status"`
	Evidence      string    `json:"evidence"`
	Started       time.Time `json:"started"`
	Ended         time.Time `json:"ended"`
	Note          string    `json:"note,omitempty"`
	Checks        []Check   `json:"checks"`
	Actions       []Action  `json:"actions,omitempty"`
	// Phase-specific measurements.
	Members    []MemberObservation `json:"members,omitempty"`
	Bench      *bench.Result       `json:"bench,omitempty"`
	Comparison *bench.Comparison   `json:"comparison,omitempty"`
	Samples    *SampleStats        `json:"capacity_samples,omitempty"`
	Verdict    *Verdict            `json:"verdict,omitempty"`
	// Calibration is the calibration phase's curve and recommendation.
	Calibration *CalibrationResult `json:"calibration,omitempty"`
	Files       []string           `json:"files,omitempty"`
}

// Check is one thing a phase verified. Detail is fixed words and numbers, never a raw answer.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Action is one transition the run sent through router/manage, with the router's answer.
type Action struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	Tier   string    `json:"tier"`
	Member string    `json:"member,omitempty"`
	Result string    `json:"result,omitempty"` // the router's result: changed, unchanged, drained...
	Active int64     `json:"active_requests"`  // the scope's in-flight requests in the answer
	Error  string    `json:"error,omitempty"`  // a refusal's fixed code and message, or a transport class
}

// SampleStats summarize the capacity JSON read while a phase's load ran.
type SampleStats struct {
	Samples       int              `json:"samples"`
	MaxTierActive int64            `json:"max_tier_active"`
	TierCeiling   int64            `json:"tier_ceiling"`
	MaxMember     map[string]int64 `json:"max_member_active"`
	Violations    int              `json:"ceiling_violations"`
	Errors        int              `json:"read_errors"`
}

// check appends a check and returns whether it passed.
func (r *PhaseReport) check(name string, passed bool, format string, args ...any) bool {
	r.Checks = append(r.Checks, Check{Name: name, Passed: passed, Detail: fmt.Sprintf(format, args...)})
	return passed
}

// failed reports whether any check failed.
func (r *PhaseReport) failed() bool {
	for _, c := range r.Checks {
		if !c.Passed {
			return true
		}
	}
	return false
}

// settle sets the status from the checks unless it is already decided (skipped, interrupted).
func (r *PhaseReport) settle() {
	if r.Status != "" {
		return
	}
	r.Status = StatusPassed
	if r.failed() {
		r.Status = StatusFailed
	}
}

// evidenceLine says what kind of evidence a report is, in every report.
func evidenceLine(e string) string {
	switch e {
	case EvidenceSynthetic:
		return "**Evidence: SYNTHETIC.** A member answered as the fake vLLM (`" + FakeHeader + "`). These results exercise the procedure and the router's logic; they are not qualification evidence and never promotable."
	case EvidenceReal:
		return "**Evidence: real members.** Every member answered, none as the fake vLLM. Whether this is qualification evidence is the signer's decision (see the promotion request)."
	}
	return "**Evidence: UNDETERMINED.** Not every member was observed; nothing here is qualification evidence."
}

// Markdown renders the report.
func (r *PhaseReport) Markdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: phase %d, %s — %s\n\n%s\n\n", r.Qualification, r.Index, r.Phase, strings.ToUpper(r.Status), evidenceLine(r.Evidence))
	fmt.Fprintf(&b, "Started %s, ended %s (%s).\n\n", stamp(r.Started), stamp(r.Ended), r.Ended.Sub(r.Started).Round(time.Millisecond))
	if r.Note != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Note)
	}
	if len(r.Checks) > 0 {
		b.WriteString("| check | result | detail |\n|---|---|---|\n")
		for _, c := range r.Checks {
			res := "pass"
			if !c.Passed {
				res = "**FAIL**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(c.Name), res, cell(c.Detail))
		}
		b.WriteString("\n")
	}
	if len(r.Actions) > 0 {
		b.WriteString("## Transitions sent (router/manage)\n\n| at | action | scope | result | active | error |\n|---|---|---|---|---|---|\n")
		for _, a := range r.Actions {
			scope := a.Tier
			if a.Member != "" {
				scope += "/" + a.Member
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", stamp(a.At), a.Action, scope, dash(a.Result), a.Active, cell(dash(a.Error)))
		}
		b.WriteString("\n")
	}
	if len(r.Members) > 0 {
		b.WriteString("## Members observed\n\n| member | /v1/models lists | exact identity | /health | engine version | fake |\n|---|---|---|---|---|---|\n")
		for _, m := range r.Members {
			fmt.Fprintf(&b, "| %s | %s | %t | %d | %s | %t |\n", m.ID, cell(strings.Join(m.Models, ", ")), m.ExactIdentity, m.HealthStatus, dash(m.EngineVersion), m.Fake)
		}
		b.WriteString("\n")
	}
	if s := r.Samples; s != nil {
		fmt.Fprintf(&b, "Capacity samples while the load ran: %d (read errors %d); highest tier active %d of ceiling %d; ceiling violations %d.\n\n",
			s.Samples, s.Errors, s.MaxTierActive, s.TierCeiling, s.Violations)
	}
	if r.Verdict != nil {
		r.Verdict.markdown(&b, false)
	}
	if r.Calibration != nil {
		r.Calibration.markdown(&b)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	if r.Comparison != nil {
		if err := r.Comparison.Markdown(w); err != nil {
			return err
		}
	} else if r.Bench != nil {
		if err := r.Bench.Markdown(w); err != nil {
			return err
		}
	}
	if len(r.Files) > 0 {
		var f bytes.Buffer
		f.WriteString("\n## Files\n\n")
		for _, name := range r.Files {
			fmt.Fprintf(&f, "- [%s](%s)\n", name, name)
		}
		_, err := w.Write(f.Bytes())
		return err
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell keeps a table cell on one line and its pipes escaped.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

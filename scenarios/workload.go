package scenarios

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/router/ident"
)

func (s *Scenario) validateWorkload() error { return s.Workload.Validate() }

// Validate applies the workload's defaults and checks it, exactly as Parse does for a scenario's
// workload; errors name the field under "workload" and wrap ErrInvalid. It lets a load built
// outside a scenario document (anvil-bench's flags) pass the same checks.
func (w *Workload) Validate() error {
	switch {
	case (w.Closed == nil) == (w.Open == nil):
		return invalid("workload", "needs exactly one of closed and open")
	case w.Closed != nil:
		if err := w.Closed.validate(); err != nil {
			return err
		}
	default:
		if err := w.Open.validate(); err != nil {
			return err
		}
	}
	if err := w.PromptTokens.validate("workload.prompt_tokens"); err != nil {
		return err
	}
	if err := w.OutputTokens.validate("workload.output_tokens"); err != nil {
		return err
	}
	if w.Streaming == nil {
		one := 1.0
		w.Streaming = &one
	}
	if !share(*w.Streaming) {
		return invalid("workload.streaming", "must be a share from 0 to 1")
	}
	if c := w.Cancel; c != nil {
		if !share(c.Share) {
			return invalid("workload.cancel.share", "must be a share from 0 to 1")
		}
		if c.AfterMin <= 0 || c.AfterMax < c.AfterMin || c.AfterMax > time.Hour {
			return invalid("workload.cancel", "needs 0 < after_min <= after_max <= 1h")
		}
	}
	return nil
}

func share(v float64) bool { return v >= 0 && v <= 1 }

// validateWork bounds the run's total work at MaxRequests, so a typo in a rate or a client count
// is refused at load time instead of running for hours or exhausting memory.
func (s *Scenario) validateWork() error {
	if s.ExpectedWork() > MaxRequests {
		return invalidf("workload", "would send more than %d requests (rate x duration, or clients x duration / shortest request cycle): shorten the run or lower the load", MaxRequests)
	}
	return nil
}

// ExpectedWork is an upper estimate of the requests the run sends. An open loop sends rate x
// duration. A closed-loop client sends at most one request per cycle, and a cycle lasts at least
// the backoff (a refused or failed request) or the think time plus one engine step (a success
// needs at least one step), whichever is shorter. The members' outside load adds its rate x
// duration: the engines run those requests too.
func (s *Scenario) ExpectedWork() float64 {
	d := s.Duration.Seconds()
	var outside float64
	for _, m := range s.Tier.Members {
		outside += float64(m.OutsideRate * d) // explicit: no fused multiply-add (see Dist.Sample)
	}
	if o := s.Workload.Open; o != nil {
		return float64(o.Rate*d) + outside
	}
	c := s.Workload.Closed
	cycle := min(c.Backoff, c.Think+s.shortestStep())
	return float64(float64(c.Clients)*d/max(cycle.Seconds(), 1e-9)) + outside
}

// shortestStep is a lower bound of any member's engine step: its base step time under the
// smallest scale it can run at (its step_scale times the smallest slow factor applied to it),
// with the profile's jitter at its fastest. It is at least one nanosecond, the engine's own floor.
func (s *Scenario) shortestStep() time.Duration {
	shortest := time.Duration(math.MaxInt64)
	for _, m := range s.Tier.Members {
		p, err := profile.Lookup(m.Profile)
		if err != nil {
			return time.Nanosecond // unreachable after Tier.validate
		}
		slow := 1.0
		for _, e := range s.Events {
			if e.Action == ActionSlow && e.Member == m.ID {
				slow = min(slow, e.Factor)
			}
		}
		step := p.StepBase.Seconds() * m.StepScale * slow * max(1-p.Jitter, 0)
		shortest = min(shortest, time.Duration(step*float64(time.Second)))
	}
	return max(shortest, time.Nanosecond)
}

func (c *Closed) validate() error {
	if c.Clients < 1 || c.Clients > MaxClients {
		return invalidf("workload.closed.clients", "must be 1-%d", MaxClients)
	}
	if c.Think < 0 || c.Think > time.Hour {
		return invalid("workload.closed.think", "must be from 0 to 1h")
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.Backoff < time.Millisecond || c.Backoff > time.Hour {
		return invalid("workload.closed.backoff", "must be from 1ms to 1h")
	}
	return nil
}

func (o *Open) validate() error {
	if !(o.Rate > 0 && o.Rate <= MaxRate) {
		return invalidf("workload.open.rate", "must be in (0, %g] arrivals per second", MaxRate)
	}
	switch o.Process {
	case ProcessPoisson, ProcessConstant:
		if o.Shape != 0 {
			return invalid("workload.open.shape", "only applies to the gamma process")
		}
	case ProcessGamma:
		if !(o.Shape >= 0.01 && o.Shape <= 100) {
			return invalid("workload.open.shape", "is required for gamma: 0.01 to 100")
		}
	default:
		return invalid("workload.open.process", "must be poisson, gamma or constant")
	}
	return nil
}

func (d *Dist) validate(path string) error {
	inRange := func(v float64) bool { return v >= 1 && v <= MaxTokens }
	switch d.Dist {
	case DistConstant:
		if !inRange(d.Value) || d.Value != math.Trunc(d.Value) {
			return invalidf(path+".value", "is required for constant: an integer 1-%d", MaxTokens)
		}
		if d.Min != 0 || d.Max != 0 || d.Median != 0 || d.Sigma != 0 || d.Mean != 0 || d.StdDev != 0 {
			return invalid(path, "constant takes only value")
		}
		return nil
	case DistUniform, DistLognormal, DistNormal:
	default:
		return invalid(path+".dist", "is required: constant, uniform, lognormal or normal")
	}
	if d.Value != 0 {
		return invalid(path+".value", "only applies to constant")
	}
	if !inRange(d.Min) || !inRange(d.Max) || d.Max < d.Min {
		return invalidf(path, "needs 1 <= min <= max <= %d", MaxTokens)
	}
	switch d.Dist {
	case DistLognormal:
		if !(d.Median >= 1 && d.Median <= MaxTokens) || !(d.Sigma > 0 && d.Sigma <= 5) {
			return invalid(path, "lognormal needs median 1.. and sigma in (0, 5]")
		}
	case DistNormal:
		if !(d.Mean >= 1 && d.Mean <= MaxTokens) || !(d.StdDev > 0 && d.StdDev <= MaxTokens) {
			return invalid(path, "normal needs mean 1.. and stddev > 0")
		}
	}
	if d.Dist != DistLognormal && (d.Median != 0 || d.Sigma != 0) || d.Dist != DistNormal && (d.Mean != 0 || d.StdDev != 0) {
		return invalidf(path, "has a field that does not apply to %s", d.Dist)
	}
	return nil
}

func (s *Scenario) validateEvents() error {
	if len(s.Events) > MaxEvents {
		return invalidf("events", "at most %d events", MaxEvents)
	}
	for i := range s.Events {
		if err := s.validateEvent(&s.Events[i], fmt.Sprintf("events[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scenario) validateEvent(e *Event, path string) error {
	if e.At < 0 || e.At > s.Duration {
		return invalid(path+".at", "must be within the run")
	}
	if actionName(e.Action) == "(unknown)" {
		return invalid(path+".action", "must be quiesce, drain, readmit, kill, revive, slow, errors, stream_close or restart")
	}
	if err := s.memberRef(path+".member", e.Member, memberOnly(e.Action)); err != nil {
		return err
	}
	if e.Member != "" && !s.ConfiguredAt(e.Member, e.At) {
		return invalid(path+".member", "names a member not configured at this event's time (reloads add and remove members)")
	}
	if err := e.onlyFields(path); err != nil {
		return err
	}
	switch e.Action {
	case ActionQuiesce:
		if e.Reason == "" {
			e.Reason = DefaultReason
		}
		if !ident.ValidReason(e.Reason) {
			return invalid(path+".reason", "must be a reason code: 1-64 characters [a-z0-9._-]")
		}
	case ActionDrain, ActionReadmit, ActionKill, ActionRevive:
	case ActionSlow:
		if !(e.Factor > 0 && e.Factor <= MaxStepScale) {
			return invalidf(path+".factor", "is required for slow: (0, %g]", MaxStepScale)
		}
	case ActionErrors, ActionStreamClose:
		return s.validateWindowEvent(e, path)
	case ActionRestart:
		if e.Member != "" {
			return invalid(path+".member", "does not apply to restart: the whole router restarts")
		}

	}
	return nil
}

func (s *Scenario) validateWindowEvent(e *Event, path string) error {
	if !(e.Rate > 0 && e.Rate <= 1) {
		return invalid(path+".rate", "is required: a share in (0, 1]")
	}
	if err := s.window(path, e.At, &e.Until); err != nil {
		return err
	}
	if e.Action == ActionErrors {
		if e.Status == 0 {
			e.Status = DefaultErrorStatus
		}
		if e.Status < 400 || e.Status > 599 {
			return invalid(path+".status", "must be an HTTP error status 400-599")
		}
		return nil
	}
	if e.AfterMin <= 0 || e.AfterMax < e.AfterMin || e.AfterMax > time.Hour {
		return invalid(path, "stream_close needs 0 < after_min <= after_max <= 1h")
	}
	return nil
}

// memberOnly reports whether the action needs a member.
func memberOnly(action string) bool {
	return action == ActionKill || action == ActionRevive || action == ActionSlow
}

// onlyFields refuses fields that do not apply to the action, so a typo in intent is an error, not
// a silently ignored value.
func (e *Event) onlyFields(path string) error {
	has := map[string]bool{
		"reason": e.Reason != "", "factor": e.Factor != 0, "rate": e.Rate != 0, "status": e.Status != 0,
		"until": e.Until != 0, "after_min": e.AfterMin != 0, "after_max": e.AfterMax != 0,
	}
	allowed := map[string][]string{
		ActionQuiesce: {"reason"}, ActionSlow: {"factor"}, ActionErrors: {"rate", "status", "until"},
		ActionStreamClose: {"rate", "until", "after_min", "after_max"},
	}
	for _, f := range []string{"reason", "factor", "rate", "status", "until", "after_min", "after_max"} {
		if has[f] && !slices.Contains(allowed[e.Action], f) {
			return invalidf(path+"."+f, "does not apply to action %s", actionName(e.Action))
		}
	}
	return nil
}

// actionName echoes only known action names.
func actionName(a string) string {
	switch a {
	case ActionQuiesce, ActionDrain, ActionReadmit, ActionKill, ActionRevive, ActionSlow, ActionErrors,
		ActionStreamClose, ActionRestart:
		return a
	}
	return "(unknown)"
}

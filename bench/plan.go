package bench

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// ErrInvalid is wrapped by every error about a plan or a flag value.
var ErrInvalid = errors.New("invalid")

// Bounds of a plan.
const (
	MaxRequests = scenarios.MaxRequests
	MaxDuration = scenarios.MaxDuration
	MaxWarmup   = 100_000
	// MaxRequestTokens bounds a requested prompt or output length, as a scenario's distributions are.
	MaxRequestTokens = scenarios.MaxTokens
	MaxErrorWindow   = 1_000_000
	DefaultTimeout   = 10 * time.Minute // the router's own whole-attempt default
	MaxTimeout       = 24 * time.Hour
	// MaxRetryAfter is the longest Retry-After a closed-loop client honours, as OpenAI's SDKs do:
	// a longer (or non-positive) one falls back to the workload's backoff.
	MaxRetryAfter = 60 * time.Second
)

var labelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Plan is what a run sends: the arrivals (closed or open loop, seeded), the request shapes, how
// many or for how long, and when to give up. Direct and routed runs of one comparison share one
// plan, so they send the same schedule and the same prompts.
type Plan struct {
	Label    string // report label, e.g. the router's strategy: [A-Za-z0-9._-], 1-64
	Scenario string // the scenario the load comes from, "" for a load given by flags
	Seed     uint64
	// Workload is the load, in the scenario schema: closed (clients, think, backoff) or open
	// (process, rate, shape) loop, prompt and output lengths, the streaming share, cancellations.
	Workload scenarios.Workload
	Endpoint Endpoint
	Requests int           // measured requests; 0 = every arrival within Duration
	Duration time.Duration // the arrival window when Requests is 0
	Warmup   int           // requests sent before the measurement and kept out of it
	// WarmupClients send the warm-up requests back to back; 0 means the closed loop's clients, or
	// one for an open loop. Warming up as many connections as the run will hold takes as many.
	WarmupClients int
	IgnoreEOS     bool          // ask for exactly the drawn output length (vLLM's ignore_eos)
	Timeout       time.Duration // per request, streaming included; 0 = DefaultTimeout
	Stop          Stop
	SLO           SLO
}

// Stop is the over-saturation stop: the run ends early, recording why, when the target cannot keep
// up. Zero fields are off.
type Stop struct {
	MaxInFlight  int     // stop when more requests than this are in flight
	MaxErrorRate float64 // stop when the share of failed requests among the last ErrorWindow exceeds this
	ErrorWindow  int
}

// SLO are the goodput targets, vLLM's --goodput; zero fields are not checked. A request is good
// when each set metric is at most its target.
type SLO struct {
	TTFT, TPOT, E2EL time.Duration
}

// Set reports whether any target is set (goodput is reported only then).
func (s SLO) Set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// FromScenario is the plan of a scenario's workload: its seed, its duration and its SLOs, against
// the chat endpoint, asking for exactly the drawn output lengths as the simulator generates them.
func FromScenario(sc *scenarios.Scenario) Plan {
	return Plan{
		Label: "run", Scenario: sc.Name, Seed: sc.Seed, Workload: sc.Workload, Endpoint: Chat,
		Duration: sc.Duration, IgnoreEOS: true,
		SLO: SLO{TTFT: sc.SLO.TTFT, TPOT: sc.SLO.TPOT, E2EL: sc.SLO.E2E},
	}
}

// Validate applies defaults and checks every field.
func (p *Plan) Validate() error {
	if !labelPattern.MatchString(p.Label) {
		return fmt.Errorf("%w: label must be 1-64 characters [A-Za-z0-9._-], starting alphanumeric", ErrInvalid)
	}
	if err := p.Workload.Validate(); err != nil {
		return fmt.Errorf("%w: load: %w", ErrInvalid, err)
	}
	if p.Endpoint < Chat || p.Endpoint > Responses {
		return fmt.Errorf("%w: endpoint must be chat, completions or responses", ErrInvalid)
	}
	switch {
	case p.Requests < 0 || p.Requests > MaxRequests:
		return fmt.Errorf("%w: requests must be from 1 to %d", ErrInvalid, MaxRequests)
	case p.Requests == 0 && (p.Duration < time.Second || p.Duration > MaxDuration):
		return fmt.Errorf("%w: needs a request count or a duration from 1s to 24h", ErrInvalid)
	case p.Requests > 0 && p.Duration != 0:
		return fmt.Errorf("%w: give a request count or a duration, not both", ErrInvalid)
	case p.Warmup < 0 || p.Warmup > MaxWarmup:
		return fmt.Errorf("%w: warmup must be from 0 to %d requests", ErrInvalid, MaxWarmup)
	case p.WarmupClients < 0 || p.WarmupClients > scenarios.MaxClients:
		return fmt.Errorf("%w: warmup clients must be from 1 to %d", ErrInvalid, scenarios.MaxClients)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Timeout < time.Millisecond || p.Timeout > MaxTimeout {
		return fmt.Errorf("%w: timeout must be from 1ms to 24h", ErrInvalid)
	}
	if err := p.Stop.validate(); err != nil {
		return err
	}
	if p.SLO.TTFT < 0 || p.SLO.TPOT < 0 || p.SLO.E2EL < 0 {
		return fmt.Errorf("%w: goodput targets must not be negative", ErrInvalid)
	}
	return nil
}

func (s Stop) validate() error {
	switch {
	case s.MaxInFlight < 0:
		return fmt.Errorf("%w: max in-flight must not be negative", ErrInvalid)
	case !(s.MaxErrorRate >= 0 && s.MaxErrorRate <= 1):
		return fmt.Errorf("%w: max error rate must be a share from 0 to 1", ErrInvalid)
	case s.ErrorWindow < 0 || s.ErrorWindow > MaxErrorWindow:
		return fmt.Errorf("%w: error window must be from 1 to %d requests", ErrInvalid, MaxErrorWindow)
	case (s.MaxErrorRate > 0) != (s.ErrorWindow > 0):
		return fmt.Errorf("%w: max error rate and error window go together", ErrInvalid)
	}
	return nil
}

// Mode is "closed" or "open".
func (p *Plan) Mode() string {
	if p.Workload.Closed != nil {
		return "closed"
	}
	return "open"
}

// MaxPromptTokens is the longest prompt the plan can draw, for sizing a client's shared prompt text.
func (p *Plan) MaxPromptTokens() int {
	d := p.Workload.PromptTokens
	if d.Dist == scenarios.DistConstant {
		return int(d.Value)
	}
	return int(d.Max)
}

// Concurrency is how many connections the plan may want to keep idle between requests, for sizing
// a client's connection pool: every closed-loop client's, every warm-up client's, or for an open
// loop the in-flight bound (at least 1024; an open loop's concurrency is the target's to decide).
func (p *Plan) Concurrency() int {
	n := p.WarmupClients
	if c := p.Workload.Closed; c != nil {
		return max(n, c.Clients)
	}
	return max(n, p.Stop.MaxInFlight, 1024)
}

package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/router/ident"
)

// Bounds of a scenario.
const (
	MinDuration     = time.Second
	MaxDuration     = 24 * time.Hour
	MaxClients      = 100000
	MaxRate         = 100000.0 // arrivals per second
	MaxTokens       = 1 << 20  // any token-count bound of a distribution
	MaxEvents       = 1024
	MaxGates        = 256
	MaxFaults       = 1024
	MaxStrategies   = 2
	MaxWindows      = 16
	MaxScrapeJitter = time.Minute
	MaxStepScale    = engine.MaxStepScale
	MaxOutsideRate  = 1000.0 // a member's outside load, requests per second
	MaxUpstream     = 24 * time.Hour
	// MaxRequests bounds a run's total work: the requests an open loop sends (rate x duration) or
	// the most a closed loop can send (clients x duration / its shortest request cycle).
	MaxRequests = 50_000_000
	maxText     = 4096
)

// Defaults applied by Parse.
const (
	DefaultTierID        = "pool"
	DefaultAlias         = "chat"
	DefaultServedModel   = "sim/llama-3.1-8b"
	DefaultReason        = "sim-maintenance"
	DefaultBackoff       = 250 * time.Millisecond
	DefaultScrapeLatency = 5 * time.Millisecond
	DefaultErrorStatus   = 500
)

var (
	namePattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	metricPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
)

// Parse decodes and validates one scenario document and applies its defaults.
func Parse(data []byte) (*Scenario, error) { return ParseOverride(data, Override{}) }

// Override changes a scenario document before it is validated, as if its file said so. A shorter
// duration is how a long scenario runs for a few real minutes: every window, fault and error window
// running "until the end" then ends at the new end, and an event past it is refused.
type Override struct {
	Duration time.Duration // 0 keeps the document's
}

// ParseOverride is Parse with the document's duration replaced by o's.
func ParseOverride(data []byte, o Override) (*Scenario, error) {
	s, err := decode(data)
	if err != nil {
		return nil, err
	}
	if o.Duration != 0 {
		s.Duration = o.Duration
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Scenario) validate() error {
	if !namePattern.MatchString(s.Name) {
		return invalid("name", "is required: 1-64 characters [a-z0-9-], starting alphanumeric")
	}
	if len(s.Description) > maxText {
		return invalidf("description", "at most %d bytes", maxText)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Duration < MinDuration || s.Duration > MaxDuration {
		return invalid("duration", "is required: 1s to 24h")
	}
	defaultContext := s.Tier.Gates.MaxContextTokens == 0
	reloads := func() error {
		if err := s.validateReloads(); err != nil {
			return err
		}
		if defaultContext && len(s.Reloads) > 0 {
			s.Tier.Gates.MaxContextTokens = s.smallestModelLen() // added members' windows too
		}
		return nil
	}
	steps := []func() error{s.Tier.validate, reloads, s.validateStrategies, s.validateUpstream, s.validateWorkload,
		s.validateTelemetry, s.validateEvents, s.validateSLO, s.validateWindows, s.validateGates, s.validateWork}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tier) validate() error {
	if t.ID == "" {
		t.ID = DefaultTierID
	}
	if !ident.ValidID(t.ID) {
		return invalid("tier.id", "must be 1-64 characters [a-z0-9._-], starting alphanumeric")
	}
	if t.Alias == "" {
		t.Alias = DefaultAlias
	}
	if !ident.ValidAlias(t.Alias) {
		return invalid("tier.alias", "must be 1-128 characters [a-z0-9._:/-], starting alphanumeric")
	}
	if t.ServedModel == "" {
		t.ServedModel = DefaultServedModel
	}
	if !validStrategy(t.Strategy) {
		return invalid("tier.strategy", "is required: round_robin or capacity")
	}
	if t.MaxConcurrency < 0 || t.Gates.MaxContextTokens < 0 || t.Gates.MaxOutputTokens < 0 {
		return invalid("tier", "ceilings and gates must not be negative")
	}
	if ph := t.PassiveHealth; ph != nil && (ph.ConsecutiveFailures < 0 || ph.BaseEjection < 0 || ph.MaxEjection < 0) {
		return invalid("tier.passive_health", "must not be negative (the router's config rules apply when the scenario loads)")
	}
	if len(t.Members) < ident.MinMembers || len(t.Members) > ident.MaxMembers {
		return invalidf("tier.members", "must have %d-%d members", ident.MinMembers, ident.MaxMembers)
	}
	for i := range t.Members {
		if err := t.Members[i].validate(fmt.Sprintf("tier.members[%d]", i), t.Members[:i]); err != nil {
			return err
		}
	}
	if t.Gates.MaxContextTokens == 0 {
		// The router's context gate mirrors the model's window: the smallest member's.
		for i, m := range t.Members {
			p, _ := profile.Lookup(m.Profile) // validated above
			if n := int64(p.ModelLen()); i == 0 || n < t.Gates.MaxContextTokens {
				t.Gates.MaxContextTokens = n
			}
		}
	}
	return nil
}

func (m *Member) validate(path string, before []Member) error {
	if !ident.ValidID(m.ID) {
		return invalid(path+".id", "is required: 1-64 characters [a-z0-9._-], starting alphanumeric")
	}
	for _, o := range before {
		if o.ID == m.ID {
			return invalid(path+".id", "duplicate member id")
		}
	}
	if m.MaxConcurrency < 0 || m.MaxConcurrency > ident.MaxCeiling {
		return invalidf(path+".max_concurrency", "must be 1-%d (0 or absent: none, round robin only)", ident.MaxCeiling)
	}
	if m.Profile == "" {
		m.Profile = profile.Default
	}
	if _, err := profile.Lookup(m.Profile); err != nil {
		return invalidf(path+".profile", "unknown engine profile (known: %v)", profile.Names())
	}
	if m.StepScale == 0 {
		m.StepScale = 1
	}
	if m.StepScale < 0 || m.StepScale > MaxStepScale {
		return invalidf(path+".step_scale", "must be in (0, %g]", MaxStepScale)
	}
	if !(m.OutsideRate >= 0 && m.OutsideRate <= MaxOutsideRate) {
		return invalidf(path+".outside_rate", "must be 0-%g requests per second", MaxOutsideRate)
	}
	return nil
}

func validStrategy(s string) bool { return s == StrategyRoundRobin || s == StrategyCapacity }

func (s *Scenario) validateStrategies() error {
	if len(s.Strategies) == 0 {
		s.Strategies = []string{s.Tier.Strategy}
	}
	if len(s.Strategies) > MaxStrategies {
		return invalidf("strategies", "at most %d strategies", MaxStrategies)
	}
	for i, st := range s.Strategies {
		path := fmt.Sprintf("strategies[%d]", i)
		if !validStrategy(st) {
			return invalid(path, "must be round_robin or capacity")
		}
		if slices.Contains(s.Strategies[:i], st) {
			return invalid(path, "duplicate strategy")
		}
	}
	return nil
}

// Member returns the tier member with the given ID.
func (s *Scenario) Member(id string) (Member, bool) {
	for _, m := range s.Tier.Members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

func (s *Scenario) memberRef(path, id string, required bool) error {
	if id == "" {
		if required {
			return invalid(path, "is required")
		}
		return nil
	}
	if _, ok := s.EverMember(id); !ok {
		return invalid(path, "names no tier member")
	}
	return nil
}

func (s *Scenario) validateTelemetry() error {
	t := &s.Telemetry
	if t.ScrapeLatency == 0 {
		t.ScrapeLatency = DefaultScrapeLatency
	}
	if t.ScrapeLatency < 0 || t.ScrapeLatency > time.Minute {
		return invalid("telemetry.scrape_latency", "must be from 0 to 1m")
	}
	if t.ScrapeJitter < 0 || t.ScrapeJitter > MaxScrapeJitter {
		return invalid("telemetry.scrape_jitter", "must be from 0 to 1m")
	}
	if len(t.Faults) > MaxFaults {
		return invalidf("telemetry.faults", "at most %d faults", MaxFaults)
	}
	for i := range t.Faults {
		f := &t.Faults[i]
		path := fmt.Sprintf("telemetry.faults[%d]", i)
		if err := s.memberRef(path+".member", f.Member, true); err != nil {
			return err
		}
		if err := s.window(path, f.From, &f.Until); err != nil {
			return err
		}
		switch f.Mode {
		case ModeOutage, ModeMalformed:
		case ModeSlow, ModeHung:
			if f.Latency <= 0 || f.Latency > time.Hour {
				return invalid(path+".latency", "is required for slow and hung: (0, 1h]")
			}
		default:
			return invalid(path+".mode", "must be outage, slow, malformed or hung")
		}
	}
	return nil
}

// window checks [from, until) within the run; until 0 means the end of the run.
func (s *Scenario) window(path string, from time.Duration, until *time.Duration) error {
	if from < 0 || from > s.Duration {
		return invalid(path+".from", "must be within the run")
	}
	if *until == 0 {
		*until = s.Duration
	}
	if *until <= from || *until > s.Duration {
		return invalid(path+".until", "must be after from and within the run")
	}
	return nil
}

// validateUpstream checks only what the schema owns; the router's own bounds (and the relation
// between the two timeouts) are the router config loader's, which checks them at load time.
func (s *Scenario) validateUpstream() error {
	u := s.Upstream
	if u.FirstByteTimeout < 0 || u.FirstByteTimeout > MaxUpstream {
		return invalid("upstream.first_byte_timeout", "must be from 0 (router default) to 24h")
	}
	if u.Timeout < 0 || u.Timeout > MaxUpstream {
		return invalid("upstream.timeout", "must be from 0 (router default) to 24h")
	}
	return nil
}

func (s *Scenario) validateSLO() error {
	if s.SLO.TTFT < 0 || s.SLO.TPOT < 0 || s.SLO.E2E < 0 {
		return invalid("slo", "targets must not be negative")
	}
	return nil
}

func (s *Scenario) validateWindows() error {
	if len(s.Windows) > MaxWindows {
		return invalidf("windows", "at most %d windows", MaxWindows)
	}
	for i := range s.Windows {
		w := &s.Windows[i]
		path := fmt.Sprintf("windows[%d]", i)
		if !namePattern.MatchString(w.Name) {
			return invalid(path+".name", "is required: 1-64 characters [a-z0-9-], starting alphanumeric")
		}
		for _, o := range s.Windows[:i] {
			if o.Name == w.Name {
				return invalid(path+".name", "duplicate window name")
			}
		}
		if w.Until == 0 {
			w.Until = s.Duration
		}
		if w.From < 0 || w.From >= w.Until || w.Until > s.Duration {
			return invalid(path, "must satisfy 0 <= from < until <= duration")
		}
	}
	return nil
}

func (s *Scenario) validateGates() error {
	if len(s.Expect) > MaxGates {
		return invalidf("expect", "at most %d gates", MaxGates)
	}
	for i := range s.Expect {
		g := &s.Expect[i]
		path := fmt.Sprintf("expect[%d]", i)
		if len(g.Name) > 256 {
			return invalid(path+".name", "at most 256 bytes")
		}
		if !metricPattern.MatchString(g.Metric) {
			return invalid(path+".metric", "is required: a report metric name such as tier.ceiling_violations")
		}
		if g.Run == "" {
			g.Run = s.Strategies[0]
		}
		if !slices.Contains(s.Strategies, g.Run) {
			return invalid(path+".run", "names no run of this scenario (see strategies)")
		}
		if g.Vs != "" && (!slices.Contains(s.Strategies, g.Vs) || g.Vs == g.Run) {
			return invalid(path+".vs", "must name another run of this scenario")
		}
		if !slices.Contains(gateOps, g.Op) {
			return invalid(path+".op", "must be one of == != < <= > >=")
		}
		if g.Name == "" {
			g.Name = g.Expression()
			if g.Vs == "" && len(s.Strategies) > 1 {
				g.Name = g.Run + ": " + g.Name
			}
		}
	}
	return nil
}

// Expression is the gate in words: "capacity e2e.p99 / round_robin e2e.p99 < 1".
func (g Gate) Expression() string {
	lhs := g.Metric
	if g.Vs != "" {
		lhs = fmt.Sprintf("%s %s / %s %s", g.Run, g.Metric, g.Vs, g.Metric)
	}
	return fmt.Sprintf("%s %s %g", lhs, g.Op, g.Value)
}

// Holds reports whether actual satisfies the gate's comparison.
func (g Gate) Holds(actual float64) bool {
	switch g.Op {
	case "==":
		return actual == g.Value
	case "!=":
		return actual != g.Value
	case "<":
		return actual < g.Value
	case "<=":
		return actual <= g.Value
	case ">":
		return actual > g.Value
	case ">=":
		return actual >= g.Value
	}
	return false
}

package routing

import (
	"sync"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
)

// passive is the router's passive-health shell: the pure health.Tracker behind one lock, fed by every
// finished attempt and every passed readiness probe, applied to every readiness snapshot before
// admission. Transitions go to the router's event hook, outside the lock. One passive outlives every
// generation: a reload installs the next generation's tracker, adopting the state of every member
// whose (tier, member, endpoint) identity stays.
type passive struct {
	mu        sync.Mutex
	tracker   *health.Tracker
	count429  map[string]bool      // tier -> a 429 answer is a failure
	endpoints map[[2]string]string // (tier, member) -> endpoint in force
	events    func(health.Event)
}

// healthGen is one generation's passive-health configuration, built and validated by stage.
type healthGen struct {
	tracker   *health.Tracker
	count429  map[string]bool
	endpoints map[[2]string]string
}

// HealthSpecs registers every replica tier whose passive health is enabled.
func HealthSpecs(cfg config.Config) []health.TierSpec {
	var out []health.TierSpec
	for _, t := range cfg.Tiers() {
		ph := t.PassiveHealth
		if t.Kind != config.KindReplica || !ph.Enabled {
			continue
		}
		spec := health.TierSpec{ID: t.ID, Policy: health.Policy{ConsecutiveFailures: ph.ConsecutiveFailures,
			BaseEjection: ph.BaseEjection, MaxEjection: ph.MaxEjection, MaxEjectedPercent: ph.MaxEjectedPercent}}
		for _, m := range t.Members {
			spec.Members = append(spec.Members, m.ID)
		}
		out = append(out, spec)
	}
	return out
}

// stageHealth builds a generation's passive-health configuration; it changes nothing.
func stageHealth(cfg config.Config) (*healthGen, error) {
	tracker, err := health.New(HealthSpecs(cfg))
	if err != nil {
		return nil, err
	}
	g := &healthGen{tracker: tracker, count429: map[string]bool{}, endpoints: map[[2]string]string{}}
	for _, t := range cfg.Tiers() {
		g.count429[t.ID] = t.PassiveHealth.Count429
		for _, m := range t.Members {
			g.endpoints[[2]string{t.ID, m.ID}] = m.Endpoint
		}
	}
	return g, nil
}

func newPassive(cfg config.Config, events func(health.Event)) (*passive, error) {
	g, err := stageHealth(cfg)
	if err != nil {
		return nil, err
	}
	return &passive{tracker: g.tracker, count429: g.count429, endpoints: g.endpoints, events: events}, nil
}

// install brings g into force, adopting every member whose endpoint did not change.
func (p *passive) install(g *healthGen) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g.tracker.Adopt(p.tracker, func(tier, member string) bool {
		k := [2]string{tier, member}
		old, ok := p.endpoints[k]
		return ok && old == g.endpoints[k]
	})
	p.tracker, p.count429, p.endpoints = g.tracker, g.count429, g.endpoints
}

// apply returns the readiness snapshot with ejected members held out (a copy when any is), the
// members on trial, and how many are ejected.
func (p *passive) apply(tier string, now time.Time, ready map[string]bool) (map[string]bool, map[string]bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Apply(tier, now, ready)
}

// observe feeds one finished record of an attempt on endpoint. An attempt on a member that a reload
// removed, or moved to another endpoint, says nothing about the member in force.
func (p *passive) observe(rec decisionlog.Record, endpoint string, end time.Time) {
	if rec.Member == "" {
		return
	}
	p.mu.Lock()
	if !p.tracker.Tracks(rec.Tier) || p.endpoints[[2]string{rec.Tier, rec.Member}] != endpoint {
		p.mu.Unlock()
		return
	}
	r := result(rec, p.count429[rec.Tier])
	if r == health.Neutral {
		p.mu.Unlock()
		return
	}
	ev, ok, err := p.tracker.Observe(rec.Tier, rec.Member, r, end)
	p.mu.Unlock()
	if ok && err == nil && p.events != nil {
		p.events(ev)
	}
}

func (p *passive) probePassed(tier, member string, now time.Time) {
	p.mu.Lock()
	if !p.tracker.Tracks(tier) {
		p.mu.Unlock()
		return
	}
	ev, ok, err := p.tracker.ProbePassed(tier, member, now)
	p.mu.Unlock()
	if ok && err == nil && p.events != nil {
		p.events(ev)
	}
}

func (p *passive) snapshot(tier string, now time.Time) ([]health.MemberHealth, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Snapshot(tier, now)
}

// result is what a finished attempt says about its member: the one mapping from the decision
// record's terminal class (decisionlog.Terminal's outcome and status) to passive health.
func result(rec decisionlog.Record, count429 bool) health.Result {
	switch rec.Outcome {
	case decisionlog.OutcomeSuccess:
		return health.Success
	case decisionlog.OutcomeUpstreamHTTPError:
		switch {
		case rec.Status == 429:
			if count429 {
				return health.Failure
			}
			return health.Success
		case rec.Status >= 500 || rec.Status < 400:
			return health.Failure // a 5xx answer, or an in-band error event after a 2xx
		}
		return health.Success // a 4xx answer: the member works, the request was refused
	case decisionlog.OutcomeUpstreamTransportError, decisionlog.OutcomeStreamTruncated, decisionlog.OutcomeMalformedStream:
		return health.Failure
	case decisionlog.OutcomeUpstreamTimeout:
		if rec.FirstByte == 0 {
			return health.Failure // nothing arrived in time
		}
	}
	return health.Neutral // the caller left, a timeout after the member answered, no attempt at all
}

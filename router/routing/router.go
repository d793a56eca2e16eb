package routing

import (
	"errors"
	"fmt"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// ReadinessSource returns the latest completed member -> ready mapping of a replica tier. It must never
// wait on I/O.
type ReadinessSource interface {
	Snapshot(tier string) map[string]bool
}

// PressureSource returns the latest completed member -> pressure mapping of a capacity tier. It must
// never wait on I/O. A missing source, a missing member or an error means upstream unknown: telemetry
// orders eligible members, it never refuses a request.
type PressureSource interface {
	Snapshot(tier string) (map[string]scheduler.Pressure, error)
}

// ErrUnknownAlias is returned for a model name that no alias declares.
var ErrUnknownAlias = errors.New("the requested model does not exist")

// Router resolves aliases and admits requests. It holds no per-request state; it is safe for concurrent
// use because admission is.
type Router struct {
	cfg       config.Config
	aliases   map[string]config.Tier // built once: resolving never copies config
	admission *admission.Set
	ready     ReadinessSource
	pressure  PressureSource
}

// New builds a router over an admission set created from the same config (see Specs). pressure may be
// nil when no tier uses the capacity strategy, or before telemetry exists: capacity then works on local
// load alone.
func New(cfg config.Config, adm *admission.Set, ready ReadinessSource, pressure PressureSource) (*Router, error) {
	for _, t := range cfg.Tiers() {
		if _, ok := adm.Tier(t.ID); !ok {
			return nil, fmt.Errorf("routing: admission has no tier %q", t.ID)
		}
	}
	aliases := make(map[string]config.Tier)
	for _, a := range cfg.Aliases() {
		t, _ := cfg.Tier(a.Tier)
		aliases[a.ID] = t
	}
	return &Router{cfg: cfg, aliases: aliases, admission: adm, ready: ready, pressure: pressure}, nil
}

// Specs converts the config's tiers to admission specifications: the one place where configured ceilings
// and strategies become admission's.
func Specs(cfg config.Config) []admission.TierSpec {
	tiers := cfg.Tiers()
	out := make([]admission.TierSpec, 0, len(tiers))
	for _, t := range tiers {
		spec := admission.TierSpec{ID: t.ID, Kind: admission.KindDirect, MaxConcurrency: t.MaxConcurrency}
		if t.Kind == config.KindReplica {
			spec.Kind = admission.KindReplica
			if t.Strategy == config.StrategyCapacity {
				spec.Strategy = admission.StrategyCapacity
			}
			for _, m := range t.Members {
				spec.Members = append(spec.Members, admission.MemberSpec{ID: m.ID, MaxConcurrency: m.MaxConcurrency})
			}
		}
		out = append(out, spec)
	}
	return out
}

// Resolve maps the request's alias to its tier and applies every request-wide gate. It reserves nothing.
// A gate refusal still returns the resolved tier, so the refusal can be recorded against it; only an
// unknown alias returns the zero tier. The returned tier is shared: callers must not modify it.
func (r *Router) Resolve(req Request) (config.Tier, error) {
	tier, ok := r.aliases[req.Model]
	if !ok {
		return config.Tier{}, ErrUnknownAlias
	}
	if tier.Kind == config.KindReplica && !req.Endpoint.ReplicaEligible() {
		return tier, ErrEndpointRefused
	}
	g := tier.Gates
	limits := Limits{MaxContextTokens: g.MaxContextTokens, MaxOutputTokens: g.MaxOutputTokens,
		ToolsAllowed: g.ToolsAllowed, MediaAllowed: g.MediaAllowed}
	return tier, limits.Check(req)
}

// Target is where an admitted request goes: exactly one upstream base URL.
type Target struct {
	Member  string // "" for a direct tier
	BaseURL string
}

// Admit takes the tier's completed snapshots once and asks admission once. On success the caller owns
// the lease and must release it exactly once; on failure nothing is reserved.
func (r *Router) Admit(tier config.Tier) (*admission.Lease, Target, error) {
	adm, ok := r.admission.Tier(tier.ID)
	if !ok {
		return nil, Target{}, admission.ErrUnknownTier
	}
	if tier.Kind == config.KindDirect {
		lease, err := adm.Acquire()
		if err != nil {
			return nil, Target{}, err
		}
		return lease, Target{BaseURL: tier.Endpoint}, nil
	}
	ready := r.ready.Snapshot(tier.ID)
	var pressure map[string]scheduler.Pressure
	if r.pressure != nil && tier.Strategy == config.StrategyCapacity {
		if p, err := r.pressure.Snapshot(tier.ID); err == nil {
			pressure = p
		}
	}
	lease, err := adm.AcquireMember(ready, pressure)
	if err != nil {
		return nil, Target{}, err
	}
	m, ok := tier.Member(lease.Member())
	if !ok {
		lease.Release()
		return nil, Target{}, fmt.Errorf("routing: admission chose unconfigured member: %w", admission.ErrUnknownMember)
	}
	return lease, Target{Member: m.ID, BaseURL: m.Endpoint}, nil
}

// Admission returns the admission set, for operator surfaces.
func (r *Router) Admission() *admission.Set { return r.admission }

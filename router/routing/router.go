package routing

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/request"
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

// Router is one generation of the walk's configuration: the config's aliases and tiers, admission,
// the snapshot sources and the membership decision records are checked against, over state that
// outlives it (admission's live tiers and members, passive health, the decision log). It resolves
// aliases, admits requests and records them, and holds no per-request state. It is safe for
// concurrent use because admission, passive health and the decision log are. Next builds the next
// generation and Publish brings it into force (generation.go).
type Router struct {
	cfg        config.Config
	digest     string
	number     uint64
	aliases    map[string]config.Tier // built once: resolving never copies config
	admission  *admission.Set
	ready      ReadinessSource
	pressure   PressureSource
	health     *passive
	log        *decisionlog.Log
	membership *decisionlog.Membership
	followers  []Follower

	next       *staged       // set by Next until Publish: what Publish commits
	superseded chan struct{} // closed when the next generation is published
	successor  atomic.Pointer[Router]
}

// Option configures a Router.
type Option func(*options)

type options struct {
	healthEvents func(health.Event)
	digest       string
	followers    []Follower
	ready        ReadinessSource
	pressure     PressureSource
	setReady     bool
	setPressure  bool
}

// WithHealthEvents sends every passive-health transition (an ejection, a recovery, an ejection the
// cap held back) to f, outside every lock: the server logs them, the simulator counts them.
func WithHealthEvents(f func(health.Event)) Option { return func(o *options) { o.healthEvents = f } }

// WithDigest names the configuration the generation was built from: the hex digest of its file
// (sha256), "" when there is none. Decision records carry its first 16 hex digits.
func WithDigest(digest string) Option { return func(o *options) { o.digest = digest } }

// WithFollowers registers snapshot sources whose membership follows the generation in force (see
// Follower). Next stages each with the next config and Publish commits them; a generation built by
// Next keeps the followers of the one it came from.
func WithFollowers(f ...Follower) Option {
	return func(o *options) { o.followers = append(o.followers, f...) }
}

// WithReadiness replaces the readiness source in the generation Next builds.
func WithReadiness(src ReadinessSource) Option {
	return func(o *options) { o.ready, o.setReady = src, true }
}

// WithPressure replaces the pressure source in the generation Next builds (nil: none).
func WithPressure(src PressureSource) Option {
	return func(o *options) { o.pressure, o.setPressure = src, true }
}

// New builds the first generation of a router for cfg: admission from AdmissionSpecs, passive health
// from HealthSpecs, the readiness source, the pressure source (nil when no tier uses the capacity
// strategy, or before telemetry exists: capacity then works on local load alone) and the decision log
// every finished Attempt is recorded in (nil: none).
func New(cfg config.Config, ready ReadinessSource, pressure PressureSource, log *decisionlog.Log, opts ...Option) (*Router, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	adm, err := admission.New(AdmissionSpecs(cfg))
	if err != nil {
		return nil, fmt.Errorf("routing: admission: %w", err)
	}
	ph, err := newPassive(cfg, o.healthEvents)
	if err != nil {
		return nil, fmt.Errorf("routing: passive health: %w", err)
	}
	membership, err := decisionlog.NewMembership(Membership(cfg))
	if err != nil {
		return nil, fmt.Errorf("routing: membership: %w", err)
	}
	r := &Router{cfg: cfg, digest: o.digest, number: 1, admission: adm, ready: ready, pressure: pressure,
		health: ph, log: log, membership: membership, followers: o.followers, superseded: make(chan struct{})}
	r.aliases = aliases(cfg)
	return r, nil
}

func aliases(cfg config.Config) map[string]config.Tier {
	out := make(map[string]config.Tier)
	for _, a := range cfg.Aliases() {
		t, _ := cfg.Tier(a.Tier)
		out[a.ID] = t
	}
	return out
}

// Resolve maps the request's alias to its tier and applies every request-wide gate. It reserves nothing.
// A gate refusal still returns the resolved tier, so the refusal can be recorded against it; only an
// unknown alias returns the zero tier. The returned tier is shared: callers must not modify it.
func (r *Router) Resolve(req request.Request) (config.Tier, error) {
	tier, ok := r.aliases[req.Model]
	if !ok {
		return config.Tier{}, ErrUnknownAlias
	}
	g := tier.Gates
	limits := request.Limits{Replica: tier.Kind == config.KindReplica, MaxContextTokens: g.MaxContextTokens,
		MaxOutputTokens: g.MaxOutputTokens, ToolsAllowed: g.ToolsAllowed, MediaAllowed: g.MediaAllowed}
	return tier, limits.Check(req)
}

// Target is where an admitted request goes: exactly one upstream base URL.
type Target struct {
	Member  string // "" for a direct tier
	BaseURL string
}

// admit takes the tier's completed snapshots once (readiness with passive health applied at now, and
// pressure) and asks admission once, as the queue's ticket holder when tk is not nil. On success the
// caller owns the lease and must release it exactly once; on failure nothing is reserved. ejected is
// how many members passive health held out.
func (r *Router) admit(tier config.Tier, now time.Time, tk *admission.Ticket) (lease *admission.Lease, target Target, ejected int, err error) {
	adm, ok := r.admission.Tier(tier.ID)
	if !ok {
		return nil, Target{}, 0, admission.ErrUnknownTier
	}
	if tier.Kind == config.KindDirect {
		if tk != nil {
			lease, err = adm.AcquireQueued(tk, nil, nil, nil)
		} else {
			lease, err = adm.Acquire()
		}
		if err != nil {
			return nil, Target{}, 0, err
		}
		return lease, Target{BaseURL: tier.Endpoint}, 0, nil
	}
	ready, trial, ejected := r.health.apply(tier.ID, now, r.readiness(tier.ID))
	var pressure map[string]scheduler.Pressure
	if r.pressure != nil && tier.Strategy == config.StrategyCapacity {
		if p, err := r.pressure.Snapshot(tier.ID); err == nil {
			pressure = p
		}
	}
	if tk != nil {
		lease, err = adm.AcquireQueued(tk, ready, pressure, trial)
	} else {
		lease, err = adm.AcquireMember(ready, pressure, trial)
	}
	if err != nil {
		return nil, Target{}, ejected, err
	}
	m, ok := tier.Member(lease.Member())
	if !ok {
		lease.Release()
		return nil, Target{}, ejected, fmt.Errorf("routing: admission chose unconfigured member: %w", admission.ErrUnknownMember)
	}
	return lease, Target{Member: m.ID, BaseURL: m.Endpoint}, ejected, nil
}

// ProbePassed tells passive health that a readiness probe of the member passed at now: it ends a
// streak of failures, and a half-open member's ejection (see router/health).
func (r *Router) ProbePassed(tier, member string, now time.Time) {
	r.health.probePassed(tier, member, now)
}

// Health returns the passive-health state of a replica tier's members at now, sorted by ID;
// health.ErrUnknownTier when the tier has passive health disabled or is not a replica tier.
func (r *Router) Health(tier string, now time.Time) ([]health.MemberHealth, error) {
	return r.health.snapshot(tier, now)
}

// Admission returns the admission set, for operator surfaces.
func (r *Router) Admission() *admission.Set { return r.admission }

// Decisions returns the decision log (nil when none).
func (r *Router) Decisions() *decisionlog.Log { return r.log }

// readiness reads the tier's readiness snapshot (nil without a source: nothing is ready).
func (r *Router) readiness(tier string) map[string]bool {
	if r.ready == nil {
		return nil
	}
	return r.ready.Snapshot(tier)
}

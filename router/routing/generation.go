package routing

import (
	"errors"
	"fmt"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Generations. A Router is one immutable configuration generation. Next builds the next one
// completely, validating everything and sharing the state that outlives a generation (admission's
// live tiers and members, passive health, the decision log), and changes nothing: the Router it was
// called on keeps serving as before, and a Next that is never published is simply dropped. Publish
// brings it into force in one step per piece, in this order: admission (from then on an admission
// through the previous generation is refused with ErrSuperseded), passive health (adopting each
// member whose tier, ID and endpoint stay), the followers (readiness and pressure adopt by the same
// identity), then the previous generation is marked superseded. A request walks under exactly one
// generation: the one it was admitted under; one whose admission raced a Publish retries under the
// generation in force (Attempt.Rebase), keeping its place in a queue.

// ErrSuperseded is Admit's answer when a reload published a new generation while the request was
// being admitted: nothing was reserved or recorded. Wait for Superseded, take Successor (or the
// caller's own view of the generation in force), Rebase the attempt and resolve and admit again.
var ErrSuperseded = admission.ErrSuperseded

// ErrNotNext refuses Publish on a Router that Next did not build, or one already published.
var ErrNotNext = errors.New("routing: not an unpublished next generation")

// Follower is a snapshot source (readiness, pressure) whose membership follows the configuration.
// Stage validates and prepares the source's state for cfg and changes nothing; the returned commit
// brings it into force and is called by Publish, right after admission's commit, at most once.
type Follower interface {
	Stage(cfg config.Config) (commit func(), err error)
}

// staged is what Publish commits.
type staged struct {
	prev    *Router
	pending *admission.Pending
	health  *healthGen
	commits []func()
}

// Next builds the next generation for cfg (digest names its file, "" when none): admission
// reconfigured over the same live state, passive health and the decision log's membership for cfg,
// and every follower staged. It changes nothing, here or in the followers; any error leaves the
// running generation exactly as it was. opts may replace the readiness or pressure source
// (WithReadiness, WithPressure) and add followers; the health event hook and the followers carry over.
func (r *Router) Next(cfg config.Config, digest string, opts ...Option) (*Router, error) {
	o := options{ready: r.ready, pressure: r.pressure, followers: r.followers}
	for _, opt := range opts {
		opt(&o)
	}
	pending, err := r.admission.Reconfigure(AdmissionSpecs(cfg))
	if err != nil {
		return nil, fmt.Errorf("routing: admission: %w", err)
	}
	hg, err := stageHealth(cfg)
	if err != nil {
		return nil, fmt.Errorf("routing: passive health: %w", err)
	}
	membership, err := decisionlog.NewMembership(Membership(cfg))
	if err != nil {
		return nil, fmt.Errorf("routing: membership: %w", err)
	}
	st := &staged{prev: r, pending: pending, health: hg}
	for _, f := range o.followers {
		commit, err := f.Stage(cfg)
		if err != nil {
			return nil, fmt.Errorf("routing: %w", err)
		}
		st.commits = append(st.commits, commit)
	}
	next := &Router{cfg: cfg, digest: digest, number: r.number + 1, aliases: aliases(cfg),
		admission: pending.Next(), ready: o.ready, pressure: o.pressure, health: r.health, log: r.log,
		membership: membership, followers: o.followers, next: st, superseded: make(chan struct{})}
	return next, nil
}

// Publish brings a generation built by Next into force (see the order above). It fails with
// ErrNotNext when r was not built by Next or was published already, and with admission.ErrStale
// when another generation built from the same predecessor was published first; either way it
// changes nothing. Publish calls are the caller's to serialize with each other, not with requests.
func (r *Router) Publish() error {
	st := r.next
	if st == nil {
		return ErrNotNext
	}
	if _, err := st.pending.Commit(); err != nil {
		return fmt.Errorf("routing: %w", err)
	}
	r.next = nil
	r.health.install(st.health)
	for _, commit := range st.commits {
		commit()
	}
	st.prev.successor.Store(r)
	close(st.prev.superseded)
	return nil
}

// Config returns the generation's configuration.
func (r *Router) Config() config.Config { return r.cfg }

// Digest returns the digest the generation was built with ("" when none).
func (r *Router) Digest() string { return r.digest }

// Generation numbers generations: 1 for New's, one more for each Next.
func (r *Router) Generation() uint64 { return r.number }

// Superseded returns a channel closed when the next generation is published.
func (r *Router) Superseded() <-chan struct{} { return r.superseded }

// Successor returns the generation published after r, or nil while r is in force.
func (r *Router) Successor() *Router { return r.successor.Load() }

// Current follows Successor from r to the generation in force.
func (r *Router) Current() *Router {
	for {
		n := r.successor.Load()
		if n == nil {
			return r
		}
		r = n
	}
}

// recordDigest is the digest a decision record carries: its first 16 hex digits.
func (r *Router) recordDigest() string {
	if len(r.digest) < 16 {
		return r.digest
	}
	return r.digest[:16]
}

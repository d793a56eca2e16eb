// Package health is passive health: a pure core that learns from the outcomes of real requests which
// replica members fail, and takes them out of eligibility for a while, the way HAProxy's observe
// layer7, nginx's max_fails and Envoy's outlier detection do.
//
// A member that fails instantly holds no lease, so a least-loaded scheduler would keep choosing it: a
// black hole. The Tracker watches each attempt's classified result. ConsecutiveFailures failures in a
// row eject the member for an ejection time that grows with each consecutive ejection (BaseEjection
// times the number of consecutive ejections, as Envoy's outlier detection does), up to MaxEjection. When the time ends the member is half-open: eligible for one trial request at a time
// (admission enforces the one: see admission's trial input), and a trial success or a passed readiness
// probe makes it healthy again, while a trial failure ejects it again for the longer time. A member
// that stays healthy for MaxEjection is forgiven its past ejections. A cap keeps the tier serving:
// never more than MaxEjectedPercent of a tier's members are ejected at once, and never all of them.
//
// The package is pure: time comes in as a value, nothing is locked, logged or started. The routing
// walk owns one Tracker behind a lock, feeds it every finished attempt and every passed probe, and
// applies it to the readiness snapshot before admission; the simulator drives the same walk on
// virtual time. Every transition comes back as an Event for the shell to log.
package health

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Bounds of a Policy.
const (
	MaxConsecutiveFailures = 1000
	MinEjection            = 100 * time.Millisecond
	MaxBaseEjection        = time.Hour
	MaxMaxEjection         = 24 * time.Hour
)

// Defaults of a Policy (docs/CONFIGURATION.md lists the same numbers).
const (
	DefaultConsecutiveFailures = 5
	DefaultBaseEjection        = 10 * time.Second
	DefaultMaxEjection         = 5 * time.Minute
	DefaultMaxEjectedPercent   = 50
)

// Policy is one tier's passive-health policy.
type Policy struct {
	ConsecutiveFailures int           // failures in a row that eject a member, 1..MaxConsecutiveFailures
	BaseEjection        time.Duration // the first ejection's length, MinEjection..MaxBaseEjection
	MaxEjection         time.Duration // the longest ejection, BaseEjection..MaxMaxEjection; also the forgiveness time
	MaxEjectedPercent   int           // 0..100 of the tier's members ejected at once; at least one member always stays
}

// DefaultPolicy returns the documented defaults.
func DefaultPolicy() Policy {
	return Policy{ConsecutiveFailures: DefaultConsecutiveFailures, BaseEjection: DefaultBaseEjection,
		MaxEjection: DefaultMaxEjection, MaxEjectedPercent: DefaultMaxEjectedPercent}
}

// Validate reports the first bound the policy breaks.
func (p Policy) Validate() error {
	switch {
	case p.ConsecutiveFailures < 1 || p.ConsecutiveFailures > MaxConsecutiveFailures:
		return fmt.Errorf("%w: consecutive failures must be 1-%d", ErrPolicy, MaxConsecutiveFailures)
	case p.BaseEjection < MinEjection || p.BaseEjection > MaxBaseEjection:
		return fmt.Errorf("%w: base ejection must be %v-%v", ErrPolicy, MinEjection, MaxBaseEjection)
	case p.MaxEjection < p.BaseEjection || p.MaxEjection > MaxMaxEjection:
		return fmt.Errorf("%w: max ejection must be from the base ejection to %v", ErrPolicy, MaxMaxEjection)
	case p.MaxEjectedPercent < 0 || p.MaxEjectedPercent > 100:
		return fmt.Errorf("%w: max ejected percent must be 0-100", ErrPolicy)
	}
	return nil
}

// Errors.
var (
	ErrPolicy        = errors.New("health: invalid policy")
	ErrTier          = errors.New("health: invalid tier")
	ErrUnknownTier   = errors.New("health: unknown tier")
	ErrUnknownMember = errors.New("health: unknown member")
)

// Result is what one finished attempt says about its member.
type Result uint8

const (
	// Neutral says nothing about the member: the caller left, the request was too long for the
	// overall timeout after the member had answered, the router shut down.
	Neutral Result = iota
	// Success: the member answered (any answer of a working server: 2xx, and 4xx such as a refused
	// prompt, which is the caller's problem, not the member's).
	Success
	// Failure: a transport error, a timeout before the first byte, a 5xx answer (engine death
	// included), an in-band error event, a stream cut or malformed mid-way.
	Failure
)

// State is a member's passive-health state.
type State uint8

const (
	Healthy  State = iota // eligible as far as passive health is concerned
	Ejected               // out of eligibility until its ejection ends
	HalfOpen              // the ejection ended: eligible for one trial request at a time
)

// String names the state as surfaces show it.
func (s State) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Ejected:
		return "ejected"
	case HalfOpen:
		return "half_open"
	}
	return "invalid"
}

// TierSpec registers one replica tier: its members and its policy.
type TierSpec struct {
	ID      string
	Members []string // 1..64 IDs, unique
	Policy  Policy
}

// maxMembers bounds a tier's registration; the contract's bound (16) is checked by configuration.
const maxMembers = 64

// Tracker holds the passive-health state of every registered tier. It is not safe for concurrent
// use: its owner serializes calls.
type Tracker struct {
	tiers map[string]*tier
}

type tier struct {
	policy  Policy
	ids     []string // sorted
	index   map[string]int
	members []member
}

type member struct {
	state   State
	streak  int       // consecutive failures while healthy
	run     int       // consecutive ejections so far: the next lasts BaseEjection * (run+1)
	total   uint64    // ejections since registration
	until   time.Time // end of the current ejection
	lastEnd time.Time // when the member last became healthy again (forgiveness counts from there)
}

// New registers tiers; specs are copied. Tier IDs must be unique and non-empty, member IDs unique
// and non-empty per tier.
func New(specs []TierSpec) (*Tracker, error) {
	t := &Tracker{tiers: make(map[string]*tier, len(specs))}
	for i, s := range specs {
		if s.ID == "" || t.tiers[s.ID] != nil {
			return nil, fmt.Errorf("%w: tier %d: empty or duplicate id", ErrTier, i)
		}
		if err := s.Policy.Validate(); err != nil {
			return nil, fmt.Errorf("tier %q: %w", s.ID, err)
		}
		if len(s.Members) == 0 || len(s.Members) > maxMembers {
			return nil, fmt.Errorf("%w: tier %q: needs 1-%d members", ErrTier, s.ID, maxMembers)
		}
		tr := &tier{policy: s.Policy, ids: slices.Clone(s.Members), index: make(map[string]int, len(s.Members))}
		slices.Sort(tr.ids)
		for j, id := range tr.ids {
			if id == "" || (j > 0 && tr.ids[j-1] == id) {
				return nil, fmt.Errorf("%w: tier %q: empty or duplicate member id", ErrTier, s.ID)
			}
			tr.index[id] = j
		}
		tr.members = make([]member, len(tr.ids))
		t.tiers[s.ID] = tr
	}
	return t, nil
}

// Tracks reports whether the tier is registered (passive health enabled for it).
func (t *Tracker) Tracks(tierID string) bool { return t.tiers[tierID] != nil }

// Event kinds.
const (
	EventEjected   = "ejected"
	EventRecovered = "recovered"
	EventHeld      = "ejection_held" // the streak reached the threshold, but the cap keeps the member in
)

// Event reasons: fixed codes for logs.
const (
	ReasonConsecutiveFailures = "consecutive_failures"
	ReasonTrialFailed         = "trial_failed"
	ReasonTrialSucceeded      = "trial_succeeded"
	ReasonProbePassed         = "probe_passed"
	ReasonCap                 = "max_ejected_reached"
)

// Event is one transition, for the shell to log and count.
type Event struct {
	Tier, Member string
	Kind         string        // EventEjected, EventRecovered or EventHeld
	Reason       string        // one of the Reason codes
	Streak       int           // consecutive failures that led here
	Ejections    uint64        // ejections of the member so far, this one included
	Duration     time.Duration // the ejection's length (EventEjected)
}

// Observe feeds one finished attempt on member at now and returns the transition it caused, if any.
func (t *Tracker) Observe(tierID, memberID string, r Result, now time.Time) (Event, bool, error) {
	tr, i, err := t.lookup(tierID, memberID)
	if err != nil {
		return Event{}, false, err
	}
	tr.advance(now)
	m := &tr.members[i]
	ev := Event{Tier: tierID, Member: memberID}
	switch {
	case r == Success && m.state == HalfOpen:
		tr.recover(m, now)
		ev.Kind, ev.Reason = EventRecovered, ReasonTrialSucceeded
		return ev, true, nil
	case r == Success:
		m.streak = 0
	case r == Failure && m.state == HalfOpen:
		ev.Streak = m.streak
		if tr.ejected() >= tr.cap() {
			// Peers were ejected while this member was on trial: the cap binds a re-ejection too. The
			// member stays half-open (one trial lease at a time) and the hold is reported.
			ev.Kind, ev.Reason, ev.Ejections = EventHeld, ReasonCap, m.total
			return ev, true, nil
		}
		tr.eject(m, now, &ev, ReasonTrialFailed)
		return ev, true, nil
	case r == Failure && m.state == Healthy:
		m.streak++
		if m.streak < tr.policy.ConsecutiveFailures {
			return Event{}, false, nil
		}
		ev.Streak = m.streak
		if tr.ejected() >= tr.cap() {
			if m.streak == tr.policy.ConsecutiveFailures { // report the hold once per streak
				ev.Kind, ev.Reason, ev.Ejections = EventHeld, ReasonCap, m.total
				return ev, true, nil
			}
			return Event{}, false, nil
		}
		tr.eject(m, now, &ev, ReasonConsecutiveFailures)
		return ev, true, nil
	}
	// Failures of requests admitted before an ejection, and neutral results, change nothing.
	return Event{}, false, nil
}

// ProbePassed feeds a passed readiness probe: a half-open member is healthy again, a healthy member's
// streak ends. An ejected member stays out until its ejection ends: a process that answers /health
// can still fail every request.
func (t *Tracker) ProbePassed(tierID, memberID string, now time.Time) (Event, bool, error) {
	tr, i, err := t.lookup(tierID, memberID)
	if err != nil {
		return Event{}, false, err
	}
	tr.advance(now)
	m := &tr.members[i]
	switch m.state {
	case HalfOpen:
		tr.recover(m, now)
		return Event{Tier: tierID, Member: memberID, Kind: EventRecovered, Reason: ReasonProbePassed}, true, nil
	case Healthy:
		m.streak = 0
	}
	return Event{}, false, nil
}

// Apply applies passive health to a tier's readiness snapshot at now. It never changes ready: when
// members are ejected it returns a copy in which they read not ready, otherwise ready itself. It also
// returns the half-open members (nil when there are none), which admission may give one lease at a
// time, and how many members are ejected. An unregistered tier is left alone.
func (t *Tracker) Apply(tierID string, now time.Time, ready map[string]bool) (out, trial map[string]bool, ejected int) {
	tr := t.tiers[tierID]
	if tr == nil {
		return ready, nil, 0
	}
	tr.advance(now)
	out = ready
	for i := range tr.members {
		switch tr.members[i].state {
		case Ejected:
			if ejected == 0 {
				out = make(map[string]bool, len(ready))
				for id, r := range ready {
					out[id] = r
				}
			}
			out[tr.ids[i]] = false
			ejected++
		case HalfOpen:
			if trial == nil {
				trial = make(map[string]bool, 1)
			}
			trial[tr.ids[i]] = true
		}
	}
	return out, trial, ejected
}

// MemberHealth is one member's passive-health state, for operator surfaces.
type MemberHealth struct {
	ID           string
	State        State
	Streak       int       // consecutive failures while healthy
	Ejections    uint64    // ejections since start
	EjectedUntil time.Time // zero unless ejected
}

// Snapshot returns the tier's members sorted by ID, advanced to now.
func (t *Tracker) Snapshot(tierID string, now time.Time) ([]MemberHealth, error) {
	tr := t.tiers[tierID]
	if tr == nil {
		return nil, ErrUnknownTier
	}
	tr.advance(now)
	out := make([]MemberHealth, len(tr.ids))
	for i, id := range tr.ids {
		m := tr.members[i]
		out[i] = MemberHealth{ID: id, State: m.state, Streak: m.streak, Ejections: m.total}
		if m.state == Ejected {
			out[i].EjectedUntil = m.until
		}
	}
	return out, nil
}

func (t *Tracker) lookup(tierID, memberID string) (*tier, int, error) {
	tr := t.tiers[tierID]
	if tr == nil {
		return nil, 0, ErrUnknownTier
	}
	i, ok := tr.index[memberID]
	if !ok {
		return nil, 0, ErrUnknownMember
	}
	return tr, i, nil
}

// advance ends every ejection whose time has come: the member turns half-open.
func (tr *tier) advance(now time.Time) {
	for i := range tr.members {
		if m := &tr.members[i]; m.state == Ejected && !now.Before(m.until) {
			m.state = HalfOpen
		}
	}
}

// cap is how many members may be ejected at once: MaxEjectedPercent of them, rounded down, and never
// all of them.
func (tr *tier) cap() int {
	return min(len(tr.members)*tr.policy.MaxEjectedPercent/100, len(tr.members)-1)
}

func (tr *tier) ejected() int {
	n := 0
	for i := range tr.members {
		if tr.members[i].state == Ejected {
			n++
		}
	}
	return n
}

// eject takes m out for BaseEjection times its consecutive ejections, bounded by MaxEjection. A member
// healthy for MaxEjection since its last ejection starts over at BaseEjection.
func (tr *tier) eject(m *member, now time.Time, ev *Event, reason string) {
	if m.total > 0 && m.state == Healthy && now.Sub(m.lastEnd) >= tr.policy.MaxEjection {
		m.run = 0
	}
	d := tr.policy.MaxEjection
	if n := time.Duration(m.run + 1); n <= tr.policy.MaxEjection/tr.policy.BaseEjection {
		d = tr.policy.BaseEjection * n // no overflow: n is bounded by the quotient
	}
	m.state, m.until, m.streak = Ejected, now.Add(d), 0
	m.run++
	m.total++
	ev.Kind, ev.Reason, ev.Ejections, ev.Duration = EventEjected, reason, m.total, d
}

func (tr *tier) recover(m *member, now time.Time) {
	m.state, m.streak, m.lastEnd = Healthy, 0, now
}

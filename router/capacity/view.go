package capacity

import (
	"encoding/json"
	"time"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// StateUnavailable is the state of a tier whose admission snapshot was absent or malformed.
const StateUnavailable = "unavailable"

// Document is the capacity JSON: every configured tier, sorted by ID.
type Document struct {
	Tiers []Tier `json:"tiers"`
}

// Tier is one tier of the admission and capacity views. Direct and round-robin tiers have the same
// shape in both; a capacity tier's members carry telemetry in the capacity view.
type Tier struct {
	ID       string
	Kind     admission.Kind
	Strategy admission.Strategy // replica tiers only
	// Available is false when the tier's admission snapshot was absent or malformed: the tier then
	// shows state "unavailable" and null for every number and for its members.
	Available bool
	State     string // admission.StateAdmitting or admission.StateQuiesced
	Reason    string // the tier's quiesce reason; "" while admitting
	Draining  bool
	// Retiring marks a tier a reload removed that still holds leases or waiters: it admits nothing and
	// leaves the views when idle.
	Retiring       bool
	Active         int64 // may exceed MaxConcurrency after a reload lowered the ceiling
	MaxConcurrency int64 // effective ceiling, 0 = none
	Released       uint64
	ReleaseMisuse  uint64
	Queue          *Queue   // the admission queue; nil when the tier has none
	Members        []Member // sorted by ID; nil for direct tiers
	// queued marks an unavailable tier that has a configured queue: its wire shape keeps "queue": null.
	queued bool
}

// Queue is a tier's admission queue as the views show it (its wire shape is router/manage's).
type Queue = manage.Queue

// Member is one replica member. Reason is never set by the admission or capacity view (the spec keeps
// member reasons off those surfaces); the transition answer, which reports what an operator just did,
// fills it. Telemetry is set for capacity-tier members in the capacity view only; Readiness
// (AttachReadiness) and PassiveHealth (AttachHealth, tiers with passive health) in both views.
type Member struct {
	ID             string         `json:"id"`
	State          string         `json:"state"`
	Reason         string         `json:"reason,omitempty"`
	Draining       bool           `json:"draining"`
	Retiring       bool           `json:"retiring,omitempty"` // left the configuration in a reload; still holds leases
	Active         int64          `json:"active_requests"`
	MaxConcurrency int64          `json:"max_concurrency"`
	Readiness      string         `json:"readiness,omitempty"` // the latest completed probe verdict
	PassiveHealth  *PassiveHealth `json:"passive_health,omitempty"`
	Telemetry      *Telemetry     `json:"telemetry,omitempty"`
}

// PassiveHealth is a member's passive-health state (router/health): healthy, ejected or half_open,
// its current failure streak, its ejections since start and, while ejected, when the ejection ends.
// Quiesce and ejection are independent: a quiesced member keeps its passive-health state.
type PassiveHealth struct {
	State        string     `json:"state"`
	Streak       int        `json:"streak"`
	Ejections    uint64     `json:"ejections"`
	EjectedUntil *time.Time `json:"ejected_until,omitempty"`
}

// AttachReadiness gives every member of each available replica tier its latest completed readiness
// verdict ("ready", or the fixed reason it is out: unprobed, unreachable, unhealthy, wrong_model,
// extra_model, redirected). A verdict for a member the tier does not have, or outside the readiness
// package's verdicts, is not shown. A nil reader attaches nothing.
func AttachReadiness(tiers []Tier, r ReadinessReader) {
	if r == nil {
		return
	}
	for i := range tiers {
		t := &tiers[i]
		if !t.Available || t.Kind != admission.KindReplica {
			continue
		}
		members := configured(t.Members)
		for _, v := range r.Verdicts(t.ID) {
			if name := v.Verdict.String(); name != "invalid" {
				for j := range members {
					if members[j].ID == v.Member {
						t.Members[j].Readiness = name
					}
				}
			}
		}
	}
}

// HealthReader returns a replica tier's passive-health state, one entry per member sorted by ID, read
// at the moment the reader's owner chose; an error when the tier does not track passive health.
type HealthReader interface {
	Health(tier string) ([]health.MemberHealth, error)
}

// AttachHealth reads each available replica tier's passive health once and gives every member its
// state. A tier whose answer is not exactly its members, in order, with valid states (an ejection
// end exactly when ejected) shows no passive health rather than a wrong one. A nil reader attaches
// nothing.
func AttachHealth(tiers []Tier, h HealthReader) {
	if h == nil {
		return
	}
	for i := range tiers {
		t := &tiers[i]
		if !t.Available || t.Kind != admission.KindReplica {
			continue
		}
		hs, err := h.Health(t.ID)
		if err != nil || !healthMatches(hs, configured(t.Members)) {
			continue
		}
		for j, mh := range hs {
			ph := &PassiveHealth{State: mh.State.String(), Streak: mh.Streak, Ejections: mh.Ejections}
			if mh.State == health.Ejected {
				until := mh.EjectedUntil.UTC().Round(time.Millisecond)
				ph.EjectedUntil = &until
			}
			t.Members[j].PassiveHealth = ph
		}
	}
}

// configured returns the members the configuration in force lists: the leading ones, before the
// retiring members (which have no readiness or passive health of their own any more).
func configured(members []Member) []Member {
	for i, m := range members {
		if m.Retiring {
			return members[:i]
		}
	}
	return members
}

// healthMatches: one valid entry per member, in the members' (ID) order.
func healthMatches(hs []health.MemberHealth, members []Member) bool {
	if len(hs) != len(members) {
		return false
	}
	for i, mh := range hs {
		switch {
		case mh.ID != members[i].ID, mh.State.String() == "invalid", mh.Streak < 0,
			mh.Ejections > maxCount, (mh.State == health.Ejected) == mh.EjectedUntil.IsZero():
			return false
		}
	}
	return true
}

// Telemetry is a member's current cached upstream pressure, read through the cache's Peek: the
// freshness class, the pressure in ppm (null unless fresh) and the state of each signal. It is not a
// selection score and says nothing about the previous decision.
type Telemetry struct {
	Freshness     scheduler.Freshness   `json:"freshness"`
	PressurePPM   *int64                `json:"pressure_ppm"`
	RequestsState scheduler.SignalState `json:"requests_state"`
	KVState       scheduler.SignalState `json:"kv_state"`
}

// telemetryOf is the view of one validated pressure.
func telemetryOf(p scheduler.Pressure) *Telemetry {
	t := &Telemetry{Freshness: p.Freshness(), RequestsState: p.RequestState(), KVState: p.KVState()}
	if ppm, ok := p.PPM(); ok {
		t.PressurePPM = &ppm
	}
	return t
}

// AdmissionTier projects one admission snapshot as the admission view shows it: the snapshot's own
// fields, members without their reasons, no telemetry and no validation (the capacity view, Build,
// validates).
func AdmissionTier(sn admission.Snapshot) Tier {
	t := Tier{ID: sn.ID, Kind: sn.Kind, Strategy: sn.Strategy, Available: true, State: sn.State,
		Reason: sn.Reason, Draining: sn.Draining, Retiring: sn.Retiring, Active: sn.Active,
		MaxConcurrency: sn.MaxConcurrency, Released: sn.Released, ReleaseMisuse: sn.ReleaseMisuse}
	for _, m := range sn.Members {
		t.Members = append(t.Members, Member{ID: m.ID, State: m.State, Draining: m.Draining,
			Retiring: m.Retiring, Active: m.Active, MaxConcurrency: m.MaxConcurrency})
	}
	if sn.MaxWaiting > 0 {
		t.Queue = &Queue{Waiting: sn.Waiting, MaxWaiting: sn.MaxWaiting, RefusedFull: sn.QueueFull}
	}
	return t
}

// AdmissionView projects every snapshot with AdmissionTier, in the snapshots' order.
func AdmissionView(snaps []admission.Snapshot) []Tier {
	out := make([]Tier, 0, len(snaps))
	for _, sn := range snaps {
		out = append(out, AdmissionTier(sn))
	}
	return out
}

// unavailableJSON is the wire shape of an unavailable tier: manage.TierView's keys, every number null.
type unavailableJSON struct {
	ID             string          `json:"id"`
	Kind           string          `json:"kind"`
	Strategy       string          `json:"strategy,omitempty"`
	State          string          `json:"state"`
	Draining       *bool           `json:"draining"`
	Active         *int64          `json:"active_requests"`
	MaxConcurrency *int64          `json:"max_concurrency"`
	Released       *uint64         `json:"released"`
	ReleaseMisuse  *uint64         `json:"release_misuse"`
	Queue          json.RawMessage `json:"queue,omitempty"` // "null" when the tier has a queue
	Members        *[]Member       `json:"members"`
}

// unavailableDirectJSON is unavailableJSON for a direct tier, which has no members key.
type unavailableDirectJSON struct {
	ID             string          `json:"id"`
	Kind           string          `json:"kind"`
	State          string          `json:"state"`
	Draining       *bool           `json:"draining"`
	Active         *int64          `json:"active_requests"`
	MaxConcurrency *int64          `json:"max_concurrency"`
	Released       *uint64         `json:"released"`
	ReleaseMisuse  *uint64         `json:"release_misuse"`
	Queue          json.RawMessage `json:"queue,omitempty"` // "null" when the tier has a queue
}

// MarshalJSON writes the admission view's tier shape; an unavailable tier keeps its keys with null
// values and state "unavailable".
func (t Tier) MarshalJSON() ([]byte, error) {
	strategy := ""
	if t.Kind == admission.KindReplica {
		strategy = t.Strategy.String()
	}
	var queue json.RawMessage
	if t.queued {
		queue = json.RawMessage("null")
	}
	switch {
	case !t.Available && t.Kind == admission.KindReplica:
		return json.Marshal(unavailableJSON{ID: t.ID, Kind: t.Kind.String(), Strategy: strategy,
			State: StateUnavailable, Queue: queue})
	case !t.Available:
		return json.Marshal(unavailableDirectJSON{ID: t.ID, Kind: t.Kind.String(), State: StateUnavailable,
			Queue: queue})
	}
	return json.Marshal(manage.TierView[Member]{ID: t.ID, Kind: t.Kind.String(), Strategy: strategy, State: t.State,
		Reason: t.Reason, Draining: t.Draining, Retiring: t.Retiring, Active: t.Active, MaxConcurrency: t.MaxConcurrency,
		Released: t.Released, ReleaseMisuse: t.ReleaseMisuse, Queue: t.Queue, Members: t.Members})
}

package capacity

import (
	"encoding/json"

	"github.com/anvil-llm/anvil/router/admission"
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
	Available      bool
	State          string // admission.StateAdmitting or admission.StateQuiesced
	Reason         string // the tier's quiesce reason; "" while admitting
	Draining       bool
	Active         int64
	MaxConcurrency int64 // effective ceiling, 0 = none
	Released       uint64
	ReleaseMisuse  uint64
	Members        []Member // sorted by ID; nil for direct tiers
}

// Member is one replica member. Reason is never set by the admission or capacity view (the spec keeps
// member reasons off those surfaces); the transition answer, which reports what an operator just did,
// fills it. Telemetry is set for capacity-tier members in the capacity view only.
//
// Passive health (ejected members) joins here when it lands: one more member field, read from the
// same snapshot family, never a second source.
type Member struct {
	ID             string     `json:"id"`
	State          string     `json:"state"`
	Reason         string     `json:"reason,omitempty"`
	Draining       bool       `json:"draining"`
	Active         int64      `json:"active_requests"`
	MaxConcurrency int64      `json:"max_concurrency"`
	Telemetry      *Telemetry `json:"telemetry,omitempty"`
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
		Reason: sn.Reason, Draining: sn.Draining, Active: sn.Active, MaxConcurrency: sn.MaxConcurrency,
		Released: sn.Released, ReleaseMisuse: sn.ReleaseMisuse}
	for _, m := range sn.Members {
		t.Members = append(t.Members, Member{ID: m.ID, State: m.State, Draining: m.Draining,
			Active: m.Active, MaxConcurrency: m.MaxConcurrency})
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

// availableJSON is the wire shape of an available tier.
type availableJSON struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	Strategy       string   `json:"strategy,omitempty"`
	State          string   `json:"state"`
	Reason         string   `json:"reason,omitempty"`
	Draining       bool     `json:"draining"`
	Active         int64    `json:"active_requests"`
	MaxConcurrency int64    `json:"max_concurrency"`
	Released       uint64   `json:"released"`
	ReleaseMisuse  uint64   `json:"release_misuse"`
	Members        []Member `json:"members,omitempty"`
}

// unavailableJSON is the wire shape of an unavailable tier: the same keys, every number null.
type unavailableJSON struct {
	ID             string    `json:"id"`
	Kind           string    `json:"kind"`
	Strategy       string    `json:"strategy,omitempty"`
	State          string    `json:"state"`
	Draining       *bool     `json:"draining"`
	Active         *int64    `json:"active_requests"`
	MaxConcurrency *int64    `json:"max_concurrency"`
	Released       *uint64   `json:"released"`
	ReleaseMisuse  *uint64   `json:"release_misuse"`
	Members        *[]Member `json:"members"`
}

// unavailableDirectJSON is unavailableJSON for a direct tier, which has no members key.
type unavailableDirectJSON struct {
	ID             string  `json:"id"`
	Kind           string  `json:"kind"`
	State          string  `json:"state"`
	Draining       *bool   `json:"draining"`
	Active         *int64  `json:"active_requests"`
	MaxConcurrency *int64  `json:"max_concurrency"`
	Released       *uint64 `json:"released"`
	ReleaseMisuse  *uint64 `json:"release_misuse"`
}

// MarshalJSON writes the admission view's tier shape; an unavailable tier keeps its keys with null
// values and state "unavailable".
func (t Tier) MarshalJSON() ([]byte, error) {
	strategy := ""
	if t.Kind == admission.KindReplica {
		strategy = t.Strategy.String()
	}
	switch {
	case !t.Available && t.Kind == admission.KindReplica:
		return json.Marshal(unavailableJSON{ID: t.ID, Kind: t.Kind.String(), Strategy: strategy, State: StateUnavailable})
	case !t.Available:
		return json.Marshal(unavailableDirectJSON{ID: t.ID, Kind: t.Kind.String(), State: StateUnavailable})
	}
	return json.Marshal(availableJSON{ID: t.ID, Kind: t.Kind.String(), Strategy: strategy, State: t.State,
		Reason: t.Reason, Draining: t.Draining, Active: t.Active, MaxConcurrency: t.MaxConcurrency,
		Released: t.Released, ReleaseMisuse: t.ReleaseMisuse, Members: t.Members})
}

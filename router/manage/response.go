package manage

import (
	"github.com/anvil-llm/anvil/router/ident"
)

// Results of a transition, in Response.Result.
const (
	ResultStatus    = "status"    // status: nothing asked to change
	ResultChanged   = "changed"   // quiesce or readmit changed the scope's state or reason
	ResultUnchanged = "unchanged" // quiesce or readmit found the scope already so
	ResultDrained   = "drained"   // drain: the scope holds no lease
	// Dry runs: what the same request without dry_run would do, as live state stands.
	ResultWouldChange = "would_change"
	ResultWouldWait   = "would_wait" // drain: the scope still holds leases
)

// Scope is the addressed scope (the tier, or one member) as it stands after the transition, or for
// a dry run as it would stand.
type Scope struct {
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Active   int64  `json:"active_requests"`
	Draining bool   `json:"draining"`
	// NotConfigured marks a scope the configuration in force does not have: its State is
	// "quiesced" while the router keeps its intent (Retained), StateNotConfigured once cleared.
	NotConfigured bool `json:"not_configured,omitempty"`
}

// StateNotConfigured is the state of a tier (Tier.Kind KindNotConfigured) or member the
// configuration does not have and whose kept intent, if any, is listed in Retained.
const StateNotConfigured = "not_configured"

// KindNotConfigured is the snapshot kind of a tier the configuration does not have.
const KindNotConfigured = "not_configured"

// Retained is one quiesce intent entry the router keeps for a scope the configuration no longer has
// (the tier's own when MemberID is empty): applied again when a reload or restart brings the scope
// back, cleared by a readmit of the scope.
type Retained struct {
	MemberID string `json:"member_id,omitempty"`
	Reason   string `json:"reason"`
}

// Member is one member of a tier's admission snapshot.
type Member struct {
	ID             string `json:"id"`
	State          string `json:"state"`
	Reason         string `json:"reason,omitempty"`
	Draining       bool   `json:"draining"`
	Retiring       bool   `json:"retiring,omitempty"` // left the configuration in a reload; still holds leases or waiters
	Active         int64  `json:"active_requests"`
	MaxConcurrency int64  `json:"max_concurrency"`
}

// TierView is the wire shape of one available tier wherever the admin API renders it: the
// transition answer's snapshot (Tier) and the admission and capacity views (router/capacity, whose
// member rows also carry readiness, passive health and telemetry). It is declared once, here, so
// the surfaces cannot drift apart: IDs, states, reason codes and counts, never an endpoint or a
// credential.
type TierView[M any] struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	Strategy       string `json:"strategy,omitempty"`
	State          string `json:"state"`
	Reason         string `json:"reason,omitempty"`
	Draining       bool   `json:"draining"`
	Retiring       bool   `json:"retiring,omitempty"` // left the configuration in a reload; still holds leases or waiters
	Active         int64  `json:"active_requests"`
	MaxConcurrency int64  `json:"max_concurrency"`
	Released       uint64 `json:"released"`
	ReleaseMisuse  uint64 `json:"release_misuse"`
	Queue          *Queue `json:"queue,omitempty"` // the admission queue; nil when the tier has none
	Members        []M    `json:"members,omitempty"`
}

// Queue is a tier's admission queue as the views show it: waiting now, its bound, and the requests
// refused because it was full (since start).
type Queue struct {
	Waiting     int    `json:"waiting"`
	MaxWaiting  int    `json:"max_waiting"`
	RefusedFull uint64 `json:"refused_full"`
}

// Tier is one tier's admission snapshot as the transition answer carries it. The answer shows no
// queue: a decoded answer with one is refused (Response.valid).
type Tier = TierView[Member]

// Response is the endpoint's answer to an accepted transition.
type Response struct {
	Action   string `json:"action"`
	Tier     string `json:"tier"`
	MemberID string `json:"member_id,omitempty"`
	DryRun   bool   `json:"dry_run"`
	Result   string `json:"result"`
	Scope    Scope  `json:"scope"`
	Snapshot Tier   `json:"snapshot"`
	// Retained lists the tier's kept intent for scopes not configured (the tier itself, members it
	// no longer has), in member ID order with the tier's own entry first; omitted when none.
	Retained []Retained `json:"retained,omitempty"`
}

// valid reports whether a response decoded from the wire holds only what the grammar allows, so a
// client never renders arbitrary text from it.
func (r Response) valid() bool {
	switch r.Result {
	case ResultStatus, ResultChanged, ResultUnchanged, ResultDrained, ResultWouldChange, ResultWouldWait:
	default:
		return false
	}
	if !ident.ValidID(r.Tier) || r.Snapshot.ID != r.Tier || r.MemberID != "" && !ident.ValidID(r.MemberID) ||
		!validScope(r.Scope.State, r.Scope.Reason) || r.Snapshot.Queue != nil ||
		len(r.Snapshot.Members) > ident.MaxMembers || len(r.Retained) > ident.MaxKeptIntent {
		return false
	}
	for _, k := range r.Retained {
		if k.MemberID != "" && !ident.ValidID(k.MemberID) || !ident.ValidReason(k.Reason) {
			return false
		}
	}
	switch r.Snapshot.Kind {
	case "direct", "replica":
		if !validScope(r.Snapshot.State, r.Snapshot.Reason) || r.Snapshot.State == StateNotConfigured {
			return false
		}
	case KindNotConfigured:
		if r.Snapshot.State != StateNotConfigured || r.Snapshot.Reason != "" || len(r.Snapshot.Members) > 0 {
			return false
		}
	default:
		return false
	}
	switch r.Snapshot.Strategy {
	case "", "round_robin", "capacity":
	default:
		return false
	}
	for _, m := range r.Snapshot.Members {
		if !ident.ValidID(m.ID) || !validScope(m.State, m.Reason) || m.State == StateNotConfigured {
			return false
		}
	}
	return true
}

func validScope(state, reason string) bool {
	switch state {
	case "admitting", "quiesced":
		return reason == "" || ident.ValidReason(reason)
	case StateNotConfigured:
		return reason == ""
	}
	return false
}

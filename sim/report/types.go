package report

import (
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/sim"
)

// Invariants are the T012 checks and the one-attempt accounting they rest on.
type Invariants struct {
	Checks              uint64 `json:"checks"`
	CeilingViolations   uint64 `json:"ceiling_violations"`
	ReconcileViolations uint64 `json:"reconcile_violations"`
	ScopeViolations     uint64 `json:"scope_violations"`
	OrderViolations     uint64 `json:"order_violations"`
	EvidenceViolations  uint64 `json:"evidence_violations"`
	ReleaseMisuse       uint64 `json:"release_misuse"` // admission's own count
	Acquired            uint64 `json:"acquired"`
	Released            uint64 `json:"released"`
	EndActive           int64  `json:"end_active"`
	TierCeilingHits     uint64 `json:"tier_ceiling_hits"`
	// Attempts are counted on the member side: request IDs that arrived at member endpoints.
	Attempts            uint64  `json:"attempts"`
	Admitted            uint64  `json:"admitted"`
	AttemptsMinusAdmits int64   `json:"attempts_minus_admitted"`
	Redispatches        uint64  `json:"redispatches"` // request IDs that arrived more than once
	Undispatched        uint64  `json:"undispatched"` // admitted requests no member received
	Misrouted           uint64  `json:"misrouted"`    // arrivals at a member admission did not choose
	Phantom             uint64  `json:"phantom"`      // arrivals of requests never admitted
	DispatchMismatches  uint64  `json:"dispatch_mismatches"`
	PeakTierActive      int64   `json:"peak_tier_active"`
	MeanTierActive      float64 `json:"mean_tier_active"`
}

func invariants(in sim.Invariants, acc *accumulator) Invariants {
	return Invariants{
		Checks: in.Checks, CeilingViolations: in.CeilingViolations, ReconcileViolations: in.ReconcileViolations,
		ScopeViolations: in.ScopeViolations, OrderViolations: in.OrderViolations,
		EvidenceViolations: in.EvidenceViolations, ReleaseMisuse: in.ReleaseMisuse,
		Acquired: in.Acquired, Released: in.Released, EndActive: in.EndActive, TierCeilingHits: in.TierCeilingHits,
		Attempts: in.MemberDispatches, Admitted: acc.admitted,
		AttemptsMinusAdmits: int64(in.MemberDispatches) - int64(acc.admitted),
		Redispatches:        in.Redispatched, Undispatched: in.Undispatched, Misrouted: in.Misrouted, Phantom: in.Phantom,
		DispatchMismatches: in.Redispatched + in.Undispatched + in.Misrouted + in.Phantom,
		PeakTierActive:     in.PeakTierActive, MeanTierActive: in.TierActiveSeconds / acc.res.Duration.Seconds(),
	}
}

// Telemetry summarizes the pressure cache core as the two virtual workers drove it.
type Telemetry struct {
	Enabled        bool       `json:"enabled"`
	Snapshots      uint64     `json:"snapshots"`
	SnapshotErrors uint64     `json:"snapshot_errors"`
	Scrapes        uint64     `json:"scrapes"`
	OK             uint64     `json:"ok"`
	Failed         uint64     `json:"failed"`
	Unknown        uint64     `json:"unknown"`
	Overdue        uint64     `json:"overdue"`
	MaxPending     int        `json:"max_pending"`
	MaxQueued      int        `json:"max_queued"`
	WorkerBusyS    [2]float64 `json:"worker_busy_s"`
}

func telemetry(t sim.TelemetryStats) Telemetry {
	return Telemetry{
		Enabled: t.Enabled, Snapshots: t.Snapshots, SnapshotErrors: t.SnapshotErrors, Scrapes: t.Scrapes,
		OK: t.Completed[pressure.ClassOK], Failed: t.Completed[pressure.ClassFailed],
		Unknown: t.Completed[pressure.ClassUnknown], Overdue: t.Overdue, MaxPending: t.MaxPending,
		MaxQueued: t.MaxQueued, WorkerBusyS: [2]float64{t.WorkerBusy[0].Seconds(), t.WorkerBusy[1].Seconds()},
	}
}

// Drain is one drain watch in seconds since the run's start.
type Drain struct {
	Scope             string  `json:"scope"` // "tier" or the member ID
	StartS            float64 `json:"start_s"`
	EndS              float64 `json:"end_s,omitempty"`
	Completed         bool    `json:"completed"`
	Refused           bool    `json:"refused,omitempty"`
	Aborted           bool    `json:"aborted,omitempty"`
	ActiveAtStart     int64   `json:"active_at_start"`
	OthersActiveAtEnd int64   `json:"others_active_at_end"`
	InFlightFailed    int64   `json:"in_flight_failed"` // in flight at the start, did not succeed
}

func drains(in []sim.Drain) []Drain {
	var out []Drain
	for _, d := range in {
		scope := d.Member
		if scope == "" {
			scope = "tier"
		}
		out = append(out, Drain{
			Scope: scope, StartS: d.Start.Seconds(), EndS: d.End.Seconds(), Completed: d.Completed,
			Refused: d.Refused, Aborted: d.Aborted, ActiveAtStart: d.ActiveAtStart, OthersActiveAtEnd: d.OthersActiveEnd,
			InFlightFailed: d.InFlightFailed,
		})
	}
	return out
}

// Action is one timed scenario event as applied.
type Action struct {
	AtS    float64 `json:"at_s"`
	Action string  `json:"action"`
	Member string  `json:"member,omitempty"`
	Error  string  `json:"error,omitempty"`
}

func actions(in []sim.Action) []Action {
	var out []Action
	for _, a := range in {
		out = append(out, Action{AtS: a.At.Seconds(), Action: a.Action, Member: a.Member, Error: a.Err})
	}
	return out
}

// Decisions summarize admission and the scheduler's evidence.
type Decisions struct {
	Admitted              uint64  `json:"admitted"`
	Quiesced              uint64  `json:"not_admitted_quiesced"`
	TierFull              uint64  `json:"not_admitted_tier_full"`
	NoEligible            uint64  `json:"not_admitted_no_eligible"`
	Capacity              uint64  `json:"capacity_decisions"`
	SelectedFreshness     []Count `json:"selected_freshness"`
	RowFreshness          []Count `json:"row_freshness"`
	DecidedBy             []Count `json:"decided_by"`
	UnknownLowerLocalWins uint64  `json:"unknown_lower_local_wins"`
	FreshBeatsUnknown     uint64  `json:"fresh_beats_unknown"`
	LogAdded              uint64  `json:"log_added"`
	LogRejected           uint64  `json:"log_rejected"`
	EvidenceDiscarded     uint64  `json:"evidence_discarded"`
}

// Restart is one router restart in seconds since the run's start: the requests it cut, the intent
// the new router restored, and the admissions after it.
type Restart struct {
	AtS             float64 `json:"at_s"`
	Cut             int64   `json:"cut"`
	RestoredTiers   int     `json:"restored_tiers"`
	RestoredMembers int     `json:"restored_members"`
	Ignored         int     `json:"ignored"`
	AdmittedAfter   int     `json:"admitted_after"` // requests admitted after this restart
}

func restarts(res *sim.Result) []Restart {
	var out []Restart
	for _, r := range res.Restarts {
		rs := Restart{AtS: r.At.Seconds(), Cut: r.Cut, RestoredTiers: r.RestoredTiers,
			RestoredMembers: r.RestoredMembers, Ignored: r.Ignored}
		for i := range res.Requests {
			if q := &res.Requests[i]; q.Arrival >= r.At && q.Outcome.Admitted() {
				rs.AdmittedAfter++
			}
		}
		out = append(out, rs)
	}
	return out
}

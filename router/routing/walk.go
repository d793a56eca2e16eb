package routing

import (
	"time"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Attempt is one request's walk between the front door and the relay: resolve the alias and apply
// the gates, admit (snapshots, then one atomic admission call), hear how the one relay attempt ended,
// and finish: release the lease exactly once and store the request's one decision record, panics
// included (Dispatched, Panicked). The server
// drives it with real time and the relay's results; the simulator with virtual time and its virtual
// members' results. Neither builds a record itself.
//
// The zero Attempt is not usable; Begin starts one. Finish must run exactly once, on every path
// (the server defers it): later calls return the same record and release and record nothing.
type Attempt struct {
	r        *Router
	rec      decisionlog.Record
	lease    *admission.Lease
	finished bool
}

// Begin starts the walk of one request that arrived at start. Until Resolve succeeds the request is
// recorded as refused; until Admit succeeds it holds nothing.
func (r *Router) Begin(requestID string, start time.Time) Attempt {
	return Attempt{r: r, rec: decisionlog.Record{RequestID: requestID, Start: start, Outcome: decisionlog.OutcomeRefused}}
}

// Resolve resolves the request's alias and applies the gates (see Router.Resolve). Once the alias
// names a tier, the record carries the alias, the tier and its route, whether the gates pass or not.
func (a *Attempt) Resolve(req Request) (config.Tier, error) {
	tier, err := a.r.Resolve(req)
	if tier.ID != "" {
		a.rec.Alias, a.rec.Tier = req.Model, tier.ID
		a.rec.Route, a.rec.Strategy = route(tier)
	}
	return tier, err
}

// Admit takes the tier's completed snapshots once and asks admission once. On success the attempt
// holds the lease (Finish releases it) and the record names the member and, for a capacity tier, the
// scheduler's decision. On failure nothing is reserved and the request is recorded as not admitted.
func (a *Attempt) Admit(tier config.Tier) (Target, error) {
	lease, target, err := a.r.admit(tier)
	if err != nil {
		a.rec.Outcome = decisionlog.OutcomeNotAdmitted
		return Target{}, err
	}
	a.lease = lease
	a.rec.Member = target.Member
	if d, ok := lease.Decision(); ok {
		a.rec.ReplicaScheduler = &d
	}
	return target, nil
}

// Decision returns the capacity scheduler's decision behind the admitted lease, if any.
func (a *Attempt) Decision() (scheduler.Decision, bool) { return a.lease.Decision() }

// Dispatched records that the one upstream attempt has begun. The server calls it right before it
// hands the request to the relay, so an attempt that never reports back (a panic inside the relay)
// is still counted; Relayed implies it. Before admission it does nothing: nothing can be dispatched.
func (a *Attempt) Dispatched() {
	if a.lease != nil {
		a.rec.Attempts = 1
	}
}

// Panicked records that handling the request panicked. After admission the outcome becomes
// internal_error and the record keeps what the walk had reached: the member, the scheduler's
// selection and the attempt count (Dispatched). Before admission nothing was held and the record
// keeps its refusal. Panicked recovers nothing: the caller still runs Finish (which releases the
// lease once) and lets the panic go on to whatever answers it.
func (a *Attempt) Panicked() {
	if a.lease != nil {
		a.rec.Outcome = decisionlog.OutcomeInternalError
	}
}

// Relayed records how the one upstream attempt ended: its outcome (decisionlog.Terminal of its
// ending), the status the caller saw and the time to the first response byte.
func (a *Attempt) Relayed(outcome decisionlog.Outcome, status int, firstByte time.Duration) {
	a.rec.Outcome, a.rec.Attempts, a.rec.Status, a.rec.FirstByte = outcome, 1, status, firstByte
}

// Finish ends the walk at end: it releases the lease (if one is held) exactly once, completes the
// record (status is what the caller got when Relayed did not say) and stores it in the router's
// decision log. It returns the record and the log's refusal, if the record broke an invariant.
func (a *Attempt) Finish(end time.Time, status int) (decisionlog.Record, error) {
	if a.finished {
		return a.rec, nil
	}
	a.finished = true
	if a.lease != nil {
		a.lease.Release()
	}
	a.rec.Duration = end.Sub(a.rec.Start)
	if a.rec.Status == 0 {
		a.rec.Status = status
	}
	if a.r.log == nil {
		return a.rec, nil
	}
	return a.rec, a.r.log.Add(a.rec)
}

// route is the record's route and strategy for a tier.
func route(t config.Tier) (decisionlog.Route, decisionlog.Strategy) {
	if t.Kind == config.KindDirect {
		return decisionlog.RouteDirect, decisionlog.StrategyNone
	}
	if t.Strategy == config.StrategyCapacity {
		return decisionlog.RouteReplica, decisionlog.StrategyCapacity
	}
	return decisionlog.RouteReplica, decisionlog.StrategyRoundRobin
}

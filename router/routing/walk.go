package routing

import (
	"errors"
	"fmt"
	"time"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/request"
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
	endpoint string // the admitted target's base URL: passive health's identity of the member
	finished bool

	// The admission queue: the ticket while the request waits, when it started and until when.
	ticket   *admission.Ticket
	queuedAt time.Time
	deadline time.Time
}

// RetryAfter is the wait the router advises a caller it refused for want of capacity (a 503 with
// Retry-After): an admission refusal clears as soon as a lease is released. OpenAI's SDKs, and the
// simulator's closed-loop clients, wait exactly this long before they retry.
const RetryAfter = time.Second

// ErrQueued says the request waits in its tier's admission queue, holding no reservation: wait on
// Wait's channel (or until its deadline, or until the caller leaves) and call Admit again.
var ErrQueued = errors.New("routing: waiting in the tier's admission queue")

// ErrQueueTimeout refuses a request that waited its tier's queue timeout without a lease; it is an
// exhausted refusal (503 with Retry-After).
var ErrQueueTimeout = fmt.Errorf("%w: queue timeout", admission.ErrExhausted)

// ErrShuttingDown refuses a request still waiting in its tier's queue when the router's shutdown
// cuts what is left: it held nothing, so it is a refusal (503 with Retry-After), not a cut attempt.
var ErrShuttingDown = errors.New("routing: the router is shutting down")

// Begin starts the walk of one request that arrived at start. Until Resolve succeeds the request is
// recorded as refused; until Admit succeeds it holds nothing.
func (r *Router) Begin(requestID string, start time.Time) Attempt {
	return Attempt{r: r, rec: decisionlog.Record{RequestID: requestID, Start: start, Outcome: decisionlog.OutcomeRefused,
		ConfigDigest: r.recordDigest()}}
}

// Correlate keeps the caller's own request ID beside the record's (which is always the router's):
// the server passes only one it has checked (see decisionlog.Record.CallerRequestID); "" keeps none.
func (a *Attempt) Correlate(callerRequestID string) { a.rec.CallerRequestID = callerRequestID }

// Identify names the request's caller in its record by the caller token's label (never the token);
// "" names none.
func (a *Attempt) Identify(caller string) { a.rec.Caller = caller }

// Traced joins the record to the request's trace: traceID is its W3C trace ID (the server reads it
// from the router's span or the caller's traceparent); "" joins none.
func (a *Attempt) Traced(traceID string) { a.rec.TraceID = traceID }

// Resolve resolves the request's alias and applies the gates (see Router.Resolve). Once the alias
// names a tier, the record carries the alias, the tier and its route, whether the gates pass or not.
func (a *Attempt) Resolve(req request.Request) (config.Tier, error) {
	tier, err := a.r.Resolve(req)
	if tier.ID != "" {
		a.rec.Alias, a.rec.Tier = req.Model, tier.ID
		a.rec.Route, a.rec.Strategy = route(tier)
	}
	return tier, err
}

// Admit takes the tier's completed snapshots once at now (passive health applied) and asks admission
// once. On success the attempt holds the lease (Finish releases it) and the record names the member
// and, for a capacity tier, the scheduler's decision. On failure nothing is reserved and the request
// is recorded as not admitted. Either way the record counts the members passive health held out.
//
// With a queue on the tier, a request that finds no capacity takes a place in it instead and Admit
// returns ErrQueued; the caller waits (Wait) and calls Admit again, which retries as the queue's
// ticket holder until it gets a lease, the tier is quiesced (the queue empties with that refusal),
// or now reaches the deadline (ErrQueueTimeout). The record then carries the time spent queued.
//
// When a reload published a new generation while the request was being admitted, Admit returns
// ErrSuperseded and changes nothing (a queued request keeps its place): Rebase onto the generation in
// force, then Resolve and Admit again.
func (a *Attempt) Admit(tier config.Tier, now time.Time) (Target, error) {
	if a.ticket != nil && !now.Before(a.deadline) {
		return Target{}, a.refuse(tier, now, ErrQueueTimeout)
	}
	if a.ticket != nil {
		if adm, ok := a.r.admission.Tier(tier.ID); !ok || !adm.Holds(a.ticket) {
			// Rebased onto a generation where the alias names another tier (or a new one under the
			// same ID): the old place means nothing there.
			a.ticket.Leave()
			a.ticket, a.queuedAt = nil, time.Time{}
		}
	}
	lease, target, ejected, err := a.r.admit(tier, now, a.ticket)
	a.rec.EjectedMembers = ejected
	if errors.Is(err, ErrSuperseded) {
		return Target{}, err
	}
	if err == nil {
		a.lease, a.ticket = lease, nil // an admitted ticket has left the queue
		a.endpoint = target.BaseURL
		a.queued(now)
		a.rec.Member = target.Member
		if d, ok := lease.Decision(); ok {
			a.rec.ReplicaScheduler = evidence(d)
		}
		return target, nil
	}
	if errors.Is(err, admission.ErrExhausted) && tier.Queue.MaxWaiting > 0 {
		if a.ticket != nil {
			return Target{}, ErrQueued // still waiting, in its place
		}
		if err = a.enqueue(tier, now); err == nil {
			return Target{}, ErrQueued
		}
		if errors.Is(err, ErrSuperseded) {
			return Target{}, err
		}
	}
	return Target{}, a.refuse(tier, now, err)
}

// Rebase moves an attempt that Admit answered ErrSuperseded onto r, the generation in force: the
// record forgets what the old generation resolved (Resolve sets it again), a queue ticket keeps its
// place when r still has its tier, and the request's start and queue deadline stay. It does nothing
// once the attempt holds a lease or has finished.
func (a *Attempt) Rebase(r *Router) {
	if a.lease != nil || a.finished || r == nil {
		return
	}
	a.r = r
	a.rec.ConfigDigest = r.recordDigest()
	a.rec.Alias, a.rec.Tier, a.rec.Route, a.rec.Strategy = "", "", "", ""
	a.rec.EjectedMembers = 0
}

// Router returns the generation the attempt walks under.
func (a *Attempt) Router() *Router { return a.r }

// evidence is the record's copy of a capacity lease's decision. Taking the address of Admit's own
// copy would move it to the heap on every call, round robin and direct tiers included.
func evidence(d scheduler.Decision) *scheduler.Decision { return &d }

// enqueue takes a place in the tier's queue.
func (a *Attempt) enqueue(tier config.Tier, now time.Time) error {
	adm, _ := a.r.admission.Tier(tier.ID)
	tk, err := adm.Enqueue()
	if err != nil {
		return err
	}
	a.ticket, a.queuedAt, a.deadline = tk, now, now.Add(tier.Queue.Timeout)
	return nil
}

// refuse records a refusal by admission: the request leaves the queue if it waited in it.
func (a *Attempt) refuse(tier config.Tier, now time.Time, err error) error {
	a.leave()
	a.queued(now)
	a.rec.Outcome = decisionlog.OutcomeNotAdmitted
	return err
}

// leave gives up the request's place in the queue, if it has one.
func (a *Attempt) leave() {
	if a.ticket == nil {
		return
	}
	a.ticket.Leave()
	a.ticket = nil
}

// queued records the time spent in the queue up to now.
func (a *Attempt) queued(now time.Time) {
	if !a.queuedAt.IsZero() {
		a.rec.Queued = max(now.Sub(a.queuedAt), 0)
	}
}

// Wait returns what a queued request waits for: a channel closed when retrying may succeed, and the
// deadline after which Admit refuses it. Take it after Admit returned ErrQueued; a wake-up that came
// in between is not lost.
func (a *Attempt) Wait() (<-chan struct{}, time.Time) {
	if a.ticket == nil {
		done := make(chan struct{})
		close(done)
		return done, a.deadline
	}
	return a.ticket.Wait(), a.deadline
}

// Canceled records that the caller went away before a lease: the request leaves the queue, made no
// attempt, and the caller saw nothing (499).
func (a *Attempt) Canceled(now time.Time) {
	a.leave()
	a.queued(now)
	a.rec.Outcome, a.rec.Status = decisionlog.OutcomeClientCanceled, decisionlog.StatusClientClosed
}

// ShutDown records that the router's shutdown cut the request while it waited in tier's queue: it
// leaves the queue and is recorded as not admitted, with the time it waited. It returns
// ErrShuttingDown, the refusal the caller is answered with.
func (a *Attempt) ShutDown(tier config.Tier, now time.Time) error {
	return a.refuse(tier, now, ErrShuttingDown)
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

// Used records the token counts the member reported for its answer (relay.Result.Usage). Only an
// admitted attempt has a member to report them; an unreported Usage keeps the record's usage unknown.
func (a *Attempt) Used(u decisionlog.Usage) {
	if a.lease != nil && u.Reported {
		a.rec.Usage = u
	}
}

// Finish ends the walk at end: it releases the lease (if one is held) exactly once, completes the
// record (status is what the caller got when Relayed did not say), feeds passive health with what the
// attempt said about its member and stores the record in the router's decision log. It returns the
// record and the log's refusal, if the record broke an invariant.
func (a *Attempt) Finish(end time.Time, status int) (decisionlog.Record, error) {
	if a.finished {
		return a.rec, nil
	}
	a.finished = true
	a.leave() // a request that ended while queued gives up its place
	if a.lease != nil {
		a.lease.Release()
	}
	a.rec.Duration = end.Sub(a.rec.Start)
	if a.rec.Status == 0 {
		a.rec.Status = status
	}
	a.r.health.observe(a.rec, a.endpoint, end)
	if a.r.log == nil {
		return a.rec, nil
	}
	return a.rec, a.r.log.AddWithin(a.rec, a.r.membership)
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

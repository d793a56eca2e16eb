package sim

import (
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// kind is what an event does.
type kind uint8

const (
	evEngine        kind = iota // a member's engine reached its next step end: a = member, b = wake generation
	evCut                       // a stream-close fault cuts request a
	evCancel                    // the client of request a gives up
	evUpstreamErr               // member answered request a with an HTTP error
	evTimeout                   // the earliest live upstream timer of kind a expired
	evAction                    // scenario event a
	evProbe                     // readiness probe of every member
	evScrapeDone                // worker a finished its scrape
	evWorkers                   // idle workers look for queued refreshes
	evArrival                   // a request arrives: a = closed-loop client, -1 for the open loop
	evStop                      // the run's duration is over: no more arrivals
	evQueueTimeout              // queued request a reached its queue deadline
	evReload                    // scenario reload a
	evPolicyRefresh             // a reference policy's own telemetry round (policies.go)
	evOutside                   // an outside request reaches member a's engine (outside.go)
)

// Priorities order events within one instant (sim/event's tie rule 2). Lease releases come first,
// so an arrival at t sees capacity freed at t; operator actions come before arrivals, so a quiesce
// at t already refuses an arrival at t; fresh telemetry lands before the arrivals that read it.
const (
	prioEngine    = 0
	prioRequest   = 1
	prioAction    = 2
	prioProbe     = 3
	prioTelemetry = 4
	prioArrival   = 5
	prioStop      = 6
)

// ev is one queued event; small, so the heap moves little memory.
type ev struct {
	kind kind
	a    int32
	b    uint32
}

func (w *world) push(at time.Duration, p int, e ev) { w.q.Push(at, p, e) }

// start queues what is known at time zero: the first readiness probe, the scenario events, the
// first arrivals and the end of the arrival window.
func (w *world) start() {
	w.arrivals = true
	w.push(0, prioProbe, ev{kind: evProbe})
	for i, a := range w.sc.Events {
		w.push(a.At, prioAction, ev{kind: evAction, a: int32(i)})
	}
	// After the events: an event at a reload's instant happens before it (see scenarios.Reload).
	for i, r := range w.sc.Reloads {
		w.push(r.At, prioAction, ev{kind: evReload, a: int32(i)})
	}
	if c := w.sc.Workload.Closed; c != nil {
		for i := range c.Clients {
			w.push(0, prioArrival, ev{kind: evArrival, a: int32(i)})
		}
	} else {
		w.push(w.sc.Workload.Open.Gap(w.streams.Arrivals), prioArrival, ev{kind: evArrival, a: -1})
	}
	w.push(w.sc.Duration, prioStop, ev{kind: evStop})
	w.startPolicy()
	w.startOutside()
	w.progress = w.sc.Duration / 100
}

// loop runs events until nothing is left or the tail limit is reached.
func (w *world) loop() {
	limit := w.sc.Duration + tailLimit(w.sc.Duration)
	for {
		it, ok := w.q.Pop()
		if !ok {
			return
		}
		if it.At > limit {
			w.now = limit
			w.abandonInFlight()
			return
		}
		w.now = it.At
		w.events++
		w.dispatch(it.Value)
		if w.reloading() {
			w.auditReload()
		}
		if w.opts.Progress != nil && w.now >= w.progress {
			w.opts.Progress(min(w.now, w.sc.Duration), w.sc.Duration)
			w.progress = w.now + w.sc.Duration/100
		}
		if !w.arrivals && w.inFlight() == 0 {
			return
		}
	}
}

func (w *world) dispatch(e ev) {
	switch e.kind {
	case evEngine:
		w.engineWake(int(e.a), e.b)
	case evCut:
		w.cut(int(e.a))
	case evCancel:
		w.clientCancel(int(e.a))
	case evUpstreamErr:
		w.upstreamError(int(e.a))
	case evTimeout:
		w.fireTimers(int(e.a))
	case evAction:
		w.action(int(e.a))
	case evProbe:
		w.probe()
	case evScrapeDone:
		w.press.scrapeDone(int(e.a), e.b)
	case evWorkers:
		w.press.kick()
	case evArrival:
		w.arrive(int(e.a))
	case evQueueTimeout:
		w.queueTimeout(int(e.a))
	case evReload:
		w.reload(int(e.a))
	case evStop:
		w.arrivals = false
	case evPolicyRefresh:
		w.policyRefresh()
	case evOutside:
		w.outsideArrive(int(e.a))
	}
}

// finish closes the books: lease accounting, admission counters, engine metrics, decision log.
func (w *world) finish() *Result {
	r := w.res
	r.Events = w.events
	r.Tail = max(w.now-w.sc.Duration, 0)
	w.acct.close(w.now, r)
	snap := w.adm.Snapshot()
	r.Invariants.Acquired, r.Invariants.Released = w.carried.acquired+snap.Acquired, w.carried.released+snap.Released
	r.Invariants.ReleaseMisuse = w.carried.misuse + snap.ReleaseMisuse
	r.Invariants.EndActive = snap.Active
	for i, m := range w.members {
		m.collect(&r.Members[i])
	}
	w.checkDispatches()
	if w.reloading() {
		w.finishReloads()
	}
	if w.press != nil {
		w.press.core.Close()
	}
	dlog := w.router.Decisions()
	_ = dlog.Close()
	r.DecisionLog = dlog.Stats()
	for _, d := range w.drains {
		for _, id := range d.inflight {
			if r.Requests[id].Outcome != decisionlog.OutcomeSuccess {
				d.InFlightFailed++
			}
		}
		r.Drains = append(r.Drains, d.Drain)
	}
	if w.opts.Progress != nil {
		w.opts.Progress(w.sc.Duration, w.sc.Duration)
	}
	return r
}

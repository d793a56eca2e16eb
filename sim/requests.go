package sim

import (
	"errors"
	"strconv"
	"time"

	"github.com/anvil-llm/anvil/fakevllm/engine"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/scenarios"
)

// errorLatency is how long a member takes to answer an injected HTTP error.
const errorLatency = 2 * time.Millisecond

// reqState is a request's in-flight bookkeeping; its record is Result.Requests at the same index.
// It holds no pointer, so the garbage collector never scans the hour's worth of them.
type reqState struct {
	lease  int32 // slot in the lease table while admitted, -1 otherwise
	client int32 // closed-loop client, -1 for the open loop
	slot   int32 // index in the member's in-flight list, -1 when not in an engine
	active bool  // admitted and not yet ended
	routed bool  // resolved to the tier (the record carries alias and tier)
}

// leaseTable holds the leases of admitted requests in reusable slots.
type leaseTable struct {
	slots []*admission.Lease
	free  []int32
}

func (t *leaseTable) put(l *admission.Lease) int32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.slots[i] = l
		return i
	}
	t.slots = append(t.slots, l)
	return int32(len(t.slots) - 1)
}

func (t *leaseTable) get(i int32) *admission.Lease { return t.slots[i] }

func (t *leaseTable) drop(i int32) {
	t.slots[i] = nil
	t.free = append(t.free, i)
}

// arrive is one request: generated, parsed, resolved, admitted and dispatched exactly as the
// server's handler does it, then handed to the chosen member's engine.
func (w *world) arrive(client int) {
	if !w.arrivals {
		return
	}
	if client < 0 {
		if next := w.now + w.sc.Workload.Open.Gap(w.streams.Arrivals); next < w.sc.Duration {
			w.push(next, prioArrival, ev{kind: evArrival, a: -1})
		}
	}
	sh := w.gen.Next()
	id := len(w.reqs)
	w.reqs = append(w.reqs, reqState{client: int32(client), slot: -1, lease: -1})
	w.res.Requests = append(w.res.Requests, Request{
		Arrival: w.now, FirstToken: -1, Member: -1, Prompt: int32(sh.Prompt), Stream: sh.Stream,
	})
	req, err := w.parsed.request(sh.Prompt, sh.Output, sh.Stream)
	if err == nil {
		var tier config.Tier
		if tier, err = w.router.Resolve(req); err == nil {
			w.reqs[id].routed = true
			w.admit(id, tier, sh)
			return
		}
	}
	status := 400
	if errors.Is(err, routing.ErrUnknownAlias) {
		status = 404
	}
	w.settle(id, decisionlog.OutcomeRefused, status)
}

// admit takes the lease through routing.Router.Admit, the server's one admission call.
func (w *world) admit(id int, tier config.Tier, sh scenarios.Shape) {
	lease, target, err := w.router.Admit(tier)
	if w.press != nil {
		w.press.afterSnapshot()
	}
	if err != nil {
		w.notAdmitted(err)
		status := 503
		if !errors.Is(err, admission.ErrQuiesced) && !errors.Is(err, admission.ErrExhausted) {
			status = 500
		}
		w.settle(id, decisionlog.OutcomeNotAdmitted, status)
		return
	}
	mi, ok := w.byID[target.Member]
	if !ok {
		lease.Release()
		w.settle(id, decisionlog.OutcomeNotAdmitted, 500)
		return
	}
	m := w.members[mi]
	rs, r := &w.reqs[id], &w.res.Requests[id]
	rs.lease, rs.active = w.leases.put(lease), true
	r.Member, r.Attempts = int8(mi), 1
	w.res.Decisions.Admitted++
	w.res.Members[mi].Selected++
	w.auditDecision(lease)
	w.auditScope(mi)
	w.acct.change(w.now, mi, +1)
	w.audit()
	w.dispatch1(id, m, sh)
}

// dispatch1 is the one upstream attempt: the chosen member receives it (and records its ID), a
// dead member refuses the connection, an errors window answers with an HTTP error, otherwise the
// engine runs the request under the relay's two timers. Nothing here ever picks a second member.
func (w *world) dispatch1(id int, m *member, sh scenarios.Shape) {
	r := &w.res.Requests[id]
	m.receive(id)
	if !m.alive {
		m.refused++
		w.end(id, decisionlog.EndTransport)
		return
	}
	w.startTimers(id)
	if e := w.window(scenarios.ActionErrors, m.id, sh.ErrorRoll); e != nil {
		r.Status = int16(e.Status)
		w.push(w.now+errorLatency, prioRequest, ev{kind: evUpstreamErr, a: int32(id)})
		return
	}
	err := m.eng.Submit(w.at(w.now), engine.Request{ID: uint64(id), PromptTokens: sh.Prompt, MaxTokens: sh.Output})
	if err != nil {
		// vLLM refuses a request longer than max_model_len with HTTP 400 before generating.
		r.Status = 400
		w.end(id, decisionlog.EndHTTPError)
		return
	}
	m.track(w, id)
	w.reschedule(m)
	if e := w.window(scenarios.ActionStreamClose, m.id, sh.CutRoll); e != nil {
		after := e.AfterMin + time.Duration(sh.CutFrac*float64(e.AfterMax-e.AfterMin))
		w.push(w.now+after, prioRequest, ev{kind: evCut, a: int32(id)})
	}
	if sh.CancelAfter > 0 {
		w.push(w.now+sh.CancelAfter, prioRequest, ev{kind: evCancel, a: int32(id)})
	}
}

// window returns the first errors or stream_close event of the given action whose window covers
// now and the member, when roll falls under its rate.
func (w *world) window(action, member string, roll float64) *scenarios.Event {
	for i := range w.sc.Events {
		e := &w.sc.Events[i]
		if e.Action == action && (e.Member == "" || e.Member == member) && e.At <= w.now && w.now < e.Until {
			if roll < e.Rate {
				return e
			}
			return nil
		}
	}
	return nil
}

// end finishes an active request the way the relay classifies its ending (see Classify): the
// engine's work is aborted, the lease released once and the record written.
func (w *world) end(id int, e decisionlog.Ending) {
	r := &w.res.Requests[id]
	outcome, status := Classify(e, r.Stream, r.FirstToken >= 0, int(r.Status))
	w.abort(id, outcome, status)
}

// cut ends a request whose connection the member closed early.
func (w *world) cut(id int) {
	if w.reqs[id].active {
		w.end(id, decisionlog.EndCut)
	}
}

func (w *world) clientCancel(id int) {
	if w.reqs[id].active {
		w.end(id, decisionlog.EndClientCancel)
	}
}

func (w *world) upstreamError(id int) {
	if w.reqs[id].active {
		w.end(id, decisionlog.EndHTTPError)
	}
}

// abort stops the request in its engine (the upstream call is canceled), then ends it.
func (w *world) abort(id int, outcome decisionlog.Outcome, status int) {
	r := &w.res.Requests[id]
	m := w.members[r.Member]
	if w.reqs[id].slot >= 0 && m.alive {
		m.eng.Abort(w.at(w.now), uint64(id))
		w.reschedule(m)
	}
	w.settle(id, outcome, status)
}

// settle is the request's terminal path, the handler's deferred block: release the lease once,
// audit, write the decision record, and let a closed-loop client go on.
func (w *world) settle(id int, outcome decisionlog.Outcome, status int) {
	rs, r := &w.reqs[id], &w.res.Requests[id]
	r.End, r.Outcome, r.Status = w.now, outcome, int16(status)
	if rs.slot >= 0 {
		w.members[r.Member].untrack(w, id)
	}
	if rs.active {
		rs.active = false
		// A second release would be counted by admission itself (Snapshot.ReleaseMisuse), which
		// is what the report reads.
		w.leases.get(rs.lease).Release()
		w.acct.change(w.now, int(r.Member), -1)
		w.audit()
		w.checkDrains()
	}
	w.record(id)
	if rs.lease >= 0 {
		w.leases.drop(rs.lease)
		rs.lease = -1
	}
	if c := w.sc.Workload.Closed; c != nil && rs.client >= 0 {
		pause := c.Think
		if outcome != decisionlog.OutcomeSuccess {
			pause = c.Backoff
		}
		if next := w.now + pause; next < w.sc.Duration {
			w.push(next, prioArrival, ev{kind: evArrival, a: rs.client})
		}
	}
}

// record writes the request's decision record, the fields the server writes.
func (w *world) record(id int) {
	rs, r := &w.reqs[id], &w.res.Requests[id]
	rec := decisionlog.Record{
		RequestID: requestID(id), Outcome: r.Outcome, Attempts: int(r.Attempts), Status: int(r.Status),
		Start: w.at(r.Arrival), Duration: r.End - r.Arrival,
	}
	if rs.routed {
		rec.Alias, rec.Tier, rec.Route = w.sc.Tier.Alias, w.tier.ID, decisionlog.RouteReplica
		rec.Strategy = decisionlog.Strategy(w.tier.Strategy)
	}
	if r.Member >= 0 {
		rec.Member = w.members[r.Member].id
		if d, ok := w.leases.get(rs.lease).Decision(); ok {
			rec.ReplicaScheduler = &d
		}
	}
	switch {
	case r.Stream && r.FirstToken >= 0:
		rec.FirstByte = r.FirstToken - r.Arrival
	case r.Outcome == decisionlog.OutcomeSuccess || r.Outcome == decisionlog.OutcomeUpstreamHTTPError:
		rec.FirstByte = rec.Duration
	}
	_ = w.dlog.Add(rec) // a refused record is counted in the log's Stats, which the report gates on
}

func requestID(id int) string {
	var b [24]byte
	return string(strconv.AppendInt(append(b[:0], "sim-"...), int64(id), 10))
}

// inFlight counts admitted requests that have not ended: exactly the leases held.
func (w *world) inFlight() int64 { return w.acct.tierActive }

// abandonInFlight ends what is still running when the tail limit is reached: the client leaves.
func (w *world) abandonInFlight() {
	for id := range w.reqs {
		if w.reqs[id].active {
			w.end(id, decisionlog.EndClientCancel)
		}
	}
}

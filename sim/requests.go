package sim

import (
	"errors"
	"strconv"
	"time"

	"github.com/anvil-llm/anvil/engine"
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
	attempt int32 // slot in the attempt table until the request ends, -1 after
	client  int32 // closed-loop client, -1 for the open loop
	slot    int32 // index in the member's in-flight list, -1 when not in an engine
	active  bool  // admitted and not yet ended
}

// attemptTable holds the walks (routing.Attempt) of requests that have not ended, in reusable slots.
type attemptTable struct {
	slots []routing.Attempt
	free  []int32
}

func (t *attemptTable) put(a routing.Attempt) int32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.slots[i] = a
		return i
	}
	t.slots = append(t.slots, a)
	return int32(len(t.slots) - 1)
}

func (t *attemptTable) get(i int32) *routing.Attempt { return &t.slots[i] }

func (t *attemptTable) drop(i int32) {
	t.slots[i] = routing.Attempt{}
	t.free = append(t.free, i)
}

// arrive is one request: generated, parsed, then walked through routing's Attempt exactly as the
// server's handler walks it (resolve and gate, admit), then handed to the chosen member's engine.
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
	slot := w.attempts.put(w.router.Begin(requestID(id), w.at(w.now)))
	w.reqs = append(w.reqs, reqState{attempt: slot, client: int32(client), slot: -1})
	w.res.Requests = append(w.res.Requests, Request{
		Arrival: w.now, FirstToken: -1, Member: -1, Prompt: int32(sh.Prompt), Stream: sh.Stream,
	})
	req, err := w.parsed.request(sh.Prompt, sh.Output, sh.Stream)
	if err == nil {
		var tier config.Tier
		if tier, err = w.attempts.get(slot).Resolve(req); err == nil {
			w.admit(id, tier, sh)
			return
		}
	}
	w.refusedResolve(id, err)
}

// refusedResolve ends a request the parser or the gates refused (404 for an unknown alias).
func (w *world) refusedResolve(id int, err error) {
	status := 400
	if errors.Is(err, routing.ErrUnknownAlias) {
		status = 404
	}
	w.refusedReload(false)
	w.settle(id, decisionlog.OutcomeRefused, status)
}

// admit takes the lease through the attempt's Admit, the server's one admission call. A request the
// tier's queue takes waits there (see queue.go).
func (w *world) admit(id int, tier config.Tier, sh scenarios.Shape) {
	at := w.attempts.get(w.reqs[id].attempt)
	w.placing(sh, len(w.queue) == 0)
	target, err := at.Admit(tier, w.at(w.now))
	w.checkPick(target, err)
	if w.press != nil {
		w.press.afterSnapshot()
	}
	if errors.Is(err, routing.ErrQueued) {
		w.enqueue(id, tier, sh)
		return
	}
	w.admitted(id, target, err, sh)
}

// admitted ends an admission attempt: dispatch on a lease, settle on a refusal.
func (w *world) admitted(id int, target routing.Target, err error, sh scenarios.Shape) {
	if errors.Is(err, admission.ErrQueueFull) {
		w.res.Queue.Full++
	}
	if err != nil {
		w.notAdmitted(err)
		w.refusedReload(errors.Is(err, admission.ErrQuiesced))
		status := 503
		if !errors.Is(err, admission.ErrQuiesced) && !errors.Is(err, admission.ErrExhausted) &&
			!errors.Is(err, routing.ErrShuttingDown) {
			status = 500
		}
		w.settle(id, decisionlog.OutcomeNotAdmitted, status)
		return
	}
	mi := w.byID[target.Member] // the members are the config's: admission picks one of them
	m := w.members[mi]
	rs, r := &w.reqs[id], &w.res.Requests[id]
	rs.active = true
	r.Member, r.Attempts = int8(mi), 1
	w.res.Decisions.Admitted++
	w.res.Members[mi].Selected++
	w.auditDecision(w.attempts.get(rs.attempt), target.Member)
	w.auditScope(mi)
	w.acct.change(w.now, mi, +1)
	w.admittedReload(mi)
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
	// The member prefills the prompt its chat template makes of the body, as the fake vLLM does.
	req := engine.Request{ID: uint64(id), PromptTokens: sh.Prompt + ChatTemplateTokens, MaxTokens: sh.Output}
	err := m.eng.Submit(w.at(w.now), req)
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

// settle is the request's terminal path, the handler's deferred block: the attempt hears how the
// relay attempt ended (admitted requests only) and finishes: it releases the lease once and stores
// the decision record. Then the sim audits its books, and a closed-loop client goes on.
func (w *world) settle(id int, outcome decisionlog.Outcome, status int) {
	rs, r := &w.reqs[id], &w.res.Requests[id]
	r.End, r.Outcome, r.Status = w.now, outcome, int16(status)
	defer w.retryQueue() // a release, or a refusal that left the queue, may let the head in
	if rs.slot >= 0 {
		w.members[r.Member].untrack(w, id)
	}
	at := w.attempts.get(rs.attempt)
	if outcome.Admitted() {
		at.Relayed(outcome, status, firstByte(r))
	}
	// A refused record is counted in the log's Stats, which the report gates on; a second release
	// would be counted by admission itself (Snapshot.ReleaseMisuse), which the report reads too.
	rec, _ := at.Finish(w.at(w.now), status)
	r.Queued = rec.Queued
	w.attempts.drop(rs.attempt)
	rs.attempt = -1
	if rs.active {
		rs.active = false
		w.acct.change(w.now, int(r.Member), -1)
		w.audit()
		w.checkDrains()
	}
	if c := w.sc.Workload.Closed; c != nil && rs.client >= 0 {
		pause := c.Think
		switch {
		case outcome == decisionlog.OutcomeNotAdmitted && status == 503:
			// The router's refusal carries Retry-After; a client honours it as OpenAI's SDKs do.
			pause = routing.RetryAfter
		case outcome != decisionlog.OutcomeSuccess:
			pause = c.Backoff
		}
		if next := w.now + pause; next < w.sc.Duration {
			w.push(next, prioArrival, ev{kind: evArrival, a: rs.client})
		}
	}
}

// firstByte is the record's time to the first response byte: the first token for a stream that
// produced one, the whole answer for a relayed ordinary answer (the relay writes it at the end).
func firstByte(r *Request) time.Duration {
	switch {
	case r.Stream && r.FirstToken >= 0:
		return r.FirstToken - r.Arrival
	case r.Outcome == decisionlog.OutcomeSuccess || r.Outcome == decisionlog.OutcomeUpstreamHTTPError:
		return r.End - r.Arrival
	}
	return 0
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

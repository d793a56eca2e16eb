package sim

import (
	"errors"
	"slices"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/scenarios"
)

// The admission queue on virtual time. Admission keeps the order (the walk's Attempt holds the
// ticket); the server's shell waits on the ticket's channel, the sim replays the same waits as
// events: after every release, refusal or operator action the head retries through the walk's Admit
// (retryQueue), and a request still waiting at its deadline retries once more and is refused then.

// waiter is one queued request, in arrival order.
type waiter struct {
	id    int32
	shape scenarios.Shape
	tier  config.Tier
}

func (w *world) enqueue(id int, tier config.Tier, sh scenarios.Shape) {
	w.queue = append(w.queue, waiter{id: int32(id), shape: sh, tier: tier})
	w.res.Queue.Enqueued++
	w.res.Queue.Peak = max(w.res.Queue.Peak, len(w.queue))
	_, deadline := w.attempts.get(w.reqs[id].attempt).Wait()
	w.push(deadline.Sub(Epoch), prioRequest, ev{kind: evQueueTimeout, a: int32(id)})
}

// retryQueue lets the head of the queue retry, and the next one after it is admitted, until one must
// keep waiting. It is called after every lease release, every refusal and every operator action.
func (w *world) retryQueue() {
	if w.retrying {
		return // the loop below is running: a settle inside it must not start another
	}
	w.retrying = true
	defer func() { w.retrying = false }()
	for len(w.queue) > 0 {
		head := w.queue[0]
		at := w.attempts.get(w.reqs[head.id].attempt)
		w.placing(head.shape, true)
		target, err := at.Admit(head.tier, w.at(w.now))
		w.checkPick(target, err)
		if w.press != nil {
			w.press.afterSnapshot()
		}
		if errors.Is(err, routing.ErrQueued) {
			return
		}
		if errors.Is(err, routing.ErrSuperseded) {
			// A reload published a new generation while the request waited: it keeps its place and
			// walks again under the generation in force, as the server's handler does.
			if w.queue[0].tier, err = w.rebase(int(head.id), head.shape); err == nil {
				continue
			}
			w.queue = w.queue[1:]
			w.refusedResolve(int(head.id), err)
			continue
		}
		w.queue = w.queue[1:]
		w.admitted(int(head.id), target, err, head.shape)
	}
}

// queueTimeout retries a request whose queue deadline came: Admit refuses it (timeout) unless it got
// a lease already.
func (w *world) queueTimeout(id int) {
	i := slices.IndexFunc(w.queue, func(q waiter) bool { return int(q.id) == id })
	if i < 0 {
		return // admitted or refused before its deadline
	}
	q := w.queue[i]
	w.queue = slices.Delete(w.queue, i, i+1)
	at := w.attempts.get(w.reqs[id].attempt)
	w.placing(q.shape, i == 0)
	target, err := at.Admit(q.tier, w.at(w.now))
	if errors.Is(err, routing.ErrSuperseded) {
		if q.tier, err = w.rebase(id, q.shape); err != nil {
			w.refusedResolve(id, err)
			return
		}
		target, err = at.Admit(q.tier, w.at(w.now))
	}
	if errors.Is(err, routing.ErrQueued) {
		// Unreachable: at its deadline the walk refuses. Keep the books whole regardless.
		w.queue = slices.Insert(w.queue, i, q)
		return
	}
	if errors.Is(err, routing.ErrQueueTimeout) {
		w.res.Queue.Timeouts++
	}
	w.admitted(id, target, err, q.shape)
}

// rebase moves a queued request's walk onto the generation in force after Admit answered
// ErrSuperseded, and resolves it again there: the server's handler does the same with the same body.
func (w *world) rebase(id int, sh scenarios.Shape) (config.Tier, error) {
	w.reloads.audit.Rebased++
	at := w.attempts.get(w.reqs[id].attempt)
	at.Rebase(w.router)
	req, err := w.parsed.request(sh.Prompt, sh.Output, sh.Stream)
	if err != nil {
		return config.Tier{}, err
	}
	return at.Resolve(req)
}

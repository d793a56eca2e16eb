package fakevllm

import (
	"errors"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/engine"
)

// ErrStopped is returned by driver calls after the member has been closed.
var ErrStopped = errors.New("member stopped")

// errEngineDead rejects submissions while the engine-death fault is on.
var errEngineDead = errors.New("engine is dead")

// driver is the real-time shell around one engine. Only its loop goroutine
// touches the engine: handlers send it closures over cmds, and a timer wakes
// it at the engine's NextEventAt to advance to the wall clock and hand the
// events to the requests' tickets.
type driver struct {
	cmds chan func(now time.Time)
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// Owned by the loop goroutine.
	profile engine.Profile
	seed    uint64
	eng     *engine.Engine
	tickets map[uint64]*ticket
	nextID  uint64
	events  []engine.Event
	dead    bool
	scale   float64
	squeeze int // reserved KV blocks

	// last is the newest metrics snapshot, kept for reads after the loop ends.
	lastMu sync.Mutex
	last   engine.Metrics
}

// newDriver builds the engine and starts the loop.
func newDriver(p engine.Profile, seed uint64) (*driver, error) {
	eng, err := engine.New(p, time.Now(), seed)
	if err != nil {
		return nil, err
	}
	d := &driver{
		cmds:    make(chan func(time.Time), 64),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		profile: p,
		seed:    seed,
		eng:     eng,
		tickets: make(map[uint64]*ticket),
		scale:   1,
		last:    eng.Metrics(),
	}
	go d.loop()
	return d, nil
}

func (d *driver) loop() {
	defer close(d.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var wake <-chan time.Time
		if at, ok := d.eng.NextEventAt(); ok {
			timer.Reset(time.Until(at))
			wake = timer.C
		}
		select {
		case f := <-d.cmds:
			now := time.Now()
			d.advance(now)
			f(now)
		case <-wake:
			d.advance(time.Now())
		case <-d.stop:
			timer.Stop()
			d.failAll()
			return
		}
	}
}

// advance brings the engine to now and delivers the events.
func (d *driver) advance(now time.Time) {
	d.events = d.eng.Advance(now, d.events[:0])
	d.deliver(d.events)
}

// deliver hands events to their tickets, one group at a time (see
// eventGroup): a request's last token and its finish reach the ticket as one
// update, so a handler never sees that token without the finish. vLLM sends
// them in one chunk, and for a natural stop the last token is EOS, whose text
// must not show.
func (d *driver) deliver(evs []engine.Event) {
	for len(evs) > 0 {
		n := eventGroup(evs)
		group := evs[:n]
		evs = evs[n:]
		t := d.tickets[group[0].ID]
		if t == nil {
			continue
		}
		t.apply(group...)
		if group[n-1].Kind == engine.EventFinish {
			delete(d.tickets, group[0].ID)
		}
	}
}

// eventGroup is how many leading events of evs (at least one) go to their
// ticket together: two when a token is followed by the same request's
// finish, which the engine emits right after the token that ends it.
func eventGroup(evs []engine.Event) int {
	if len(evs) < 2 || evs[1].Kind != engine.EventFinish || evs[1].ID != evs[0].ID {
		return 1
	}
	if k := evs[0].Kind; k == engine.EventFirstToken || k == engine.EventToken {
		return 2
	}
	return 1
}

// failAll ends every open request without an engine answer (death, close).
func (d *driver) failAll() {
	for id, t := range d.tickets {
		t.fail()
		delete(d.tickets, id)
	}
}

// call runs f in the loop goroutine and waits for it. It fails with
// ErrStopped once the loop has ended.
func (d *driver) call(f func(now time.Time)) error {
	finished := make(chan struct{})
	wrapped := func(now time.Time) {
		defer close(finished)
		f(now)
	}
	select {
	case d.cmds <- wrapped:
	case <-d.done:
		return ErrStopped
	}
	select {
	case <-finished:
		return nil
	case <-d.done:
		return ErrStopped
	}
}

// submit queues a request and returns its ticket. tokenEvents asks for one
// event per token (streams); ordinary requests only need the finish.
func (d *driver) submit(g genRequest, tokenEvents bool) (*ticket, error) {
	t := newTicket(g.stopAfter)
	var err error
	if cerr := d.call(func(now time.Time) {
		if d.dead {
			err = errEngineDead
			return
		}
		d.nextID++
		r := engine.Request{ID: d.nextID, PromptTokens: g.promptTokens, MaxTokens: g.maxTokens,
			StopAfter: g.stopAfter, TokenEvents: tokenEvents}
		if err = d.eng.Submit(now, r); err != nil {
			return
		}
		t.id = r.ID
		d.tickets[r.ID] = t
	}); cerr != nil {
		return nil, cerr
	}
	return t, err
}

// abort removes a request whose client went away. It does not wait: the
// handler is already leaving.
func (d *driver) abort(t *ticket) {
	f := func(now time.Time) {
		if d.tickets[t.id] != t {
			return // already finished
		}
		delete(d.tickets, t.id)
		d.eng.Abort(now, t.id)
	}
	select {
	case d.cmds <- f:
	case <-d.done:
	}
}

// metrics returns a snapshot of the engine's metrics at the wall clock (the
// last one taken, once the loop has ended).
func (d *driver) metrics() engine.Metrics {
	var m engine.Metrics
	if d.call(func(time.Time) { m = d.eng.Metrics() }) != nil {
		d.lastMu.Lock()
		defer d.lastMu.Unlock()
		return d.last
	}
	d.lastMu.Lock()
	d.last = m
	d.lastMu.Unlock()
	return m
}

// configure applies the engine-side faults: death, step-time scale and KV
// squeeze (reserved blocks).
func (d *driver) configure(dead bool, scale float64, reserved int) error {
	var err error
	if cerr := d.call(func(now time.Time) { err = d.reconfigure(now, dead, scale, reserved) }); cerr != nil {
		return cerr
	}
	return err
}

func (d *driver) reconfigure(now time.Time, dead bool, scale float64, reserved int) error {
	switch {
	case dead && !d.dead:
		// A dead engine answers nothing more: open requests are cut, not
		// finished, so none is counted (vLLM reports no success, abort or
		// latency for requests a crash took). The crashed engine is dropped
		// whole for a fresh one, as a restarted vLLM would expose: gauges at
		// 0 and counters from zero (a counter reset to Prometheus). It takes
		// no request until revival, which only lifts the fault.
		eng, err := engine.New(d.profile, now, d.seed)
		if err != nil {
			return err
		}
		d.failAll()
		d.eng, d.dead = eng, true
		d.scale, d.squeeze = 1, 0
	case !dead && d.dead:
		d.dead = false
	}
	if scale != d.scale {
		if err := d.eng.SetStepScale(now, scale); err != nil {
			return err
		}
		d.scale = scale
	}
	if reserved != d.squeeze {
		if err := d.eng.SetReservedBlocks(now, reserved); err != nil {
			return err
		}
		d.squeeze = reserved
	}
	return nil
}

// close stops the loop, failing open requests, and waits for it to end.
func (d *driver) close() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}

// ticket is one request's mailbox: the driver writes progress, the handler
// reads it. Progress coalesces (a slow reader sees several tokens at once,
// as vLLM merges outputs a slow client has not consumed), so the mailbox
// never grows.
type ticket struct {
	id     uint64 // set by the loop before the ticket is shared
	notify chan struct{}

	mu      sync.Mutex
	p       progress
	updates int // progress publications (one wake each)
}

// progress is what a handler needs to render a response.
type progress struct {
	generated int
	finished  bool
	reason    engine.FinishReason
	failed    bool // the engine died or the member closed: no answer
	stopAfter int  // the natural stop length (its token is EOS); 0 = none
}

func newTicket(stopAfter int) *ticket {
	return &ticket{notify: make(chan struct{}, 1), p: progress{stopAfter: stopAfter}}
}

// apply publishes a group of one request's events as one update: a reader
// sees the state before the group or after all of it.
func (t *ticket) apply(evs ...engine.Event) {
	t.mu.Lock()
	changed := false
	for _, ev := range evs {
		switch ev.Kind {
		case engine.EventFirstToken, engine.EventToken:
			t.p.generated = ev.Generated
			changed = true
		case engine.EventFinish:
			t.p.generated = ev.Generated
			t.p.finished, t.p.reason = true, ev.Reason
			changed = true
		case engine.EventPreempt:
			// invisible to the client; tokens already sent stay sent
		}
	}
	if changed {
		t.updates++
	}
	t.mu.Unlock()
	if changed {
		t.wake()
	}
}

func (t *ticket) fail() {
	t.mu.Lock()
	t.p.failed = true
	t.mu.Unlock()
	t.wake()
}

func (t *ticket) wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

func (t *ticket) load() progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

package fakevllm

import (
	"errors"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/fakevllm/engine"
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
	for _, ev := range d.events {
		t := d.tickets[ev.ID]
		if t == nil {
			continue
		}
		t.apply(ev)
		if ev.Kind == engine.EventFinish {
			delete(d.tickets, ev.ID)
		}
	}
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
	t := newTicket()
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
		// A dead engine answers nothing more: requests are cut, not finished.
		for id := range d.tickets {
			d.eng.Abort(now, id)
		}
		d.failAll()
		d.dead = true
	case !dead && d.dead:
		// Revival is a restart: a fresh engine, counters from zero.
		eng, err := engine.New(d.profile, now, d.seed)
		if err != nil {
			return err
		}
		d.eng, d.dead = eng, false
		d.scale, d.squeeze = 1, 0
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

	mu sync.Mutex
	p  progress
}

// progress is what a handler needs to render a response.
type progress struct {
	generated int
	finished  bool
	reason    engine.FinishReason
	failed    bool // the engine died or the member closed: no answer
}

func newTicket() *ticket { return &ticket{notify: make(chan struct{}, 1)} }

func (t *ticket) apply(ev engine.Event) {
	t.mu.Lock()
	switch ev.Kind {
	case engine.EventFirstToken, engine.EventToken:
		t.p.generated = ev.Generated
	case engine.EventFinish:
		t.p.generated = ev.Generated
		t.p.finished, t.p.reason = true, ev.Reason
	case engine.EventPreempt:
		t.mu.Unlock()
		return // invisible to the client; tokens already sent stay sent
	}
	t.mu.Unlock()
	t.wake()
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

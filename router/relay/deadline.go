package relay

import (
	"context"
	"sync"
	"time"
)

// deadlines are one attempt's three timers on one time.Timer: the whole attempt's timeout
// (Options.Timeout), the first-byte deadline (Options.FirstByteTimeout) and the wait for a stream's
// end after [DONE] (doneDrainWait). Each cancels the attempt with its own cause, the first to expire
// winning. One timer with one callback costs three allocations an attempt where three timers cost
// seven.
//
// The first-byte deadline runs from the moment the request body has been sent (at once for a byte
// body, at the end of a streamed one: an upload may take longer than the answer) until
// stopFirstByte; without a first-byte timeout it never runs.
type deadlines struct {
	cancel    context.CancelCauseFunc
	firstWait time.Duration

	mu    sync.Mutex
	t     *time.Timer
	whole time.Time // the attempt's timeout; zero: none
	first time.Time // the running first-byte deadline; zero when it is not running
	drain time.Time // the wait after [DONE]; zero when not waiting
	phase firstPhase
	ended bool // a deadline fired or stop was called: nothing fires any more
}

// firstPhase is where the first-byte deadline is.
type firstPhase uint8

const (
	firstIdle    firstPhase = iota // not started yet
	firstRunning                   // started, not stopped
	firstStopped                   // stopped before it fired (or before it started)
	firstFired                     // fired: the attempt is canceled with ErrFirstByteTimeout
)

func newDeadlines(cancel context.CancelCauseFunc, timeout, firstByte time.Duration) *deadlines {
	d := &deadlines{cancel: cancel, firstWait: firstByte}
	if timeout > 0 {
		d.mu.Lock()
		d.whole = time.Now().Add(timeout)
		d.arm()
		d.mu.Unlock()
	}
	return d
}

// startFirstByte starts the first-byte deadline once; after stopFirstByte it does nothing.
func (d *deadlines) startFirstByte() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.firstWait <= 0 || d.phase != firstIdle {
		return
	}
	d.phase, d.first = firstRunning, time.Now().Add(d.firstWait)
	d.arm()
}

// stopFirstByte stops the first-byte deadline and reports whether it had not fired; later calls
// report the same.
func (d *deadlines) stopFirstByte() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.phase == firstIdle || d.phase == firstRunning {
		d.phase, d.first = firstStopped, time.Time{}
		d.arm()
	}
	return d.phase != firstFired
}

// startDrain starts the wait for the stream's end after [DONE].
func (d *deadlines) startDrain() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drain = time.Now().Add(doneDrainWait)
	d.arm()
}

// stop ends every deadline; none fires after it returns (a callback already running finds it ended).
func (d *deadlines) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	if d.t != nil {
		d.t.Stop()
	}
}

// arm sets the timer for the earliest pending deadline, or stops it when none is. d.mu is held.
func (d *deadlines) arm() {
	var next time.Time
	for _, at := range [...]time.Time{d.whole, d.first, d.drain} {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	switch {
	case d.ended || next.IsZero():
		if d.t != nil {
			d.t.Stop()
		}
	case d.t == nil:
		d.t = time.AfterFunc(time.Until(next), d.fire)
	default:
		d.t.Reset(time.Until(next))
	}
}

// fire is the timer's callback: it cancels the attempt with the cause of the deadline that expired
// first (the callback may run late, after more than one has), or re-arms when none has (the timer
// was set for a deadline since stopped or moved). It cancels under d.mu, so stopFirstByte can never
// report the first byte's deadline fired before the context holds its cause; nothing cancel runs
// takes d.mu (context.AfterFunc functions and the transport's watchers run in their own goroutines).
func (d *deadlines) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	now := time.Now()
	var cause error
	var at time.Time
	expired := func(deadline time.Time, c error) {
		if !deadline.IsZero() && !now.Before(deadline) && (cause == nil || deadline.Before(at)) {
			cause, at = c, deadline
		}
	}
	if d.phase == firstRunning {
		expired(d.first, ErrFirstByteTimeout)
	}
	expired(d.whole, ErrTimeout)
	expired(d.drain, errDrainWait)
	if cause == nil {
		d.arm()
		return
	}
	if cause == ErrFirstByteTimeout {
		d.phase = firstFired
	}
	d.ended = true
	d.cancel(cause)
}

package admission

// The admission queue: an opt-in, bounded FIFO per tier of requests that found no capacity. A waiter
// holds no reservation, only its place. The order is admission's (kept under the tier lock, so a
// newcomer can never overtake a waiter); the waiting is the caller's (the server waits on a ticket's
// channel with a deadline, the simulator replays the queue on virtual time). Selection still happens
// once, at reservation time: the head retries the whole atomic check-select-reserve of Acquire or
// AcquireMember on the snapshots of that moment.

// MaxWaiting bounds a tier's queue.
const MaxWaiting = 100_000

// Ticket is one request's place in a tier's queue, from Enqueue until it acquires through
// AcquireQueued or leaves with Leave. Its fields are guarded by the tier's lock.
type Ticket struct {
	tier  *tierState
	seq   uint64
	gone  bool          // left the queue (acquired, left, or swept by a tier quiesce)
	wake  chan struct{} // handed out by Wait, closed when retrying may succeed
	woken bool          // a wake-up came while no channel was out: the next Wait returns at once
}

// Enqueue places a request at the tail of the tier's queue. It refuses with ErrNoQueue when the tier
// has no queue, ErrQuiesced while the tier is quiesced (a quiesced tier admits nothing, so waiting is
// pointless), ErrQueueFull when the queue holds its max_waiting requests (the bound in force: a
// lowered bound cuts no waiter, it refuses newcomers until the queue is under it) and ErrSuperseded
// when a reload replaced this view's generation.
func (t *TierAdmission) Enqueue() (*Ticket, error) {
	tk := &Ticket{tier: t.tierState} // allocated outside the lock
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.supersededLocked():
		return nil, errSuperseded
	case t.cur.maxWaiting == 0:
		return nil, errNoQueue
	case t.quiesced:
		return nil, errTierQuiesced
	case t.waiting >= t.cur.maxWaiting:
		t.queueFull++
		return nil, errQueueFull
	}
	t.nextSeq++
	tk.seq = t.nextSeq
	t.queue = append(t.queue, tk)
	t.waiting++
	return tk, nil
}

// Wait returns a channel that is closed when retrying may succeed: the ticket is at the head and a
// lease was released, the ticket became the head, or the tier's quiesce state changed. A wake-up
// that came since the ticket's last Wait (between a failed retry and this call, say) is not lost:
// the channel is then closed already. Spurious wake-ups cost a retry, nothing else.
func (tk *Ticket) Wait() <-chan struct{} {
	t := tk.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk.gone || tk.woken {
		tk.woken = false
		done := make(chan struct{})
		close(done)
		return done
	}
	if tk.wake == nil {
		tk.wake = make(chan struct{})
	}
	return tk.wake
}

// wakeLocked closes the ticket's channel, or remembers the wake-up for the next Wait.
func (tk *Ticket) wakeLocked() {
	if tk.wake == nil {
		tk.woken = true
		return
	}
	close(tk.wake)
	tk.wake = nil
}

// Leave removes the ticket from the queue (a timeout, a caller that went away). It reports whether
// the ticket was still waiting; leaving twice, or after AcquireQueued succeeded, changes nothing.
func (t *TierAdmission) Leave(tk *Ticket) bool {
	if tk == nil || tk.tier != t.tierState {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk.gone {
		return false
	}
	t.leaveLocked(tk)
	return true
}

// leaveLocked takes a waiting tk (nil: none) off the queue; when it was the head, the next in line
// may fit now and is told.
func (t *tierState) leaveLocked(tk *Ticket) {
	if tk == nil || tk.gone {
		return
	}
	wasHead := t.headLocked() == tk
	t.dropLocked(tk)
	if wasHead {
		t.wakeHeadLocked()
	}
}

// headLocked returns the first ticket still waiting, compacting left ones off the front.
func (t *tierState) headLocked() *Ticket {
	for len(t.queue) > 0 && t.queue[0].gone {
		t.queue[0] = nil
		t.queue = t.queue[1:]
	}
	if len(t.queue) == 0 {
		return nil
	}
	return t.queue[0]
}

// dropLocked marks tk gone; it leaves the slice lazily (headLocked compacts the front), so Leave from
// the middle of a long queue costs O(1).
func (t *tierState) dropLocked(tk *Ticket) {
	tk.gone = true
	t.waiting--
	tk.wakeLocked()
	if t.waiting == 0 {
		clear(t.queue)
		t.queue = t.queue[:0]
	}
}

// wakeHeadLocked tells the head that retrying may succeed.
func (t *tierState) wakeHeadLocked() {
	if h := t.headLocked(); h != nil {
		h.wakeLocked()
	}
}

// wakeAllLocked tells every waiter to retry: the tier's quiesce state changed.
func (t *tierState) wakeAllLocked() {
	for _, tk := range t.queue {
		if !tk.gone {
			tk.wakeLocked()
		}
	}
}

// queueAheadLocked refuses a request that would overtake waiters: with tk nil, any waiter; with a
// ticket, any waiter before it.
func (t *tierState) queueAheadLocked(tk *Ticket) error {
	if tk != nil && tk.gone {
		return errTicketGone
	}
	if h := t.headLocked(); h != nil && h != tk {
		return errQueueAhead
	}
	return nil
}

// admittedLocked takes tk (the head, which just acquired) off the queue and wakes the next head.
func (t *tierState) admittedLocked(tk *Ticket) {
	if tk == nil {
		return
	}
	t.dropLocked(tk)
	t.wakeHeadLocked()
}

// Leave removes the ticket from its tier's queue, whatever generation it was taken through (Leave on
// the tier is the same). It reports whether the ticket was still waiting.
func (tk *Ticket) Leave() bool {
	if tk == nil || tk.tier == nil {
		return false
	}
	t := tk.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk.gone {
		return false
	}
	t.leaveLocked(tk)
	return true
}

// Holds reports whether tk is a ticket of this tier's queue (taken through any generation of it).
func (t *TierAdmission) Holds(tk *Ticket) bool { return tk != nil && tk.tier == t.tierState }

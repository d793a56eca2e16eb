package engine

import (
	"math"
	"time"
)

// horizon bounds the engine timeline (about 146 years after start) so that
// no time arithmetic can overflow; later times are clamped to it.
const horizon = int64(1) << 62

// maxStep bounds one step's duration whatever the profile, scale and jitter.
const maxStep = int64(time.Hour)

// MaxStepScale bounds SetStepScale.
const MaxStepScale = 1000.0

type reqState uint8

const (
	stateFree reqState = iota
	stateWaiting
	stateRunning
)

// slot holds one request. Token counts fit int32 because max_model_len is
// at most MaxModelLenLimit; the fields every step touches come first so a
// slot's hot part shares one cache line. Times are nanoseconds since start.
type slot struct {
	computed    int32 // tokens whose KV exists (vLLM num_computed_tokens)
	generated   int32
	prompt      int32
	capTokens   int32 // blocks * block size
	sched       int32 // tokens scheduled in the step in flight
	maxTokens   int32
	stopAfter   int32 // 0: never; values above maxTokens are stored as 0
	blocks      int32
	lastToken   int64
	state       reqState
	tokenEvents bool
	id          uint64
	arrival     int64
	firstSched  int64 // -1 until first scheduled
}

// Engine is one simulated vLLM engine. Create it with New.
type Engine struct {
	p         Profile
	start     time.Time
	modelLen  int
	usable    int // num_gpu_blocks - 1
	used      int // blocks held by requests
	reserved  int // blocks held back by SetReservedBlocks
	scale     float64
	rng       splitmix
	now       int64
	inFlight  bool
	stepStart int64
	stepEnd   int64

	slots   []slot
	free    []int32
	ids     map[uint64]int32
	running []int32 // admission order: oldest first, newest last
	// batchLen: the step in flight scheduled running[:batchLen]. The batch is
	// always a prefix: waiting requests are admitted (appended) only when
	// every running request was scheduled.
	batchLen int
	waiting  deque
	pending  []Event // produced by Submit, Abort and controls; handed out by Advance

	preemptions, promptTokens, genTokens, submitted, steps uint64
	success                                                FinishCounts
	ttft, itl, e2e, queue                                  hist
	last                                                   stepAcc
}

// New returns an idle engine whose clock starts at start. seed feeds the
// step-time jitter; it is unused when the profile's Jitter is 0.
func New(p Profile, start time.Time, seed uint64) (*Engine, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Engine{
		p:        p,
		start:    start,
		modelLen: p.ModelLen(),
		usable:   p.NumGPUBlocks - 1,
		scale:    1,
		rng:      splitmix{s: seed},
		ids:      make(map[uint64]int32),
		ttft:     newHist(TTFTBuckets()),
		itl:      newHist(ITLBuckets()),
		e2e:      newHist(RequestLatencyBuckets()),
		queue:    newHist(RequestLatencyBuckets()),
	}, nil
}

// Profile returns the engine's profile.
func (e *Engine) Profile() Profile { return e.p }

// Now is the engine clock: the latest time it has been brought to.
func (e *Engine) Now() time.Time { return e.at(e.now) }

func (e *Engine) at(ns int64) time.Time { return e.start.Add(time.Duration(ns)) }

// clock converts t to engine nanoseconds, clamped to [now, horizon]: the
// engine cannot revise its past, so a late call happens "now".
func (e *Engine) clock(t time.Time) int64 {
	ns := int64(t.Sub(e.start))
	ns = min(ns, horizon)
	return max(ns, e.now)
}

// Submit brings the engine to at, then queues r at the back of the waiting
// queue with arrival time at (or the engine clock, if at is earlier). An
// idle engine starts a step at once. Events of steps that ended by at are
// kept for the next Advance (NextEventAt reports them as due). A request
// with invalid fields leaves the engine untouched; a duplicate ID is refused
// after the engine was brought to at (an ID is free again once its request
// finished).
func (e *Engine) Submit(at time.Time, r Request) error {
	if err := e.check(r); err != nil {
		return err
	}
	e.pending = e.run(e.clock(at), e.pending)
	if _, dup := e.ids[r.ID]; dup {
		return ErrDuplicateID
	}
	stop := r.StopAfter
	if stop > r.MaxTokens {
		stop = 0 // never reached: MaxTokens ends the request first
	}
	idx := e.alloc()
	e.slots[idx] = slot{
		id: r.ID, prompt: int32(r.PromptTokens), maxTokens: int32(r.MaxTokens), stopAfter: int32(stop),
		tokenEvents: r.TokenEvents, state: stateWaiting, arrival: e.now, firstSched: -1,
	}
	e.ids[r.ID] = idx
	e.waiting.pushBack(idx)
	e.submitted++
	e.kick()
	return nil
}

func (e *Engine) check(r Request) error {
	switch {
	case r.PromptTokens < 1:
		return errorf(ErrInvalidRequest, "prompt tokens must be at least 1")
	case r.MaxTokens < 1:
		return errorf(ErrInvalidRequest, "max tokens must be at least 1")
	case r.StopAfter < 0:
		return errorf(ErrInvalidRequest, "stop-after must not be negative")
	case r.PromptTokens > e.modelLen || r.MaxTokens > e.modelLen-r.PromptTokens:
		return ErrTooLong
	}
	return nil
}

func (e *Engine) alloc() int32 {
	if n := len(e.free); n > 0 {
		idx := e.free[n-1]
		e.free = e.free[:n-1]
		return idx
	}
	e.slots = append(e.slots, slot{})
	return int32(len(e.slots) - 1)
}

// Abort brings the engine to at, then removes request id, freeing its slot
// and KV blocks, counting it as finished with reason abort and emitting its
// finish event. A step in flight keeps its cost but emits nothing for it.
// It reports whether id was in the engine.
func (e *Engine) Abort(at time.Time, id uint64) bool {
	e.pending = e.run(e.clock(at), e.pending)
	idx, ok := e.ids[id]
	if !ok {
		return false
	}
	s := &e.slots[idx]
	if s.state == stateWaiting {
		e.waiting.remove(idx)
	} else {
		e.removeRunning(idx)
	}
	e.pending = e.finish(idx, FinishAbort, e.pending)
	e.kick()
	return true
}

func (e *Engine) removeRunning(idx int32) {
	for i, v := range e.running {
		if v == idx {
			e.running = append(e.running[:i], e.running[i+1:]...)
			if i < e.batchLen {
				e.batchLen-- // it keeps its cost but leaves the batch
			}
			return
		}
	}
}

// NextEventAt is when Advance next has something to return: the time of
// already produced events (at or before the clock) or the end of the step in
// flight. It is false when the engine is idle with nothing to report.
func (e *Engine) NextEventAt() (time.Time, bool) {
	if len(e.pending) > 0 {
		return e.pending[0].At, true
	}
	if e.inFlight {
		return e.at(e.stepEnd), true
	}
	return time.Time{}, false
}

// Advance brings the engine to to, running every step that ends at or
// before it, and appends to dst, in time order, the events that happened up
// to then (including those produced by Submit and Abort calls since the last
// Advance). Reusing dst across calls makes steady-state steps allocation
// free.
func (e *Engine) Advance(to time.Time, dst []Event) []Event {
	dst = append(dst, e.pending...)
	e.pending = e.pending[:0]
	return e.run(e.clock(to), dst)
}

// run processes every step ending at or before t and moves the clock to t.
func (e *Engine) run(t int64, dst []Event) []Event {
	for e.inFlight && e.stepEnd <= t {
		e.now = e.stepEnd
		e.inFlight = false
		dst = e.endStep(dst)
		dst = e.startStep(dst)
	}
	e.now = t
	return dst
}

// kick starts a step when the engine is idle and has work it can schedule.
func (e *Engine) kick() {
	if !e.inFlight {
		e.pending = e.startStep(e.pending)
	}
}

// SetStepScale multiplies the duration of every step started after at by
// factor (a slowdown fault when above 1). factor must be in (0, 1000].
func (e *Engine) SetStepScale(at time.Time, factor float64) error {
	if math.IsNaN(factor) || factor <= 0 || factor > MaxStepScale {
		return errorf(ErrInvalidControl, "step scale must be in (0, 1000]")
	}
	e.pending = e.run(e.clock(at), e.pending)
	e.scale = factor
	return nil
}

// SetReservedBlocks holds n usable KV blocks away from requests from at on
// (a KV squeeze fault): they count as used in KVUsage, and running requests
// that can no longer grow are preempted as in a real KV shortage. n must be
// from 0 to the usable block count.
func (e *Engine) SetReservedBlocks(at time.Time, n int) error {
	if n < 0 || n > e.usable {
		return errorf(ErrInvalidControl, "reserved blocks must be from 0 to num_gpu_blocks-1")
	}
	e.pending = e.run(e.clock(at), e.pending)
	e.reserved = n
	e.kick()
	return nil
}

// Metrics returns a value copy of the metrics at the engine clock.
func (e *Engine) Metrics() Metrics {
	used := min(e.used+e.reserved, e.usable)
	return Metrics{
		Running:          len(e.running),
		Waiting:          e.waiting.len(),
		WaitingCapacity:  e.waiting.len(),
		KVUsage:          float64(used) / float64(e.usable),
		UsedBlocks:       used,
		TotalBlocks:      e.usable,
		Preemptions:      e.preemptions,
		PromptTokens:     e.promptTokens,
		GenerationTokens: e.genTokens,
		Success:          e.success,
		Submitted:        e.submitted,
		Steps:            e.steps,
		TTFT:             e.ttft.view(),
		ITL:              e.itl.view(),
		E2E:              e.e2e.view(),
		QueueTime:        e.queue.view(),
		LastStep:         e.last.view(e),
	}
}

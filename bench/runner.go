package bench

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// Target is where a run sends its requests.
type Target struct {
	Name  string   // labels records and reports: "direct", "routed", "run"
	URLs  []string // base URLs; request i goes to URLs[i mod len] (client-side round robin)
	Model string   // the model name the requests carry
	Token string   // bearer token, "" for none; never written anywhere
}

// Validate checks the target: a name, one to MaxURLs http(s) base URLs without credentials,
// query or fragment, and a model.
func (t *Target) Validate() error {
	if !labelPattern.MatchString(t.Name) {
		return fmt.Errorf("%w: target name must be 1-64 characters [A-Za-z0-9._-]", ErrInvalid)
	}
	if len(t.URLs) < 1 || len(t.URLs) > MaxURLs {
		return fmt.Errorf("%w: %s needs 1 to %d URLs", ErrInvalid, t.Name, MaxURLs)
	}
	for _, raw := range t.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%w: %s URLs must be http(s)://host[:port][/prefix] without credentials, query or fragment", ErrInvalid, t.Name)
		}
	}
	if t.Model == "" || !printable(t.Model) {
		return fmt.Errorf("%w: %s needs a model name of 1-%d printable characters", ErrInvalid, t.Name, maxTextField)
	}
	return nil
}

// Info is the target as reports name it: no URLs, no token.
func (t *Target) Info() TargetInfo {
	return TargetInfo{Name: t.Name, Model: t.Model, URLs: len(t.URLs)}
}

// Live are a run's counters as it goes, for a progress display (safe for concurrent reads), and its
// early warning.
type Live struct {
	Sent, Done, Failed, InFlight atomic.Int64
	// Tokens counts output tokens as they arrive, warm-up included (anvil-qualify's calibration
	// windows read it): one per content chunk of a stream, corrected to the answer's own usage count
	// when it ends well (a chunk may carry several tokens), and an ordinary answer's output tokens
	// when it ends. A request that fails takes back the chunks it added: only successful output counts.
	Tokens atomic.Int64
	// OnStart, when set, is called once with the measured phase's start (the zero of its records'
	// Start) before its first request leaves, on the run's goroutine.
	OnStart func(start time.Time)
	// OnAllUnauthorized, when set, is called once, as soon as the run's first EarlyAnswers answers
	// (warm-up included) have all been 401 Unauthorized, or at its end when it had fewer answers,
	// all 401: almost surely a missing or wrong token. It gets the number of answers and runs on a
	// request's goroutine.
	OnAllUnauthorized func(answers int)
}

// RunResult is one run against one target.
type RunResult struct {
	Target TargetInfo
	// Records holds the warm-up requests, then the measured ones, each in ID order.
	Records     []Record
	Stopped     string // why the run stopped early, "" when it ran to its end
	MaxInFlight int    // the most requests in flight at once, warm-up included
}

// sender sends one request and fills its record; *Client is the real one.
type sender interface {
	send(ctx context.Context, k call, rec *Record, runStart time.Time)
}

// Run sends plan p to target t: the warm-up requests first, then the measured ones, in a closed
// loop (every client sends its next request when its last one ended and its pause is over) or an
// open loop (requests leave at the schedule's times whatever the target does). It returns when
// every request has ended. Cancelling ctx stops the run like an over-saturation stop does.
func Run(ctx context.Context, c *Client, p Plan, t Target, round int, live *Live) (*RunResult, error) {
	return RunUntil(ctx, c, p, t, round, live, nil)
}

// RunUntil is Run whose arrivals also end when until is closed (nil: never): from then on no request
// leaves, and the ones in flight run to their end, unlike a cancelled ctx, which cuts them. The
// plan's count or window still bounds the run. A caller whose load must last exactly as long as
// something else it does (anvil-qualify's failure injection) closes until when that is done.
func RunUntil(ctx context.Context, c *Client, p Plan, t Target, round int, live *Live, until <-chan struct{}) (*RunResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if live == nil {
		live = &Live{}
	}
	return run(ctx, c, &p, &t, round, live, until), nil
}

// runner is one run's shared state.
type runner struct {
	p     *Plan
	t     *Target
	s     sender
	round int
	live  *Live
	urls  []string        // the endpoint URL of each base URL
	until <-chan struct{} // closed: no request leaves any more (nil: never)

	stop context.CancelCauseFunc

	auth authWatch // are the early answers all 401?

	mu          sync.Mutex
	recs        []Record
	inFlight    int
	maxInFlight int
	stopped     string
	window      []bool // the last ErrorWindow measured requests: failed?
	wnext       int
	wfull       bool
	wfailed     int
}

// phase is the warm-up or the measurement.
type phase struct {
	warm   bool
	shapes *Shapes
	limit  int           // requests; 0 = until the window ends
	window time.Duration // only when limit is 0
	start  time.Time
	next   int // the next request's ID
}

func run(ctx context.Context, s sender, p *Plan, t *Target, round int, live *Live, until <-chan struct{}) *RunResult {
	r := &runner{p: p, t: t, s: s, round: round, live: live, until: until}
	for _, u := range t.URLs {
		r.urls = append(r.urls, strings.TrimRight(u, "/")+p.Endpoint.Path())
	}
	if p.Stop.ErrorWindow > 0 {
		r.window = make([]bool, p.Stop.ErrorWindow)
	}
	ctx, r.stop = context.WithCancelCause(ctx)
	defer r.stop(nil)
	if p.Warmup > 0 {
		r.warmup(ctx)
	}
	if ctx.Err() == nil {
		ph := &phase{shapes: NewShapes(p.Workload, p.Seed), limit: p.Requests, window: p.Duration, start: time.Now()}
		if live.OnStart != nil {
			live.OnStart(ph.start)
		}
		if c := p.Workload.Closed; c != nil {
			r.closed(ctx, ph, c, c.Clients)
		} else {
			r.open(ctx, ph)
		}
	}
	if ctx.Err() != nil && r.stopped == "" {
		r.stopped = "interrupted"
	}
	if r.auth.final() {
		r.warnUnauthorized()
	}
	slices.SortFunc(r.recs, func(a, b Record) int {
		if a.Warmup != b.Warmup {
			if a.Warmup {
				return -1
			}
			return 1
		}
		return a.ID - b.ID
	})
	return &RunResult{Target: t.Info(), Records: r.recs, Stopped: r.stopped, MaxInFlight: r.maxInFlight}
}

// warmup sends the warm-up requests: back to back from WarmupClients clients (by default as many
// as the closed loop has, one for an open loop), on shapes of their own.
func (r *runner) warmup(ctx context.Context) {
	c := scenarios.Closed{Backoff: scenarios.DefaultBackoff, Clients: 1}
	if wc := r.p.Workload.Closed; wc != nil {
		c = scenarios.Closed{Backoff: wc.Backoff, Clients: wc.Clients}
	}
	if r.p.WarmupClients > 0 {
		c.Clients = r.p.WarmupClients
	}
	ph := &phase{warm: true, shapes: newWarmupShapes(r.p.Workload, r.p.Seed), limit: r.p.Warmup, start: time.Now()}
	r.closed(ctx, ph, &c, min(c.Clients, r.p.Warmup))
}

// closed runs clients closed-loop clients until the phase is over.
func (r *runner) closed(ctx context.Context, ph *phase, c *scenarios.Closed, clients int) {
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { r.client(ctx, ph, c) })
	}
	wg.Wait()
}

// client is one closed-loop client: send, pause (think, Retry-After or backoff), send again.
func (r *runner) client(ctx context.Context, ph *phase, c *scenarios.Closed) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	ready := ph.start
	for ctx.Err() == nil {
		id, sh, ok := r.take(ph, ready)
		if !ok {
			return
		}
		rec := r.do(ctx, ph, id, sh, ready.Sub(ph.start))
		d := pause(c, &rec)
		if d > 0 {
			if ph.limit == 0 && time.Since(ph.start)+d >= ph.window {
				return // the next request would fall after the window
			}
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			case <-r.until:
				return
			}
		}
		ready = time.Now()
	}
}

// open sends the schedule's arrivals.
func (r *runner) open(ctx context.Context, ph *phase) {
	arr := NewArrivals(*r.p.Workload.Open, r.p.Seed, ph.limit, ph.window)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		at, ok := arr.Next()
		if !ok {
			return
		}
		if d := time.Until(ph.start.Add(at)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			case <-r.until:
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		// The schedule already ends at the window (by the simulator's rule), so the request is
		// taken as if ready at the start.
		id, sh, ok := r.take(ph, ph.start)
		if !ok {
			return
		}
		wg.Go(func() { r.do(ctx, ph, id, sh, at) })
	}
}

// take hands out the next request of the phase, ready to leave at ready, or says the phase is
// over: its count is reached, its window has passed, its until was closed, or the run was stopped. Taking a request
// puts it in flight; a measured request over the in-flight bound stops the run instead.
func (r *runner) take(ph *phase, ready time.Time) (int, scenarios.Shape, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped != "":
		return 0, scenarios.Shape{}, false
	case ph.limit > 0 && ph.next >= ph.limit:
		return 0, scenarios.Shape{}, false
	case ph.limit == 0 && ready.Sub(ph.start) >= ph.window:
		return 0, scenarios.Shape{}, false
	case r.ended():
		return 0, scenarios.Shape{}, false
	}
	if !ph.warm && r.p.Stop.MaxInFlight > 0 && r.inFlight >= r.p.Stop.MaxInFlight {
		r.halt(fmt.Sprintf("over-saturated: more than %d requests in flight", r.p.Stop.MaxInFlight))
		return 0, scenarios.Shape{}, false
	}
	id := ph.next
	ph.next++
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.live.InFlight.Add(1)
	r.live.Sent.Add(1)
	return id, ph.shapes.Next(), true
}

// ended reports whether until was closed.
func (r *runner) ended() bool {
	select {
	case <-r.until:
		return true
	default:
		return false
	}
}

// do sends one request under its timeout and scheduled cancellation and files its record.
func (r *runner) do(ctx context.Context, ph *phase, id int, sh scenarios.Shape, scheduled time.Duration) Record {
	ctx, cancel := context.WithTimeoutCause(ctx, r.p.Timeout, errTimeout)
	defer cancel()
	if sh.CancelAfter > 0 {
		var cancelClient context.CancelFunc
		ctx, cancelClient = context.WithTimeoutCause(ctx, sh.CancelAfter, errScheduledCancel)
		defer cancelClient()
	}
	u := id % len(r.urls)
	rec := Record{
		Target: r.t.Name, Round: r.round, ID: id, Warmup: ph.warm, URL: u, Stream: sh.Stream, Scheduled: scheduled,
		RequestedPrompt: sh.Prompt, RequestedOutput: sh.Output,
	}
	k := call{url: r.urls[u], model: r.t.Model, token: r.t.Token, ep: r.p.Endpoint, shape: sh, ignoreEOS: r.p.IgnoreEOS,
		tokens: &r.live.Tokens}
	r.s.send(ctx, k, &rec, ph.start)
	r.file(&rec)
	if r.auth.note(rec.Status) {
		r.warnUnauthorized()
	}
	return rec
}

// file keeps a finished request and applies the error-rate stop.
func (r *runner) file(rec *Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, *rec)
	r.inFlight--
	r.live.InFlight.Add(-1)
	r.live.Done.Add(1)
	failed := rec.Outcome != OK && rec.Outcome != Canceled
	if failed {
		r.live.Failed.Add(1)
	}
	if rec.Warmup || r.window == nil {
		return
	}
	if r.wfull && r.window[r.wnext] {
		r.wfailed--
	}
	r.window[r.wnext] = failed
	if failed {
		r.wfailed++
	}
	r.wnext++
	if r.wnext == len(r.window) {
		r.wnext, r.wfull = 0, true
	}
	if r.wfull && float64(r.wfailed) > r.p.Stop.MaxErrorRate*float64(len(r.window)) {
		r.halt(fmt.Sprintf("over-saturated: more than %g of the last %d requests failed", r.p.Stop.MaxErrorRate, len(r.window)))
	}
}

// halt stops the run (the first reason wins): no request is taken any more, and the ones in flight
// are cancelled. Called with mu held.
func (r *runner) halt(reason string) {
	if r.stopped != "" {
		return
	}
	r.stopped = reason
	r.stop(errStopped)
}

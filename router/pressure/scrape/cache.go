// Package scrape is the production shell of the pressure cache: it fetches a member's /metrics page
// over HTTP, parses it with expfmt, hands the families to the tier's engine adapter
// (router/pressure/adapter) for the served model's pressure, and runs at most two worker goroutines
// that feed pressure.Core.
//
// Reading guide:
//
//   - fetch.go, parse.go: FetchWith GETs a member's /metrics (1 s, 1 MiB+1 byte bound, no
//     redirects) and ParseWith parses the page with prometheus/common/expfmt and calls the adapter,
//     which matches whole metric names and keeps the tier's served model only. Fetch and Parse are
//     the vLLM adapter's. Outcomes are classified (pressure.ClassOK, ClassFailed, ClassUnknown); no
//     raw text, label or error escapes.
//   - cache.go: Cache. It reads the clock outside its lock, holds the lock only around Core calls, and
//     runs at most two worker goroutines for the whole cache, started lazily on the first scheduled
//     refresh. Each job carries its tier's engine, so a worker reads every page with its tier's
//     adapter. An optional observer hears each completed scrape (tier, member, class, duration) for
//     metrics; Peek and Pending read without scheduling anything.
//
// The parser lives here rather than beside the core because expfmt links net/http: the core, the
// adapters, and the simulator that drives them stay free of it.
package scrape

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// MaxWorkers is the number of collector goroutines of one Cache, whatever its size.
// Two stalled members can hold both; others then read stale or unknown pressure,
// which is the price of a fixed bound instead of a goroutine per member or request.
const MaxWorkers = 2

// Options tunes a Cache. The zero value is production: the wall clock and Fetch.
type Options struct {
	// Now reads the clock (default time.Now). It is called outside the cache lock.
	Now func() time.Time
	// Fetch collects one member (default: Fetch with the cache's client). It runs on
	// a worker, outside any lock, with a context that expires after pressure.FetchTimeout
	// and is cancelled by Close.
	Fetch func(ctx context.Context, job pressure.Job) (pressure.Sample, pressure.Class)
	// Observe, when set, hears every completed scrape of an open cache: for metrics. It
	// runs on the worker after the result is published, outside the lock, and must not
	// block.
	Observe func(Scrape)
}

// Scrape is what one completed collection tells an observer: whose, how it ended and how long it
// took. No URL, metric text or error is in it.
type Scrape struct {
	Tier, Member string
	// Class is the collection's final class: a fetch that timed out, was cancelled or
	// completed past pressure.FetchTimeout is pressure.ClassFailed, as the core publishes it.
	Class    pressure.Class
	Duration time.Duration // from the job's start to its completion
}

// Cache is the production pressure cache: a pressure.Core behind one mutex, plus at most
// MaxWorkers worker goroutines started lazily by the first refresh it schedules.
// Snapshot and Peek never wait for collection. It is safe for concurrent use.
type Cache struct {
	now     func() time.Time
	fetch   func(context.Context, pressure.Job) (pressure.Sample, pressure.Class)
	observe func(Scrape) // nil: nobody listens

	mu      sync.Mutex
	work    *sync.Cond // signalled when refreshes are queued and when the cache closes
	core    *pressure.Core
	workers int                            // started so far, at most MaxWorkers
	idle    int                            // workers waiting on work
	cancels [MaxWorkers]context.CancelFunc // running fetch of each worker slot
	done    chan struct{}                  // handed out by Refreshed, closed at the next completed refresh
}

// NewCache registers the capacity tiers (see pressure.NewCore; each tier's Engine must name an
// adapter, else an error wrapping adapter.ErrUnknownEngine) and returns a cache with no goroutines
// yet. A nil client gets a dedicated default http.Client.
func NewCache(tiers []pressure.TierSpec, client *http.Client, opts Options) (*Cache, error) {
	core, err := newCore(tiers)
	if err != nil {
		return nil, err
	}
	c := &Cache{now: opts.Now, fetch: opts.Fetch, observe: opts.Observe, core: core}
	if c.now == nil {
		c.now = time.Now
	}
	if c.fetch == nil {
		scraper := scrapeClient(client)
		c.fetch = func(ctx context.Context, j pressure.Job) (pressure.Sample, pressure.Class) {
			read, err := adapter.For(j.Engine)
			if err != nil {
				return pressure.Sample{}, pressure.ClassUnknown // unreachable: newCore checked every engine
			}
			return FetchWith(ctx, read, scraper, j.Endpoint, j.ServedModel)
		}
	}
	c.work = sync.NewCond(&c.mu)
	return c, nil
}

// scrapeClient copies the caller's client so that a scrape never follows a redirect (a
// member's /metrics answering 3xx is a failed sample, never another host's numbers) and,
// without a caller client, never goes through an environment proxy.
func scrapeClient(client *http.Client) *http.Client {
	c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	if client != nil {
		c = &http.Client{Transport: client.Transport, Timeout: client.Timeout}
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Snapshot returns a new complete member -> Pressure map for the tier and schedules
// its due refreshes (see pressure.Core.Snapshot). It never waits on I/O. Unknown tiers return
// ErrUnknownTier; after Close every member reads unknown.
func (c *Cache) Snapshot(tier string) (map[string]scheduler.Pressure, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	out, err := c.core.Snapshot(tier, now)
	if err == nil {
		c.dispatchLocked()
	}
	return out, err
}

// Peek is Snapshot without scheduling: for read-only views such as the capacity
// endpoint, which must not cause refreshes or start workers.
func (c *Cache) Peek(tier string) (map[string]scheduler.Pressure, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Peek(tier, now)
}

// SampleAges returns the age of each member's published sample (see pressure.Core.SampleAges)
// without scheduling anything: for the operator views.
func (c *Cache) SampleAges(tier string) (map[string]time.Duration, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.SampleAges(tier, now)
}

// Pending returns how many members have a refresh queued or running; it never exceeds the
// registered membership. Reading it schedules nothing: for metrics and tests.
func (c *Cache) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Pending()
}

// Refreshed returns a channel closed when the next refresh (of any member) completes, successful or
// not. Take it before reading, then wait on it, to follow the telemetry without polling a clock.
func (c *Cache) Refreshed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// Close stops the cache without waiting: queued refreshes are dropped, idle workers
// wake and exit, running fetches are cancelled and their results ignored, and later
// snapshots read unknown. It is idempotent.
func (c *Cache) Close() {
	c.mu.Lock()
	c.core.Close()
	cancels := c.cancels
	c.work.Broadcast()
	c.mu.Unlock()
	for _, cancel := range cancels {
		if cancel != nil {
			cancel()
		}
	}
}

// dispatchLocked wakes idle workers for queued refreshes and starts new workers,
// up to MaxWorkers in total, for what the idle ones cannot take.
func (c *Cache) dispatchLocked() {
	queued := c.core.Queued()
	if queued == 0 {
		return
	}
	if c.idle > 0 {
		c.work.Broadcast()
	}
	for spare := queued - c.idle; spare > 0 && c.workers < MaxWorkers; spare-- {
		go c.worker(c.workers)
		c.workers++
	}
}

// worker runs refreshes until the cache closes. The clock is read and the fetch
// runs outside the lock; the lock covers only pressure.Core calls and the cancel slot.
func (c *Cache) worker(slot int) {
	for {
		job, ctx, cancel, ok := c.take(slot)
		if !ok {
			return
		}
		s, cl := c.fetch(ctx, job)
		if ctx.Err() != nil {
			// Timed out or cancelled: failed, whatever the fetch returned.
			cl = pressure.ClassFailed
		}
		cancel()
		prepared := pressure.Prepare(job, s, cl) // the normalizer's work stays outside the lock
		done := c.now()
		c.mu.Lock()
		c.cancels[slot] = nil
		c.core.CompletePrepared(job, done, prepared)
		if c.done != nil {
			close(c.done)
			c.done = nil
		}
		closed := c.core.Closed()
		c.mu.Unlock()
		if c.observe != nil && !closed {
			took := done.Sub(job.Started)
			if took > pressure.FetchTimeout {
				cl = pressure.ClassFailed // the core published it failed: overdue
			}
			c.observe(Scrape{Tier: job.Tier, Member: job.Member, Class: cl, Duration: took})
		}
	}
}

// take waits for the next job and registers its context's cancel in slot. It
// returns false once the cache is closed.
func (c *Cache) take(slot int) (pressure.Job, context.Context, context.CancelFunc, bool) {
	for {
		now := c.now()
		c.mu.Lock()
		if c.core.Closed() {
			c.mu.Unlock()
			return pressure.Job{}, nil, nil, false
		}
		if job, ok := c.core.Next(now); ok {
			// Only the cancel is registered under the lock; the deadline (a clock read and a
			// timer) is added after it.
			ctx, cancel := context.WithCancel(context.Background())
			c.cancels[slot] = cancel
			c.mu.Unlock()
			ctx, stopTimer := context.WithTimeout(ctx, pressure.FetchTimeout)
			return job, ctx, func() { stopTimer(); cancel() }, true
		}
		c.idle++
		c.work.Wait()
		c.idle--
		c.mu.Unlock()
		// Loop to read the clock again outside the lock before taking a job.
	}
}

// Stage validates the next configuration's capacity tiers (see pressure.NewCore) and returns the
// commit that swaps them in, changing nothing until then. The commit, under the cache lock, builds
// the new core's samples from the running one by identity (pressure.Core.Adopt: the same tier,
// member, endpoint, served model, engine and ceiling keep their sample; others read unknown until their
// first refresh) and drops the old core's queued work; a refresh still running completes into
// nothing. A closed cache stays closed.
func (c *Cache) Stage(tiers []pressure.TierSpec) (commit func(), err error) {
	next, err := newCore(tiers)
	if err != nil {
		return nil, err
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		next.Adopt(c.core)
		if c.core.Closed() {
			next.Close()
		}
		c.core = next
	}, nil
}

// newCore is pressure.NewCore after checking that every tier's engine names an adapter, so that a
// job never meets an engine its worker cannot read.
func newCore(tiers []pressure.TierSpec) (*pressure.Core, error) {
	for i, t := range tiers {
		if !adapter.Valid(t.Engine) {
			return nil, fmt.Errorf("%w: tier %d", adapter.ErrUnknownEngine, i)
		}
	}
	return pressure.NewCore(tiers)
}

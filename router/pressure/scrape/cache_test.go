package scrape_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// call is one collection in progress, held by the test until it replies.
type call struct {
	job   pressure.Job
	ctx   context.Context
	reply chan reply
}

type reply struct {
	s  pressure.Sample
	cl pressure.Class
}

// collector is an injected Fetch whose every call blocks until the test answers
// it. With stubborn set it ignores its context once the test holds the call (a
// transport that does not honour cancellation); otherwise it gives up, failed, when
// the context ends.
type collector struct {
	calls    chan call
	stubborn bool
}

func newCollector(stubborn bool) *collector {
	return &collector{calls: make(chan call), stubborn: stubborn}
}

func (c *collector) fetch(ctx context.Context, job pressure.Job) (pressure.Sample, pressure.Class) {
	r := make(chan reply, 1)
	select {
	case c.calls <- call{job: job, ctx: ctx, reply: r}:
	case <-ctx.Done(): // cancelled before the test picked the call up
		return pressure.Sample{}, pressure.ClassFailed
	}
	if c.stubborn {
		rep := <-r
		return rep.s, rep.cl
	}
	select {
	case rep := <-r:
		return rep.s, rep.cl
	case <-ctx.Done():
		return pressure.Sample{}, pressure.ClassFailed
	}
}

// take returns the collections that have started, after the bubble settles,
// sorted by tier and member: concurrent workers reach the collector in any order.
func (c *collector) take() []call {
	synctest.Wait()
	var out []call
	for {
		select {
		case cl := <-c.calls:
			out = append(out, cl)
		default:
			slices.SortFunc(out, func(a, b call) int {
				return cmp.Or(strings.Compare(a.job.Tier, b.job.Tier), strings.Compare(a.job.Member, b.job.Member))
			})
			return out
		}
	}
}

// answerAll replies ok with busy to every started collection, repeatedly, until
// none is left, and returns the members served.
func (c *collector) answerAll() []string {
	var served []string
	for calls := c.take(); len(calls) > 0; calls = c.take() {
		for _, cl := range calls {
			served = append(served, cl.job.Member)
			cl.reply <- reply{busy, pressure.ClassOK}
		}
	}
	synctest.Wait()
	return served
}

func members(cs []call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.job.Member)
	}
	return out
}

// advance moves the bubble's fake clock by d and lets everything settle.
func advance(d time.Duration) {
	<-time.After(d)
	synctest.Wait()
}

func newCache(t *testing.T, col *collector, tiers ...pressure.TierSpec) *scrape.Cache {
	t.Helper()
	if len(tiers) == 0 {
		tiers = []pressure.TierSpec{tier("chat", "a", "b")}
	}
	c, err := scrape.NewCache(tiers, nil, scrape.Options{Fetch: col.fetch})
	require.NoError(t, err)
	return c
}

func snap(t *testing.T, c *scrape.Cache, tierID string) map[string]scheduler.Pressure {
	t.Helper()
	m, err := c.Snapshot(tierID)
	require.NoError(t, err)
	return m
}

func freshnessOf(m map[string]scheduler.Pressure) map[string]scheduler.Freshness {
	out := make(map[string]scheduler.Freshness, len(m))
	for k, p := range m {
		out[k] = p.Freshness()
	}
	return out
}

func TestCacheConcurrentSnapshotsFetchOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		defer c.Close()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				m, err := c.Snapshot("chat")
				assert.NoError(t, err)
				assert.Len(t, m, 2)
			})
		}
		wg.Wait()
		calls := col.take()
		assert.ElementsMatch(t, []string{"a", "b"}, members(calls), "one collection per member")
		for _, cl := range calls {
			cl.reply <- reply{busy, pressure.ClassOK}
		}
		synctest.Wait()
		assert.Empty(t, col.take())
		assert.Equal(t, map[string]scheduler.Pressure{"a": freshBusy(t), "b": freshBusy(t)}, snap(t, c, "chat"))
	})
}

func TestCacheFreshHitsThenOneRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		defer c.Close()
		snap(t, c, "chat")
		require.ElementsMatch(t, []string{"a", "b"}, col.answerAll())

		advance(999 * time.Millisecond)
		for range 5 {
			assert.Equal(t, freshBusy(t), snap(t, c, "chat")["a"])
		}
		assert.Empty(t, col.take(), "fresh hits do no I/O")

		advance(time.Millisecond)
		for range 5 {
			assert.Equal(t, freshBusy(t), snap(t, c, "chat")["a"], "the last sample is kept while refreshing")
		}
		calls := col.take()
		assert.ElementsMatch(t, []string{"a", "b"}, members(calls), "expiry causes one refresh per member")
		for _, cl := range calls {
			cl.reply <- reply{pressure.Sample{KVUsage: present(0.5)}, pressure.ClassOK}
		}
		synctest.Wait()
		assert.Equal(t, mustPressure(t, scheduler.FreshnessFresh, 500_000, true, scheduler.SignalMissing, scheduler.SignalValid),
			snap(t, c, "chat")["b"])
		assert.Empty(t, col.take())
	})
}

func TestCacheTimeoutAndFailureAreFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		defer c.Close()
		snap(t, c, "chat")
		calls := col.take()
		require.Len(t, calls, 2)
		calls[1].reply <- reply{busy, pressure.ClassFailed} // b: collection failure
		start := time.Now()
		<-calls[0].ctx.Done() // a: never answered; its context expires
		assert.Equal(t, pressure.FetchTimeout, time.Since(start))
		synctest.Wait()
		assert.Equal(t, map[string]scheduler.Pressure{"a": failed(t), "b": failed(t)}, snap(t, c, "chat"))
	})
}

func TestCacheOverdueProjectsFailedAndLateValuesAreDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(true) // ignores its context
		c := newCache(t, col)
		defer c.Close()
		snap(t, c, "chat")
		col.answerAll()
		advance(time.Second)
		snap(t, c, "chat")
		calls := col.take()
		require.Len(t, calls, 2)

		advance(time.Second)
		assert.Equal(t, freshBusy(t), snap(t, c, "chat")["a"], "exactly 1 s is not overdue")
		advance(time.Nanosecond)
		assert.Equal(t, map[string]scheduler.Pressure{"a": failed(t), "b": failed(t)}, snap(t, c, "chat"),
			"running past 1 s reads failed without being awaited")
		for _, cl := range calls {
			cl.reply <- reply{busy, pressure.ClassOK} // late valid data
		}
		synctest.Wait()
		assert.Equal(t, map[string]scheduler.Pressure{"a": failed(t), "b": failed(t)}, snap(t, c, "chat"))
	})
}

func TestCacheSlowMemberDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(true)
		c := newCache(t, col, tier("chat", "a", "b", "c"))
		defer c.Close()
		snap(t, c, "chat")
		calls := col.take()
		require.Equal(t, []string{"a", "b"}, members(calls))
		calls[1].reply <- reply{busy, pressure.ClassOK} // b answers, a stays stuck
		next := col.take()
		require.Equal(t, []string{"c"}, members(next), "the free worker moves on to c")
		next[0].reply <- reply{busy, pressure.ClassOK}
		synctest.Wait()
		m := snap(t, c, "chat")
		assert.Equal(t, scheduler.UnknownPressure(), m["a"])
		assert.Equal(t, freshBusy(t), m["b"])
		assert.Equal(t, freshBusy(t), m["c"])
		calls[0].reply <- reply{busy, pressure.ClassOK}
		synctest.Wait()
		assert.Equal(t, freshBusy(t), snap(t, c, "chat")["a"])
	})
}

func TestCacheTwoStalledCollectorsBoundEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(true)
		c := newCache(t, col, tier("chat", "a", "b", "c"), tier("code", "x", "y"))
		defer c.Close()
		snap(t, c, "chat")
		stalled := col.take()
		require.Equal(t, []string{"a", "b"}, members(stalled))

		for range 30 { // 30 s of snapshots on both tiers while both workers are stuck
			m := snap(t, c, "chat")
			require.Len(t, m, 3)
			snap(t, c, "code")
			assert.Empty(t, col.take(), "no third collection starts")
			assert.Equal(t, scrape.MaxWorkers, c.Workers())
			assert.LessOrEqual(t, c.Queued(), 5-scrape.MaxWorkers)
			assert.Equal(t, 5, c.Pending())
			advance(time.Second)
		}
		assert.Equal(t, map[string]scheduler.Freshness{"a": scheduler.FreshnessFailed,
			"b": scheduler.FreshnessFailed, "c": scheduler.FreshnessUnknown}, freshnessOf(snap(t, c, "chat")))

		// Unstick them: the queue drains in FIFO order through the same two workers.
		for _, cl := range stalled {
			cl.reply <- reply{busy, pressure.ClassOK}
		}
		assert.Equal(t, []string{"c", "x", "y"}, col.answerAll())
		assert.Equal(t, scrape.MaxWorkers, c.Workers())
		assert.Equal(t, map[string]scheduler.Freshness{"a": scheduler.FreshnessFailed,
			"b": scheduler.FreshnessFailed, "c": scheduler.FreshnessFresh}, freshnessOf(snap(t, c, "chat")))
	})
}

func TestCacheWorkersAreLazy(t *testing.T) {
	t.Run("no capacity tier", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			col := newCollector(false)
			c, err := scrape.NewCache(nil, nil, scrape.Options{Fetch: col.fetch})
			require.NoError(t, err)
			_, err = c.Snapshot("chat")
			assert.ErrorIs(t, err, pressure.ErrUnknownTier)
			assert.Equal(t, 0, c.Workers())
			c.Close()
		})
	})
	t.Run("peek and unknown tiers never start workers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			col := newCollector(false)
			c := newCache(t, col)
			defer c.Close()
			m, err := c.Peek("chat")
			require.NoError(t, err)
			assert.Equal(t, map[string]scheduler.Pressure{"a": scheduler.UnknownPressure(), "b": scheduler.UnknownPressure()}, m)
			_, err = c.Peek("nope")
			assert.ErrorIs(t, err, pressure.ErrUnknownTier)
			_, err = c.Snapshot("nope")
			assert.ErrorIs(t, err, pressure.ErrUnknownTier)
			assert.Equal(t, 0, c.Workers())
			assert.Empty(t, col.take())
		})
	})
	t.Run("idle workers are reused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			col := newCollector(false)
			c := newCache(t, col, tier("chat", memberIDs(16)...))
			defer c.Close()
			snap(t, c, "chat")
			assert.Equal(t, scrape.MaxWorkers, c.Workers())
			assert.Len(t, col.answerAll(), 16)
			for range 5 {
				advance(time.Second)
				snap(t, c, "chat")
				assert.Len(t, col.answerAll(), 16)
			}
			assert.Equal(t, scrape.MaxWorkers, c.Workers())
		})
	})
}

func TestCacheCloseStopsRefreshAndPublication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(true)
		c := newCache(t, col, tier("chat", "a", "b", "c"))
		snap(t, c, "chat")
		running := col.take()
		require.Len(t, running, 2)
		require.Equal(t, 1, c.Queued())

		c.Close() // returns at once although both collectors ignore cancellation
		c.Close()
		for _, cl := range running {
			assert.Error(t, cl.ctx.Err(), "running collections are cancelled")
		}
		assert.Equal(t, 0, c.Queued(), "queued work is cleared")
		unknown := map[string]scheduler.Pressure{"a": scheduler.UnknownPressure(),
			"b": scheduler.UnknownPressure(), "c": scheduler.UnknownPressure()}
		for _, cl := range running {
			cl.reply <- reply{busy, pressure.ClassOK} // late completions
		}
		synctest.Wait()
		assert.Equal(t, unknown, snap(t, c, "chat"))
		advance(10 * time.Second)
		assert.Equal(t, unknown, snap(t, c, "chat"))
		assert.Empty(t, col.take(), "no refresh after close")
		// synctest.Test returning proves every worker goroutine has exited.
	})
}

func TestCacheCloseWakesIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		snap(t, c, "chat")
		col.answerAll() // both workers now wait for work
		c.Close()
		_, err := c.Snapshot("nope")
		assert.ErrorIs(t, err, pressure.ErrUnknownTier, "unknown tiers still refuse after close")
	})
}

func TestCacheCloseCancelsHonestCollectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		snap(t, c, "chat")
		require.Len(t, col.take(), 2)
		start := time.Now()
		c.Close()
		synctest.Wait()
		assert.Zero(t, time.Since(start), "cancellation, not the timeout, ended the collections")
	})
}

// TestRefreshedAnnouncesEachCompletion: the channel handed out by Refreshed closes when a refresh
// completes, and not before; each completion closes the channel taken before it.
func TestRefreshedAnnouncesEachCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		defer c.Close()
		first := c.Refreshed()
		assert.Equal(t, first, c.Refreshed(), "one channel until the next completion")
		snap(t, c, "chat")
		calls := col.take()
		require.Len(t, calls, 2)
		select {
		case <-first:
			t.Fatal("announced before any refresh completed")
		default:
		}
		calls[0].reply <- reply{busy, pressure.ClassOK}
		synctest.Wait()
		<-first // closed by the first completion
		second := c.Refreshed()
		select {
		case <-second:
			t.Fatal("the next channel is fresh")
		default:
		}
		calls[1].reply <- reply{cl: pressure.ClassFailed}
		synctest.Wait()
		<-second
	})
}

// observed collects what an Options.Observe hook hears.
type observed struct {
	mu   sync.Mutex
	seen []scrape.Scrape
}

func (o *observed) observe(s scrape.Scrape) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, s)
}

func (o *observed) sorted() []scrape.Scrape {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.seen)
	slices.SortFunc(out, func(a, b scrape.Scrape) int { return strings.Compare(a.Member, b.Member) })
	return out
}

// TestCacheObserverHearsEveryCompletedScrape: the hook hears each completion with its final class
// (a completion past the fetch timeout is failed, as the core publishes it) and its duration; a
// cache that is closed reports nothing more; Peek and Pending never cause a scrape.
func TestCacheObserverHearsEveryCompletedScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(true)
		obs := &observed{}
		c, err := scrape.NewCache([]pressure.TierSpec{tier("chat", "a", "b", "c")}, nil,
			scrape.Options{Fetch: col.fetch, Observe: obs.observe})
		require.NoError(t, err)
		defer c.Close()

		_, err = c.Peek("chat")
		require.NoError(t, err)
		assert.Zero(t, c.Pending(), "a peek schedules nothing")
		assert.Empty(t, col.take())

		snap(t, c, "chat")
		assert.Equal(t, 3, c.Pending())
		calls := col.take()
		require.Len(t, calls, 2, "two workers")
		advance(300 * time.Millisecond)
		calls[0].reply <- reply{busy, pressure.ClassOK}
		calls[1].reply <- reply{pressure.Sample{Running: scheduler.MalformedMetric()}, pressure.ClassUnknown}
		third := col.take()
		require.Len(t, third, 1)
		advance(1100 * time.Millisecond)
		third[0].reply <- reply{busy, pressure.ClassOK} // late: published failed
		synctest.Wait()
		assert.Zero(t, c.Pending())
		assert.Equal(t, []scrape.Scrape{
			{Tier: "chat", Member: "a", Class: pressure.ClassOK, Duration: 300 * time.Millisecond},
			{Tier: "chat", Member: "b", Class: pressure.ClassUnknown, Duration: 300 * time.Millisecond},
			{Tier: "chat", Member: "c", Class: pressure.ClassFailed, Duration: 1100 * time.Millisecond},
		}, obs.sorted())

		advance(time.Second)
		snap(t, c, "chat")
		pending := col.take()
		require.NotEmpty(t, pending)
		c.Close()
		for _, p := range pending {
			p.reply <- reply{busy, pressure.ClassOK}
		}
		synctest.Wait()
		assert.Len(t, obs.sorted(), 3, "nothing is reported after Close")
	})
}

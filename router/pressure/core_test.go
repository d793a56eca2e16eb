package pressure_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

// busy is a valid sample: (1+1)/4 requests = 500000 ppm, KV 250000 ppm.
var busy = pressure.Sample{Running: present(1), Waiting: present(1), KVUsage: present(0.25)}

func mustPressure(t *testing.T, f scheduler.Freshness, ppm int64, hasPPM bool, req, kv scheduler.SignalState) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(f, ppm, hasPPM, req, kv)
	require.NoError(t, err)
	return p
}

func freshBusy(t *testing.T) scheduler.Pressure {
	return mustPressure(t, scheduler.FreshnessFresh, 500_000, true, scheduler.SignalValid, scheduler.SignalValid)
}

func staleBusy(t *testing.T) scheduler.Pressure {
	return mustPressure(t, scheduler.FreshnessStale, 0, false, scheduler.SignalValid, scheduler.SignalValid)
}

func failed(t *testing.T) scheduler.Pressure {
	return mustPressure(t, scheduler.FreshnessFailed, 0, false, scheduler.SignalMissing, scheduler.SignalMissing)
}

func newCore(t *testing.T, tiers ...pressure.TierSpec) *pressure.Core {
	t.Helper()
	if len(tiers) == 0 {
		tiers = []pressure.TierSpec{tier("chat", "a", "b")}
	}
	c, err := pressure.NewCore(tiers)
	require.NoError(t, err)
	return c
}

// peek reads one member without scheduling.
func peek(t *testing.T, c *pressure.Core, member string, now time.Time) scheduler.Pressure {
	t.Helper()
	m, err := c.Peek("chat", now)
	require.NoError(t, err)
	p, ok := m[member]
	require.True(t, ok)
	return p
}

// refresh runs one full refresh of the next queued job, started at start and
// completed at done.
func refresh(t *testing.T, c *pressure.Core, start, done time.Time, s pressure.Sample, cl pressure.Class) pressure.Job {
	t.Helper()
	j, ok := c.Next(start)
	require.True(t, ok)
	c.Complete(j, done, s, cl)
	return j
}

func TestCoreFirstSnapshotIsUnknownAndSchedulesOnce(t *testing.T) {
	c := newCore(t)
	for range 3 {
		m, err := c.Snapshot("chat", t0)
		require.NoError(t, err)
		assert.Equal(t, map[string]scheduler.Pressure{"a": scheduler.UnknownPressure(), "b": scheduler.UnknownPressure()}, m)
	}
	assert.Equal(t, 2, c.Queued(), "one queued refresh per member, however many snapshots")
	assert.Equal(t, 2, c.Pending())
	j, ok := c.Next(t0)
	require.True(t, ok)
	assert.Equal(t, "a", j.Member)
	_, err := c.Snapshot("chat", at(10*ms))
	require.NoError(t, err)
	assert.Equal(t, 1, c.Queued(), "a running refresh holds the single-flight marker")
	assert.Equal(t, 2, c.Pending())
}

func TestCoreUnknownTierSchedulesNothing(t *testing.T) {
	c := newCore(t)
	for _, read := range []func(string, time.Time) (map[string]scheduler.Pressure, error){c.Snapshot, c.Peek} {
		m, err := read("nope", t0)
		assert.ErrorIs(t, err, pressure.ErrUnknownTier)
		assert.Nil(t, m)
	}
	assert.Equal(t, 0, c.Pending())
}

func TestCorePeekSchedulesNothing(t *testing.T) {
	c := newCore(t)
	m, err := c.Peek("chat", t0)
	require.NoError(t, err)
	assert.Len(t, m, 2)
	assert.Equal(t, 0, c.Pending())
	_, ok := c.Next(t0)
	assert.False(t, ok)
}

func TestCoreFreshThenRefreshThenStale(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, t0, at(200*ms), busy, pressure.ClassOK)
	refresh(t, c, t0, at(200*ms), busy, pressure.ClassOK)

	// Fresh hits schedule nothing until 1 s after completion.
	m, err := c.Snapshot("chat", at(1199*ms))
	require.NoError(t, err)
	assert.Equal(t, freshBusy(t), m["a"])
	assert.Equal(t, 0, c.Pending(), "fresh cache hits do no I/O")

	// Expiry: exactly one refresh per member.
	_, err = c.Snapshot("chat", at(1200*ms))
	require.NoError(t, err)
	_, err = c.Snapshot("chat", at(1300*ms))
	require.NoError(t, err)
	assert.Equal(t, 2, c.Queued())

	// The last sample is kept while work is pending, and its age counts from the
	// refresh's start (t0), not its completion.
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(5*time.Second)))
	assert.Equal(t, staleBusy(t), peek(t, c, "a", at(5*time.Second+1)))
	assert.Equal(t, 2, c.Queued(), "peek schedules nothing")
}

func TestCoreObservationNeverInFuture(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, at(100*ms), at(300*ms), busy, pressure.ClassOK)
	assert.Equal(t, scheduler.UnknownPressure(), peek(t, c, "a", at(99*ms)), "a read before the observation cannot place it")
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(100*ms)))
	assert.Equal(t, scheduler.UnknownPressure(), peek(t, c, "a", time.Time{}), "zero clock")
}

func TestCoreClasses(t *testing.T) {
	tests := []struct {
		name   string
		sample pressure.Sample
		class  pressure.Class
		want   func(*testing.T) scheduler.Pressure
	}{
		{"ok", busy, pressure.ClassOK, freshBusy},
		{"failed discards values", busy, pressure.ClassFailed, failed},
		{"unknown discards values", busy, pressure.ClassUnknown, func(*testing.T) scheduler.Pressure { return scheduler.UnknownPressure() }},
		{"unknown keeps a malformed signal invalid", pressure.Sample{Running: scheduler.MalformedMetric(), Waiting: present(2), KVUsage: present(0.5)},
			pressure.ClassUnknown, func(t *testing.T) scheduler.Pressure {
				return mustPressure(t, scheduler.FreshnessUnknown, 0, false, scheduler.SignalInvalid, scheduler.SignalValid)
			}},
		{"unknown with a malformed KV and missing requests", pressure.Sample{KVUsage: scheduler.MalformedMetric()},
			pressure.ClassUnknown, func(t *testing.T) scheduler.Pressure {
				return mustPressure(t, scheduler.FreshnessUnknown, 0, false, scheduler.SignalMissing, scheduler.SignalInvalid)
			}},
		{"failed ignores a malformed signal", pressure.Sample{Running: scheduler.MalformedMetric()}, pressure.ClassFailed, failed},
		{"out-of-range class is unknown", busy, pressure.Class(7), func(*testing.T) scheduler.Pressure { return scheduler.UnknownPressure() }},
		{"requests only", pressure.Sample{Running: present(3), Waiting: present(0)}, pressure.ClassOK,
			func(t *testing.T) scheduler.Pressure {
				return mustPressure(t, scheduler.FreshnessFresh, 750_000, true, scheduler.SignalValid, scheduler.SignalMissing)
			}},
		{"invalid value from a custom collector", pressure.Sample{Running: present(-1), Waiting: present(0)}, pressure.ClassOK,
			func(t *testing.T) scheduler.Pressure {
				return mustPressure(t, scheduler.FreshnessUnknown, 0, false, scheduler.SignalInvalid, scheduler.SignalMissing)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(t)
			_, err := c.Snapshot("chat", t0)
			require.NoError(t, err)
			refresh(t, c, t0, at(100*ms), tt.sample, tt.class)
			want := tt.want(t)
			assert.Equal(t, want, peek(t, c, "a", at(100*ms)))
			assert.Equal(t, scheduler.UnknownPressure(), peek(t, c, "b", at(100*ms)), "members are independent")
			if want.Freshness() != scheduler.FreshnessFresh {
				assert.Equal(t, want, peek(t, c, "a", at(time.Minute)), "non-fresh classes do not age into stale")
			}
		})
	}
}

func TestCoreOverdueRunningProjectsFailed(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, t0, at(100*ms), busy, pressure.ClassOK)
	refresh(t, c, t0, at(100*ms), busy, pressure.ClassOK)

	_, err = c.Snapshot("chat", at(1100*ms))
	require.NoError(t, err)
	j, ok := c.Next(at(1200 * ms))
	require.True(t, ok)
	require.Equal(t, "a", j.Member)

	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(2200*ms)), "exactly 1 s of elapsed time is not overdue")
	assert.Equal(t, failed(t), peek(t, c, "a", at(2200*ms+1)), "past 1 s the running refresh reads failed")
	assert.Equal(t, freshBusy(t), peek(t, c, "b", at(2200*ms+1)), "the queued peer keeps its sample")

	// The late completion publishes failed and discards its values.
	c.Complete(j, at(3*time.Second), busy, pressure.ClassOK)
	assert.Equal(t, failed(t), peek(t, c, "a", at(3*time.Second)))
	assert.Equal(t, 1, c.Pending())
	// Its refresh clock runs from the late completion.
	_, err = c.Snapshot("chat", at(3999*ms))
	require.NoError(t, err)
	assert.Equal(t, 1, c.Pending())
	_, err = c.Snapshot("chat", at(4*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 2, c.Pending())
}

func TestCoreCompletionAtDeadlinePublishes(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, t0, at(time.Second), busy, pressure.ClassOK)
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(time.Second)))
}

func TestCoreIgnoresForeignCompletions(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	ja, ok := c.Next(t0)
	require.True(t, ok)

	wrongSeq := ja
	wrongSeq.Seq++
	c.Complete(wrongSeq, at(10*ms), busy, pressure.ClassOK)
	c.Complete(pressure.Job{Tier: "chat", Member: "zz", Seq: ja.Seq}, at(10*ms), busy, pressure.ClassOK)
	c.Complete(pressure.Job{Tier: "other", Member: "a", Seq: ja.Seq}, at(10*ms), busy, pressure.ClassOK)
	// b is queued, not running: a completion for it was never handed out.
	c.Complete(pressure.Job{Tier: "chat", Member: "b", Seq: ja.Seq + 1}, at(10*ms), busy, pressure.ClassOK)
	assert.Equal(t, scheduler.UnknownPressure(), peek(t, c, "a", at(10*ms)))
	assert.Equal(t, scheduler.UnknownPressure(), peek(t, c, "b", at(10*ms)))
	assert.Equal(t, 2, c.Pending())

	c.Complete(ja, at(10*ms), busy, pressure.ClassOK)
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(10*ms)))
	// A duplicate completion of the same job changes nothing.
	c.Complete(ja, at(20*ms), pressure.Sample{}, pressure.ClassFailed)
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(20*ms)))
}

func TestCoreClose(t *testing.T) {
	c := newCore(t)
	_, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, t0, at(10*ms), busy, pressure.ClassOK)
	running, ok := c.Next(at(10 * ms))
	require.True(t, ok)
	_, err = c.Snapshot("chat", at(2*time.Second))
	require.NoError(t, err)
	require.Equal(t, 2, c.Pending())

	c.Close()
	c.Close() // idempotent
	assert.True(t, c.Closed())
	assert.Equal(t, 0, c.Pending(), "queued work is cleared")
	_, ok = c.Next(at(2 * time.Second))
	assert.False(t, ok)

	c.Complete(running, at(20*ms), busy, pressure.ClassOK) // late completion ignored
	for _, read := range []func(string, time.Time) (map[string]scheduler.Pressure, error){c.Snapshot, c.Peek} {
		m, err := read("chat", at(20*ms))
		require.NoError(t, err)
		assert.Equal(t, map[string]scheduler.Pressure{"a": scheduler.UnknownPressure(), "b": scheduler.UnknownPressure()}, m)
		_, err = read("nope", at(20*ms))
		assert.ErrorIs(t, err, pressure.ErrUnknownTier)
	}
	assert.Equal(t, 0, c.Pending(), "snapshots after close schedule nothing")
}

func TestCoreSnapshotIsDetached(t *testing.T) {
	c := newCore(t)
	m1, err := c.Snapshot("chat", t0)
	require.NoError(t, err)
	m1["a"] = failed(t)
	delete(m1, "b")
	m2, err := c.Peek("chat", t0)
	require.NoError(t, err)
	assert.Equal(t, map[string]scheduler.Pressure{"a": scheduler.UnknownPressure(), "b": scheduler.UnknownPressure()}, m2)
}

// TestCoreTwoVirtualWorkers plays the simulator: two workers, FIFO order across
// tiers, a stalled worker never holding back the other.
func TestCoreTwoVirtualWorkers(t *testing.T) {
	c := newCore(t, tier("chat", "a", "b", "c"), tier("code", "x", "y"))
	_, err := c.Snapshot("code", t0)
	require.NoError(t, err)
	_, err = c.Snapshot("chat", t0)
	require.NoError(t, err)
	assert.Equal(t, 5, c.Queued())

	stalled, ok := c.Next(t0) // worker 1 stalls on code/x
	require.True(t, ok)
	assert.Equal(t, "x", stalled.Member)
	var order []string
	for now := t0; ; now = now.Add(10 * ms) { // worker 2 drains the rest
		j, ok := c.Next(now)
		if !ok {
			break
		}
		order = append(order, j.Tier+"/"+j.Member)
		c.Complete(j, now.Add(5*ms), busy, pressure.ClassOK)
	}
	assert.Equal(t, []string{"code/y", "chat/a", "chat/b", "chat/c"}, order)
	m, err := c.Snapshot("chat", at(100*ms))
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		assert.Equal(t, freshBusy(t), m[id])
	}
	assert.Equal(t, 1, c.Pending(), "only the stalled member is pending")
}

// TestCoreSampleAges: a member's age counts from its sample's observation time (the scrape's start),
// agrees with the freshness class at the MaxAge boundary, covers failed samples too, leaves out
// members never sampled, schedules nothing, and is empty after Close.
func TestCoreSampleAges(t *testing.T) {
	c := newCore(t)
	ages, err := c.SampleAges("chat", t0)
	require.NoError(t, err)
	assert.Empty(t, ages, "nothing sampled yet")

	_, err = c.Snapshot("chat", t0)
	require.NoError(t, err)
	refresh(t, c, at(100*ms), at(300*ms), busy, pressure.ClassOK) // a: observed at +100ms
	queued := c.Queued()

	tests := []struct {
		name string
		now  time.Time
		want map[string]time.Duration
	}{
		{"right after the scrape", at(300 * ms), map[string]time.Duration{"a": 200 * ms}},
		{"at the fresh boundary", at(100*ms + scheduler.MaxAge), map[string]time.Duration{"a": scheduler.MaxAge}},
		{"stale", at(100*ms + scheduler.MaxAge + 1), map[string]time.Duration{"a": scheduler.MaxAge + 1}},
		{"before the observation", at(50 * ms), map[string]time.Duration{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.SampleAges("chat", tt.now)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, freshBusy(t), peek(t, c, "a", at(100*ms+scheduler.MaxAge)), "the age and the class agree")
	assert.Equal(t, staleBusy(t), peek(t, c, "a", at(100*ms+scheduler.MaxAge+1)))

	refresh(t, c, at(400*ms), at(500*ms), pressure.Sample{}, pressure.ClassFailed) // b: a failed sample
	got, err := c.SampleAges("chat", at(time.Second))
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{"a": 900 * ms, "b": 600 * ms}, got)
	assert.Equal(t, failed(t), peek(t, c, "b", at(time.Second)))
	assert.Equal(t, queued-1, c.Queued(), "reading ages schedules nothing")

	_, err = c.SampleAges("nope", t0)
	assert.ErrorIs(t, err, pressure.ErrUnknownTier)
	c.Close()
	got, err = c.SampleAges("chat", at(time.Second))
	require.NoError(t, err)
	assert.Empty(t, got, "a closed core shows no sample")
}

package pressure_test

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// refMember is the reference model of one cache entry, written from the contract
// rather than from the implementation.
type refMember struct {
	tier, id      string
	capacity      int64
	queued        bool
	running       bool
	job           pressure.Job
	started       time.Time
	completed     bool
	lastCompleted time.Time
	hasObs        bool
	obs           scheduler.Observation
	unknownClass  bool // the last completion was ClassUnknown
}

type refCore struct {
	members []*refMember // registration order within a tier is sorted by ID below
	queue   []*refMember
	closed  bool
}

func (r *refCore) tierMembers(tier string) []*refMember {
	var out []*refMember
	for _, m := range r.members {
		if m.tier == tier {
			out = append(out, m)
		}
	}
	return out
}

// expect is the contract's projection: unknown when closed, failed while a refresh
// runs past FetchTimeout, otherwise NormalizePressure of the last completed sample.
func (r *refCore) expect(m *refMember, now time.Time) scheduler.Pressure {
	switch {
	case r.closed:
		return scheduler.UnknownPressure()
	case m.running && now.Sub(m.started) > pressure.FetchTimeout && !now.IsZero():
		return scheduler.NormalizePressure(now, scheduler.Observation{ObservedAt: now})
	case !m.hasObs:
		return scheduler.UnknownPressure()
	}
	p := scheduler.NormalizePressure(now, m.obs)
	if m.unknownClass && (p.Freshness() == scheduler.FreshnessFresh || p.Freshness() == scheduler.FreshnessStale) {
		return scheduler.UnknownPressure() // an unknown answer is never usable
	}
	return p
}

func genMetric(t *rapid.T, label string, count bool) scheduler.Metric {
	if !rapid.Bool().Draw(t, label+"-present") {
		return scheduler.Metric{}
	}
	if rapid.IntRange(0, 7).Draw(t, label+"-malformed") == 0 {
		return scheduler.MalformedMetric()
	}
	if count {
		v := rapid.SampledFrom([]float64{0, 1, 2, 7, 255, 1e9, -1, 0.5, math.NaN(), 2e9}).Draw(t, label)
		return scheduler.Metric{Value: v, Present: true}
	}
	v := rapid.SampledFrom([]float64{0, 0.07, 0.25, 0.333, 1, 1.5, -0.1, math.Inf(1)}).Draw(t, label)
	return scheduler.Metric{Value: v, Present: true}
}

// advances are clock steps chosen so that sums of a few of them land exactly on and
// just past the 1 s (refresh, overdue) and 5 s (stale) boundaries.
var advances = []time.Duration{
	0, 1, 10 * time.Millisecond, 300 * time.Millisecond, 999 * time.Millisecond,
	time.Second, time.Second + 1, 2 * time.Second, 4 * time.Second,
	5 * time.Second, 5*time.Second + 1,
}

// TestCoreMatchesReferenceModel drives Core and the reference model with the same
// random operations on a random clock and compares every read, the FIFO order and
// the single-flight bound.
func TestCoreMatchesReferenceModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tiers := []pressure.TierSpec{tier("chat", "a", "b", "c"), tier("code", "a", "z")}
		tiers[0].Members[1].Capacity = 1
		c, err := pressure.NewCore(tiers)
		if err != nil {
			t.Fatal(err)
		}
		ref := &refCore{}
		for _, ts := range tiers {
			for _, id := range sortedIDs(ts) {
				ref.members = append(ref.members, &refMember{tier: ts.ID, id: id, capacity: capacityOf(ts, id)})
			}
		}
		now := t0
		steps := rapid.IntRange(20, 150).Draw(t, "steps")
		for range steps {
			now = now.Add(rapid.SampledFrom(advances).Draw(t, "advance"))
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op <= 2:
				snapshotStep(t, c, ref, rapid.SampledFrom([]string{"chat", "code"}).Draw(t, "tier"), now)
			case op == 3:
				checkRead(t, c, ref, rapid.SampledFrom([]string{"chat", "code"}).Draw(t, "tier"), now, c.Peek)
			case op <= 5:
				nextStep(t, c, ref, now)
			case op <= 8:
				completeStep(t, c, ref, now)
			default:
				if rapid.IntRange(0, 9).Draw(t, "close-roll") == 0 {
					c.Close()
					ref.closed, ref.queue = true, nil
					for _, m := range ref.members {
						m.queued, m.running = false, false
					}
				}
			}
			checkBounds(t, c, ref)
			// Every step ends with a read of every tier, so each clock value is checked.
			checkRead(t, c, ref, "chat", now, c.Peek)
			checkRead(t, c, ref, "code", now, c.Peek)
		}
	})
}

func snapshotStep(t *rapid.T, c *pressure.Core, ref *refCore, tierID string, now time.Time) {
	checkRead(t, c, ref, tierID, now, c.Snapshot)
	if ref.closed {
		return
	}
	for _, m := range ref.tierMembers(tierID) {
		due := !m.completed || now.Sub(m.lastCompleted) >= pressure.RefreshInterval
		if !m.queued && !m.running && due {
			m.queued = true
			ref.queue = append(ref.queue, m)
		}
	}
}

func checkRead(t *rapid.T, c *pressure.Core, ref *refCore, tierID string, now time.Time,
	read func(string, time.Time) (map[string]scheduler.Pressure, error)) {
	got, err := read(tierID, now)
	if err != nil {
		t.Fatalf("read %s: %v", tierID, err)
	}
	members := ref.tierMembers(tierID)
	if len(got) != len(members) {
		t.Fatalf("snapshot has %d members, want %d", len(got), len(members))
	}
	for _, m := range members {
		if want := ref.expect(m, now); got[m.id] != want {
			t.Fatalf("%s/%s at +%v: got %v/%v, want %v/%v", tierID, m.id, now.Sub(t0),
				got[m.id].Freshness(), ppmOf(got[m.id]), want.Freshness(), ppmOf(want))
		}
	}
}

func nextStep(t *rapid.T, c *pressure.Core, ref *refCore, now time.Time) {
	j, ok := c.Next(now)
	if len(ref.queue) == 0 || ref.closed {
		if ok {
			t.Fatalf("Next handed out %v with nothing queued", j)
		}
		return
	}
	head := ref.queue[0]
	ref.queue = ref.queue[1:]
	if !ok || j.Tier != head.tier || j.Member != head.id {
		t.Fatalf("Next = %v, %v; want %s/%s", j, ok, head.tier, head.id)
	}
	head.queued, head.running, head.started, head.job = false, true, now, j
}

func completeStep(t *rapid.T, c *pressure.Core, ref *refCore, now time.Time) {
	var running []*refMember
	for _, m := range ref.members {
		if m.running {
			running = append(running, m)
		}
	}
	if len(running) == 0 {
		return
	}
	m := rapid.SampledFrom(running).Draw(t, "complete")
	s := pressure.Sample{
		Running: genMetric(t, "running", true), Waiting: genMetric(t, "waiting", true),
		KVUsage: genMetric(t, "kv", false),
	}
	cl := pressure.Class(rapid.IntRange(0, 3).Draw(t, "class"))
	c.Complete(m.job, now, s, cl)
	if ref.closed {
		return
	}
	m.running, m.completed, m.lastCompleted, m.hasObs = false, true, now, true
	m.obs = scheduler.Observation{ObservedAt: m.started, SchedulerCapacity: m.capacity, Successful: true}
	m.unknownClass = false
	switch {
	case cl == pressure.ClassFailed || now.Sub(m.started) > pressure.FetchTimeout:
		m.obs.Successful = false
	case cl == pressure.ClassOK || cl == pressure.ClassUnknown:
		// An unknown answer still says which signals were malformed.
		m.obs.RequestsRunning, m.obs.RequestsWaiting, m.obs.KVCacheUsage = s.Running, s.Waiting, s.KVUsage
		m.unknownClass = cl == pressure.ClassUnknown
	}
}

func checkBounds(t *rapid.T, c *pressure.Core, ref *refCore) {
	pending := 0
	for _, m := range ref.members {
		if m.queued || m.running {
			pending++
		}
	}
	if c.Pending() != pending || c.Queued() != len(ref.queue) {
		t.Fatalf("pending %d queued %d, want %d and %d", c.Pending(), c.Queued(), pending, len(ref.queue))
	}
	if c.Pending() > c.Members() {
		t.Fatalf("pending %d exceeds membership %d", c.Pending(), c.Members())
	}
}

func ppmOf(p scheduler.Pressure) int64 {
	v, _ := p.PPM()
	return v
}

func sortedIDs(ts pressure.TierSpec) []string {
	ids := make([]string, 0, len(ts.Members))
	for _, m := range ts.Members {
		ids = append(ids, m.ID)
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

func capacityOf(ts pressure.TierSpec, id string) int64 {
	for _, m := range ts.Members {
		if m.ID == id {
			return m.Capacity
		}
	}
	return 0
}

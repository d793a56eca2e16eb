package pressure

import (
	"time"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// RefreshInterval is how long after a member's last completed refresh the next one
// becomes due.
const RefreshInterval = time.Second

// FetchTimeout bounds one collection: the transport timeout of Fetch, and the
// elapsed time after which the core treats a running refresh as failed.
const FetchTimeout = time.Second

// Job is one refresh of one member, handed to a worker by Core.Next and given back
// to Core.Complete with its sample. Seq identifies the job: a completion whose Seq
// is not the member's current job is ignored.
type Job struct {
	Tier, Member string
	Endpoint     string // base URL of the member
	ServedModel  string // model_name to keep when parsing
	Engine       string // the tier's engine: which adapter reads the page ("" is vLLM)
	Seq          uint64
	Started      time.Time // when a worker took the job: the sample's observation time
	Capacity     int64     // the member ceiling, the scheduler capacity of its pressure
}

type phase uint8

const (
	phaseIdle    phase = iota
	phaseQueued        // in the FIFO
	phaseRunning       // handed out by Next, not yet completed
)

// member is one registered (tier, member) entry: its registration copy, its
// single-flight marker and its last completed, already normalized sample.
type member struct {
	tier, id, endpoint, model, engine string
	capacity                          int64

	phase   phase  // queued and running share this one marker
	seq     uint64 // the queued or running job
	started time.Time

	completed     bool
	lastCompleted time.Time // completion time: the refresh clock runs from here

	// sampled reports whether a sample was published. observedAt is its observation
	// time; young is its pressure at ages 0..MaxAge and old its pressure past MaxAge.
	sampled    bool
	observedAt time.Time
	young, old scheduler.Pressure
}

// Core is the deterministic heart of the pressure cache: registration, per-member
// samples, the single-flight markers, the bounded FIFO of due refreshes and the
// freshness projection. It takes time as a value, starts no goroutines and does no
// I/O, so the production shell (Cache) and the simulator drive the same code.
//
// Core is NOT safe for concurrent use; the shell holds its mutex around every call.
type Core struct {
	members []member
	tiers   map[string]span
	keys    map[memberKey]int
	queue   fifo
	nextSeq uint64
	closed  bool
}

// NewCore registers capacity tiers: 2-16 members each, at most ident.MaxCapacityMembers in
// total, IDs per ident.ValidID, member ceilings 1..100000. The specs are copied;
// later changes to them change nothing. Errors wrap exactly one of the sentinel
// errors of this package.
func NewCore(tiers []TierSpec) (*Core, error) {
	members, spans, keys, err := register(tiers)
	if err != nil {
		return nil, err
	}
	return &Core{members: members, tiers: spans, keys: keys, queue: newFIFO(len(members))}, nil
}

// Snapshot returns a new complete member -> Pressure map of the tier at now and
// queues a refresh for every member of the tier that is due: never completed, or
// completed at least RefreshInterval ago, and not already queued or running. It
// never waits. An unknown tier returns ErrUnknownTier and schedules nothing.
func (c *Core) Snapshot(tier string, now time.Time) (map[string]scheduler.Pressure, error) {
	s, ok := c.tiers[tier]
	if !ok {
		return nil, ErrUnknownTier
	}
	out := c.project(s, now)
	if !c.closed {
		for i := s.lo; i < s.hi; i++ {
			c.scheduleIfDue(i, now)
		}
	}
	return out, nil
}

// Peek is Snapshot without scheduling: the same read, no refresh queued.
func (c *Core) Peek(tier string, now time.Time) (map[string]scheduler.Pressure, error) {
	s, ok := c.tiers[tier]
	if !ok {
		return nil, ErrUnknownTier
	}
	return c.project(s, now), nil
}

// SampleAges returns, for every member of tier with a published sample, that sample's age at now:
// now minus its observation time (the scrape's start, so the age is never understated). It is the
// age behind the member's current freshness class (fresh through scheduler.MaxAge, stale after; a
// failed scrape publishes a sample too). Members never sampled, members whose sample postdates now,
// and every member after Close are absent. Like Peek it schedules nothing; the operator views show
// it next to the freshness class.
func (c *Core) SampleAges(tier string, now time.Time) (map[string]time.Duration, error) {
	s, ok := c.tiers[tier]
	if !ok {
		return nil, ErrUnknownTier
	}
	out := make(map[string]time.Duration, s.hi-s.lo)
	if c.closed || now.IsZero() {
		return out, nil
	}
	for i := s.lo; i < s.hi; i++ {
		m := &c.members[i]
		if m.sampled && !now.Before(m.observedAt) {
			out[m.id] = now.Sub(m.observedAt)
		}
	}
	return out, nil
}

// Next hands the oldest queued refresh to a worker and marks it running since now.
// It returns false when nothing is queued or the core is closed.
func (c *Core) Next(now time.Time) (Job, bool) {
	if c.closed {
		return Job{}, false
	}
	i, ok := c.queue.pop()
	if !ok {
		return Job{}, false
	}
	m := &c.members[i]
	m.phase = phaseRunning
	m.started = now
	return Job{Tier: m.tier, Member: m.id, Endpoint: m.endpoint, ServedModel: m.model, Engine: m.engine,
		Seq: m.seq, Started: now, Capacity: m.capacity}, true
}

// Complete publishes a worker's result for job at now and clears the member's
// single-flight marker. A completion more than FetchTimeout after the job started
// publishes failed and discards the values, whatever the class. Completions after
// Close, for unknown members, or for a job that is not the member's running job are
// ignored.
//
// The sample's observation time is the job's start, not now: the member's state was
// read at some instant between the two, so dating it at the start can only
// overstate its age, and a sample is never called fresh when it might be older than
// scheduler.MaxAge. The refresh clock still runs from now.
func (c *Core) Complete(job Job, now time.Time, s Sample, cl Class) {
	c.CompletePrepared(job, now, Prepare(job, s, cl))
}

// CompletePrepared is Complete for a result already normalized by Prepare, so the
// cache shell does the normalizer's work outside its lock. An overdue completion
// publishes failed whatever was prepared.
func (c *Core) CompletePrepared(job Job, now time.Time, p Prepared) {
	if c.closed {
		return
	}
	i, ok := c.keys[memberKey{job.Tier, job.Member}]
	if !ok {
		return
	}
	m := &c.members[i]
	if m.phase != phaseRunning || m.seq != job.Seq {
		return
	}
	m.phase = phaseIdle
	m.completed = true
	m.lastCompleted = now
	if overdue(m.started, now) || !job.Started.Equal(m.started) {
		p = Prepared{young: failed, old: failed}
	}
	m.sampled = true
	m.observedAt = m.started
	m.young, m.old = p.young, p.old
}

// Close stops the core for good: queued work is dropped, Next returns nothing,
// late completions are ignored and every read returns unknown pressure. It is
// idempotent.
func (c *Core) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.queue.clear()
	for i := range c.members {
		c.members[i].phase = phaseIdle
	}
}

// Closed reports whether Close was called.
func (c *Core) Closed() bool { return c.closed }

// Pending returns how many members have a refresh queued or running. It never
// exceeds the registered membership.
func (c *Core) Pending() int {
	n := 0
	for i := range c.members {
		if c.members[i].phase != phaseIdle {
			n++
		}
	}
	return n
}

// Queued returns the FIFO length: refreshes waiting for a worker.
func (c *Core) Queued() int { return c.queue.len() }

// Members returns the number of registered members (all tiers).
func (c *Core) Members() int { return len(c.members) }

func (c *Core) project(s span, now time.Time) map[string]scheduler.Pressure {
	out := make(map[string]scheduler.Pressure, s.hi-s.lo)
	for i := s.lo; i < s.hi; i++ {
		m := &c.members[i]
		out[m.id] = c.pressureOf(m, now)
	}
	return out
}

// pressureOf projects one member at now. A running refresh that is already overdue
// reads failed without being awaited: its eventual values would be discarded anyway.
func (c *Core) pressureOf(m *member, now time.Time) scheduler.Pressure {
	switch {
	case c.closed, now.IsZero():
		return scheduler.UnknownPressure()
	case m.phase == phaseRunning && overdue(m.started, now):
		return failed
	case !m.sampled || now.Before(m.observedAt):
		return scheduler.UnknownPressure()
	case now.Sub(m.observedAt) > scheduler.MaxAge:
		return m.old
	default:
		return m.young
	}
}

func (c *Core) scheduleIfDue(i int, now time.Time) {
	m := &c.members[i]
	if m.phase != phaseIdle {
		return
	}
	if m.completed && now.Sub(m.lastCompleted) < RefreshInterval {
		return
	}
	c.nextSeq++
	m.seq = c.nextSeq
	m.phase = phaseQueued
	c.queue.push(i)
}

// Prepared is a completed refresh normalized for both age bands. NormalizePressure
// depends on now only through "is the observation placeable" (checked at read time)
// and "is it older than MaxAge", so the value at age 0 stands for every age in
// 0..MaxAge and the value just past MaxAge for every older age.
type Prepared struct {
	young, old scheduler.Pressure
}

// Prepare normalizes a worker's result for job: pure, so the shell runs it outside
// the cache lock. The observation time is job.Started (see Complete).
//
// ClassOK normalizes the sample. ClassFailed is a failed collection whatever the sample
// holds. ClassUnknown normalizes the sample's signal states (so a malformed signal reads
// invalid, not missing) but is never published fresh or stale: an unknown answer that
// somehow carried only valid signals reads unknown with no signal. An out-of-range
// class is a successful scrape with no signal.
func Prepare(job Job, s Sample, cl Class) Prepared {
	o := scheduler.Observation{ObservedAt: job.Started, SchedulerCapacity: job.Capacity, Successful: true}
	switch cl {
	case ClassOK, ClassUnknown:
		o.RequestsRunning, o.RequestsWaiting, o.KVCacheUsage = s.Running, s.Waiting, s.KVUsage
	case ClassFailed:
		o.Successful = false
	}
	p := Prepared{
		young: scheduler.NormalizePressure(job.Started, o),
		old:   scheduler.NormalizePressure(job.Started.Add(scheduler.MaxAge+time.Nanosecond), o),
	}
	if cl == ClassUnknown {
		p.young, p.old = neverUsable(p.young), neverUsable(p.old)
	}
	return p
}

// neverUsable keeps an unknown class from publishing fresh or stale pressure.
func neverUsable(p scheduler.Pressure) scheduler.Pressure {
	if f := p.Freshness(); f == scheduler.FreshnessFresh || f == scheduler.FreshnessStale {
		return scheduler.UnknownPressure()
	}
	return p
}

// overdue reports whether a refresh started at started has run longer than
// FetchTimeout at now.
func overdue(started, now time.Time) bool {
	return now.Sub(started) > FetchTimeout
}

// failed is the pressure of a failed refresh. It carries no time, value or signal, so
// one value serves every failed or overdue refresh and reading it costs no normalizing.
var failed = scheduler.NormalizePressure(time.Unix(1, 0), scheduler.Observation{ObservedAt: time.Unix(1, 0)})

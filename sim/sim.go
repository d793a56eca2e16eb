package sim

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	intentfile "github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/event"
)

// Epoch is the virtual epoch of every run: decision records start at Epoch plus an offset.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// DefaultRingSize is the decision log ring of a run.
const DefaultRingSize = 4096

// Options tune one run.
type Options struct {
	// Strategy overrides the tier's strategy ("" keeps it): compare runs use it.
	Strategy string
	// Progress, when set, is called about every 1% of virtual time with the virtual time reached
	// and the run's duration. It must not call back into the simulation.
	Progress func(done, total time.Duration)
	// Decisions, when set, receives every decision record as one JSON line, exactly as the
	// router's JSONL sink writes them.
	Decisions io.Writer
	// RingSize is the decision log ring (default DefaultRingSize).
	RingSize int
	// NoIntentFile runs the router without intent_file, so quiesce intent lives in memory only and
	// a restart forgets it: a scenario's restart gates must fail then (see the restart-intent
	// scenario's test).
	NoIntentFile bool
	// ReloadFault breaks the reload on purpose (see ReloadFault): a scenario's reload gates must
	// fail then.
	ReloadFault ReloadFault
	// Policy runs a reference placement policy of sim/policy (least_connections, random,
	// power_of_two, queue_kv, oracle) on a capacity tier instead of the capacity scheduler's own
	// choice; "" runs the strategy. Only the simulator can run one (see policies.go).
	Policy string
}

// ErrScenario is wrapped by Run's errors about a scenario the real router code refuses.
var ErrScenario = errors.New("sim: scenario refused")

// Run simulates the scenario once on virtual time and returns what it observed. It starts no
// goroutine, reads no clock and does no I/O beyond opts.Decisions.
func Run(sc *scenarios.Scenario, opts Options) (*Result, error) {
	w, err := newWorld(sc, opts)
	if err != nil {
		return nil, err
	}
	w.prepare()
	w.start()
	w.loop()
	return w.finish(), nil
}

// Check builds everything a run under strategy would build from the scenario (the rendered router
// configuration through the real loader, admission, routing, the pressure core, the decision log,
// the members' engines) and runs nothing. A scenario that passes Check for a strategy is not
// refused by Run; callers use it to refuse a bad scenario before any run starts.
func Check(sc *scenarios.Scenario, strategy string) error {
	_, err := newWorld(sc, Options{Strategy: strategy})
	return err
}

// tailLimit bounds the virtual time in-flight requests get after the run's duration; what is
// still running then is canceled as the client leaving.
func tailLimit(d time.Duration) time.Duration { return max(time.Minute, d/4) }

// world is one run's state: the real router pieces, the virtual members and the event queue.
type world struct {
	sc       *scenarios.Scenario
	strategy string
	opts     Options

	q        event.Queue[ev]
	now      time.Duration
	events   uint64
	arrivals bool // still accepting new arrivals (now < Duration)

	cfg    config.Config
	tier   config.Tier
	adm    *admission.TierAdmission
	router *routing.Router

	members  []*member
	byID     map[string]int // member ID -> index (lookups only, never iterated)
	ready    readiness
	press    *telemetry // nil for round robin
	gen      *scenarios.Generator
	streams  scenarios.Streams
	parsed   parseMemo
	reqs     []reqState
	attempts attemptTable
	intent   intent
	drains   []*drainWatch
	files    memFS // the virtual router's file system: its intent file
	// intentStore persists quiesce intent when the config has intent_file (scenarios that restart).
	intentStore *intentfile.Store
	carried     struct{ acquired, released, misuse uint64 } // admission counters of routers before a restart
	res         *Result
	acct        leaseAccount
	sick        int      // members passive health has ejected and not yet seen recover
	queue       []waiter // requests in the tier's admission queue, in arrival order
	retrying    bool     // retryQueue is running
	buf         []engine.Event
	timers      [numTimers]deadlines
	views       []memberView  // scratch for the evidence audit
	oldest      int           // no request before this index is active (a lower bound, advanced lazily)
	progress    time.Duration // next virtual time to report progress at
	// The configuration in force: the tier's effective ceiling and the leases above it that a
	// reload's lowered ceilings left (see audit); the reloads' own books.
	tierCeiling  int64
	tierOverhang int64
	reloads      reloadState
	pol          *placement // a reference policy's state; nil for the router's own strategies
	outside      struct {   // the members' outside load (outside.go)
		gen *scenarios.Generator
		n   uint64
	}
}

func newWorld(sc *scenarios.Scenario, opts Options) (*world, error) {
	strategy := opts.Strategy
	if strategy == "" {
		strategy = sc.Tier.Strategy
	}
	var pol *placement
	if opts.Policy != "" {
		var err error
		if pol, err = newPlacement(opts.Policy, sc.Seed, len(sc.AllMembers())); err != nil {
			return nil, err
		}
		strategy = scenarios.StrategyCapacity // the walk, ceilings and telemetry of the capacity tier
	}
	if opts.RingSize == 0 {
		opts.RingSize = DefaultRingSize
	}
	intentFile := ""
	if hasRestart(sc) && !opts.NoIntentFile {
		intentFile = intentPath
	}
	cfg, err := buildRouterConfig(sc, strategy, opts.RingSize, intentFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	w := &world{sc: sc, strategy: strategy, opts: opts, cfg: cfg, byID: map[string]int{}, pol: pol}
	w.tier, _ = cfg.Tier(sc.Tier.ID)
	w.tierCeiling = w.tier.EffectiveMaxConcurrency()
	w.reloads.first = -1
	if len(sc.Reloads) > 0 {
		w.reloads.first = sc.Reloads[0].At
		if w.reloads.gens, w.reloads.digests, err = buildGenerations(sc, strategy, opts.RingSize, intentFile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrScenario, err)
		}
	}
	w.streams = scenarios.NewStreams(sc.Seed)
	w.gen = scenarios.NewGenerator(sc.Workload, w.streams)
	if err := w.buildRouter(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	if err := w.buildMembers(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	up := cfg.Upstream()
	w.timers[timerFirstByte].after, w.timers[timerOverall].after = up.FirstByteTimeout, up.Timeout
	return w, nil
}

// prepare allocates what only a run needs.
func (w *world) prepare() {
	w.res = w.newResult()
	w.acct = newLeaseAccount(len(w.members), w.sc.Duration)
	w.intent.members = make([]bool, len(w.members))
	w.views = make([]memberView, len(w.members))
	w.parsed = newParseMemo(w.sc.Tier.Alias)
	n := expectedRequests(w.sc)
	w.reqs, w.res.Requests = make([]reqState, 0, n), make([]Request, 0, n)
}

// buildRouter wires the real routing walk (admission, gates, the pressure core, the decision log)
// from the config, through the same constructors the server's composition root uses.
func (w *world) buildRouter() error {
	var source routing.PressureSource
	if w.tier.Strategy == config.StrategyCapacity {
		var err error
		if w.press, err = newTelemetry(w, routing.PressureSpecs(w.cfg)); err != nil {
			return err
		}
		source = w.press
	}
	w.ready = newReadiness(w.tier, w.sc.AllMembers())
	// As the server does: every record goes through Log.Add's validation, and capacity evidence is
	// checked against the configured membership and ceilings before it is stored.
	dlog, err := routing.NewDecisionLog(w.cfg, w.opts.Decisions)
	if err != nil {
		return err
	}
	if w.reloading() {
		w.reloads.digest = w.reloads.digests[len(w.reloads.gens)]
	}
	if w.router, err = routing.New(w.cfg, w.readinessSource(), source, dlog, w.routerOptions()...); err != nil {
		return err
	}
	w.adm, _ = w.router.Admission().Tier(w.tier.ID)
	_, err = w.openIntent()
	return err
}

// routerOptions are the options of a router the sim builds with routing.New. A router that reloads
// has its file's digest and the readiness source and the pressure cache as followers of every
// generation, as the server registers them; a router that does not gets exactly what it always got.
func (w *world) routerOptions() []routing.Option {
	opts := []routing.Option{routing.WithHealthEvents(w.healthEvent)}
	if w.reloading() {
		followers := []routing.Follower{readinessFollower{w}}
		if w.press != nil {
			followers = append(followers, w.press)
		}
		opts = append(opts, routing.WithDigest(w.reloads.digest), routing.WithFollowers(followers...))
	}
	return opts
}

// buildRouterKeepingLog builds a new router for w.cfg around the running one's decision log, the
// readiness source and the telemetry, as a process that rebuilt everything would.
func (w *world) buildRouterKeepingLog() error {
	var source routing.PressureSource
	if w.press != nil {
		gen := w.press.gen + 1
		var err error
		if w.press, err = newTelemetry(w, routing.PressureSpecs(w.cfg)); err != nil {
			return err
		}
		w.press.gen = gen // scrapes of the old core complete into nothing
		source = w.press
	}
	r, err := routing.New(w.cfg, w.readinessSource(), source, w.router.Decisions(), routing.WithHealthEvents(w.healthEvent))
	if err != nil {
		return err
	}
	w.router = r
	w.adm, _ = r.Admission().Tier(w.tier.ID)
	return nil
}

func (w *world) newResult() *Result {
	r := &Result{
		Scenario: w.sc.Name, Strategy: w.strategy, Seed: w.sc.Seed, Epoch: Epoch, Duration: w.sc.Duration,
		TierID: w.tier.ID, TierCeiling: w.tier.EffectiveMaxConcurrency(),
	}
	for _, m := range w.members {
		r.Members = append(r.Members, MemberResult{
			ID: m.id, Ceiling: m.ceiling, Profile: m.spec.Profile, StepScale: m.spec.StepScale,
		})
	}
	r.Telemetry.Enabled = w.press != nil
	if w.pol != nil {
		r.Strategy, r.Policy = w.pol.name, &PolicyStats{Name: w.pol.name}
	}
	return r
}

// expectedRequests sizes the request records up front: growing a slice of hundreds of thousands
// of records by doubling costs more than the records themselves.
func expectedRequests(sc *scenarios.Scenario) int {
	if o := sc.Workload.Open; o != nil {
		return int(min(float64(o.Rate*sc.Duration.Seconds()*1.05)+64, 1<<22))
	}
	return min(sc.Workload.Closed.Clients*16, 1<<22)
}

// at converts a virtual offset to the time.Time the router code sees.
func (w *world) at(d time.Duration) time.Time { return Epoch.Add(d) }

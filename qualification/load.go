package qualification

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/manage"
)

// settleTimeout bounds how long a phase waits, after its load, for the router to finish the
// requests' bookkeeping (a lease is released and its decision recorded just after the answer's last
// byte, which the bench may read first).
const settleTimeout = 30 * time.Second

// pollEvery is how often the run re-reads the router while it waits for a state.
const pollEvery = 20 * time.Millisecond

// sendLoad runs one bench plan against a target on a client sized for it, as anvil-bench does.
// Closing until (nil: never) ends its arrivals early; the requests in flight still run to their end.
func (r *runner) sendLoad(ctx context.Context, bp bench.Plan, t bench.Target, until <-chan struct{}) (*bench.RunResult, error) {
	c := bench.NewClient(bp.Concurrency(), bp.MaxPromptTokens())
	defer c.Close()
	return bench.RunUntil(ctx, c, bp, t, 0, nil, until)
}

func (r *runner) directTarget() bench.Target {
	urls := make([]string, 0, len(r.p.Tier.Members))
	for _, m := range r.p.Tier.Members {
		urls = append(urls, m.URL)
	}
	return bench.Target{Name: "direct", URLs: urls, Model: r.p.Tier.ServedModel, Token: r.o.Secrets.Member}
}

func (r *runner) routedTarget() bench.Target {
	return bench.Target{Name: "routed", URLs: []string{r.p.Router.URL}, Model: r.p.Router.Alias, Token: r.o.Secrets.Caller}
}

func withStop(res *bench.RunResult) bench.TargetInfo {
	info := res.Target
	info.Stopped = res.Stopped
	return info
}

// baseline sends the matched schedule to the members directly, client-side round robin, with the
// served model's name: what the hardware does without the router.
func (r *runner) baseline(ctx context.Context, rep *PhaseReport) {
	bp := r.p.matchedPlan()
	r.observe(PhaseBaseline, StepLoad)
	res, err := r.sendLoad(ctx, bp, r.directTarget(), nil)
	if err != nil {
		rep.check("load plan", false, "the bench refused the plan: %v", err)
		return
	}
	r.direct, r.directInfo = res.Records, withStop(res)
	h := bench.Header(&bp, []bench.TargetInfo{r.directInfo})
	result := bench.Build(h, res.Records)[0]
	rep.Bench = &result
	r.recordFunc(rep, "raw/baseline.jsonl", func(w io.Writer) error { return bench.WriteRaw(w, h, res.Records) })
	r.plots(rep, "baseline", bp.Label, []bench.Result{result})
	rep.check("the load ran to its end", res.Stopped == "", "stopped: %s", dash(res.Stopped))
	rep.check("the members serve the workload directly", shareOK(&result, r.p.SLO.MinSuccess),
		"%d of %d measured requests succeeded (target share %.4f)", result.Completed, result.Requests, r.p.SLO.MinSuccess)
}

func shareOK(res *bench.Result, min float64) bool {
	return res.Requests > 0 && float64(res.Completed)/float64(res.Requests) >= min
}

// routed sends the same schedule through the router and puts it beside the baseline.
func (r *runner) routed(ctx context.Context, rep *PhaseReport) {
	bp := r.p.matchedPlan()
	before := r.accountBefore(ctx, rep)
	r.observe(PhaseRouted, StepLoad)
	res, err := r.sendLoad(ctx, bp, r.routedTarget(), nil)
	if err != nil {
		rep.check("load plan", false, "the bench refused the plan: %v", err)
		return
	}
	h := bench.Header(&bp, []bench.TargetInfo{r.directInfo, withStop(res)})
	recs := append(append([]bench.Record(nil), r.direct...), res.Records...)
	results := bench.Build(h, recs)
	cmp := bench.Compare(results[0], results[1])
	rep.Comparison, rep.Bench = &cmp, &results[1]
	r.recordFunc(rep, "raw/matched.jsonl", func(w io.Writer) error { return bench.WriteRaw(w, h, recs) })
	r.plots(rep, "matched", bp.Label, results)
	rep.check("the load ran to its end", res.Stopped == "", "stopped: %s", dash(res.Stopped))
	r.accountAfter(ctx, rep, before, res.Records)
}

// sustained holds the tier at its ceiling: a closed loop of as many clients as the tier's
// effective ceiling, through the router, while the capacity view is sampled.
func (r *runner) sustained(ctx context.Context, rep *PhaseReport) {
	bp := r.p.sustainedPlan()
	before := r.accountBefore(ctx, rep)
	stop := r.sampleCapacity(ctx)
	r.observe(PhaseSustained, StepLoad)
	res, err := r.sendLoad(ctx, bp, r.routedTarget(), nil)
	stats := stop()
	rep.Samples = &stats
	if err != nil {
		rep.check("load plan", false, "the bench refused the plan: %v", err)
		return
	}
	r.recordResult(rep, "sustained", &bp, res)
	rep.check("the load ran to its end", res.Stopped == "", "stopped: %s", dash(res.Stopped))
	r.checkSamples(rep, stats)
	r.accountAfter(ctx, rep, before, res.Records)
}

// recordResult builds a one-target result, writes its raw records and plots.
func (r *runner) recordResult(rep *PhaseReport, name string, bp *bench.Plan, res *bench.RunResult) {
	h := bench.Header(bp, []bench.TargetInfo{withStop(res)})
	result := bench.Build(h, res.Records)[0]
	rep.Bench = &result
	r.recordFunc(rep, "raw/"+name+".jsonl", func(w io.Writer) error { return bench.WriteRaw(w, h, res.Records) })
	r.plots(rep, name, bp.Label, []bench.Result{result})
}

// plots writes the bench's latency CDFs of results (built in this process, so they hold samples).
func (r *runner) plots(rep *PhaseReport, name, label string, results []bench.Result) {
	figs, err := bench.Figures(label, results)
	if err != nil {
		r.keep(err)
		return
	}
	for _, f := range figs {
		stem := strings.TrimPrefix(f.Name, label+"-")
		r.recordFunc(rep, "plots/"+name+"-"+stem+".png", func(w io.Writer) error { return f.WriteTo(w, bench.FormatPNG) })
	}
}

// checkSamples: the capacity view never showed more in flight than a ceiling allows.
func (r *runner) checkSamples(rep *PhaseReport, s SampleStats) {
	members := make([]string, 0, len(s.MaxMember))
	for id, n := range s.MaxMember {
		members = append(members, fmt.Sprintf("%s %d", id, n))
	}
	sort.Strings(members)
	rep.check("ceilings held under load", s.Samples > 0 && s.Violations == 0,
		"%d capacity samples (%d read errors): tier at most %d of %d, members at most [%s]; %d over a ceiling",
		s.Samples, s.Errors, s.MaxTierActive, s.TierCeiling, strings.Join(members, ", "), s.Violations)
}

// sampleCapacity reads the capacity view at once and then every sample_every until the returned
// function is called, which stops the sampling and returns what it saw.
func (r *runner) sampleCapacity(ctx context.Context) func() SampleStats {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu    sync.Mutex
		stats = SampleStats{MaxMember: map[string]int64{}, TierCeiling: r.p.Tier.Ceiling}
		done  = make(chan struct{})
	)
	ceilings := map[string]int64{}
	for _, m := range r.p.Tier.Members {
		ceilings[m.ID] = m.MaxConcurrency
	}
	take := func() {
		_, t, err := r.router.capacity(ctx)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				stats.Errors++
			}
			return
		}
		stats.Samples++
		stats.MaxTierActive = max(stats.MaxTierActive, t.Active)
		if t.MaxConcurrency > 0 && t.Active > t.MaxConcurrency {
			stats.Violations++
		}
		for _, m := range t.Members {
			stats.MaxMember[m.ID] = max(stats.MaxMember[m.ID], m.Active)
			if c, ok := ceilings[m.ID]; !ok || m.Active > c {
				stats.Violations++
			}
		}
	}
	go func() {
		defer close(done)
		take()
		tick := time.NewTicker(r.p.Phases.SampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				take()
			}
		}
	}()
	return func() SampleStats {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return stats
	}
}

// ledger is the router's accounting of the tier at one moment: its capacity entry (leases held and
// released) and its cumulative decision and attempt counters.
type ledger struct {
	tier     manage.Tier
	counters counters
	ok       bool
}

func (r *runner) accountBefore(ctx context.Context, rep *PhaseReport) ledger {
	_, t, err := r.router.capacity(ctx)
	if err != nil {
		rep.check("router accounting read before the load", false, "capacity: %v", err)
		return ledger{}
	}
	c, err := r.router.counters(ctx)
	if err != nil {
		rep.check("router accounting read before the load", false, "/metrics: %v", err)
		return ledger{}
	}
	return ledger{tier: t, counters: c, ok: true}
}

// accountAfter waits for the router to settle the phase's requests, then checks its accounting
// against what the bench sent: one decision per request, as many successes as the bench saw, one
// upstream attempt per admitted request (never a retry), every lease released exactly once and
// none left held.
func (r *runner) accountAfter(ctx context.Context, rep *PhaseReport, before ledger, recs []bench.Record) {
	if !before.ok || ctx.Err() != nil {
		return
	}
	sent, ok := int64(len(recs)), int64(0)
	for i := range recs {
		if recs[i].Outcome == bench.OK {
			ok++
		}
	}
	after, err := r.settle(ctx, before, sent)
	if err != nil {
		rep.check("router accounting read after the load", false, "%v", err)
		return
	}
	d := after.counters.minus(before.counters)
	rep.check("one decision record per routed request", d.decisions() == sent,
		"the router recorded %d decisions on tier %s; the bench sent %d requests (warm-up included); the tier must carry no other traffic", d.decisions(), r.p.Tier.ID, sent)
	rep.check("the router's successes are the bench's", d.Outcomes["success"] == ok,
		"the router recorded %d successes; the bench saw %d", d.Outcomes["success"], ok)
	rep.check("one upstream attempt per admitted request", d.attempts() == d.admitted(),
		"%d upstream attempts for %d admitted requests (never a retry, never a peer)", d.attempts(), d.admitted())
	released := int64(after.tier.Released - before.tier.Released)
	misuse := int64(after.tier.ReleaseMisuse - before.tier.ReleaseMisuse)
	rep.check("every lease released exactly once", released == d.admitted() && misuse == 0,
		"%d leases released for %d admitted requests; %d release misuses", released, d.admitted(), misuse)
	rep.check("no lease left held", idle(after.tier), "%s", activeText(after.tier))
}

// settle re-reads the router until the tier holds no lease and its decisions count the phase's
// requests, or settleTimeout passes; it returns the last reading either way.
func (r *runner) settle(ctx context.Context, before ledger, sent int64) (ledger, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last ledger
	for {
		_, t, err := r.router.capacity(ctx)
		if err == nil {
			var c counters
			if c, err = r.router.counters(ctx); err == nil {
				last = ledger{tier: t, counters: c, ok: true}
				if idle(t) && c.minus(before.counters).decisions() >= sent {
					return last, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if last.ok {
				return last, nil
			}
			if err == nil {
				err = ctx.Err()
			}
			return ledger{}, err
		case <-tick.C:
		}
	}
}

func idle(t manage.Tier) bool {
	if t.Active != 0 {
		return false
	}
	for _, m := range t.Members {
		if m.Active != 0 {
			return false
		}
	}
	return true
}

func activeText(t manage.Tier) string {
	parts := []string{fmt.Sprintf("tier %d", t.Active)}
	for _, m := range t.Members {
		parts = append(parts, fmt.Sprintf("%s %d", shown(m.ID), m.Active))
	}
	return "in flight after the load: " + strings.Join(parts, ", ")
}

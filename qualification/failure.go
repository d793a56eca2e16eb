package qualification

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/manage"
)

// failure holds the tier at its ceiling through the router and, while that load runs, takes one
// member out and puts it back through the transition API: it waits until the member holds
// requests, quiesces it, drains it (the drain waits for those requests; it cancels nothing), checks
// on both sides that no routed request reaches it for the hold (the router's attempt counter and
// the member's own /metrics, which ties the member's ID to its URL) while the rest of the tier
// still serves, then readmits it. The load lasts exactly as long as that sequence: its arrivals
// end when the injection is over, however long each step took on this machine, and
// phases.failure.duration only bounds it, so a stuck run ends. Afterwards every request must have
// ended ok or been refused by admission (none cut, none failed upstream) and the router's
// accounting must balance.
func (r *runner) failure(ctx context.Context, rep *PhaseReport) {
	f := r.p.Phases.Failure
	i := slices.IndexFunc(r.p.Tier.Members, func(m Member) bool { return m.ID == f.Member })
	member := r.p.Tier.Members[i]
	bp := r.p.failurePlan()
	before := r.accountBefore(ctx, rep)
	if !before.ok {
		return
	}

	type outcome struct {
		res *bench.RunResult
		err error
	}
	injected := make(chan struct{}) // closed when the member is back: the load's arrivals end
	loadDone := make(chan struct{})
	results := make(chan outcome, 1)
	stop := r.sampleCapacity(ctx)
	go func() {
		defer close(loadDone)
		res, err := r.sendLoad(ctx, bp, r.routedTarget(), injected)
		results <- outcome{res, err}
	}()
	r.observe(PhaseFailure, StepLoad)
	r.inject(ctx, rep, member, loadDone)
	lasted := !closed(loadDone)
	close(injected)
	out := <-results
	stats := stop()
	rep.Samples = &stats
	if out.err != nil {
		rep.check("load plan", false, "the bench refused the plan: %v", out.err)
		return
	}
	if ctx.Err() == nil {
		rep.check("the load lasted until the member was back", lasted && out.res.Stopped == "",
			"the load ran until the injection ended (its bound, phases.failure.duration, is %s); stopped early: %s",
			f.Duration, stoppedText(lasted, out.res.Stopped))
	}
	r.recordResult(rep, "failure", &bp, out.res)
	r.checkSamples(rep, stats)
	counts := map[bench.Outcome]int{}
	for _, rec := range out.res.Records {
		counts[rec.Outcome]++
	}
	cut := len(out.res.Records) - counts[bench.OK] - counts[bench.HTTP503]
	rep.check("no request was cut", cut == 0,
		"%d requests: %d ok, %d refused by admission (503), %d otherwise (cut, failed or malformed)",
		len(out.res.Records), counts[bench.OK], counts[bench.HTTP503], cut)
	r.accountAfter(ctx, rep, before, out.res.Records)
}

// stoppedText says why the failure load ended before the injection did, if it did.
func stoppedText(lasted bool, stopped string) string {
	switch {
	case stopped != "":
		return stopped
	case !lasted:
		return "its bound passed first"
	}
	return "-"
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// inject is the member's way out and back. Every step is recorded; whatever fails, it tries to
// readmit the member before returning (restoration checks again). loadDone closes when the load
// ended early (its bound passed, or the bench stopped it): every wait gives up then.
func (r *runner) inject(ctx context.Context, rep *PhaseReport, m Member, loadDone <-chan struct{}) {
	f := r.p.Phases.Failure
	st, err := r.waitStatus(ctx, loadDone, func(st manage.Response) bool { return memberActive(st, m.ID) > 0 })
	if !rep.check("the member held requests under load", err == nil,
		"member %s had %d request(s) in flight before it was quiesced%s", m.ID, memberActive(st, m.ID), errText(err)) {
		return
	}
	q := r.send(ctx, rep, manage.ActionQuiesce, m.ID, 0)
	if !rep.check("quiesce under load", q != nil && q.Result == manage.ResultChanged,
		"member %s quiesced with %d request(s) in flight", m.ID, active(q)) {
		r.readmitQuietly(ctx, rep, m.ID)
		return
	}
	r.observe(PhaseFailure, StepQuiesced)
	d := r.send(ctx, rep, manage.ActionDrain, m.ID, int(f.DrainWait/time.Second))
	if !rep.check("drain waits for the member's requests", d != nil && d.Result == manage.ResultDrained && d.Scope.Active == 0,
		"the drain answered %s with %d request(s) left (it cancels nothing)", result(d), active(d)) {
		r.readmitQuietly(ctx, rep, m.ID)
		return
	}
	r.observe(PhaseFailure, StepDrained)
	r.holdOut(ctx, rep, m, loadDone)
	r.readmitQuietly(ctx, rep, m.ID)
}

// holdOut keeps the member out for the hold and checks that no request reaches it: the member's
// own /metrics (no request running, none finished over the hold), which also ties the member's ID
// in the router to its URL, and the router's admission status (no lease on the member). After the
// hold it re-reads the status until the rest of the tier holds a request: the tier served on
// while the member was out. Nothing here is a deadline the machine's speed must meet; the load
// runs until the member is back.
func (r *runner) holdOut(ctx context.Context, rep *PhaseReport, m Member, loadDone <-chan struct{}) {
	f := r.p.Phases.Failure
	l1, err1 := r.web.scrapeMember(ctx, m, r.p.Tier.ServedModel, r.o.Secrets.Member)
	r.noteFake(l1.Fake)
	timer := time.NewTimer(f.Hold)
	select {
	case <-ctx.Done():
		timer.Stop()
		return
	case <-loadDone:
		timer.Stop()
		return // the load ended early: the phase's "load lasted" check says so
	case <-timer.C:
	}
	st, err2 := r.waitStatus(ctx, loadDone, func(st manage.Response) bool { return st.Snapshot.Active > 0 })
	rep.check("the tier stayed under load while the member was out", err2 == nil,
		"after the %s hold the tier held %d request(s), on its other members%s", f.Hold, st.Snapshot.Active, errText(err2))
	l2, err3 := r.web.scrapeMember(ctx, m, r.p.Tier.ServedModel, r.o.Secrets.Member)
	r.noteFake(l2.Fake)
	if err := errors.Join(err1, err2, err3); err != nil {
		rep.check("no request reached the member while it was out", false, "%v", err)
		return
	}
	leases := memberActive(st, m.ID)
	rep.check("no request reached the member while it was out",
		l1.Running == 0 && l2.Running == 0 && l2.Finished == l1.Finished && leases == 0,
		"over the %s hold: member %s's own /metrics showed %g then %g running and %g then %g finished; the router held %d lease(s) on it",
		f.Hold, m.ID, l1.Running, l2.Running, l1.Finished, l2.Finished, leases)
}

// memberActive is the leases the router holds on a member (-1 when its status does not list it).
func memberActive(st manage.Response, member string) int64 {
	for _, m := range st.Snapshot.Members {
		if m.ID == member {
			return m.Active
		}
	}
	return -1
}

// readmitQuietly readmits a member this run quiesced (a no-op when it did not) and records it.
func (r *runner) readmitQuietly(ctx context.Context, rep *PhaseReport, member string) {
	if !slices.Contains(r.quiesced, member) || ctx.Err() != nil {
		return // an interrupted run leaves it to restoration
	}
	a := r.send(ctx, rep, manage.ActionReadmit, member, 0)
	if rep.check("readmission", a != nil && a.Scope.State == stateAdmitting, "member %s readmitted: %s", member, result(a)) {
		r.observe(PhaseFailure, StepReadmitted)
	}
}

// send makes one member transition through router/manage, records it, and keeps the ledger of
// quiesces this run must undo. It returns nil when the router refused or could not be reached.
func (r *runner) send(ctx context.Context, rep *PhaseReport, action, member string, wait int) *manage.Response {
	resp, err := r.router.transition(ctx, action, member, wait)
	r.transitions++
	a := Action{At: r.now().UTC(), Action: action, Tier: r.p.Tier.ID, Member: member}
	if err != nil {
		a.Error = err.Error() // router/manage's errors carry fixed codes and classes, never a URL or token
		var ref *manage.Refusal
		if errors.As(err, &ref) && ref.Active != nil {
			a.Active = *ref.Active
		}
	} else {
		a.Result, a.Active = resp.Result, resp.Scope.Active
	}
	rep.Actions = append(rep.Actions, a)
	switch {
	case action == manage.ActionQuiesce && !slices.Contains(r.quiesced, member):
		// Even a quiesce whose answer was lost may have taken effect: restoration readmits it.
		r.quiesced = append(r.quiesced, member)
	case err == nil && action == manage.ActionReadmit:
		r.quiesced = slices.DeleteFunc(r.quiesced, func(m string) bool { return m == member })
	}
	if err != nil {
		return nil
	}
	return &resp
}

// waitStatus re-reads the tier's status until done says so, the load ends or ctx does; it returns
// the last status read.
func (r *runner) waitStatus(ctx context.Context, loadDone <-chan struct{}, done func(manage.Response) bool) (manage.Response, error) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		st, err := r.router.status(ctx)
		if err != nil {
			return st, err
		}
		if done(st) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-loadDone:
			return st, errors.New("the load ended first")
		case <-tick.C:
		}
	}
}

// noteFake labels the run synthetic when any member answer identified the fake.
func (r *runner) noteFake(fake bool) {
	if fake {
		r.evidence = EvidenceSynthetic
	}
}

func active(resp *manage.Response) int64 {
	if resp == nil {
		return 0
	}
	return resp.Scope.Active
}

func result(resp *manage.Response) string {
	if resp == nil {
		return "a refusal or no answer (see the transitions)"
	}
	return resp.Result
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (%v)", err)
}

package qualification

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/internal/figure"
)

// CalibrationResult is the calibration phase's measurements: the curve up to where the sweep
// stopped, and the max_concurrency it implies. The run never applies it.
type CalibrationResult struct {
	Member string      `json:"member"`
	SLO    ceiling.SLO `json:"slo"`
	// Points are the steps measured, in order; the last one broke the SLO when BrokenAt is set.
	Points         []ceiling.Point        `json:"points"`
	BrokenAt       int                    `json:"slo_broken_at,omitempty"`
	Recommendation ceiling.Recommendation `json:"recommendation"`
}

// calibration sweeps one member's concurrency from 1 up to the bound, directly (the served model's
// name, the member's own token), each step held until two consecutive windows agree, and stops at
// the first step whose TTFT or TPOT p99 breaks the SLO or whose requests failed. It changes no
// configuration: the recommendation is written in the report for an operator to apply.
func (r *runner) calibration(ctx context.Context, rep *PhaseReport) {
	c := r.p.Phases.Calibration
	t := r.memberTarget(c.Member)
	res := CalibrationResult{Member: c.Member, SLO: c.SLO, Points: []ceiling.Point{}}
	r.observe(PhaseCalibration, StepLoad)
	failed := 0
	for _, n := range c.Steps() {
		pt, ok := r.measureStep(ctx, rep, c, t, n)
		if !ok {
			break
		}
		r.progress("phase calibration: concurrency %d: %.1f tokens/s, TTFT p99 %.2f ms, TPOT p99 %.2f ms", n, pt.Throughput, pt.TTFTP99, pt.TPOTP99)
		res.Points = append(res.Points, pt)
		failed += pt.Failed
		if pt.Failed > 0 {
			break // a member that fails requests is not loaded further; the phase fails below
		}
		if !c.SLO.Met(pt) {
			res.BrokenAt = n
			break
		}
	}
	res.Recommendation = ceiling.Recommend(res.Points, c.SLO, c.KneeShare)
	rep.Calibration = &res
	r.recordJSON(rep, "calibration/curve.json", res)
	if f, err := figure.Calibration("calibration", fmt.Sprintf("%s, member %s: latency against throughput per concurrency", r.p.Qualification, c.Member),
		res.Points, res.Recommendation.MaxConcurrency); err == nil {
		r.recordFunc(rep, "plots/calibration-latency-throughput.png", func(w io.Writer) error { return f.WriteTo(w, figure.PNG) })
	} else {
		r.keep(err)
	}
	rep.check("the sweep measured its first step", len(res.Points) > 0, "%d of %d steps measured", len(res.Points), len(c.Steps()))
	rep.check("every calibration request succeeded", failed == 0, "%d requests failed", failed)
	rep.Note = calibrationNote(&res)
}

func (r *runner) memberTarget(id string) bench.Target {
	i := slices.IndexFunc(r.p.Tier.Members, func(m Member) bool { return m.ID == id })
	return bench.Target{Name: "calibration", URLs: []string{r.p.Tier.Members[i].URL}, Model: r.p.Tier.ServedModel, Token: r.o.Secrets.Member}
}

// measureStep holds concurrency n: a closed loop of n clients whose arrivals end once two
// consecutive windows (after a first, warm-up one) agree within the tolerance, or at the step's
// bound. Its figures are those of the last two windows, which are on the bench's own clock (its
// records' zero). False: the step could not be measured (the bench refused the plan, the run was
// interrupted, or it ended before three windows).
func (r *runner) measureStep(ctx context.Context, rep *PhaseReport, c *Calibration, t bench.Target, n int) (ceiling.Point, bool) {
	bp := r.p.calibrationPlan(c, n)
	client := bench.NewClient(bp.Concurrency(), bp.MaxPromptTokens())
	defer client.Close()
	started, until := make(chan time.Time, 1), make(chan struct{})
	live := &bench.Live{OnStart: func(at time.Time) { started <- at }}
	done := make(chan stepOutcome, 1)
	go func() {
		res, err := bench.RunUntil(ctx, client, bp, t, 0, live, until)
		done <- stepOutcome{res, err}
	}()
	var w windows
	select {
	case start := <-started:
		w = holdStep(done, live, c, start)
	case o := <-done: // refused, or interrupted before it began
		w.outcome = &o
	}
	close(until)
	o := w.outcome
	if o == nil {
		got := <-done
		o = &got
	}
	if o.err != nil {
		rep.check("calibration load plan", false, "the bench refused the plan: %v", o.err)
		return ceiling.Point{}, false
	}
	h := bench.Header(&bp, []bench.TargetInfo{withStop(o.res)})
	r.recordFunc(rep, fmt.Sprintf("raw/calibration-%d.jsonl", n), func(wr io.Writer) error { return bench.WriteRaw(wr, h, o.res.Records) })
	if ctx.Err() != nil {
		return ceiling.Point{}, false // interrupted: Run records the phase so
	}
	if len(w.marks) < 3 {
		rep.check(fmt.Sprintf("concurrency %d measured", n), false, "the step ended after %d of at least 3 windows (stopped: %s)", len(w.marks), dash(o.res.Stopped))
		return ceiling.Point{}, false
	}
	k := len(w.marks)
	pt := StepPoint(n, o.res.Records, w.marks[k-3], w.marks[k-1], w.tokens[k-1]-w.tokens[k-3], bp.SLO)
	pt.Windows, pt.Stable = k, ceiling.Held(w.rates, c.Tolerance)
	return pt, true
}

// windows are a step's window ends (since its start) with the token count at each, and each
// measured window's throughput (the first, warm-up window excluded).
type windows struct {
	marks   []time.Duration
	tokens  []int64
	rates   []float64
	outcome *stepOutcome // the bench run, when it ended before the step was held
}

// stepOutcome is a step's bench run.
type stepOutcome struct {
	res *bench.RunResult
	err error
}

// holdStep reads the live token count at the end of window k, start + k·window on the bench's own
// clock (start), for every k whose nominal end is within the step's bound (k·window <= bound: the
// bound's last window counts however late its timer fires), until the step is held
// (ceiling.Held) or the bench run ends by itself (a stop or an interruption).
func holdStep(done <-chan stepOutcome, live *bench.Live, c *Calibration, start time.Time) windows {
	var w windows
	timer := time.NewTimer(time.Until(start.Add(c.Window)))
	defer timer.Stop()
	for k := time.Duration(1); k*c.Window <= c.MaxStepDuration; k++ {
		select {
		case <-timer.C:
		case o := <-done:
			if time.Since(start) >= k*c.Window { // the window ended as the run did: it counts
				w.mark(time.Since(start), live.Tokens.Load())
			}
			w.outcome = &o
			return w
		}
		w.mark(time.Since(start), live.Tokens.Load())
		if ceiling.Held(w.rates, c.Tolerance) {
			return w
		}
		timer.Reset(time.Until(start.Add((k + 1) * c.Window)))
	}
	return w // the bound's windows are taken; what follows is the drain, not a window
}

// mark records a window's end at (since the start) with the token count tok.
func (w *windows) mark(at time.Duration, tok int64) {
	if k := len(w.marks); k > 0 {
		w.rates = append(w.rates, float64(tok-w.tokens[k-1])/(at-w.marks[k-1]).Seconds())
	}
	w.marks, w.tokens = append(w.marks, at), append(w.tokens, tok)
}

// StepPoint computes one step's figures over [from, to) of its run (times since the run's start):
// throughput from the tokens that arrived in it, and from the successful requests that ended in it
// (the samples) the requests and goodput (bench.Record.Good under slo) per second and the
// quantiles of their TTFT and TPOT (bench.Record.TPOT, what the gate's tpot_p99 judges): the
// attribution the simulator's sweep applies to its windows. Failed counts every request of the run
// that did not succeed.
func StepPoint(n int, recs []bench.Record, from, to time.Duration, tokens int64, slo bench.SLO) ceiling.Point {
	var ttft, tpot []float64
	finished, good, failed := 0, 0, 0
	for i := range recs {
		rec := &recs[i]
		if rec.Outcome != bench.OK {
			failed++
			continue
		}
		if at := rec.Start + rec.End; at < from || at >= to {
			continue
		}
		finished++
		if rec.Good(slo) {
			good++
		}
		if d, ok := rec.TTFT(); ok {
			ttft = append(ttft, millis(d))
		}
		if d, ok := rec.TPOT(); ok {
			tpot = append(tpot, millis(d))
		}
	}
	span := (to - from).Seconds()
	slices.Sort(ttft)
	slices.Sort(tpot)
	return ceiling.Point{Ceiling: n, Throughput: float64(tokens) / span, Requests: float64(finished) / span,
		Goodput: float64(good) / span, Samples: finished, TTFTP50: quantile(ttft, 0.5), TTFTP99: quantile(ttft, 0.99),
		TPOTP50: quantile(tpot, 0.5), TPOTP99: quantile(tpot, 0.99), Failed: failed}
}

// quantile is the bench's percentile of an ascending sample; NaN for an empty one, which meets no
// SLO target (ceiling.SLO.Met).
func quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return bench.Quantile(sorted, p)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// calibrationNote is the recommendation in words, for the phase report.
func calibrationNote(res *CalibrationResult) string {
	rec := res.Recommendation
	broke := "no measured step broke the SLO"
	switch {
	case rec.FailedAt > 0:
		broke = fmt.Sprintf("requests failed at concurrency %d and ended the sweep", rec.FailedAt)
	case res.BrokenAt > 0:
		broke = fmt.Sprintf("concurrency %d broke the SLO and ended the sweep", res.BrokenAt)
	}
	if rec.MaxConcurrency == 0 {
		return fmt.Sprintf("No max_concurrency recommended for member %s: %s (%s). Nothing was changed.", res.Member, rec.Reason, broke)
	}
	return fmt.Sprintf("Recommended max_concurrency for member %s: **%d** (%s; knee %d, SLO limit %d; %s). Nothing was changed: set it in the router's configuration to apply it.",
		res.Member, rec.MaxConcurrency, rec.Reason, rec.Knee, rec.SLOLimit, broke)
}

// markdown writes the curve as a table.
func (res *CalibrationResult) markdown(b *bytes.Buffer) {
	b.WriteString("## Calibration curve\n\n")
	head := ceiling.Header()
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat("---:|", len(head)) + "\n")
	for _, p := range res.Points {
		b.WriteString("| " + strings.Join(p.Cells(res.SLO), " | ") + " |\n")
	}
	b.WriteString("\n")
}

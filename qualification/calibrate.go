package qualification

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
// the first step whose TTFT or ITL p99 breaks the SLO or whose requests failed. It changes no
// configuration: the recommendation is written in the report for an operator to apply.
func (r *runner) calibration(ctx context.Context, rep *PhaseReport) {
	c := r.p.Phases.Calibration
	t := r.memberTarget(c.Member)
	res := CalibrationResult{Member: c.Member, SLO: c.SLO, Points: []ceiling.Point{}}
	r.observe(PhaseCalibration, StepLoad)
	failed := 0
	for _, n := range c.Steps() {
		pt, ok := r.calibrationStep(ctx, rep, c, t, n)
		if !ok {
			break
		}
		r.progress("phase calibration: concurrency %d: %.1f tokens/s, TTFT p99 %.2f ms, ITL p99 %.2f ms", n, pt.Throughput, pt.TTFTP99, pt.ITLP99)
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

// calibrationStep holds concurrency n: a closed loop of n clients whose arrivals end once two
// consecutive windows (after a first, warm-up one) agree within the tolerance, or at the step's
// bound. Its figures are those of the last two windows. False: the step could not be measured (the
// bench refused the plan, the run was interrupted, or it ended before two windows).
func (r *runner) calibrationStep(ctx context.Context, rep *PhaseReport, c *Calibration, t bench.Target, n int) (ceiling.Point, bool) {
	bp := r.p.calibrationPlan(c, n)
	client := bench.NewClient(bp.Concurrency(), bp.MaxPromptTokens())
	defer client.Close()
	live, until := &bench.Live{}, make(chan struct{})
	done := make(chan stepOutcome, 1)
	start := time.Now() // the bench's own start follows within microseconds: windows are on this clock
	go func() {
		res, err := bench.RunUntil(ctx, client, bp, t, 0, live, until)
		done <- stepOutcome{res, err}
	}()
	w := holdStep(done, live, c, start)
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

// holdStep reads the live token count at every window's end until the step is held (ceiling.Held)
// or the bench run ends by itself (its arrival bound, a stop or an interruption).
func holdStep(done <-chan stepOutcome, live *bench.Live, c *Calibration, start time.Time) windows {
	var w windows
	tick := time.NewTicker(c.Window)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			at, tok := time.Since(start), live.Tokens.Load()
			if at > c.MaxStepDuration {
				tick.Stop() // the arrivals are over: what follows is the drain, not a window
				continue
			}
			if k := len(w.marks); k > 0 {
				w.rates = append(w.rates, float64(tok-w.tokens[k-1])/(at-w.marks[k-1]).Seconds())
			}
			w.marks, w.tokens = append(w.marks, at), append(w.tokens, tok)
			if ceiling.Held(w.rates, c.Tolerance) {
				return w
			}
		case o := <-done:
			w.outcome = &o
			return w
		}
	}
}

// StepPoint computes one step's figures over [from, to) of its run (times since the run's start):
// throughput from the tokens that arrived in it, requests and goodput (bench.Record.Good under slo)
// from the requests that ended in it, TTFT from the first tokens and ITL from the chunk gaps that
// ended in it: the attribution the simulator's sweep applies to its windows. Failed counts every
// request of the run that did not succeed.
func StepPoint(n int, recs []bench.Record, from, to time.Duration, tokens int64, slo bench.SLO) ceiling.Point {
	var ttft, itl []float64
	finished, good, failed := 0, 0, 0
	in := func(at time.Duration) bool { return at >= from && at < to }
	for i := range recs {
		rec := &recs[i]
		if rec.Outcome != bench.OK {
			failed++
			continue
		}
		if in(rec.Start + rec.End) {
			finished++
			if rec.Good(slo) {
				good++
			}
		}
		for j, ch := range rec.Chunks {
			if !in(rec.Start + ch) {
				continue
			}
			if j == 0 {
				ttft = append(ttft, millis(ch))
			} else {
				itl = append(itl, millis(ch-rec.Chunks[j-1]))
			}
		}
	}
	span := (to - from).Seconds()
	slices.Sort(ttft)
	slices.Sort(itl)
	return ceiling.Point{Ceiling: n, Throughput: float64(tokens) / span, Requests: float64(finished) / span,
		Goodput: float64(good) / span, TTFTP50: quantile(ttft, 0.5), TTFTP99: quantile(ttft, 0.99),
		ITLP50: quantile(itl, 0.5), ITLP99: quantile(itl, 0.99), Failed: failed}
}

func quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return bench.Quantile(sorted, p)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// calibrationNote is the recommendation in words, for the phase report.
func calibrationNote(res *CalibrationResult) string {
	rec := res.Recommendation
	broke := "no measured step broke the SLO"
	if res.BrokenAt > 0 {
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

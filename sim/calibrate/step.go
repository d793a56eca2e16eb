package calibrate

import (
	"math"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// window is what one measurement window saw: tokens emitted, and the requests that finished in
// it (those meeting the SLO counted apart) with their TTFT and, of more than one output token,
// their TPOT, in milliseconds: the per-request figures the bench's goodput and the gate judge.
type window struct {
	tokens, finished, good int
	ttft, tpot             []float64
}

// inflight is one request on the engine.
type inflight struct {
	sent time.Time
	ttft time.Duration
}

// loop is one ceiling's closed loop: exactly c requests on the engine, a new one submitted the
// instant one finishes.
type loop struct {
	eng  *engine.Engine
	gen  *scenarios.Generator
	slo  ceiling.SLO
	next uint64
	reqs map[uint64]*inflight // looked up only, never iterated
	cur  window
	evs  []engine.Event
	err  error
}

// step holds ceiling c until two consecutive windows after the warm-up one agree (or MaxWindows)
// and returns the figures of the last two; it keeps only those two windows' samples.
func step(o *Options, c int) (ceiling.Point, error) {
	st := scenarios.NewStreams(o.Seed)
	eng, err := engine.New(o.Profile, sim.Epoch, st.Engines.Uint64())
	if err != nil {
		return ceiling.Point{}, err
	}
	l := &loop{eng: eng, gen: scenarios.NewGenerator(o.Workload, st), slo: o.SLO, reqs: make(map[uint64]*inflight, c)}
	for range c {
		l.submit(sim.Epoch)
	}
	var last [2]window // the last two measured windows, the older first
	var rates []float64
	for k := 1; k <= o.MaxWindows; k++ {
		l.until(sim.Epoch.Add(time.Duration(k) * o.Window))
		if l.err != nil {
			return ceiling.Point{}, l.err
		}
		if k > 1 { // the first is a warm-up: every request started at once
			last[0], last[1] = last[1], l.cur
			rates = append(rates, float64(l.cur.tokens))
		}
		l.cur = window{}
		if ceiling.Held(rates, o.Tolerance) {
			break
		}
	}
	p := point(c, last[:], 2*o.Window)
	p.Windows, p.Stable = len(rates)+1, ceiling.Held(rates, o.Tolerance)
	return p, nil
}

// until runs the engine to end, handling every event at or before it.
func (l *loop) until(end time.Time) {
	for l.err == nil {
		at, ok := l.eng.NextEventAt()
		if !ok || at.After(end) {
			break
		}
		l.evs = l.eng.Advance(at, l.evs[:0])
		for _, ev := range l.evs {
			l.on(ev)
		}
	}
	l.evs = l.eng.Advance(end, l.evs[:0])
}

func (l *loop) submit(at time.Time) {
	sh := l.gen.Next()
	l.next++
	req := engine.Request{ID: l.next, PromptTokens: sh.Prompt + sim.ChatTemplateTokens, MaxTokens: sh.Output, TokenEvents: true}
	if err := l.eng.Submit(at, req); err != nil {
		l.err = err // unreachable after resolve's length check
		return
	}
	l.reqs[l.next] = &inflight{sent: at}
}

func (l *loop) on(ev engine.Event) {
	r := l.reqs[ev.ID]
	switch ev.Kind {
	case engine.EventFirstToken:
		r.ttft = ev.At.Sub(r.sent)
		l.cur.tokens++
	case engine.EventToken:
		l.cur.tokens++
	case engine.EventFinish:
		l.finish(r, ev)
		delete(l.reqs, ev.ID)
		l.submit(ev.At)
	}
}

// finish counts request r, ended by ev, in the current window: its TTFT, its TPOT (vLLM's and the
// bench's: the time after its first token over its tokens after the first, for more than one), and
// whether both meet the SLO's targets, the per-request rule of the bench's goodput.
func (l *loop) finish(r *inflight, ev engine.Event) {
	w := &l.cur
	w.finished++
	w.ttft = append(w.ttft, millis(r.ttft))
	good := l.slo.TTFT <= 0 || r.ttft <= l.slo.TTFT
	if ev.Generated > 1 {
		tpot := (ev.At.Sub(r.sent) - r.ttft) / time.Duration(ev.Generated-1)
		w.tpot = append(w.tpot, millis(tpot))
		good = good && (l.slo.TPOT <= 0 || tpot <= l.slo.TPOT)
	}
	if good {
		w.good++
	}
}

// point merges windows lasting span in all into one sweep point.
func point(c int, wins []window, span time.Duration) ceiling.Point {
	var all window
	for _, w := range wins {
		all.tokens += w.tokens
		all.finished += w.finished
		all.good += w.good
		all.ttft = append(all.ttft, w.ttft...)
		all.tpot = append(all.tpot, w.tpot...)
	}
	s := span.Seconds()
	slices.Sort(all.ttft)
	slices.Sort(all.tpot)
	return ceiling.Point{Ceiling: c, Throughput: float64(all.tokens) / s, Requests: float64(all.finished) / s,
		Goodput: float64(all.good) / s, Samples: all.finished, TTFTP50: quantile(all.ttft, 0.5), TTFTP99: quantile(all.ttft, 0.99),
		TPOTP50: quantile(all.tpot, 0.5), TPOTP99: quantile(all.tpot, 0.99)}
}

// quantile is numpy's default (linear) percentile of an ascending sample, as the bench computes it;
// NaN for an empty one (no sample meets no target: ceiling.SLO.Met).
func quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := p * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + float64((h-lo)*(sorted[i+1]-sorted[i])) // no FMA: the same bits everywhere
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

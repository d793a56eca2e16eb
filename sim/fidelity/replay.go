package fidelity

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/engine/profile"
)

// ReplayFormat names the replay's JSON.
const ReplayFormat = "anvil-sim-replay/1"

// ErrReplay is wrapped by Replay's errors: a raw file that is not a run against one member.
var ErrReplay = errors.New("cannot replay the bench run")

// Replayed is one member's real run beside the engine model's: the bench's successful requests,
// submitted to a fresh engine of the member's profile at the times the bench sent them, with the
// token counts the member reported. The engine is the one the member runs, so the difference of
// each request is what the real path adds to it: HTTP both ways, goroutine scheduling and timer
// lateness, at the machine's load. Requests that failed are left out (Skipped): what they cost the
// member's engine is unknown.
type Replayed struct {
	Format    string  `json:"format"`
	Label     string  `json:"label"`
	Scenario  string  `json:"scenario,omitempty"`
	Profile   string  `json:"profile"`
	StepScale float64 `json:"step_scale"`
	Requests  int     `json:"requests"` // measured requests of the run
	Replayed  int     `json:"replayed"` // of those, the successes replayed
	Skipped   int     `json:"skipped"`  // the others
	Model     Figures `json:"model"`
	Real      Figures `json:"real"`
	Rows      []Row   `json:"rows"`
	// Added is what the real path added per request: real minus model TTFT of every replayed
	// stream, and real minus model end-to-end latency of every replayed request.
	AddedTTFT Added `json:"added_ttft_ms"`
	AddedE2E  Added `json:"added_e2e_ms"`
	SendLag   Lag   `json:"send_lag_ms"` // how late the bench sent the measured requests
	Bounded   int   `json:"bounded"`
	Within    int   `json:"within"`
	Passed    bool  `json:"passed"`
}

// Added summarizes per-request differences in milliseconds.
type Added struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Profile is the embedded engine profile called name, as anvil-fakevllm serve --profile and the
// scenarios name them.
func Profile(name string) (engine.Profile, error) { return profile.Lookup(name) }

// Replay replays a bench run against one member (one target with one URL) through a fresh engine of
// profile p under step scale scale.
func Replay(h bench.RawHeader, recs []bench.Record, p engine.Profile, scale float64) (Replayed, error) {
	if len(h.Targets) != 1 || h.Targets[0].URLs != 1 {
		return Replayed{}, fmt.Errorf("%w: it must be one run (anvil-bench run) against one member's URL", ErrReplay)
	}
	out := Replayed{Format: ReplayFormat, Label: h.Label, Scenario: h.Scenario, Profile: p.Name, StepScale: scale}
	var sent []bench.Record
	var lag []float64
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		out.Requests++
		lag = append(lag, millis(max(r.Start-r.Scheduled, 0)))
		if r.Outcome != bench.OK {
			out.Skipped++
			continue
		}
		if !r.Usage || r.PromptTokens < 1 || r.OutputTokens < 1 {
			return Replayed{}, fmt.Errorf("%w: request %d has no token usage from the member", ErrReplay, r.ID)
		}
		sent = append(sent, r)
	}
	slices.SortStableFunc(sent, func(a, b bench.Record) int { return cmp.Compare(a.Start, b.Start) })
	first, end, err := runEngine(sent, p, scale)
	if err != nil {
		return Replayed{}, err
	}
	out.Replayed = len(sent)
	out.fill(sent, first, end)
	if l := added(lag); l.N > 0 {
		out.SendLag = Lag{P50: l.P50, P99: l.P99, Max: l.Max}
	}
	return out, nil
}

// runEngine submits the requests in order at their send times and returns each one's first-token
// and finish times since the run's start (-1 when the engine never produced them).
func runEngine(sent []bench.Record, p engine.Profile, scale float64) (first, end []time.Duration, err error) {
	epoch := time.Unix(0, 0)
	eng, err := engine.New(p, epoch, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	if scale != 1 {
		if err := eng.SetStepScale(epoch, scale); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
	}
	first, end = make([]time.Duration, len(sent)), make([]time.Duration, len(sent))
	for i := range sent {
		first[i], end[i] = -1, -1
	}
	var evs []engine.Event
	record := func() {
		for _, e := range evs {
			switch e.Kind {
			case engine.EventFirstToken:
				first[e.ID] = e.At.Sub(epoch)
			case engine.EventFinish:
				end[e.ID] = e.At.Sub(epoch)
			}
		}
		evs = evs[:0]
	}
	for i, r := range sent {
		at := epoch.Add(r.Start)
		evs = eng.Advance(at, evs)
		record()
		req := engine.Request{ID: uint64(i), PromptTokens: int(r.PromptTokens), MaxTokens: int(r.OutputTokens)}
		if err := eng.Submit(at, req); err != nil {
			return nil, nil, fmt.Errorf("%w: request %d: %w", ErrReplay, r.ID, err)
		}
	}
	for {
		next, ok := eng.NextEventAt()
		if !ok {
			break
		}
		evs = eng.Advance(next, evs)
		record()
	}
	return first, end, nil
}

// fill computes both sides' figures, the rows with the bounds and the per-request differences.
func (out *Replayed) fill(sent []bench.Record, first, end []time.Duration) {
	var mTTFT, mTPOT, mE2E, rTTFT, rTPOT, rE2E, addTTFT, addE2E []float64
	for i, r := range sent {
		if end[i] < 0 {
			continue // unreachable: every request the engine took finishes
		}
		m, q := millis(end[i]-r.Start), millis(r.End)
		mE2E, rE2E, addE2E = append(mE2E, m), append(rE2E, q), append(addE2E, q-m)
		ttft, ok := r.TTFT()
		if !ok || first[i] < 0 {
			continue
		}
		mt, rt := millis(first[i]-r.Start), millis(ttft)
		mTTFT, rTTFT, addTTFT = append(mTTFT, mt), append(rTTFT, rt), append(addTTFT, rt-mt)
		if r.OutputTokens > 1 {
			mTPOT = append(mTPOT, millis((end[i]-first[i])/time.Duration(r.OutputTokens-1)))
			if tpot, ok := r.TPOT(); ok {
				rTPOT = append(rTPOT, millis(tpot))
			}
		}
	}
	out.Model = Figures{Requests: out.Requests, Succeeded: len(mE2E), TTFT: summarize(mTTFT), TPOT: summarize(mTPOT), E2E: summarize(mE2E)}
	out.Real = Figures{Requests: out.Requests, Succeeded: len(rE2E), TTFT: summarize(rTTFT), TPOT: summarize(rTPOT), E2E: summarize(rE2E)}
	out.AddedTTFT, out.AddedE2E = added(addTTFT), added(addE2E)
	out.Rows = rows(Run{Strategy: "member", Sim: out.Model, Real: out.Real})
	out.Bounded, out.Within, out.Passed = tally(out.Rows)
}

func added(xs []float64) Added {
	if len(xs) == 0 {
		return Added{}
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return Added{N: len(xs), Mean: sum / float64(len(xs)), Min: xs[0], Max: xs[len(xs)-1],
		P50: bench.Quantile(xs, 0.50), P90: bench.Quantile(xs, 0.90), P99: bench.Quantile(xs, 0.99)}
}

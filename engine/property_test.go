package engine

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestInvariantsProperty drives random submits, aborts, squeezes and
// advances and checks the engine's invariants after every call.
func TestInvariantsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := Profile{
			Name:                "prop",
			StepBase:            time.Millisecond,
			PrefillPerToken:     time.Microsecond,
			DecodePerSeq:        10 * time.Microsecond,
			ContextPerToken:     time.Nanosecond,
			Jitter:              rapid.SampledFrom([]float64{0, 0.2}).Draw(rt, "jitter"),
			MaxNumSeqs:          rapid.IntRange(1, 6).Draw(rt, "seqs"),
			MaxNumBatchedTokens: rapid.IntRange(1, 300).Draw(rt, "budget"),
			NumGPUBlocks:        rapid.IntRange(2, 40).Draw(rt, "blocks"),
			BlockSize:           rapid.SampledFrom([]int{1, 4, 16}).Draw(rt, "block_size"),
		}
		e, err := New(p, t0, rapid.Uint64().Draw(rt, "seed"))
		if err != nil {
			rt.Fatal(err)
		}
		modelLen := p.ModelLen()
		var evs []Event
		lastAt := t0
		lastSteps := uint64(0)
		nextID := uint64(0)
		finished := map[uint64]bool{}
		check := func() {
			checkConsistent(rt, e)
			m := e.Metrics()
			if m.Running > p.MaxNumSeqs {
				rt.Fatalf("running %d > max_num_seqs %d", m.Running, p.MaxNumSeqs)
			}
			if e.used > m.TotalBlocks || m.KVUsage < 0 || m.KVUsage > 1 {
				rt.Fatalf("used %d of %d blocks, usage %v", e.used, m.TotalBlocks, m.KVUsage)
			}
			if m.Steps != lastSteps {
				if m.Steps != lastSteps+1 {
					rt.Fatalf("unobserved step")
				}
				lastSteps = m.Steps
				st := m.LastStep
				if st.Tokens > p.MaxNumBatchedTokens || st.Tokens < 1 || st.Seqs > p.MaxNumSeqs {
					rt.Fatalf("step over budget: %+v", st)
				}
				if st.PrefillTokens+st.DecodeSeqs != st.Tokens {
					rt.Fatalf("step tokens do not add up: %+v", st)
				}
			}
			for _, ev := range evs {
				if ev.At.Before(lastAt) {
					rt.Fatalf("event %v before %v", ev, lastAt)
				}
				lastAt = ev.At
				if finished[ev.ID] {
					rt.Fatalf("event after finish: %+v", ev)
				}
				if ev.Kind == EventFinish {
					finished[ev.ID] = true
				}
			}
			evs = evs[:0]
		}
		// Every call moves time by at most the next step end, so each step
		// is observed right after the call that started it.
		step := func(rt *rapid.T) time.Time {
			next, ok := e.NextEventAt()
			if !ok || next.Before(e.Now()) {
				return e.Now().Add(time.Duration(rapid.Int64Range(0, int64(5*time.Millisecond)).Draw(rt, "idle")))
			}
			span := int64(next.Sub(e.Now()))
			return e.Now().Add(time.Duration(rapid.Int64Range(0, span).Draw(rt, "dt")))
		}
		rt.Repeat(map[string]func(*rapid.T){
			"submit": func(rt *rapid.T) {
				prompt := rapid.IntRange(1, modelLen).Draw(rt, "prompt")
				r := Request{ID: nextID, PromptTokens: prompt,
					MaxTokens:   rapid.IntRange(1, modelLen-prompt+1).Draw(rt, "max"),
					StopAfter:   rapid.IntRange(0, 20).Draw(rt, "stop"),
					TokenEvents: rapid.Bool().Draw(rt, "token_events")}
				err := e.Submit(step(rt), r)
				if (err == nil) != (r.PromptTokens+r.MaxTokens <= modelLen) {
					rt.Fatalf("submit %+v: %v", r, err)
				}
				nextID++
				check()
			},
			"abort": func(rt *rapid.T) {
				e.Abort(step(rt), rapid.Uint64Range(0, nextID+1).Draw(rt, "id"))
				check()
			},
			"squeeze": func(rt *rapid.T) {
				if err := e.SetReservedBlocks(step(rt), rapid.IntRange(0, p.NumGPUBlocks-1).Draw(rt, "reserve")); err != nil {
					rt.Fatal(err)
				}
				check()
			},
			"advance": func(rt *rapid.T) {
				evs = e.Advance(step(rt), evs)
				check()
			},
			"": func(rt *rapid.T) {
				check()
			},
		})
		// Releasing any squeeze, everything finishes and the gauges return to 0.
		if err := e.SetReservedBlocks(e.Now(), 0); err != nil {
			rt.Fatal(err)
		}
		check()
		for i := 0; ; i++ {
			next, ok := e.NextEventAt()
			if !ok {
				break
			}
			if i > 1_000_000 {
				rt.Fatal("engine never drains")
			}
			evs = e.Advance(next, evs)
			check()
		}
		m := e.Metrics()
		if m.Running != 0 || m.Waiting != 0 || m.KVUsage != 0 || m.Success.Total() != m.Submitted {
			rt.Fatalf("not drained: %+v", m)
		}
	})
}

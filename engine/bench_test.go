package engine

import (
	"testing"
	"time"
)

// benchDecode measures steady-state decode steps of a batch of seqs
// requests: the default cost model with a KV pool large enough that no
// request finishes or is preempted during the run.
func benchDecode(b *testing.B, seqs int, tokenEvents bool) {
	p := DefaultProfile()
	p.Name = "bench"
	p.MaxNumSeqs = max(seqs, 256)
	p.NumGPUBlocks = MaxGPUBlocksLimit
	p.MaxModelLen = 0
	e, err := New(p, t0, 1)
	if err != nil {
		b.Fatal(err)
	}
	maxTokens := p.KVCapacityTokens()/seqs - 64
	nextID := uint64(0)
	add := func(at time.Time) {
		if err := e.Submit(at, Request{ID: nextID, PromptTokens: 16, MaxTokens: maxTokens, TokenEvents: tokenEvents}); err != nil {
			b.Fatal(err)
		}
		nextID++
	}
	for range seqs {
		add(t0)
	}
	evs := make([]Event, 0, 2*seqs)
	for e.Metrics().LastStep.DecodeSeqs != seqs { // until every prefill is done
		at, _ := e.NextEventAt()
		evs = e.Advance(at, evs[:0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		at, _ := e.NextEventAt()
		evs = e.Advance(at, evs[:0])
		for _, ev := range evs {
			if ev.Kind == EventFinish { // only for runs longer than maxTokens steps
				add(ev.At)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(b.N*seqs)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkStepDecode64 is the goal: >= 1,000,000 steps/s and no
// allocation per step for a 64-sequence decode batch without token events.
func BenchmarkStepDecode64(b *testing.B) { benchDecode(b, 64, false) }

// BenchmarkStepDecode256 is a full default batch (max_num_seqs 256).
func BenchmarkStepDecode256(b *testing.B) { benchDecode(b, 256, false) }

// BenchmarkStepDecode64TokenEvents is the HTTP server's mode: one event
// per token, appended to a reused slice.
func BenchmarkStepDecode64TokenEvents(b *testing.B) { benchDecode(b, 64, true) }

package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketsAreVLLMs(t *testing.T) {
	// From vllm/v1/metrics/loggers.py (PrometheusStatLogger).
	assert.Equal(t, []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}, TTFTBuckets())
	assert.Equal(t, []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}, ITLBuckets())
	assert.Equal(t, []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}, RequestLatencyBuckets())
	assert.Len(t, TTFTBuckets(), MaxBuckets)

	m := newEngine(t, TinyProfile()).Metrics()
	for _, c := range []struct {
		h    Histogram
		want []float64
	}{{m.TTFT, TTFTBuckets()}, {m.ITL, ITLBuckets()}, {m.E2E, RequestLatencyBuckets()}, {m.QueueTime, RequestLatencyBuckets()}} {
		assert.Equal(t, c.want, c.h.UpperBounds[:c.h.N])
	}
	b := TTFTBuckets()
	b[0] = 42
	assert.Equal(t, 0.001, TTFTBuckets()[0], "callers get copies")
}

func TestHistogramObserve(t *testing.T) {
	h := newHist(ITLBuckets())
	h.observe(10*time.Millisecond, 1)   // exactly on the first bound: le is inclusive
	h.observe(10*time.Millisecond+1, 2) // just above
	h.observe(81*time.Second, 1)        // above every bound: only +Inf
	h.observe(time.Second, 0)           // no-op
	v := h.view()
	assert.Equal(t, uint64(1), v.Cumulative[0])
	assert.Equal(t, uint64(3), v.Cumulative[1])
	assert.Equal(t, uint64(3), v.Cumulative[v.N-1])
	assert.Equal(t, uint64(4), v.Count)
	assert.Equal(t, 30*time.Millisecond+2+81*time.Second, v.Sum)
	assert.InDelta(t, 81.030000002, v.SumSeconds(), 1e-12)
}

// workload submits and aborts a random mix on a preempting engine and
// returns it drained, with everything it emitted.
func workload(t *testing.T, seed uint64) (*Engine, []Event, map[uint64]Request) {
	rng := rand.New(rand.NewPCG(seed, 99))
	p := TinyProfile()
	p.Jitter = 0.05
	e, err := New(p, t0, seed)
	require.NoError(t, err)
	reqs := map[uint64]Request{}
	var evs []Event
	at := time.Duration(0)
	for id := range uint64(300) {
		at += time.Duration(rng.IntN(int(3 * time.Millisecond)))
		evs = e.Advance(t0.Add(at), evs)
		r := Request{ID: id, PromptTokens: 1 + rng.IntN(400), MaxTokens: 1 + rng.IntN(300),
			StopAfter: rng.IntN(200), TokenEvents: rng.IntN(2) == 0}
		require.NoError(t, e.Submit(t0.Add(at), r))
		reqs[id] = r
		if id > 5 && rng.IntN(5) == 0 {
			e.Abort(t0.Add(at), id-uint64(rng.IntN(5)))
		}
		checkConsistent(t, e)
	}
	return e, append(evs, drain(t, e)...), reqs
}

func TestMetricsIdentities(t *testing.T) {
	e, evs, reqs := workload(t, 1)
	m := e.Metrics()
	require.Greater(t, m.Preemptions, uint64(0), "the workload must reach preemption")
	require.Greater(t, m.Success.Abort, uint64(0))
	require.Greater(t, m.Success.Stop, uint64(0))
	require.Greater(t, m.Success.Length, uint64(0))

	assert.Zero(t, m.Running)
	assert.Zero(t, m.Waiting)
	assert.Zero(t, m.WaitingCapacity+m.WaitingDeferred)
	assert.Zero(t, m.KVUsage)
	assert.Zero(t, m.UsedBlocks)
	assert.Equal(t, uint64(len(reqs)), m.Submitted)
	assert.Equal(t, m.Submitted, m.Success.Total(), "success counters add up to submitted")
	assert.Equal(t, m.Submitted, m.E2E.Count)
	assert.Equal(t, m.Submitted, m.QueueTime.Count)

	var firsts, gen, prompt, preempts uint64
	finished := map[uint64]Event{}
	for _, ev := range evs {
		switch ev.Kind {
		case EventFirstToken:
			firsts++
			prompt += uint64(reqs[ev.ID].PromptTokens)
		case EventPreempt:
			preempts++
		case EventFinish:
			require.NotContains(t, finished, ev.ID, "finished twice")
			finished[ev.ID] = ev
			gen += uint64(ev.Generated)
			r := reqs[ev.ID]
			switch ev.Reason {
			case FinishLength:
				assert.Equal(t, r.MaxTokens, ev.Generated)
			case FinishStop:
				assert.Equal(t, r.StopAfter, ev.Generated)
			}
		}
	}
	assert.Len(t, finished, len(reqs))
	assert.Equal(t, firsts, m.TTFT.Count)
	assert.Equal(t, prompt, m.PromptTokens)
	assert.Equal(t, gen, m.GenerationTokens)
	assert.Equal(t, gen-firsts, m.ITL.Count, "one inter-token latency per token after the first")
	assert.Equal(t, preempts, m.Preemptions)
	for _, h := range []Histogram{m.TTFT, m.ITL, m.E2E, m.QueueTime} {
		for i := 1; i < h.N; i++ {
			require.LessOrEqual(t, h.Cumulative[i-1], h.Cumulative[i])
		}
		require.LessOrEqual(t, h.Cumulative[h.N-1], h.Count)
	}
	var reasons uint64
	for _, r := range FinishReasons() {
		reasons += m.Success.Get(r)
	}
	assert.Equal(t, m.Success.Total(), reasons)
	assert.Zero(t, m.Success.Get(FinishNone))
}

func TestDeterminism(t *testing.T) {
	e1, a, _ := workload(t, 5)
	e2, b, _ := workload(t, 5)
	assert.Equal(t, a, b, "same inputs, same events")
	assert.Equal(t, e1.Metrics(), e2.Metrics())
	_, c, _ := workload(t, 6)
	assert.NotEqual(t, a, c)
}

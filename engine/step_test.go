package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps advances one step at a time until idle and records each step and
// every event.
func steps(t *testing.T, e *Engine) ([]StepStats, []Event) {
	t.Helper()
	var stats []StepStats
	var evs []Event
	seen := e.Metrics().Steps
	if seen > 0 {
		stats = append(stats, e.Metrics().LastStep)
	}
	record := func() {
		if m := e.Metrics(); m.Steps != seen {
			require.Equal(t, seen+1, m.Steps, "more than one step started in one call")
			seen = m.Steps
			stats = append(stats, m.LastStep)
		}
	}
	for {
		at, ok := e.NextEventAt()
		if !ok {
			return stats, evs
		}
		evs = e.Advance(at, evs)
		checkConsistent(t, e)
		record()
	}
}

func TestStepTimeFormula(t *testing.T) {
	e := newEngine(t, roundProfile())
	submit(t, e, 0, Request{ID: 1, PromptTokens: 100, MaxTokens: 3})
	stats, evs := steps(t, e)

	// 1ms + 100 prefill*10µs + 100 context*1µs; then 1ms + 1 decode*100µs + context.
	want := []time.Duration{ms(2.1), ms(1.201), ms(1.202)}
	require.Len(t, stats, 3)
	for i, st := range stats {
		assert.Equal(t, want[i], st.End.Sub(st.Start), "step %d", i)
	}
	assert.Equal(t, StepStats{Start: t0, End: t0.Add(ms(2.1)), Seqs: 1, Tokens: 100, PrefillTokens: 100, ContextTokens: 100}, stats[0])
	assert.Equal(t, 1, stats[1].DecodeSeqs)
	assert.Equal(t, 101, stats[1].ContextTokens)

	assert.Equal(t, []Event{
		{Kind: EventFirstToken, ID: 1, At: t0.Add(ms(2.1)), Generated: 1},
		{Kind: EventFinish, ID: 1, At: t0.Add(ms(4.503)), Generated: 3, Reason: FinishLength},
	}, evs)
	m := e.Metrics()
	assert.Equal(t, ms(2.1), m.TTFT.Sum)
	assert.Equal(t, ms(1.201)+ms(1.202), m.ITL.Sum)
	assert.Equal(t, uint64(2), m.ITL.Count)
	assert.Equal(t, ms(4.503), m.E2E.Sum)
	assert.Equal(t, time.Duration(0), m.QueueTime.Sum)
}

func TestChunkedPrefill(t *testing.T) {
	e := newEngine(t, roundProfile()) // budget 256
	submit(t, e, 0, Request{ID: 1, PromptTokens: 600, MaxTokens: 2})
	stats, evs := steps(t, e)

	require.Len(t, stats, 4)
	for i, want := range []int{256, 256, 88} {
		assert.Equal(t, want, stats[i].Tokens, "chunk %d", i)
		assert.Equal(t, want, stats[i].PrefillTokens, "chunk %d", i)
	}
	assert.Equal(t, []int{256, 512, 600, 601}, []int{stats[0].ContextTokens, stats[1].ContextTokens, stats[2].ContextTokens, stats[3].ContextTokens})
	// No token until the last chunk: 3.816 + 4.072 + 2.48 ms.
	first := firstOf(t, evs, 1, EventFirstToken)
	assert.Equal(t, t0.Add(ms(10.368)), first.At)
	assert.Equal(t, stats[2].End, first.At)
}

func TestTokenBudgetAndContinuousBatching(t *testing.T) {
	e := newEngine(t, roundProfile())
	submit(t, e, 0, Request{ID: 1, PromptTokens: 200, MaxTokens: 20})
	submit(t, e, 0, Request{ID: 2, PromptTokens: 200, MaxTokens: 20})
	// The idle engine started a step for the first request at once, as
	// vLLM's busy loop would; the second waits for the next step.
	assert.Equal(t, 200, e.Metrics().LastStep.Tokens)
	assert.Equal(t, 1, e.Metrics().Waiting)

	// To compose both in one step, hold the engine with a full squeeze.
	e2 := newEngine(t, roundProfile())
	require.NoError(t, e2.SetReservedBlocks(t0, e2.usable))
	submit(t, e2, 0, Request{ID: 1, PromptTokens: 200, MaxTokens: 20})
	submit(t, e2, 0, Request{ID: 2, PromptTokens: 200, MaxTokens: 20})
	require.NoError(t, e2.SetReservedBlocks(t0, 0))
	st := e2.Metrics().LastStep
	assert.Equal(t, 256, st.Tokens, "first request whole, second chunked to the budget")
	assert.Equal(t, 2, st.Seqs)

	// A third request arriving mid-generation joins the running batch at the
	// next step boundary instead of waiting for the batch to drain.
	submit(t, e2, ms(5), Request{ID: 3, PromptTokens: 10, MaxTokens: 2})
	all := drain(t, e2)
	third := firstOf(t, all, 3, EventFirstToken)
	assert.True(t, third.At.Before(firstOf(t, all, 1, EventFinish).At))
	assert.True(t, firstOf(t, all, 1, EventFirstToken).At.Before(firstOf(t, all, 2, EventFirstToken).At),
		"the chunked second prefill completes one step later")
}

func TestMaxNumSeqs(t *testing.T) {
	e := newEngine(t, roundProfile()) // max_num_seqs 4
	require.NoError(t, e.SetReservedBlocks(t0, e.usable))
	for i := range 6 {
		submit(t, e, 0, Request{ID: uint64(i), PromptTokens: 8, MaxTokens: 5})
	}
	require.NoError(t, e.SetReservedBlocks(t0, 0))
	m := e.Metrics()
	assert.Equal(t, 4, m.Running)
	assert.Equal(t, 2, m.Waiting)
	assert.Equal(t, 2, m.WaitingCapacity)
	assert.Zero(t, m.WaitingDeferred)
	evs := drain(t, e)
	// FCFS: the last two start only when the first ones leave.
	assert.False(t, firstOf(t, evs, 4, EventFirstToken).At.Before(firstOf(t, evs, 0, EventFinish).At))
}

// preemptProfile has 4 usable 16-token blocks.
func preemptProfile() Profile {
	p := roundProfile()
	p.NumGPUBlocks = 5
	return p
}

func TestPreemptionNewestGoesToFront(t *testing.T) {
	e := newEngine(t, preemptProfile())
	submit(t, e, 0, Request{ID: 1, PromptTokens: 16, MaxTokens: 40})
	submit(t, e, 0, Request{ID: 2, PromptTokens: 16, MaxTokens: 40, TokenEvents: true})
	// 3 arrives before the shortage and needs as much KV as 2 will.
	early := e.Advance(t0.Add(ms(2)), nil)
	submit(t, e, ms(2), Request{ID: 3, PromptTokens: 40, MaxTokens: 5})

	stats, evs := steps(t, e)
	evs = append(early, evs...)
	pre := only(evs, 0, EventPreempt)
	for _, id := range []uint64{1, 3} {
		pre = append(pre, only(evs, id, EventPreempt)...)
	}
	require.Empty(t, pre, "only the newest running request is preempted")
	p2 := only(evs, 2, EventPreempt)
	require.Len(t, p2, 1)
	// 2 started one step after 1, so it had 16 tokens when 1 needed its
	// third block (its 33rd token of context).
	assert.Equal(t, 16, p2[0].Generated)

	m := e.Metrics()
	assert.Equal(t, uint64(1), m.Preemptions)

	// 2 went back to the front: it resumes before 3, which arrived earlier.
	resumed := only(evs, 2, EventToken)[15] // the first token after preemption
	assert.Equal(t, 17, resumed.Generated)
	assert.True(t, resumed.At.Before(firstOf(t, evs, 3, EventFirstToken).At))
	// Recompute: the resumed request prefilled prompt plus its 16 outputs.
	var recompute *StepStats
	for i := range stats {
		if stats[i].End.Equal(resumed.At) {
			recompute = &stats[i]
		}
	}
	require.NotNil(t, recompute)
	assert.Equal(t, 32, recompute.PrefillTokens)
	assert.Equal(t, 1, recompute.Seqs, "3 does not fit beside 2 and waits behind it")
	for _, id := range []uint64{1, 2, 3} {
		assert.Equal(t, FinishLength, firstOf(t, evs, id, EventFinish).Reason)
	}
	assert.Equal(t, uint64(3), m.Success.Length)
}

func TestSelfPreemption(t *testing.T) {
	// The newest running request preempts itself when nothing newer exists.
	e := newEngine(t, preemptProfile())
	require.NoError(t, e.SetReservedBlocks(t0, e.usable))
	submit(t, e, 0, Request{ID: 1, PromptTokens: 16, MaxTokens: 40})
	submit(t, e, 0, Request{ID: 2, PromptTokens: 30, MaxTokens: 2})
	require.NoError(t, e.SetReservedBlocks(t0, 0))
	require.Equal(t, 2, e.Metrics().Running) // 1 + 2 blocks
	// Squeeze so that neither can grow: the oldest evicts 2, then itself.
	require.NoError(t, e.SetReservedBlocks(t0.Add(ms(1)), 3))
	evs := e.Advance(t0.Add(ms(100)), nil)
	assert.Len(t, only(evs, 2, EventPreempt), 1)
	assert.Len(t, only(evs, 1, EventPreempt), 1)
	m := e.Metrics()
	assert.Equal(t, 0, m.Running)
	assert.Equal(t, 2, m.Waiting)
	_, busy := e.NextEventAt()
	assert.False(t, busy, "a stalled engine waits for capacity")
	// Releasing the squeeze resumes in FCFS order.
	require.NoError(t, e.SetReservedBlocks(t0.Add(ms(100)), 0))
	evs = drain(t, e)
	assert.Equal(t, FinishLength, firstOf(t, evs, 1, EventFinish).Reason)
	assert.Equal(t, FinishLength, firstOf(t, evs, 2, EventFinish).Reason)
	checkConsistent(t, e)
}

func TestKVUsageFormula(t *testing.T) {
	e := newEngine(t, roundProfile()) // 64 usable blocks of 16
	submit(t, e, 0, Request{ID: 1, PromptTokens: 33, MaxTokens: 40})
	for {
		m := e.Metrics()
		s := e.slots[e.ids[1]]
		ctx := int(s.computed + s.sched) // tokens whose KV exists after the step in flight
		wantBlocks := (ctx + 15) / 16
		require.Equal(t, wantBlocks, m.UsedBlocks)
		require.Equal(t, float64(wantBlocks)/64, m.KVUsage)
		require.Equal(t, 64, m.TotalBlocks)
		at, _ := e.NextEventAt()
		if evs := e.Advance(at, nil); len(evs) > 0 && evs[len(evs)-1].Kind == EventFinish {
			break
		}
	}
	assert.Zero(t, e.Metrics().KVUsage)

	d := newEngine(t, DefaultProfile())
	submit(t, d, 0, Request{ID: 1, PromptTokens: 1000, MaxTokens: 10})
	assert.Equal(t, 63.0/29204, d.Metrics().KVUsage, "the null block is not usable: 1 - free/(num_gpu_blocks-1)")
}

// lockstep starts n one-token prompts in one step, then leaves exactly one
// free block, so they all reach their second block in the same step.
func lockstep(t *testing.T, budget, n int) *Engine {
	p := roundProfile()
	p.MaxNumBatchedTokens = budget
	e := newEngine(t, p)
	require.NoError(t, e.SetReservedBlocks(t0, e.usable))
	for i := range n {
		submit(t, e, 0, Request{ID: uint64(i), PromptTokens: 1, MaxTokens: 40, TokenEvents: true})
	}
	require.NoError(t, e.SetReservedBlocks(t0, e.usable-n-1))
	require.Equal(t, n, e.Metrics().LastStep.Seqs)
	return e
}

func TestPreemptionOrder(t *testing.T) {
	e := lockstep(t, 4, 4)
	stats, evs := steps(t, e)
	var pre []uint64
	for _, ev := range evs {
		if ev.Kind == EventPreempt {
			pre = append(pre, ev.ID)
		}
	}
	// 0 takes the free block; 1 preempts the newest (3) and takes its block;
	// 2, now the newest, preempts itself. 2 then waits ahead of 3.
	require.GreaterOrEqual(t, len(pre), 2)
	assert.Equal(t, []uint64{3, 2}, pre[:2])
	for _, st := range stats {
		if st.Preempted > 0 {
			assert.Equal(t, 2, st.Seqs)
			break
		}
	}
	assert.True(t, only(evs, 2, EventToken)[15].At.Before(only(evs, 3, EventToken)[15].At),
		"the older preempted request resumes first")
}

func TestNoAdmissionInAPreemptingStep(t *testing.T) {
	// With a budget of 2, the self-preempted request's one-token recompute
	// chunk would fit in the block it just freed; vLLM still waits a step.
	e := lockstep(t, 2, 2)
	stats, _ := steps(t, e)
	found := false
	for i, st := range stats {
		if st.Preempted == 0 {
			continue
		}
		found = true
		assert.Equal(t, 1, st.Seqs, "step %d admitted a waiting request after preempting", i)
		require.Less(t, i+1, len(stats))
		assert.Equal(t, 2, stats[i+1].Seqs, "the next step admits it")
		break
	}
	assert.True(t, found)
}

package engine

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProfileValidate(t *testing.T) {
	require.NoError(t, DefaultProfile().Validate())
	require.NoError(t, TinyProfile().Validate())
	cases := []struct {
		field  string
		mutate func(*Profile)
	}{
		{"name", func(p *Profile) { p.Name = "" }},
		{"name", func(p *Profile) { p.Name = "Upper" }},
		{"name", func(p *Profile) { p.Name = "-lead" }},
		{"name", func(p *Profile) { p.Name = string(make([]byte, 65)) }},
		{"step_base", func(p *Profile) { p.StepBase = 0 }},
		{"step_base", func(p *Profile) { p.StepBase = 11 * time.Second }},
		{"prefill_per_token", func(p *Profile) { p.PrefillPerToken = -1 }},
		{"decode_per_seq", func(p *Profile) { p.DecodePerSeq = 2 * time.Second }},
		{"context_per_token", func(p *Profile) { p.ContextPerToken = 2 * time.Millisecond }},
		{"jitter", func(p *Profile) { p.Jitter = math.NaN() }},
		{"jitter", func(p *Profile) { p.Jitter = -0.1 }},
		{"jitter", func(p *Profile) { p.Jitter = 0.6 }},
		{"max_num_seqs", func(p *Profile) { p.MaxNumSeqs = 0 }},
		{"max_num_seqs", func(p *Profile) { p.MaxNumSeqs = 1<<16 + 1 }},
		{"max_num_batched_tokens", func(p *Profile) { p.MaxNumBatchedTokens = 0 }},
		{"num_gpu_blocks", func(p *Profile) { p.NumGPUBlocks = 1 }},
		{"num_gpu_blocks", func(p *Profile) { p.NumGPUBlocks = 1<<24 + 1 }},
		{"block_size", func(p *Profile) { p.BlockSize = 0 }},
		{"block_size", func(p *Profile) { p.BlockSize = 2048 }},
		{"max_model_len", func(p *Profile) { p.MaxModelLen = -1 }},
		{"max_model_len", func(p *Profile) { p.MaxModelLen = 64*16 + 1 }},
		{"max_model_len", func(p *Profile) { p.NumGPUBlocks = 1 << 24; p.MaxModelLen = 1<<24 + 1 }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			p := TinyProfile()
			c.mutate(&p)
			err := p.Validate()
			require.ErrorIs(t, err, ErrInvalidProfile)
			var pe *ProfileError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.field, pe.Field)
			assert.Contains(t, err.Error(), "field "+c.field+": ")
			_, err = New(p, t0, 0)
			assert.ErrorIs(t, err, ErrInvalidProfile)
		})
	}
	p := TinyProfile()
	p.MaxModelLen = 0
	require.NoError(t, p.Validate())
	assert.Equal(t, 1024, p.ModelLen())
	p.NumGPUBlocks = MaxGPUBlocksLimit
	assert.Equal(t, MaxModelLenLimit, p.ModelLen(), "the derived length is capped")
}

func TestSubmitValidation(t *testing.T) {
	cases := []struct {
		name string
		r    Request
		want error
	}{
		{"zero prompt", Request{ID: 9, PromptTokens: 0, MaxTokens: 1}, ErrInvalidRequest},
		{"negative prompt", Request{ID: 9, PromptTokens: -5, MaxTokens: 1}, ErrInvalidRequest},
		{"zero max tokens", Request{ID: 9, PromptTokens: 1, MaxTokens: 0}, ErrInvalidRequest},
		{"negative stop", Request{ID: 9, PromptTokens: 1, MaxTokens: 1, StopAfter: -1}, ErrInvalidRequest},
		{"prompt too long", Request{ID: 9, PromptTokens: 1025, MaxTokens: 1}, ErrTooLong},
		{"total too long", Request{ID: 9, PromptTokens: 1000, MaxTokens: 25}, ErrTooLong},
		{"overflowing sum", Request{ID: 9, PromptTokens: 10, MaxTokens: math.MaxInt}, ErrTooLong},
		{"duplicate id", Request{ID: 1, PromptTokens: 1, MaxTokens: 1}, ErrDuplicateID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, TinyProfile())
			submit(t, e, 0, Request{ID: 1, PromptTokens: 10, MaxTokens: 10})
			before := e.Metrics()
			err := e.Submit(t0, c.r)
			require.ErrorIs(t, err, c.want)
			assert.Equal(t, before, e.Metrics(), "a refused request leaves the engine untouched")
		})
	}
	e := newEngine(t, TinyProfile())
	submit(t, e, 0, Request{ID: 1, PromptTokens: 1000, MaxTokens: 24}) // exactly max_model_len
	submit(t, e, 0, Request{ID: 2, PromptTokens: 1, MaxTokens: 1})
	drain(t, e)
	submit(t, e, time.Second, Request{ID: 1, PromptTokens: 1, MaxTokens: 1}) // an id may be reused after finishing
}

func TestFinishReasons(t *testing.T) {
	cases := []struct {
		name      string
		max, stop int
		want      FinishReason
		generated int
	}{
		{"length without eos", 5, 0, FinishLength, 5},
		{"stop before length", 5, 3, FinishStop, 3},
		{"length wins a tie", 5, 5, FinishLength, 5},
		{"eos beyond max", 5, 9, FinishLength, 5},
		{"single token", 1, 0, FinishLength, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, TinyProfile())
			submit(t, e, 0, Request{ID: 7, PromptTokens: 20, MaxTokens: c.max, StopAfter: c.stop, TokenEvents: true})
			evs := drain(t, e)
			fin := firstOf(t, evs, 7, EventFinish)
			assert.Equal(t, c.want, fin.Reason)
			assert.Equal(t, c.generated, fin.Generated)
			require.Len(t, evs, c.generated+1, "first token, each later token, finish")
			assert.Equal(t, EventFirstToken, evs[0].Kind)
			for i, ev := range evs[:c.generated] {
				assert.Equal(t, i+1, ev.Generated)
			}
			assert.Equal(t, evs[c.generated-1].At, fin.At, "finish comes with the last token")
			assert.Equal(t, uint64(1), e.Metrics().Success.Get(c.want))
		})
	}
}

func TestTokenEventsOptional(t *testing.T) {
	e := newEngine(t, TinyProfile())
	submit(t, e, 0, Request{ID: 1, PromptTokens: 20, MaxTokens: 50})
	submit(t, e, 0, Request{ID: 2, PromptTokens: 20, MaxTokens: 50, TokenEvents: true})
	evs := drain(t, e)
	assert.Len(t, only(evs, 1, EventFirstToken, EventToken, EventFinish), 2)
	assert.Len(t, only(evs, 2, EventToken), 49)
}

func TestAbort(t *testing.T) {
	t.Run("waiting", func(t *testing.T) {
		e := newEngine(t, roundProfile())
		submit(t, e, 0, Request{ID: 1, PromptTokens: 10, MaxTokens: 50})
		submit(t, e, ms(0.5), Request{ID: 2, PromptTokens: 10, MaxTokens: 50})
		require.Equal(t, 1, e.Metrics().Waiting)
		require.True(t, e.Abort(t0.Add(ms(0.7)), 2))
		m := e.Metrics()
		assert.Equal(t, 0, m.Waiting)
		assert.Equal(t, uint64(1), m.Success.Abort)
		assert.Equal(t, uint64(1), m.QueueTime.Count)
		assert.Equal(t, ms(0.2), m.QueueTime.Sum, "never scheduled: queued until the abort")
		at, ok := e.NextEventAt()
		require.True(t, ok)
		assert.Equal(t, t0.Add(ms(0.7)), at, "the abort event is due now")
		evs := e.Advance(at, nil)
		assert.Equal(t, []Event{{Kind: EventFinish, ID: 2, At: t0.Add(ms(0.7)), Reason: FinishAbort}}, evs)
		assert.False(t, e.Abort(t0.Add(ms(1)), 2), "already gone")
		assert.False(t, e.Abort(t0.Add(ms(1)), 99), "never known")
		checkConsistent(t, e)
	})
	t.Run("running mid-step", func(t *testing.T) {
		e := newEngine(t, roundProfile())
		submit(t, e, 0, Request{ID: 1, PromptTokens: 100, MaxTokens: 50})
		submit(t, e, 0, Request{ID: 2, PromptTokens: 10, MaxTokens: 50})
		evs := e.Advance(t0.Add(ms(2.1)), nil) // 1's prefill ends; 1 and 2 share the next step
		require.Len(t, evs, 1)
		require.Equal(t, 2, e.Metrics().Running)
		usedBefore := e.Metrics().UsedBlocks
		end, _ := e.NextEventAt()
		require.True(t, e.Abort(t0.Add(ms(2.5)), 1))
		m := e.Metrics()
		assert.Equal(t, 1, m.Running)
		assert.Equal(t, usedBefore-7, m.UsedBlocks, "101 tokens of KV freed at once")
		evs = e.Advance(end, evs[:0])
		require.Len(t, evs, 2)
		assert.Equal(t, Event{Kind: EventFinish, ID: 1, At: t0.Add(ms(2.5)), Generated: 1, Reason: FinishAbort}, evs[0])
		assert.Equal(t, Event{Kind: EventFirstToken, ID: 2, At: end, Generated: 1}, evs[1],
			"the aborted request emits nothing at the end of its step")
		checkConsistent(t, e)
		drain(t, e)
		m = e.Metrics()
		assert.Equal(t, FinishCounts{Length: 1, Abort: 1}, m.Success)
		assert.Equal(t, uint64(2), m.E2E.Count)
	})
	t.Run("abort frees room for the queue", func(t *testing.T) {
		e := newEngine(t, preemptProfile())
		submit(t, e, 0, Request{ID: 1, PromptTokens: 60, MaxTokens: 4})
		submit(t, e, 0, Request{ID: 2, PromptTokens: 60, MaxTokens: 4})
		require.Equal(t, 1, e.Metrics().Waiting)
		require.True(t, e.Abort(t0.Add(ms(1)), 1))
		evs := drain(t, e)
		assert.Equal(t, FinishLength, firstOf(t, evs, 2, EventFinish).Reason)
	})
}

func TestTimeSemantics(t *testing.T) {
	e := newEngine(t, roundProfile())
	_, ok := e.NextEventAt()
	assert.False(t, ok, "a new engine is idle")
	assert.Empty(t, e.Advance(t0.Add(time.Hour), nil))
	assert.Equal(t, t0.Add(time.Hour), e.Now())

	// A late submission happens at the engine clock, not in its past.
	submit(t, e, time.Minute, Request{ID: 1, PromptTokens: 100, MaxTokens: 1})
	evs := drain(t, e)
	assert.Equal(t, t0.Add(time.Hour+ms(2.1)), evs[0].At)
	assert.Equal(t, ms(2.1), e.Metrics().TTFT.Sum)

	// A submission at a future time first runs the steps due before it, and
	// their events wait for the next Advance.
	f := newEngine(t, roundProfile())
	submit(t, f, 0, Request{ID: 1, PromptTokens: 100, MaxTokens: 2})
	submit(t, f, ms(50), Request{ID: 2, PromptTokens: 100, MaxTokens: 1})
	at, ok := f.NextEventAt()
	require.True(t, ok)
	assert.Equal(t, t0.Add(ms(2.1)), at, "already produced events are due")
	evs = f.Advance(t0.Add(ms(50)), nil)
	require.Len(t, evs, 2)
	assert.Equal(t, EventFinish, evs[1].Kind)
	assert.Equal(t, 1, f.Metrics().Running, "the idle engine started 2 at its arrival")
	assert.Equal(t, t0.Add(ms(50)), f.Metrics().LastStep.Start)
	assert.Empty(t, f.Advance(t0.Add(ms(10)), nil), "advancing to the past is a no-op")
	assert.Equal(t, t0.Add(ms(50)), f.Now())

	// Times beyond the horizon are clamped, never overflowed.
	g := newEngine(t, roundProfile())
	far := t0.Add(time.Duration(math.MaxInt64))
	submit(t, g, time.Duration(math.MaxInt64), Request{ID: 1, PromptTokens: 1, MaxTokens: 1})
	assert.Empty(t, g.Advance(far, nil), "the step ends after the horizon and never runs")
	assert.Equal(t, t0.Add(time.Duration(horizon)), g.Now())
}

func TestStepScale(t *testing.T) {
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 1001} {
		e := newEngine(t, roundProfile())
		assert.ErrorIs(t, e.SetStepScale(t0, bad), ErrInvalidControl, "%v", bad)
	}
	e := newEngine(t, roundProfile())
	require.NoError(t, e.SetStepScale(t0, 2))
	submit(t, e, 0, Request{ID: 1, PromptTokens: 100, MaxTokens: 1})
	evs := drain(t, e)
	assert.Equal(t, t0.Add(ms(4.2)), evs[0].At)
}

func TestReservedBlocks(t *testing.T) {
	e := newEngine(t, roundProfile())
	assert.ErrorIs(t, e.SetReservedBlocks(t0, -1), ErrInvalidControl)
	assert.ErrorIs(t, e.SetReservedBlocks(t0, 65), ErrInvalidControl)
	require.NoError(t, e.SetReservedBlocks(t0, 16))
	m := e.Metrics()
	assert.Equal(t, 0.25, m.KVUsage, "reserved blocks count as used")
	assert.Equal(t, 16, m.UsedBlocks)
	submit(t, e, 0, Request{ID: 1, PromptTokens: 16, MaxTokens: 2})
	assert.Equal(t, 17.0/64, e.Metrics().KVUsage)
	drain(t, e)
	require.NoError(t, e.SetReservedBlocks(e.Now(), 0))
	assert.Zero(t, e.Metrics().KVUsage)
}

func TestJitter(t *testing.T) {
	p := roundProfile()
	p.Jitter = 0.1
	run := func(seed uint64) []Event {
		e, err := New(p, t0, seed)
		require.NoError(t, err)
		for i := range 6 {
			require.NoError(t, e.Submit(t0.Add(ms(float64(i))), Request{ID: uint64(i), PromptTokens: 50, MaxTokens: 30}))
		}
		return drain(t, e)
	}
	a, b, c := run(7), run(7), run(8)
	assert.Equal(t, a, b, "same seed, same events")
	assert.NotEqual(t, a, c, "different seed, different step times")
	first := a[0].At.Sub(t0)
	assert.InDelta(t, float64(ms(1.55)), float64(first), float64(ms(0.155)), "within ±10%% of the model time")

	p.Jitter = 0
	e1, _ := New(p, t0, 1)
	e2, _ := New(p, t0, 2)
	for _, e := range []*Engine{e1, e2} {
		require.NoError(t, e.Submit(t0, Request{ID: 1, PromptTokens: 50, MaxTokens: 30}))
	}
	assert.Equal(t, drain(t, e1), drain(t, e2), "without jitter the seed does not matter")
}

func TestErrorsAreFixed(t *testing.T) {
	e := newEngine(t, TinyProfile())
	err := e.Submit(t0, Request{ID: 1})
	assert.EqualError(t, err, "invalid request: prompt tokens must be at least 1")
	assert.True(t, errors.Is(err, ErrInvalidRequest))
	assert.EqualError(t, e.SetStepScale(t0, 0), "invalid engine control value: step scale must be in (0, 1000]")
}

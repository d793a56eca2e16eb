package bench

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// Quantile is numpy's default percentile (linear, type 7); the expected values are numpy's.
func TestQuantileMatchesNumpy(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		return xs
	}
	cases := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{7}, 0.5, 7},
		{[]float64{7}, 0.999, 7},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0.9, 3.7},
		{[]float64{1, 2, 3, 4}, 0.99, 3.97},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{seq(10), 0.5, 5.5},
		{seq(10), 0.9, 9.1},
		{seq(10), 0.95, 9.55},
		{seq(10), 0.99, 9.91},
		{seq(10), 0.999, 9.991},
		{[]float64{15, 20, 35, 40, 50}, 0.4, 29},
		{[]float64{15, 20, 35, 40, 50}, 0.9, 46},
		{seq(1000), 0.999, 999.001},
	}
	for _, tc := range cases {
		assert.InDelta(t, tc.want, Quantile(tc.xs, tc.p), 1e-9, "p=%g of %d values", tc.p, len(tc.xs))
	}
}

// On known distributions the summary lands on the distribution's own figures.
func TestSummaryOfKnownDistributions(t *testing.T) {
	t.Run("uniform grid", func(t *testing.T) {
		xs := make([]float64, 100001)
		for i := range xs {
			xs[len(xs)-1-i] = float64(i) / 100000 // reversed: summarize sorts
		}
		s := summarize(xs)
		assert.Equal(t, 100001, s.N)
		for i, p := range Percentiles() {
			assert.InDelta(t, p/100, s.Values()[i], 1e-12)
		}
		assert.InDelta(t, 0.5, s.Mean, 1e-12)
		assert.InDelta(t, math.Sqrt(1.0/12), s.Std, 1e-4)
		assert.Equal(t, 0.0, s.Min)
		assert.Equal(t, 1.0, s.Max)
	})
	t.Run("exponential", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		xs := make([]float64, 400000)
		for i := range xs {
			xs[i] = r.ExpFloat64()
		}
		s := summarize(xs)
		assert.InDelta(t, 1, s.Mean, 0.01)
		assert.InDelta(t, 1, s.Std, 0.01)
		for i, p := range Percentiles()[:4] {
			want := -math.Log(1 - p/100) // the exponential's quantile function
			assert.InDelta(t, want, s.Values()[i], want*0.02, "p%g", p)
		}
	})
	t.Run("normal", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		xs := make([]float64, 400000)
		for i := range xs {
			xs[i] = 10 + 2*r.NormFloat64()
		}
		s := summarize(xs)
		assert.InDelta(t, 10, s.Mean, 0.02)
		assert.InDelta(t, 2, s.Std, 0.02)
		assert.InDelta(t, 10, s.P50, 0.02)
		assert.InDelta(t, 10+2*1.6448536, s.P95, 0.03)
		assert.InDelta(t, 10+2*2.3263479, s.P99, 0.05)
	})
	t.Run("population standard deviation, as numpy's std", func(t *testing.T) {
		s := summarize([]float64{2, 4, 4, 4, 5, 5, 7, 9})
		assert.Equal(t, 5.0, s.Mean)
		assert.Equal(t, 2.0, s.Std)
	})
	t.Run("empty", func(t *testing.T) {
		assert.Equal(t, Summary{}, summarize(nil))
	})
}

// A seeded schedule is a fixed list: the same seed gives these arrival times, exactly.
func TestSeededSchedulesAreFixed(t *testing.T) {
	cases := []struct {
		open scenarios.Open
		want []time.Duration
	}{
		{scenarios.Open{Process: scenarios.ProcessPoisson, Rate: 10},
			[]time.Duration{5995129, 159229324, 208705638, 225206329, 315678637, 366352104}},
		{scenarios.Open{Process: scenarios.ProcessGamma, Rate: 10, Shape: 0.5},
			[]time.Duration{389228769, 636362203, 719042708, 764500607, 935020350, 1127663457}},
		{scenarios.Open{Process: scenarios.ProcessConstant, Rate: 4},
			[]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second, 1250 * time.Millisecond, 1500 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.open.Process, func(t *testing.T) {
			a := NewArrivals(tc.open, 7, len(tc.want), 0)
			var got []time.Duration
			for at, ok := a.Next(); ok; at, ok = a.Next() {
				got = append(got, at)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// Bounded by a window, the schedule follows the simulator's rule: the first arrival if it falls
// within the window (its end included), every later one strictly before the end.
func TestScheduleWindow(t *testing.T) {
	o := scenarios.Open{Process: scenarios.ProcessConstant, Rate: 4}
	count := func(window time.Duration) int {
		a := NewArrivals(o, 1, 0, window)
		n := 0
		for _, ok := a.Next(); ok; _, ok = a.Next() {
			n++
		}
		return n
	}
	assert.Equal(t, 0, count(249*time.Millisecond))
	assert.Equal(t, 1, count(250*time.Millisecond))
	assert.Equal(t, 1, count(500*time.Millisecond))
	assert.Equal(t, 2, count(501*time.Millisecond))
	assert.Equal(t, 39, count(10*time.Second))
}

// Shapes are the scenario generator's, in request order; warm-up shapes come from other streams.
func TestShapes(t *testing.T) {
	streaming := 0.75
	w := scenarios.Workload{
		PromptTokens: scenarios.Dist{Dist: scenarios.DistUniform, Min: 64, Max: 1024},
		OutputTokens: scenarios.Dist{Dist: scenarios.DistUniform, Min: 32, Max: 256},
		Streaming:    &streaming,
	}
	a, gen := NewShapes(w, 20), scenarios.NewGenerator(w, scenarios.NewStreams(20))
	first := a.Next()
	assert.Equal(t, gen.Next(), first)
	assert.Equal(t, 271, first.Prompt)
	assert.Equal(t, 193, first.Output)
	for range 100 {
		assert.Equal(t, gen.Next(), a.Next())
	}
	assert.NotEqual(t, first, newWarmupShapes(w, 20).Next())
}

func TestParseDist(t *testing.T) {
	good := map[string]scenarios.Dist{
		"128":                     {Dist: scenarios.DistConstant, Value: 128},
		"constant:value=64":       {Dist: scenarios.DistConstant, Value: 64},
		"uniform:min=64,max=1024": {Dist: scenarios.DistUniform, Min: 64, Max: 1024},
		"uniform:max=1024,min=64": {Dist: scenarios.DistUniform, Min: 64, Max: 1024},
		"lognormal:median=512,sigma=0.8,min=16,max=8192": {Dist: scenarios.DistLognormal, Median: 512, Sigma: 0.8, Min: 16, Max: 8192},
		"normal:mean=256,stddev=32,min=1,max=1024":       {Dist: scenarios.DistNormal, Mean: 256, StdDev: 32, Min: 1, Max: 1024},
	}
	for spec, want := range good {
		d, err := ParseDist(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want, d)
		again, err := ParseDist(DistString(d))
		require.NoError(t, err)
		assert.Equal(t, d, again, "DistString round trip")
	}
	for _, spec := range []string{"", "-5", "1e3", "abc", "uniform", "uniform:", "uniform:min=1", "uniform:min=1,max=2,min=3",
		"uniform:min=1,max=2,sigma=1", "uniform:min=x,max=2", "gauss:mean=1", "uniform:min=1;max=2", "uniform:min=NaN,max=2",
		"constant:value=inf", strings.Repeat("9", 300)} {
		_, err := ParseDist(spec)
		assert.ErrorIs(t, err, ErrInvalid, spec)
	}
}

// Every endpoint's body is one JSON object with the fields vLLM reads, and the prompt is
// BytesPerToken bytes per token.
func TestBodies(t *testing.T) {
	b := newBodies(1000)
	for _, tc := range []struct {
		ep     Endpoint
		stream bool
		want   string
	}{
		{Chat, true, `{"model":"m\"x","messages":[{"role":"user","content":"P"}],"max_tokens":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{Chat, false, `{"model":"m\"x","messages":[{"role":"user","content":"P"}],"max_tokens":7,"ignore_eos":true}`},
		{Completions, true, `{"model":"m\"x","prompt":"P","max_tokens":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{Responses, true, `{"model":"m\"x","input":"P","max_output_tokens":7,"ignore_eos":true,"stream":true}`},
		{Responses, false, `{"model":"m\"x","input":"P","max_output_tokens":7,"ignore_eos":true}`},
	} {
		head, prompt, tail := b.parts(tc.ep, `m"x`, 25, 7, tc.stream, true)
		assert.Len(t, prompt, 25*BytesPerToken)
		body := string(head) + string(prompt) + string(tail)
		require.True(t, json.Valid([]byte(body)), body)
		assert.JSONEq(t, strings.Replace(tc.want, `"P"`, `"`+string(prompt)+`"`, 1), body)
	}
	_, p, _ := b.parts(Chat, "m", 1000, 1, false, false)
	assert.Len(t, p, 4000)
	assert.Empty(t, strings.Trim(string(p), "abcdefghijklmnopqrstuvwxyz "), "prose needs no JSON escaping")
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		ms, ra string
		want   time.Duration
	}{
		{"", "", 0},
		{"", "3", 3 * time.Second},
		{"", " 3 ", 3 * time.Second},
		{"", "2.5", 2500 * time.Millisecond},
		{"", "60", time.Minute},
		{"", "60.001", 0},
		{"", "0", 0},
		{"", "-1", 0},
		{"", "1e1", 0},
		{"", "0x10", 0},
		{"", "1_0", 0},
		{"", "NaN", 0},
		{"", "Inf", 0},
		{"", "99999999999999999999999999999", 0},
		{"", now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{"", now.Add(-7 * time.Second).Format(http.TimeFormat), 0},
		{"", now.Add(2 * time.Minute).Format(http.TimeFormat), 0},
		{"", "Thursday, 02-Jan-25 03:04:15 GMT", 10 * time.Second},
		{"", "tomorrow", 0},
		{"250", "9", 250 * time.Millisecond},
		{"70000", "9", 0}, // the SDKs read milliseconds first, and a wait too long is not honoured
		{"x", "9", 9 * time.Second},
	}
	for _, tc := range cases {
		h := http.Header{}
		if tc.ms != "" {
			h.Set("Retry-After-Ms", tc.ms)
		}
		if tc.ra != "" {
			h.Set("Retry-After", tc.ra)
		}
		assert.Equal(t, tc.want, RetryAfter(h, now), "retry-after-ms %q retry-after %q", tc.ms, tc.ra)
	}
}

func TestPause(t *testing.T) {
	c := &scenarios.Closed{Think: time.Second, Backoff: 2 * time.Second}
	assert.Equal(t, time.Second, pause(c, &Record{Outcome: OK, RetryAfter: 5 * time.Second}))
	assert.Equal(t, 5*time.Second, pause(c, &Record{Outcome: HTTP503, RetryAfter: 5 * time.Second}))
	assert.Equal(t, 2*time.Second, pause(c, &Record{Outcome: HTTP503}))
	assert.Equal(t, 2*time.Second, pause(c, &Record{Outcome: Transport}))
	for _, s := range []int{408, 409, 429, 500, 503, 599} {
		assert.True(t, retryable(s), s)
	}
	for _, s := range []int{200, 400, 401, 404, 413} {
		assert.False(t, retryable(s), s)
	}
}

func TestStatusOutcome(t *testing.T) {
	for status, want := range map[int]Outcome{400: HTTP4xx, 401: HTTP4xx, 404: HTTP4xx, 429: HTTP429, 499: HTTP4xx,
		500: HTTP5xx, 502: HTTP5xx, 503: HTTP503, 504: HTTP5xx, 599: HTTP5xx, 204: Malformed, 302: Malformed, 101: Malformed} {
		assert.Equal(t, want, statusOutcome(status), status)
	}
	for _, o := range Outcomes() {
		got, ok := ParseOutcome(o.String())
		assert.True(t, ok)
		assert.Equal(t, o, got)
	}
	_, ok := ParseOutcome("success")
	assert.False(t, ok)
}

// The SSE reader follows the framing rules (LF or CRLF, multi-line data, comments, events without
// data) and refuses what no OpenAI server sends.
func TestSSEReader(t *testing.T) {
	read := func(s string) ([]string, error) {
		r := newSSEReader(bufio.NewReaderSize(strings.NewReader(s), 16), 64)
		var out []string
		for {
			ev, data, err := r.next()
			if err != nil {
				if err == io.EOF {
					return out, nil
				}
				return out, err
			}
			out = append(out, string(ev)+"|"+string(data))
		}
	}
	got, err := read("data: a\n\n: ping\n\ndata:b\r\n\r\nevent: e\ndata: c\ndata: d\nid: 7\nretry: 10\n\nevent: lonely\n\ndata: " + strings.Repeat("z", 40) + "\n\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"|a", "|b", "e|c\nd", "|" + strings.Repeat("z", 40)}, got)

	for in, want := range map[string]error{
		"data: a\n":            io.ErrUnexpectedEOF, // no blank line
		"data: a":              io.ErrUnexpectedEOF, // no newline
		"data: a\n\ndata":      io.ErrUnexpectedEOF,
		"nope: 1\n\n":          errSSE,
		"data\n\n":             nil, // a field without a colon has an empty value
		"data: a\rdata: b\n\n": errSSE,
		"data: " + strings.Repeat("y", 65) + "\n\n":                                        errFrameTooLarge,
		"data: " + strings.Repeat("y", 40) + "\ndata: " + strings.Repeat("y", 40) + "\n\n": errFrameTooLarge,
	} {
		_, err := read(in)
		if want == nil {
			assert.NoError(t, err, "%q", in)
			continue
		}
		assert.ErrorIs(t, err, want, "%q", in)
	}
}

// The answer parser classifies frames without keeping their text.
func TestAnswerFrames(t *testing.T) {
	cases := []struct {
		ep   Endpoint
		data string
		kind frameKind
		u    usage
		err  error
	}{
		{Chat, `[DONE]`, frameEnd, usage{}, nil},
		{Chat, `{"object":"chat.completion.chunk","choices":[{"delta":{"role":"assistant","content":""}}]}`, frameOther, usage{}, nil},
		{Chat, `{"object":"chat.completion.chunk","choices":[{"delta":{"content":null}}]}`, frameOther, usage{}, nil},
		{Chat, `{"object":"chat.completion.chunk","choices":[{"delta":{"content":"x"}}]}`, frameToken, usage{}, nil},
		{Chat, `{"object":"chat.completion.chunk","choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, frameToken, usage{3, 1, true}, nil},
		{Chat, `{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`, frameOther, usage{3, 0, true}, nil},
		{Chat, `{"object":"chat.\u0063ompletion.chunk","choices":[{"delta":{"content":"x"}}]}`, frameToken, usage{}, nil},
		{Chat, `{"object":"text_completion","choices":[{"text":"x"}]}`, frameOther, usage{}, errAnswer},
		{Chat, `{"choices":[{"delta":{"content":"x"}}]}`, frameOther, usage{}, errAnswer},
		{Chat, `{"object":"chat.completion.chunk","choices":[{"delta":{"content":1}}]}`, frameOther, usage{}, errAnswer},
		{Chat, `{"object":"chat.completion.chunk","usage":{"prompt_tokens":-1}}`, frameOther, usage{}, errAnswer},
		{Chat, `{"object":"chat.completion.chunk","usage":{"completion_tokens":1.5}}`, frameOther, usage{}, errAnswer},
		{Chat, `{"error":{"message":"x"}}`, frameOther, usage{}, errStreamError},
		{Chat, `[1,2]`, frameOther, usage{}, errAnswer},
		{Chat, `nope`, frameOther, usage{}, errAnswer},
		{Completions, `{"object":"text_completion","choices":[{"text":"x"}]}`, frameToken, usage{}, nil},
		{Completions, `{"object":"text_completion","choices":[{"text":""}]}`, frameOther, usage{}, nil},
		{Responses, `{"type":"response.output_text.delta","delta":"x"}`, frameToken, usage{}, nil},
		{Responses, `{"type":"response.output_text.delta","delta":""}`, frameOther, usage{}, nil},
		{Responses, `{"type":"response.in_progress","response":{"usage":null,"error":null}}`, frameOther, usage{}, nil},
		{Responses, `{"type":"response.completed","response":{"usage":{"input_tokens":4,"output_tokens":9}}}`, frameEnd, usage{4, 9, true}, nil},
		{Responses, `{"type":"response.incomplete","response":{}}`, frameEnd, usage{}, nil},
		{Responses, `{"type":"response.failed","response":{}}`, frameOther, usage{}, errStreamError},
		{Responses, `{"type":"error","code":"x"}`, frameOther, usage{}, errStreamError},
		{Responses, `{"delta":"x"}`, frameOther, usage{}, errAnswer},
		{Responses, `[DONE]`, frameOther, usage{}, nil},
	}
	for _, tc := range cases {
		p := answerParser{ep: tc.ep}
		kind, u, err := p.frame([]byte(tc.data))
		assert.Equal(t, tc.kind, kind, "%s %s", tc.ep, tc.data)
		assert.Equal(t, tc.u, u, "%s %s", tc.ep, tc.data)
		assert.ErrorIs(t, err, tc.err, "%s %s", tc.ep, tc.data)
		if tc.err == nil {
			assert.NoError(t, err)
		}
	}
}

// A client is sized from its plan: the pool holds every client's connection, the shared prompt
// text the longest prompt the plan can draw.
func TestPlanSizesItsClient(t *testing.T) {
	closed := Plan{Workload: scenarios.Workload{Closed: &scenarios.Closed{Clients: 12},
		PromptTokens: scenarios.Dist{Dist: scenarios.DistUniform, Min: 8, Max: 96}}}
	open := Plan{Workload: scenarios.Workload{Open: &scenarios.Open{Process: scenarios.ProcessPoisson, Rate: 5},
		PromptTokens: scenarios.Dist{Dist: scenarios.DistConstant, Value: 40}}}
	cases := []struct {
		name        string
		p           Plan
		conc, promp int
	}{
		{"closed loop", closed, 12, 96},
		{"closed loop, more warm-up clients", func() Plan { p := closed; p.WarmupClients = 20; return p }(), 20, 96},
		{"open loop", open, 1024, 40},
		{"open loop with a larger in-flight stop", func() Plan { p := open; p.Stop.MaxInFlight = 5000; return p }(), 5000, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.conc, c.p.Concurrency())
			assert.Equal(t, c.promp, c.p.MaxPromptTokens())
		})
	}
}

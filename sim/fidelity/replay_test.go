package fidelity

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/engine/profile"
)

// On the tiny profile (step 1 ms + 2 µs per prefill token + 20 µs per decode + 10 ns per context
// token), a 100-token prompt's first token ends a 1.201 ms step on an idle engine, and its next two
// tokens steps of 1.02101 and 1.02102 ms: TTFT 1.201 ms, end to end 3.24303 ms.
const (
	tinyTTFT = 1_201_000 * time.Nanosecond
	tinyE2E  = 3_243_030 * time.Nanosecond
)

func replayHeader(urls int) bench.RawHeader {
	return bench.RawHeader{Format: bench.RawFormat, Label: "alone", Scenario: "heterogeneous", Seed: 11, Endpoint: "chat",
		Mode: "open", Load: "open loop", Targets: []bench.TargetInfo{{Name: "target", Model: "m", URLs: urls}}}
}

// TestReplayRecoversWhatTheRealPathAdded: two requests on an idle engine, each seen by the bench
// 2 ms later at its first token and 3 ms later at its end than the engine produced them; a failure
// and a warm-up are left out. The replay finds exactly those 2 and 3 ms.
func TestReplayRecoversWhatTheRealPathAdded(t *testing.T) {
	recs := []bench.Record{
		{Target: "target", ID: 0, Warmup: true, End: ms(1), Status: 200, Outcome: bench.OK, PromptTokens: 9, OutputTokens: 1, Usage: true},
		{Target: "target", ID: 1, Start: ms(100), End: tinyE2E + ms(3), Status: 200, Outcome: bench.OK,
			PromptTokens: 100, OutputTokens: 3, Usage: true},
		{Target: "target", ID: 0, Stream: true, Chunks: []time.Duration{tinyTTFT + ms(2), tinyE2E + ms(3)}, End: tinyE2E + ms(3),
			Status: 200, Outcome: bench.OK, PromptTokens: 100, OutputTokens: 3, Usage: true},
		{Target: "target", ID: 2, Start: ms(50), End: ms(1), Status: 503, Outcome: bench.HTTP503},
	}
	p, err := profile.Lookup("tiny")
	require.NoError(t, err)
	r, err := Replay(replayHeader(1), recs, p, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Requests)
	assert.Equal(t, 2, r.Replayed)
	assert.Equal(t, 1, r.Skipped)
	assert.Equal(t, 1, r.Model.TTFT.N)
	assert.InDelta(t, 1.201, r.Model.TTFT.P50, 1e-9)
	assert.InDelta(t, 3.24303, r.Model.E2E.P50, 1e-9)
	assert.Equal(t, 1, r.AddedTTFT.N)
	assert.InDelta(t, 2, r.AddedTTFT.P50, 1e-9)
	assert.Equal(t, 2, r.AddedE2E.N)
	for _, v := range []float64{r.AddedE2E.Min, r.AddedE2E.P50, r.AddedE2E.P99, r.AddedE2E.Max, r.AddedE2E.Mean} {
		assert.InDelta(t, 3, v, 1e-9)
	}

	// Twice as slow a member: every step twice as long.
	slow, err := Replay(replayHeader(1), recs, p, 2)
	require.NoError(t, err)
	assert.InDelta(t, 2*1.201, slow.Model.TTFT.P50, 1e-9)
	assert.InDelta(t, 2*3.24303, slow.Model.E2E.P50, 1e-9)

	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Contains(t, text.String(), "anvil-sim replay: the alone run of heterogeneous against one member (profile tiny, step scale 1): engine model vs real time")
	assert.Contains(t, text.String(), "  ttft                         1  +2.0  +2.0  +2.0  +2.0  +2.0  +2.0\n")
	assert.Contains(t, text.String(), "2 of 3 measured requests replayed (1 failed, left out). Send lag (how late anvil-bench sent them): p50 50.0, p99 99.0, max 100.0 ms.\nVerdict: FAIL")
}

func TestReplayRefuses(t *testing.T) {
	p, err := profile.Lookup("tiny")
	require.NoError(t, err)
	ok := bench.Record{Target: "target", End: ms(5), Status: 200, Outcome: bench.OK, PromptTokens: 10, OutputTokens: 2, Usage: true}
	noUsage := ok
	noUsage.Usage = false
	tooLong := ok
	tooLong.PromptTokens = 5000 // above the tiny profile's max_model_len
	cases := []struct {
		name string
		h    bench.RawHeader
		recs []bench.Record
		msg  string
	}{
		{"several members", replayHeader(2), []bench.Record{ok}, "one member's URL"},
		{"no usage", replayHeader(1), []bench.Record{noUsage}, "request 0 has no token usage"},
		{"longer than the model", replayHeader(1), []bench.Record{tooLong}, "request 0: request exceeds max_model_len"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Replay(c.h, c.recs, p, 1)
			require.ErrorIs(t, err, ErrReplay)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

// Raw files are outside input: any file the bench's reader accepts either replays or fails with
// ErrReplay; nothing panics.
func FuzzReplay(f *testing.F) {
	for _, recs := range [][]bench.Record{
		{{Target: "target", ID: 0, Stream: true, Chunks: []time.Duration{tinyTTFT}, End: tinyE2E, Status: 200, Outcome: bench.OK,
			PromptTokens: 100, OutputTokens: 3, Usage: true}},
		{{Target: "target", ID: 0, Start: ms(5), End: ms(9), Status: 200, Outcome: bench.OK, PromptTokens: 1, OutputTokens: 1, Usage: true},
			{Target: "target", ID: 1, Start: ms(1), End: ms(2), Status: 503, Outcome: bench.HTTP503}},
	} {
		var buf bytes.Buffer
		require.NoError(f, bench.WriteRaw(&buf, replayHeader(1), recs))
		f.Add(buf.String())
	}
	p, err := profile.Lookup("tiny")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, in string) {
		h, recs, err := bench.ReadRaw(strings.NewReader(in))
		if err != nil {
			return
		}
		r, err := Replay(h, recs, p, 1)
		if err != nil {
			require.ErrorIs(t, err, ErrReplay)
			return
		}
		require.LessOrEqual(t, r.Replayed+r.Skipped, r.Requests)
	})
}

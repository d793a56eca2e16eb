package fakevllm

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

func ev(kind engine.EventKind, id uint64, generated int) engine.Event {
	e := engine.Event{Kind: kind, ID: id, Generated: generated}
	if kind == engine.EventFinish {
		e.Reason = engine.FinishStop
	}
	return e
}

func TestEventGroup(t *testing.T) {
	tests := map[string]struct {
		evs  []engine.Event
		want int
	}{
		"lone token":                  {[]engine.Event{ev(engine.EventToken, 1, 2)}, 1},
		"token then its finish":       {[]engine.Event{ev(engine.EventToken, 1, 3), ev(engine.EventFinish, 1, 3)}, 2},
		"first token then its finish": {[]engine.Event{ev(engine.EventFirstToken, 1, 1), ev(engine.EventFinish, 1, 1)}, 2},
		"token then another's finish": {[]engine.Event{ev(engine.EventToken, 1, 3), ev(engine.EventFinish, 2, 3)}, 1},
		"two tokens":                  {[]engine.Event{ev(engine.EventToken, 1, 3), ev(engine.EventToken, 1, 4)}, 1},
		"preempt then finish":         {[]engine.Event{ev(engine.EventPreempt, 1, 3), ev(engine.EventFinish, 1, 3)}, 1},
		"finish then token":           {[]engine.Event{ev(engine.EventFinish, 1, 3), ev(engine.EventToken, 2, 1)}, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, eventGroup(tc.evs))
		})
	}
}

// TestDeliverPublishesLastTokenWithFinish: a request's last token and its
// finish are one publication, so no reader can see the token alone; other
// events still publish one by one.
func TestDeliverPublishesLastTokenWithFinish(t *testing.T) {
	a, b := newTicket(0), newTicket(3)
	d := &driver{tickets: map[uint64]*ticket{1: a, 2: b}}
	d.deliver([]engine.Event{
		ev(engine.EventToken, 1, 2),
		ev(engine.EventToken, 2, 3), ev(engine.EventFinish, 2, 3),
		ev(engine.EventToken, 1, 3),
		ev(engine.EventPreempt, 1, 3),
		ev(engine.EventToken, 7, 1), // unknown request: ignored
	})
	assert.Equal(t, 1, b.updates, "last token and finish published together")
	assert.Equal(t, progress{generated: 3, finished: true, reason: engine.FinishStop, stopAfter: 3}, b.load())
	assert.Equal(t, 2, a.updates, "separate tokens publish separately; a preemption not at all")
	assert.Equal(t, progress{generated: 3}, a.load())
	assert.NotContains(t, d.tickets, uint64(2), "a finished request leaves")
	assert.Contains(t, d.tickets, uint64(1))
}

func TestVisibleTokensHidesEOS(t *testing.T) {
	tests := map[string]struct {
		p    progress
		want int
	}{
		"running":                  {progress{generated: 2, stopAfter: 4}, 2},
		"EOS seen before finish":   {progress{generated: 4, stopAfter: 4}, 3},
		"natural stop":             {progress{generated: 4, finished: true, reason: engine.FinishStop, stopAfter: 4}, 3},
		"length, no natural stop":  {progress{generated: 5, finished: true, reason: engine.FinishLength}, 5},
		"aborted before EOS":       {progress{generated: 2, finished: true, reason: engine.FinishAbort, stopAfter: 4}, 2},
		"EOS as the first token":   {progress{generated: 1, stopAfter: 1}, 0},
		"first token, finish seen": {progress{generated: 1, finished: true, reason: engine.FinishStop, stopAfter: 1}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, visibleTokens(tc.p))
		})
	}
}

// streamBytes renders a chat stream from a sequence of observed states.
func streamBytes(t *testing.T, g genRequest, states []progress) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r := &chatResponder{reply{id: "chatcmpl-x", created: 1, model: testModel, g: g}}
	st := streamState{r: r, sw: newSSEWriter(rec, streamPlan{})}
	for _, p := range states {
		require.NoError(t, st.emit(p))
	}
	return rec.Body.String()
}

// TestStreamEOSSeenBeforeFinish: a handler that observes the EOS token
// before its finish still sends vLLM's frames: no EOS text, no extra chunk.
func TestStreamEOSSeenBeforeFinish(t *testing.T) {
	const stop = 3
	g := genRequest{endpoint: endpointChat, promptTokens: 5, maxTokens: 10, stopAfter: stop, stream: true}
	running := func(n int) progress { return progress{generated: n, stopAfter: stop} }
	done := progress{generated: stop, finished: true, reason: engine.FinishStop, stopAfter: stop}

	want := streamBytes(t, g, []progress{running(1), running(2), done})
	got := streamBytes(t, g, []progress{running(1), running(2), running(stop), done})
	assert.Equal(t, want, got)
	assert.NotContains(t, got, tokenText(stop-1), "the EOS token has no text")
	assert.Equal(t, 4, strings.Count(got, "data: "), "role, two tokens, EOS with the finish")

	// EOS as the very first token: the role chunk, then the finish chunk.
	g.stopAfter = 1
	first := progress{generated: 1, stopAfter: 1}
	fin := progress{generated: 1, finished: true, reason: engine.FinishStop, stopAfter: 1}
	want = streamBytes(t, g, []progress{fin})
	assert.Equal(t, want, streamBytes(t, g, []progress{first, fin}))
	assert.Equal(t, 2, strings.Count(want, "data: "))
}

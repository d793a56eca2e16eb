package bench

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answering answers status to every request, counting them.
func answering(status int, n *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"no","type":"invalid_request_error","code":"x"}}`))
	}
}

// runWatched runs p against h and returns the answer counts OnAllUnauthorized was called with,
// and how many requests had finished at each call.
func runWatched(t *testing.T, h http.Handler, p Plan) (calls []int, doneAt []int64) {
	t.Helper()
	c, base, stop := pipeServer(t, h)
	defer stop()
	live := &Live{}
	live.OnAllUnauthorized = func(n int) { calls = append(calls, n); doneAt = append(doneAt, live.Done.Load()) }
	_, err := Run(t.Context(), c, p, Target{Name: "t", URLs: []string{base}, Model: "m"}, 0, live)
	require.NoError(t, err)
	return calls, doneAt
}

// TestWarnsOnceWhenEveryEarlyAnswerIs401: a run without a valid token is told once, as soon as its
// first EarlyAnswers answers are all 401 (one client: exactly then), not at its end.
func TestWarnsOnceWhenEveryEarlyAnswerIs401(t *testing.T) {
	var n atomic.Int64
	calls, doneAt := runWatched(t, answering(http.StatusUnauthorized, &n), closedPlan(1, 40, 0, time.Millisecond, 0))
	assert.Equal(t, []int{EarlyAnswers}, calls, "once, with the early answers")
	assert.Equal(t, []int64{EarlyAnswers}, doneAt, "at the start of the run")
	assert.Equal(t, int64(40), n.Load())

	calls, _ = runWatched(t, answering(http.StatusUnauthorized, &n), closedPlan(4, 40, 0, time.Millisecond, 0))
	assert.Equal(t, []int{EarlyAnswers}, calls, "four clients: still once")

	calls, _ = runWatched(t, answering(http.StatusUnauthorized, &n), closedPlan(1, 3, 0, time.Millisecond, 0))
	assert.Equal(t, []int{3}, calls, "a shorter run is told at its end")
}

// TestNoWarningOtherwise: other refusals, or one answer that is not a 401 among the early ones,
// give no warning.
func TestNoWarningOtherwise(t *testing.T) {
	var n atomic.Int64
	calls, _ := runWatched(t, answering(http.StatusForbidden, &n), closedPlan(1, 20, 0, time.Millisecond, 0))
	assert.Empty(t, calls, "403 is not a token problem the bench can name")

	var seen atomic.Int64
	mixed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == 5 {
			answering(http.StatusBadRequest, &n)(w, r)
			return
		}
		answering(http.StatusUnauthorized, &n)(w, r)
	})
	calls, _ = runWatched(t, mixed, closedPlan(1, 20, 0, time.Millisecond, 0))
	assert.Empty(t, calls, "one early answer is not a 401")

	var w authWatch
	assert.False(t, w.note(0), "no answer is not an answer")
	assert.False(t, w.final(), "a run without answers")
}

package bench

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chunk may carry several tokens (vLLM with speculative decoding or detokenizer batching): when
// the stream ends well, the live count is corrected to the answer's usage count, which the bench
// asks for (stream_options.include_usage). A stream that fails takes back the chunks it added.
func TestLiveTokensSettleOnTheUsageAndDropFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tokens atomic.Int64
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			sseHeaders(w)
			flushWrite(w, roleChunk)
			flushWrite(w, chatChunk("a b"))
			flushWrite(w, chatChunk(" c d e"))
			if r.URL.Query().Has("cut") {
				return // no terminal frame: the answer is cut short
			}
			flushWrite(w, finishChunk)
			flushWrite(w, usageChunk(9, 5))
			flushWrite(w, doneFrame)
		}))
		defer stop()
		k := streamCall(base, 4, 5)
		k.tokens = &tokens
		rec := Record{Stream: true, RequestedPrompt: 4, RequestedOutput: 5}
		c.send(t.Context(), k, &rec, time.Now())
		require.Equal(t, OK, rec.Outcome, rec.Detail)
		assert.Equal(t, int64(5), tokens.Load(), "two chunks, five tokens by the usage")

		k.url += "?cut"
		rec = Record{Stream: true, RequestedPrompt: 4, RequestedOutput: 5}
		c.send(t.Context(), k, &rec, time.Now())
		require.NotEqual(t, OK, rec.Outcome)
		assert.Equal(t, int64(5), tokens.Load(), "the failed stream's chunks are taken back")
	})
}

// OnStart is called once, before the first measured request leaves, with the zero of the records'
// Start: anvil-qualify's calibration windows are on this clock, not on one taken before the run.
func TestOnStartIsTheRecordsZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, base, stop := pipeServer(t, okStream(300*time.Millisecond))
		defer stop()
		p := closedPlan(2, 0, 0, time.Second, 1)
		p.Duration = time.Second
		var starts []time.Time
		live := &Live{OnStart: func(at time.Time) { starts = append(starts, at) }}
		called := time.Now()
		time.Sleep(5 * time.Millisecond) // the caller's clock runs ahead of the run's
		res, err := Run(t.Context(), c, p, Target{Name: "t", URLs: []string{base}, Model: "m"}, 0, live)
		require.NoError(t, err)
		require.Len(t, starts, 1)
		assert.Equal(t, called.Add(5*time.Millisecond), starts[0])
		assert.Zero(t, res.Records[0].Start, "the first request leaves at the phase's start")
	})
}

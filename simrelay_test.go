package anvil_test

// This file pins the simulator's view of the wire against the real relay. Both classify through
// decisionlog.Terminal, so the table itself is shared; what the sim adds is which ending each
// virtual event is (sim.Classify: a connection cut before the first body byte is a transport
// failure, say). Here every ending the sim models is played against router/relay over loopback
// HTTP, and the sim's outcome and status must be the relay's.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/sim"
)

// relayGuard turns a hang into a failure; it never decides a pass.
const relayGuard = 10 * time.Second

const (
	sseChunk = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"t"}}]}` + "\n\n"
	sseDone  = "data: [DONE]\n\n"
	jsonBody = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"t"}}]}`
)

// flushRecorder is the client side of one relayed request: it records what the relay wrote and
// signals the first flush, which is the first SSE event reaching the client.
type flushRecorder struct {
	*httptest.ResponseRecorder
	once    sync.Once
	flushed chan struct{}
	flushes atomic.Int64
}

func newFlushRecorder() *flushRecorder {
	return &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{})}
}

func (f *flushRecorder) Flush() {
	f.ResponseRecorder.Flush()
	f.flushes.Add(1)
	f.once.Do(func() { close(f.flushed) })
}

// member is one upstream behaviour. ready is closed by the handler when the client should leave
// (the client-cancel cases wait on it or on the first flush).
type member func(w http.ResponseWriter, r *http.Request, ready chan<- struct{})

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sendEvent(w http.ResponseWriter, ev string) {
	_, _ = io.WriteString(w, ev)
	w.(http.Flusher).Flush()
}

// hold blocks the handler until the relay gives up on the request.
func hold(r *http.Request) { <-r.Context().Done() }

var (
	completeOrdinary member = func(w http.ResponseWriter, _ *http.Request, _ chan<- struct{}) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, jsonBody)
	}
	completeStream member = func(w http.ResponseWriter, _ *http.Request, _ chan<- struct{}) {
		sseHeaders(w)
		sendEvent(w, sseChunk)
		sendEvent(w, sseDone)
	}
	httpError member = func(w http.ResponseWriter, _ *http.Request, _ chan<- struct{}) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","code":503}}`)
	}
	// A dying engine or a stream-close fault breaks the connection (fakevllm aborts the handler).
	cutBeforeAnything member = func(http.ResponseWriter, *http.Request, chan<- struct{}) {
		panic(http.ErrAbortHandler)
	}
	cutAfterHeaders member = func(w http.ResponseWriter, _ *http.Request, _ chan<- struct{}) {
		sseHeaders(w) // vLLM sends SSE headers before it has a token
		panic(http.ErrAbortHandler)
	}
	cutAfterFirstEvent member = func(w http.ResponseWriter, _ *http.Request, _ chan<- struct{}) {
		sseHeaders(w)
		sendEvent(w, sseChunk)
		panic(http.ErrAbortHandler)
	}
	silent member = func(_ http.ResponseWriter, r *http.Request, ready chan<- struct{}) {
		close(ready)
		hold(r)
	}
	headersOnly member = func(w http.ResponseWriter, r *http.Request, ready chan<- struct{}) {
		sseHeaders(w)
		close(ready)
		hold(r)
	}
	firstEventOnly member = func(w http.ResponseWriter, r *http.Request, _ chan<- struct{}) {
		sseHeaders(w)
		sendEvent(w, sseChunk)
		hold(r)
	}
)

// relayCase is one ending of one attempt: the sim's description of it and how to make the real
// relay meet it.
type relayCase struct {
	name           string
	end            decisionlog.Ending
	stream         bool
	firstEvent     bool
	upstreamStatus int
	member         member // nil: the member's port refuses connections
	opts           relay.Options
	cancel         string // "", "ready" (when the handler says so) or "flush" (after the first event)
}

func TestSimWireMatchesRelay(t *testing.T) {
	cases := []relayCase{
		{name: "ordinary complete", end: decisionlog.EndComplete, member: completeOrdinary},
		{name: "stream complete", end: decisionlog.EndComplete, stream: true, firstEvent: true, member: completeStream},
		{name: "ordinary http error", end: decisionlog.EndHTTPError, upstreamStatus: 503, member: httpError},
		{name: "stream http error", end: decisionlog.EndHTTPError, stream: true, upstreamStatus: 503, member: httpError},
		{name: "ordinary refused", end: decisionlog.EndTransport},
		{name: "stream refused", end: decisionlog.EndTransport, stream: true},
		{name: "ordinary cut", end: decisionlog.EndCut, member: cutBeforeAnything},
		{name: "stream cut before headers", end: decisionlog.EndCut, stream: true, member: cutBeforeAnything},
		{name: "stream cut before first byte", end: decisionlog.EndCut, stream: true, member: cutAfterHeaders},
		{name: "stream cut after first event", end: decisionlog.EndCut, stream: true, firstEvent: true, member: cutAfterFirstEvent},
		{name: "ordinary client cancel", end: decisionlog.EndClientCancel, member: silent, cancel: "ready"},
		{name: "stream client cancel before first byte", end: decisionlog.EndClientCancel, stream: true, member: headersOnly, cancel: "ready"},
		{name: "stream client cancel after first event", end: decisionlog.EndClientCancel, stream: true, firstEvent: true,
			member: firstEventOnly, cancel: "flush"},
		{name: "ordinary first-byte timeout", end: decisionlog.EndFirstByteTimeout, member: silent,
			opts: relay.Options{FirstByteTimeout: 100 * time.Millisecond}},
		{name: "stream first-byte timeout", end: decisionlog.EndFirstByteTimeout, stream: true, member: headersOnly,
			opts: relay.Options{FirstByteTimeout: 100 * time.Millisecond}},
		{name: "ordinary timeout", end: decisionlog.EndTimeout, member: silent, opts: relay.Options{Timeout: 200 * time.Millisecond}},
		{name: "stream timeout before first byte", end: decisionlog.EndTimeout, stream: true, member: headersOnly,
			opts: relay.Options{Timeout: 200 * time.Millisecond}},
		// The timer must outlast forwarding the first event, which takes microseconds.
		{name: "stream timeout after first event", end: decisionlog.EndTimeout, stream: true, firstEvent: true,
			member: firstEventOnly, opts: relay.Options{Timeout: time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, rec, calls := relayOnce(t, c)
			wantOutcome, wantStatus := sim.Classify(c.end, c.stream, c.firstEvent, c.upstreamStatus)
			assert.Equal(t, wantOutcome, res.Outcome, "outcome")
			assert.Equal(t, wantStatus, res.Status, "status")
			assert.Equal(t, 1, res.Attempts)
			if c.member != nil {
				assert.Equal(t, int64(1), calls, "exactly one upstream call")
			}
			if c.stream {
				assert.Equal(t, c.firstEvent, rec.flushes.Load() > 0, "the first event reached the client")
			}
		})
	}
}

// relayOnce makes the real relay's one attempt for c and returns its result, what the client got
// and how many calls the member received.
func relayOnce(t *testing.T, c relayCase) (relay.Result, *flushRecorder, int64) {
	t.Helper()
	ready := make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		c.member(w, r, ready)
	}))
	url := srv.URL
	if c.member == nil {
		srv.Close() // nothing listens on the port any more: connection refused
	} else {
		t.Cleanup(srv.Close)
	}
	ctx, cancel := context.WithTimeout(t.Context(), relayGuard)
	defer cancel()
	rec := newFlushRecorder()
	switch c.cancel {
	case "ready":
		go func() {
			select {
			case <-ready:
				cancel()
			case <-ctx.Done():
			}
		}()
	case "flush":
		go func() {
			select {
			case <-rec.flushed:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	up := relay.Upstream{BaseURL: url, Path: "/v1/chat/completions", Body: []byte(`{"model":"m"}`), Stream: c.stream}
	res := relay.New(nil, c.opts).Do(ctx, rec, up)
	require.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded, "the guard expired: the relay hung")
	return res, rec, calls.Load()
}

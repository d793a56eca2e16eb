package relay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func chunk(k int) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"t%d"}}]}`, k)
}

// TestStreamRelaysEachEventBeforeTheNextExists proves flush-per-event: the upstream writes event k+1 only
// after the client has received event k, so an unflushed relay would deadlock the test.
func TestStreamRelaysEachEventBeforeTheNextExists(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		t.Run(fmt.Sprintf("eol=%q", eol), func(t *testing.T) {
			const n = 5
			next := make(chan struct{})
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				for k := range n {
					flushWrite(w, "data: "+chunk(k)+eol+eol)
					select {
					case <-next:
					case <-r.Context().Done():
						return
					}
				}
				flushWrite(w, ": keep-alive"+eol+eol+"data: [DONE]"+eol+eol)
			})
			f := newFront(t, New(nil, Options{}), baseUpstream(u, true))
			resp, err := f.post(t, guardCtx(t))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))

			br := bufio.NewReader(resp.Body)
			for k := range n {
				got := make(chan string, 1)
				go func() { got <- readEventOrEmpty(br) }()
				assert.Equal(t, "data: "+chunk(k)+"\n\n", recv(t, got, fmt.Sprintf("event %d", k)))
				next <- struct{}{}
			}
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Equal(t, ": keep-alive\n\ndata: [DONE]\n\n", string(rest))

			res := recv(t, f.results, "relay result")
			assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
			assert.NoError(t, res.Err)
			assert.Equal(t, http.StatusOK, res.Status)
			assert.True(t, res.Wrote)
			assertOneCall(t, u, res)
		})
	}
}

// readEventOrEmpty is readEvent for use off the test goroutine: it returns what it has on error.
func readEventOrEmpty(br *bufio.Reader) string {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\n" {
			return b.String()
		}
	}
}

const (
	errorEventVLLM = `{"error":{"message":"engine died","type":"InternalServerError","param":null,"code":500}}`
	respCreated    = `{"type":"response.created","sequence_number":0,"response":{"id":"r1","status":"in_progress"}}`
	respDelta      = `{"type":"response.output_text.delta","sequence_number":1,"delta":"hi"}`
	respCompleted  = `{"type":"response.completed","sequence_number":2,"response":{"id":"r1","status":"completed"}}`
	respFailed     = `{"type":"response.failed","sequence_number":2,"response":{"id":"r1","status":"failed"}}`
)

func inband(code, message string) string {
	return `data: {"error":{"message":"` + message + `","type":"upstream_error","param":null,"code":"` + code + `"}}` + "\n\n"
}

var (
	truncatedEvent = inband("stream_truncated", "the upstream stream ended before completion")
	malformedEvent = inband("malformed_stream", "the upstream server sent a malformed stream")
)

// TestEventsLargerThanTheReadBuffer: events several times the relay's read-ahead (a long tool-call
// argument, a big logprobs chunk) are assembled across reads and relayed whole, in order, both when
// they arrive together and when they arrive in small pieces.
func TestEventsLargerThanTheReadBuffer(t *testing.T) {
	big := func(n int) string {
		return "data: {\"pad\":\"" + strings.Repeat(string(rune('a'+n)), 5*readBufferSize+n) + "\"}\n\n"
	}
	script := big(0) + "data: " + chunk(1) + "\n\n" + big(1) + big(2) + "data: [DONE]\n\n"
	for _, piece := range []int{len(script), 7} {
		t.Run(fmt.Sprintf("writes of %d bytes", piece), func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				for rest := script; rest != ""; {
					n := min(piece, len(rest))
					flushWrite(w, rest[:n])
					rest = rest[n:]
				}
			})
			f := newFront(t, New(nil, Options{}), baseUpstream(u, true))
			resp, body, res := f.call(t)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, script, body)
			assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
		})
	}
}

// TestStreamEndings runs every way a stream can end through a real upstream and a real client. The
// upstream writes its script and then either returns (a clean close) or aborts the connection.
func TestStreamEndings(t *testing.T) {
	ev1 := "data: " + chunk(1) + "\n\n"
	tests := []struct {
		name     string
		script   string
		abort    bool
		wantBody string
		status   int
		outcome  decisionlog.Outcome
		err      error
		wrote    bool
	}{
		{"done", ev1 + "data: [DONE]\n\n", false, ev1 + "data: [DONE]\n\n", 200, decisionlog.OutcomeSuccess, nil, true},
		{"nothing after done is read", ev1 + "data: [DONE]\n\ndata: junk\n\n", false, ev1 + "data: [DONE]\n\n", 200, decisionlog.OutcomeSuccess, nil, true},
		{"multi-line json data and fields", "event: chunk\nid: 7\nretry: 10\ndata: {\"a\":\ndata: 1}\n\ndata: [DONE]\n\n", false,
			"event: chunk\nid: 7\nretry: 10\ndata: {\"a\":\ndata: 1}\n\ndata: [DONE]\n\n", 200, decisionlog.OutcomeSuccess, nil, true},
		// vLLM's ending of a stream whose generator raised: [DONE] after the error event is dropped.
		{"upstream error event then done", ev1 + "data: " + errorEventVLLM + "\n\ndata: [DONE]\n\n", false,
			ev1 + "data: " + errorEventVLLM + "\n\n", 200, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamErrorEvent, true},
		{"upstream error event, more events, then done", ev1 + "event: error\ndata: {\"error\":\"x\"}\n\n" + ev1 + "data: [DONE]\n\n", false,
			ev1 + "event: error\ndata: {\"error\":\"x\"}\n\n" + ev1, 200, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamErrorEvent, true},
		{"responses failed event then done", "data: " + respCreated + "\n\ndata: " + respFailed + "\n\ndata: [DONE]\n\n", false,
			"data: " + respCreated + "\n\ndata: " + respFailed + "\n\n", 200, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamErrorEvent, true},
		{"upstream error event then close", ev1 + "data: " + errorEventVLLM + "\n\n", false,
			ev1 + "data: " + errorEventVLLM + "\n\n" + truncatedEvent, 200, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamErrorEvent, true},
		{"close after an event", ev1, false, ev1 + truncatedEvent, 200, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"close inside an event", ev1 + "data: {\"a\":1}\n", false, ev1 + truncatedEvent, 200, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"connection reset after an event", ev1, true, ev1 + truncatedEvent, 200, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"data is not json", ev1 + "data: {not json}\n\n", false, ev1 + malformedEvent, 200, decisionlog.OutcomeMalformedStream, ErrMalformedEvent, true},
		{"unknown field", ev1 + "garbage\n\n", false, ev1 + malformedEvent, 200, decisionlog.OutcomeMalformedStream, ErrMalformedEvent, true},
		{"bare carriage return", ev1 + "data: {}\rdata: {}\n\n", false, ev1 + malformedEvent, 200, decisionlog.OutcomeMalformedStream, ErrMalformedEvent, true},
		{"oversized event", ev1 + "data: \"" + strings.Repeat("x", 300) + "\"\n\n", false, ev1 + malformedEvent, 200, decisionlog.OutcomeMalformedStream, ErrEventTooLarge, true},
		{"malformed first event", "data: nope\n\n", false,
			`{"error":{"message":"the upstream server sent a malformed stream","type":"upstream_error","param":null,"code":"malformed_stream"}}`,
			502, decisionlog.OutcomeMalformedStream, ErrMalformedEvent, true},
		{"empty stream", "", false,
			`{"error":{"message":"the upstream stream ended before completion","type":"upstream_error","param":null,"code":"stream_truncated"}}`,
			502, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"reset before the first event", "data: {\"a\"", true,
			`{"error":{"message":"the upstream stream ended before completion","type":"upstream_error","param":null,"code":"stream_truncated"}}`,
			502, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"responses completed", "event: response.created\ndata: " + respCreated + "\n\nevent: response.output_text.delta\ndata: " + respDelta + "\n\nevent: response.completed\ndata: " + respCompleted + "\n\n", false,
			"event: response.created\ndata: " + respCreated + "\n\nevent: response.output_text.delta\ndata: " + respDelta + "\n\nevent: response.completed\ndata: " + respCompleted + "\n\n",
			200, decisionlog.OutcomeSuccess, nil, true},
		{"responses failed", "event: response.failed\ndata: " + respFailed + "\n\n", false, "event: response.failed\ndata: " + respFailed + "\n\n",
			200, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamErrorEvent, true},
		{"responses cut before terminal event", "event: response.created\ndata: " + respCreated + "\n\n", false,
			"event: response.created\ndata: " + respCreated + "\n\n" + truncatedEvent, 200, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				flushWrite(w, tc.script)
				if tc.abort {
					panic(http.ErrAbortHandler)
				}
			})
			f := newFront(t, New(nil, Options{MaxEventBytes: 256}), baseUpstream(u, true))
			resp, body, res := f.call(t)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.status == http.StatusOK {
				assert.Equal(t, tc.wantBody, body)
			} else {
				assert.JSONEq(t, tc.wantBody, body)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			}
			assert.Equal(t, tc.outcome, res.Outcome)
			if tc.err == nil {
				assert.NoError(t, res.Err)
			} else {
				assert.ErrorIs(t, res.Err, tc.err)
			}
			assert.Equal(t, tc.status, res.Status)
			assert.Equal(t, tc.wrote, res.Wrote)
			assert.Positive(t, res.FirstByte)
			assertOneCall(t, u, res)
			assertNoLeak(t, u.URL, body)
		})
	}
}

func TestStreamTimeoutMidStream(t *testing.T) {
	entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
	ev1 := "data: " + chunk(1) + "\n\n"
	u := newUpstream(t, blockUntilCanceled(entered, canceled, func(w http.ResponseWriter) {
		sseHeaders(w)
		flushWrite(w, ev1)
	}))
	f := newFront(t, New(nil, Options{Timeout: 250 * time.Millisecond}), baseUpstream(u, true))
	resp, body, res := f.call(t)
	recv(t, entered, "upstream entered")
	recv(t, canceled, "upstream observed cancellation")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ev1+inband("upstream_timeout", "the upstream server did not respond in time"), body)
	assert.Equal(t, decisionlog.OutcomeUpstreamTimeout, res.Outcome)
	assert.ErrorIs(t, res.Err, ErrTimeout)
	assert.Equal(t, http.StatusOK, res.Status)
	assert.True(t, res.Wrote)
	assertOneCall(t, u, res)
	assertNoLeak(t, u.URL, body)
}

func TestStreamClientCancelMidStream(t *testing.T) {
	entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
	ev1 := "data: " + chunk(1) + "\n\n"
	u := newUpstream(t, blockUntilCanceled(entered, canceled, func(w http.ResponseWriter) {
		sseHeaders(w)
		flushWrite(w, ev1)
	}))
	f := newFront(t, New(nil, Options{}), baseUpstream(u, true))
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	resp, err := f.post(t, ctx)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, ev1, readEvent(t, bufio.NewReader(resp.Body)))
	recv(t, entered, "upstream entered")
	cancel()
	recv(t, canceled, "upstream observed cancellation")
	res := recv(t, f.results, "relay result")
	assert.Equal(t, decisionlog.OutcomeClientCanceled, res.Outcome)
	assert.ErrorIs(t, res.Err, ErrClientCanceled)
	assert.Equal(t, http.StatusOK, res.Status, "the status already sent")
	assert.True(t, res.Wrote)
	assertOneCall(t, u, res)
}

// TestStreamWithoutFlusher checks that a writer that cannot flush still receives every event.
func TestStreamWithoutFlusher(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "data: {}\n\ndata: [DONE]\n\n")
	})
	w := &plainWriter{header: http.Header{}}
	res := New(nil, Options{}).Do(guardCtx(t), w, baseUpstream(u, true))
	assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
	assert.Equal(t, "data: {}\n\ndata: [DONE]\n\n", w.body.String())
	assert.Equal(t, http.StatusOK, w.status)
	assertOneCall(t, u, res)
}

// TestStreamClientWriteFailure: a client that cannot be written to ends the relay as client_canceled and
// cancels the upstream call.
func TestStreamClientWriteFailure(t *testing.T) {
	entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
	u := newUpstream(t, blockUntilCanceled(entered, canceled, func(w http.ResponseWriter) {
		sseHeaders(w)
		flushWrite(w, "data: {}\n\n")
	}))
	w := &plainWriter{header: http.Header{}, fail: true}
	res := New(nil, Options{}).Do(guardCtx(t), w, baseUpstream(u, true))
	recv(t, entered, "upstream entered")
	recv(t, canceled, "upstream observed cancellation")
	assert.Equal(t, decisionlog.OutcomeClientCanceled, res.Outcome)
	assert.Equal(t, http.StatusOK, res.Status)
	assertOneCall(t, u, res)
}

type plainWriter struct {
	header http.Header
	status int
	body   strings.Builder
	fail   bool
}

func (p *plainWriter) Header() http.Header { return p.header }
func (p *plainWriter) WriteHeader(s int)   { p.status = s }
func (p *plainWriter) Write(b []byte) (int, error) {
	if p.fail {
		return 0, io.ErrClosedPipe
	}
	return p.body.Write(b)
}

// TestConcurrentAttempts runs many relays at once through one Relay (shared client and buffer pool):
// every client must get exactly its own upstream's stream.
func TestConcurrentAttempts(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		sseHeaders(w)
		for k := range 8 {
			flushWrite(w, fmt.Sprintf("data: {\"id\":%q,\"k\":%d}\n\n", id, k))
		}
		flushWrite(w, "data: [DONE]\n\n")
	})
	rl := New(nil, Options{})
	const n = 20
	type out struct {
		id   string
		body string
		res  Result
	}
	outs := make(chan out, n)
	for i := range n {
		id := fmt.Sprintf("req-%d", i)
		go func() {
			rec := httptest.NewRecorder()
			up := baseUpstream(u, true)
			up.RequestID = id
			res := rl.Do(guardCtx(t), rec, up)
			outs <- out{id, rec.Body.String(), res}
		}()
	}
	for range n {
		o := recv(t, outs, "concurrent result")
		var want strings.Builder
		for k := range 8 {
			fmt.Fprintf(&want, "data: {\"id\":%q,\"k\":%d}\n\n", o.id, k)
		}
		want.WriteString("data: [DONE]\n\n")
		assert.Equal(t, want.String(), o.body)
		assert.Equal(t, decisionlog.OutcomeSuccess, o.res.Outcome)
	}
	assert.Equal(t, int64(n), u.calls.Load())
}

package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const chatJSON = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`

func TestOrdinarySuccessAndUpstreamRequest(t *testing.T) {
	tests := []struct {
		name       string
		stream     bool
		apiKey     string
		requestID  string
		wantAccept string
		wantAuth   []string
		wantReqID  []string
	}{
		{"with key and id", false, "upstream-key", "req-1", "application/json", []string{"Bearer upstream-key"}, []string{"req-1"}},
		{"no key", false, "", "req-2", "application/json", nil, []string{"req-2"}},
		{"stream accept", true, "k", "req-3", "text/event-stream", []string{"Bearer k"}, []string{"req-3"}},
		{"invalid request id dropped", false, "", "bad\nid", "application/json", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Upstream-Internal", "secret")
				w.Header().Set("Set-Cookie", "upstream=1")
				_, _ = io.WriteString(w, chatJSON)
			})
			up := baseUpstream(u, tc.stream)
			up.APIKey, up.RequestID = tc.apiKey, tc.requestID
			f := newFront(t, New(nil, Options{}), up)

			resp, body, res := f.call(t)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, chatJSON, body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Empty(t, resp.Header.Get("X-Upstream-Internal"))
			assert.Empty(t, resp.Header.Get("Set-Cookie"))
			assert.Equal(t, Result{Outcome: decisionlog.OutcomeSuccess, Status: 200, Attempts: 1, Wrote: true,
				FirstByte: res.FirstByte, Duration: res.Duration}, res)
			assert.Positive(t, res.FirstByte)
			assert.GreaterOrEqual(t, res.Duration, res.FirstByte)
			assertOneCall(t, u, res)

			got := recv(t, u.reqs, "upstream request")
			assert.Equal(t, http.MethodPost, got.method)
			assert.Equal(t, "/v1/chat/completions", got.path)
			assert.Equal(t, string(up.Body), got.body)
			assert.Equal(t, "application/json", got.header.Get("Content-Type"))
			assert.Equal(t, tc.wantAccept, got.header.Get("Accept"))
			assert.Equal(t, tc.wantAuth, got.header.Values("Authorization"))
			assert.Equal(t, tc.wantReqID, got.header.Values("X-Request-Id"))
			for _, h := range []string{"Proxy-Authorization", "Te", "Cookie", "X-Caller-Header", "Connection", "Keep-Alive", "Upgrade", "Trailer"} {
				assert.Empty(t, got.header.Values(h), h)
			}
		})
	}
}

func TestOrdinaryUpstreamHTTPErrorPassesThrough(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		ct, body   string
		retryAfter string
	}{
		{"400 openai error", 400, "application/json", `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`, ""},
		{"429 with retry-after", 429, "application/json", `{"error":{"message":"slow down"}}`, "3"},
		{"500 plain text", 500, "text/plain", "boom", ""},
		{"503 event-stream content type is not streamed", 503, "text/event-stream", "data: {}\n\n", "1"},
		{"404 empty", 404, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.ct != "" {
					w.Header().Set("Content-Type", tc.ct)
				}
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			f := newFront(t, New(nil, Options{}), baseUpstream(u, true))
			resp, body, res := f.call(t)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.body, body)
			assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			if tc.ct != "" {
				assert.Equal(t, tc.ct, resp.Header.Get("Content-Type"))
			}
			assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
			assert.ErrorIs(t, res.Err, ErrUpstreamStatus)
			assert.Equal(t, tc.status, res.Status)
			assert.True(t, res.Wrote)
			assertOneCall(t, u, res)
		})
	}
}

func TestNoContentCarriesNoLength(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f := newFront(t, New(nil, Options{}), baseUpstream(u, false))
	resp, body, res := f.call(t)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Empty(t, body)
	assert.Empty(t, resp.Header.Values("Content-Length"))
	assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
	assertOneCall(t, u, res)
}

func TestOrdinaryBodyBound(t *testing.T) {
	const limit = 1024
	tests := []struct {
		name    string
		size    int
		chunked bool
		tooBig  bool
	}{
		{"exactly the bound", limit, false, false},
		{"exactly the bound chunked", limit, true, false},
		{"declared length over the bound", limit + 1, false, true},
		{"chunked over the bound", limit + 1, true, true},
		{"far over the bound chunked", 64 * limit, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := strings.Repeat("x", tc.size)
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(tc.size))
				} else {
					w.(http.Flusher).Flush() // commit headers without a length: chunked encoding
				}
				_, _ = io.WriteString(w, payload)
			})
			f := newFront(t, New(nil, Options{MaxResponseBytes: limit}), baseUpstream(u, false))
			resp, body, res := f.call(t)
			assertOneCall(t, u, res)
			assertNoLeak(t, u.URL, body)
			if !tc.tooBig {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, payload, body)
				assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
				return
			}
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.JSONEq(t, `{"error":{"message":"the upstream response exceeded the size limit","type":"upstream_error","param":null,"code":"upstream_transport_error"}}`, body)
			assert.Equal(t, decisionlog.OutcomeUpstreamTransportError, res.Outcome)
			assert.ErrorIs(t, res.Err, ErrResponseTooLarge)
			assert.Equal(t, http.StatusBadGateway, res.Status)
		})
	}
}

func TestRedirectIsNeverFollowed(t *testing.T) {
	other := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, chatJSON) })
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	f := newFront(t, New(&http.Client{}, Options{}), baseUpstream(u, false))
	resp, _, res := f.call(t)
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Location"), "the upstream's redirect target must not reach the client")
	assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
	assertOneCall(t, u, res)
	assert.Zero(t, other.calls.Load(), "a second URL was called")
}

// abortAfter writes a partial response then drops the connection, as a dying upstream does.
func abortAfter(partial string, length int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if length > 0 {
			w.Header().Set("Content-Length", strconv.Itoa(length))
		}
		if partial != "" {
			flushWrite(w, partial)
		}
		panic(http.ErrAbortHandler)
	}
}

func TestTransportErrorsBeforeAnythingWritten(t *testing.T) {
	const want = `{"error":{"message":"the upstream server could not be reached","type":"upstream_error","param":null,"code":"upstream_transport_error"}}`
	tests := []struct {
		name      string
		handler   http.HandlerFunc // nil: nothing listens
		calls     int64
		firstByte bool
	}{
		{"connection refused", nil, 0, false},
		{"closed before the status line", abortAfter("", 0), 1, false},
		{"closed mid-body", abortAfter(`{"id":`, 100), 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var u *upstream
			if tc.handler != nil {
				u = newUpstream(t, tc.handler)
			} else {
				u = newUpstream(t, func(http.ResponseWriter, *http.Request) {})
				u.Close() // the port is now refused
			}
			f := newFront(t, New(nil, Options{}), baseUpstream(u, false))
			resp, body, res := f.call(t)
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.JSONEq(t, want, body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Equal(t, decisionlog.OutcomeUpstreamTransportError, res.Outcome)
			assert.ErrorIs(t, res.Err, ErrTransport)
			assert.Equal(t, Result{Outcome: decisionlog.OutcomeUpstreamTransportError, Status: 502, Attempts: 1, Wrote: true, Err: ErrTransport,
				FirstByte: res.FirstByte, Duration: res.Duration}, res)
			assert.Equal(t, tc.firstByte, res.FirstByte > 0)
			assert.Equal(t, tc.calls, u.calls.Load())
			assertNoLeak(t, u.URL, body)
		})
	}
}

func TestInvalidBaseURLIsATransportError(t *testing.T) {
	rec := httptest.NewRecorder()
	res := New(nil, Options{}).Do(guardCtx(t), rec, Upstream{BaseURL: "http://[::1", Path: "/v1/chat/completions"})
	assert.Equal(t, Result{Outcome: decisionlog.OutcomeUpstreamTransportError, Status: 502, Attempts: 1, Wrote: true, Err: ErrTransport, Duration: res.Duration}, res)
	assert.Equal(t, http.StatusBadGateway, rec.Code)
	assert.NotContains(t, rec.Body.String(), "[::1")
	assert.NotContains(t, rec.Body.String(), "missing")
}

// blockUntilCanceled is an upstream that, after an optional prefix, waits for its request context to end
// and reports that it observed the cancellation.
func blockUntilCanceled(entered chan<- struct{}, canceled chan<- struct{}, prefix func(http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if prefix != nil {
			prefix(w)
		}
		entered <- struct{}{}
		<-r.Context().Done()
		canceled <- struct{}{}
	}
}

func TestTimeoutsBeforeAnythingWritten(t *testing.T) {
	const want = `{"error":{"message":"the upstream server did not respond in time","type":"upstream_error","param":null,"code":"upstream_timeout"}}`
	tests := []struct {
		name    string
		opts    Options
		client  *http.Client
		prefix  func(http.ResponseWriter)
		wantErr error
	}{
		{"first byte: no response at all", Options{FirstByteTimeout: 50 * time.Millisecond}, nil, nil, ErrFirstByteTimeout},
		{"first byte: sse headers but no event", Options{FirstByteTimeout: 50 * time.Millisecond}, nil,
			func(w http.ResponseWriter) { sseHeaders(w); w.(http.Flusher).Flush() }, ErrFirstByteTimeout},
		{"overall: partial ordinary body", Options{Timeout: 50 * time.Millisecond}, nil,
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				flushWrite(w, `{"id":`)
			}, ErrTimeout},
		{"overall: sse first event incomplete", Options{Timeout: 50 * time.Millisecond}, nil,
			func(w http.ResponseWriter) { sseHeaders(w); flushWrite(w, `data: {"a":`) }, ErrTimeout},
		{"http client timeout", Options{}, &http.Client{Timeout: 50 * time.Millisecond}, nil, ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
			u := newUpstream(t, blockUntilCanceled(entered, canceled, tc.prefix))
			f := newFront(t, New(tc.client, tc.opts), baseUpstream(u, true))
			resp, body, res := f.call(t)
			recv(t, entered, "upstream entered")
			recv(t, canceled, "upstream observed cancellation")
			assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
			assert.JSONEq(t, want, body)
			assert.Equal(t, decisionlog.OutcomeUpstreamTimeout, res.Outcome)
			assert.ErrorIs(t, res.Err, tc.wantErr)
			assert.Equal(t, http.StatusGatewayTimeout, res.Status)
			assertOneCall(t, u, res)
			assertNoLeak(t, u.URL, body)
		})
	}
}

func TestClientCancelBeforeFirstByte(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
			u := newUpstream(t, blockUntilCanceled(entered, canceled, nil))
			f := newFront(t, New(nil, Options{}), baseUpstream(u, stream))
			ctx, cancel := context.WithCancel(guardCtx(t))
			errc := make(chan error, 1)
			go func() {
				resp, err := f.post(t, ctx)
				if err == nil {
					_ = resp.Body.Close()
					err = errors.New("unexpected response")
				}
				errc <- err
			}()
			recv(t, entered, "upstream entered")
			cancel()
			assert.ErrorIs(t, recv(t, errc, "client error"), context.Canceled)
			recv(t, canceled, "upstream observed cancellation")
			res := recv(t, f.results, "relay result")
			assert.Equal(t, decisionlog.OutcomeClientCanceled, res.Outcome)
			assert.ErrorIs(t, res.Err, ErrClientCanceled)
			assert.Equal(t, decisionlog.StatusClientClosed, res.Status)
			assert.False(t, res.Wrote)
			assert.Zero(t, res.FirstByte)
			assertOneCall(t, u, res)
		})
	}
}

// TestTimingsUseInjectedClock checks that Do reads the clock exactly at start, first byte and end.
func TestTimingsUseInjectedClock(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, chatJSON) })
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var reads int
	now := func() time.Time { reads++; return epoch.Add(time.Duration(reads*reads) * time.Second) } // 1s, 4s, 9s
	rl := New(nil, Options{Now: now})
	rec := httptest.NewRecorder()
	res := rl.Do(guardCtx(t), rec, baseUpstream(u, false))
	require.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
	assert.Equal(t, 3, reads)
	assert.Equal(t, 3*time.Second, res.FirstByte)
	assert.Equal(t, 8*time.Second, res.Duration)
	assertOneCall(t, u, res)

	reads = 0
	u.Close()
	res = rl.Do(guardCtx(t), httptest.NewRecorder(), baseUpstream(u, false))
	require.Equal(t, decisionlog.OutcomeUpstreamTransportError, res.Outcome)
	assert.Equal(t, 2, reads, "no first byte, no first-byte clock read")
	assert.Zero(t, res.FirstByte)
	assert.Equal(t, 3*time.Second, res.Duration)
}

func TestReadBounded(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		hint    int64
		limit   int64
		wantErr error
	}{
		{"unknown length under", "abc", -1, 3, nil},
		{"unknown length over", "abcd", -1, 3, ErrResponseTooLarge},
		{"lying short hint", "abcdef", 2, 10, nil},
		{"lying short hint over", strings.Repeat("a", 11), 2, 10, ErrResponseTooLarge},
		{"hint over", "a", 11, 10, ErrResponseTooLarge},
		{"empty", "", 0, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readBounded(strings.NewReader(tc.body), tc.hint, tc.limit, make([]byte, 7, 8))
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.body, string(got))
		})
	}
}

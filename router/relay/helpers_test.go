package relay

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guard bounds how long a test waits on a channel before failing: it only turns a hang into a failure,
// it never decides a pass.
const guard = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// guardCtx is the client context of a test: it ends when the test ends or after the guard, so a broken
// relay that never answers fails the test instead of hanging it.
func guardCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// seen is what an upstream handler observed of one request.
type seen struct {
	method, path string
	header       http.Header
	body         string
}

// upstream is a loopback server whose handler the test controls; it counts every request it receives.
type upstream struct {
	*httptest.Server
	calls atomic.Int64
	reqs  chan seen
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{reqs: make(chan seen, 1)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		select {
		case u.reqs <- seen{r.Method, r.URL.Path, r.Header.Clone(), string(body)}:
		default:
		}
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// front is a loopback server whose handler relays every request to one upstream, as router/server will.
type front struct {
	*httptest.Server
	results chan Result
}

func newFront(t *testing.T, rl *Relay, up Upstream) *front {
	t.Helper()
	f := &front{results: make(chan Result, 1)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Like router/server, read the caller's body first: net/http only watches for a client
		// disconnect (and cancels r.Context) once the request body has been consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		f.results <- rl.Do(r.Context(), w, up)
	}))
	t.Cleanup(f.Close)
	return f
}

// post sends a caller request carrying headers that must never reach the upstream.
func (f *front) post(t *testing.T, ctx context.Context) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer caller-secret")
	req.Header.Set("Proxy-Authorization", "Basic cHJveHk=")
	req.Header.Set("Te", "trailers")
	req.Header.Set("Cookie", "session=caller")
	req.Header.Set("X-Caller-Header", "1")
	return f.Client().Do(req)
}

// call posts, reads the whole client-visible body and returns it with the relay's Result.
func (f *front) call(t *testing.T) (*http.Response, string, Result) {
	t.Helper()
	resp, err := f.post(t, guardCtx(t))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(body), recv(t, f.results, "relay result")
}

func baseUpstream(u *upstream, stream bool) Upstream {
	return Upstream{BaseURL: u.URL, Path: "/v1/chat/completions", Body: []byte(`{"model":"m","stream":true}`),
		Stream: stream, RequestID: "req-1", APIKey: "upstream-key"}
}

// assertNoLeak checks that nothing the client can see names the upstream or carries Go error text.
func assertNoLeak(t *testing.T, upstreamURL string, parts ...string) {
	t.Helper()
	u, err := url.Parse(upstreamURL)
	require.NoError(t, err)
	for _, p := range parts {
		for _, bad := range []string{upstreamURL, u.Host, u.Port(), "127.0.0.1", "http://", "dial", "tcp", "EOF", "context"} {
			assert.NotContains(t, p, bad)
		}
	}
}

// assertOneCall checks the one-attempt boundary on both sides.
func assertOneCall(t *testing.T, u *upstream, res Result) {
	t.Helper()
	assert.Equal(t, int64(1), u.calls.Load(), "upstream calls")
	assert.Equal(t, 1, res.Attempts)
}

// readEvent reads one SSE block (through its blank line) from the client side.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "reading event, got so far %q", b.String()+line)
		b.WriteString(line)
		if line == "\n" {
			return b.String()
		}
	}
}

// flushWrite writes s and flushes it to the wire.
func flushWrite(w http.ResponseWriter, s string) {
	_, _ = io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
}

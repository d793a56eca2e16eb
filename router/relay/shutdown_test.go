package relay

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// cutFront relays like newFront, but hands the test a cancel of each request's context, as the
// server's shutdown holds one.
func cutFront(t *testing.T, up Upstream) (*httptest.Server, chan context.CancelCauseFunc, chan Result) {
	cuts, results := make(chan context.CancelCauseFunc, 1), make(chan Result, 1)
	rl := New(nil, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ctx, cut := context.WithCancelCause(r.Context())
		cuts <- cut
		results <- rl.Do(ctx, w, up)
	}))
	t.Cleanup(srv.Close)
	return srv, cuts, results
}

// TestShutdownCutIsItsOwnOutcome: a request context ended with cause ErrShutdown is the router's cut,
// not the caller's: before the first byte the caller gets a fixed 503 with Retry-After, mid-stream one
// in-band error event, and the outcome is shutdown with the status the caller saw.
func TestShutdownCutIsItsOwnOutcome(t *testing.T) {
	t.Run("before the first byte", func(t *testing.T) {
		entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
		u := newUpstream(t, blockUntilCanceled(entered, canceled, nil))
		srv, cuts, results := cutFront(t, baseUpstream(u, true))
		done := make(chan *http.Response, 1)
		go func() {
			resp, err := srv.Client().Post(srv.URL, "application/json", nil)
			if err == nil {
				done <- resp
			}
			close(done)
		}()
		cut := recv(t, cuts, "request")
		recv(t, entered, "upstream entered")
		cut(ErrShutdown)
		recv(t, canceled, "upstream call canceled")
		res := recv(t, results, "relay result")
		resp := recv(t, done, "response")
		require.NotNil(t, resp)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		assert.JSONEq(t, `{"error":{"message":"the router is shutting down; retry shortly","type":"upstream_error","param":null,"code":"shutdown"}}`, string(body))
		assert.Equal(t, decisionlog.OutcomeShutdown, res.Outcome)
		assert.Equal(t, http.StatusServiceUnavailable, res.Status)
		assert.ErrorIs(t, res.Err, ErrShutdown)
		assertOneCall(t, u, res)
	})
	t.Run("mid-stream", func(t *testing.T) {
		entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
		ev1 := "data: " + chunk(1) + "\n\n"
		u := newUpstream(t, blockUntilCanceled(entered, canceled, func(w http.ResponseWriter) {
			sseHeaders(w)
			flushWrite(w, ev1)
		}))
		srv, cuts, results := cutFront(t, baseUpstream(u, true))
		resp, err := srv.Client().Post(srv.URL, "application/json", nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		assert.Equal(t, ev1, readEvent(t, br))
		recv(t, entered, "upstream entered")
		recv(t, cuts, "request")(ErrShutdown)
		assert.Equal(t, `data: {"error":{"message":"the router is shutting down; retry shortly","type":"upstream_error","param":null,"code":"shutdown"}}`+"\n\n", readEvent(t, br))
		res := recv(t, results, "relay result")
		assert.Equal(t, decisionlog.OutcomeShutdown, res.Outcome)
		assert.Equal(t, http.StatusOK, res.Status, "the status the caller saw")
		assert.ErrorIs(t, res.Err, ErrShutdown)
	})
	t.Run("another cause is the caller's", func(t *testing.T) {
		entered, canceled := make(chan struct{}, 1), make(chan struct{}, 1)
		u := newUpstream(t, blockUntilCanceled(entered, canceled, nil))
		srv, cuts, results := cutFront(t, baseUpstream(u, false))
		go func() {
			if resp, err := srv.Client().Post(srv.URL, "application/json", nil); err == nil {
				resp.Body.Close()
			}
		}()
		cut := recv(t, cuts, "request")
		recv(t, entered, "upstream entered")
		cut(nil)
		res := recv(t, results, "relay result")
		assert.Equal(t, decisionlog.OutcomeClientCanceled, res.Outcome)
	})
}

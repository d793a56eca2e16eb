package scrape_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// serve starts an httptest server answering /metrics with handler.
func serve(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

func pageHandler(status int, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func TestFetchPage(t *testing.T) {
	page := readPage(t, "current_two_engines.txt")
	var gotPath, gotMethod, gotAccept string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotMethod, gotAccept = r.URL.Path, r.Method, r.Header.Get("Accept")
		_, _ = w.Write(page)
	})
	for _, base := range []string{srv.URL, srv.URL + "/"} {
		s, cl := scrape.Fetch(t.Context(), srv.Client(), base, llama)
		require.Equal(t, pressure.ClassOK, cl)
		assert.Equal(t, pressure.Sample{Running: present(12), Waiting: present(4), KVUsage: present(0.42)}, s)
		assert.Equal(t, "/metrics", gotPath)
		assert.Equal(t, http.MethodGet, gotMethod)
		assert.Contains(t, gotAccept, "text/plain")
	}
}

func TestFetchBodyBound(t *testing.T) {
	page := readPage(t, "legacy.txt")
	padTo := func(n int) []byte {
		pad := bytes.Repeat([]byte("# padding\n"), n/10+1)
		b := append(append([]byte{}, page...), pad...)
		return b[: n-1 : n-1] // keep room for the final newline
	}
	exact := append(padTo(scrape.MaxBodyBytes), '\n')
	over := append(padTo(scrape.MaxBodyBytes+1), '\n')
	require.Len(t, exact, scrape.MaxBodyBytes)
	require.Len(t, over, scrape.MaxBodyBytes+1)

	_, cl := scrape.Fetch(t.Context(), http.DefaultClient, serve(t, pageHandler(200, exact)).URL, llama)
	assert.Equal(t, pressure.ClassOK, cl, "a page of exactly 1 MiB is read")
	s, cl := scrape.Fetch(t.Context(), http.DefaultClient, serve(t, pageHandler(200, over)).URL, llama)
	assert.Equal(t, pressure.ClassUnknown, cl, "one byte more is oversize")
	assert.Zero(t, s)
}

func TestFetchFailures(t *testing.T) {
	page := readPage(t, "legacy.txt")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		base    string
		client  *http.Client
	}{
		{name: "500", handler: pageHandler(500, page)},
		{name: "404", handler: pageHandler(404, page)},
		{name: "204", handler: pageHandler(204, nil)},
		{name: "connection refused", base: closed.URL},
		{name: "bad URL", base: "http://[::1"},
		{name: "unsupported scheme", base: "ftp://example.invalid"},
		{name: "nil client", handler: pageHandler(200, page), client: nil},
		{name: "body cut short", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write(page)
			panic(http.ErrAbortHandler)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, client := tt.base, tt.client
			if tt.handler != nil {
				srv := serve(t, tt.handler)
				base = srv.URL
				if tt.name != "nil client" {
					client = srv.Client()
				}
			} else {
				client = http.DefaultClient
			}
			s, cl := scrape.Fetch(t.Context(), client, base, llama)
			assert.Equal(t, pressure.ClassFailed, cl)
			assert.Zero(t, s)
		})
	}
}

func TestFetchCancelledContextFails(t *testing.T) {
	srv := serve(t, pageHandler(200, readPage(t, "legacy.txt")))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, cl := scrape.Fetch(ctx, srv.Client(), srv.URL, llama)
	assert.Equal(t, pressure.ClassFailed, cl)
}

// blockingTransport answers after the request context ends, or with a body that
// yields head and then blocks until the context ends (a trickling member).
type blockingTransport struct {
	head []byte // nil: block before answering
}

func (b blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.head == nil {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return &http.Response{
		StatusCode: 200, Header: http.Header{}, Request: r,
		Body: io.NopCloser(io.MultiReader(bytes.NewReader(b.head), ctxReader{r.Context()})),
	}, nil
}

type ctxReader struct{ ctx context.Context }

func (c ctxReader) Read([]byte) (int, error) {
	<-c.ctx.Done()
	return 0, c.ctx.Err()
}

// TestFetchTimeoutIsOneSecond checks the built-in bound on fake time: a member that
// never answers, and one that trickles part of a valid page and stalls, both fail
// exactly at FetchTimeout.
func TestFetchTimeoutIsOneSecond(t *testing.T) {
	for name, tr := range map[string]blockingTransport{
		"no answer":    {},
		"stalled body": {head: []byte(gauge("vllm:num_requests_running", "1"))},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				s, cl := scrape.Fetch(context.Background(), &http.Client{Transport: tr}, "http://member.test", llama)
				assert.Equal(t, pressure.ClassFailed, cl)
				assert.Zero(t, s)
				assert.Equal(t, pressure.FetchTimeout, time.Since(start))
			})
		})
	}
}

func TestFetchHonoursEarlierParentDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, cl := scrape.Fetch(ctx, &http.Client{Transport: blockingTransport{}}, "http://member.test", llama)
		assert.Equal(t, pressure.ClassFailed, cl)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
	})
}

// errTransport fails every round trip with an error that must not leak.
type errTransport struct{}

func (errTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial tcp 10.0.0.1:8000: secret-token connection refused")
}

func TestFetchTransportErrorFails(t *testing.T) {
	s, cl := scrape.Fetch(t.Context(), &http.Client{Transport: errTransport{}}, "http://member.test", llama)
	assert.Equal(t, pressure.ClassFailed, cl)
	assert.Zero(t, s, "the error is classified, its text has nowhere to go")
}

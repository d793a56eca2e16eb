package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// bodyUpstream records what a streamed request body looked like upstream: whether it was read to a
// clean end, and its transfer encoding and content type.
type bodyUpstream struct {
	*httptest.Server
	calls    atomic.Int64
	complete atomic.Int64 // bodies read to a clean end
	got      chan seen
}

func newBodyUpstream(t *testing.T, answer func(w http.ResponseWriter)) *bodyUpstream {
	t.Helper()
	u := &bodyUpstream{got: make(chan seen, 1)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // a body that never completed: no answer, like a server whose parser failed
		}
		u.complete.Add(1)
		h := r.Header.Clone()
		h.Set("X-Transfer-Encoding", strings.Join(r.TransferEncoding, ","))
		u.got <- seen{r.Method, r.URL.Path, h, string(body)}
		answer(w)
	}))
	t.Cleanup(u.Close)
	return u
}

// frontWith relays each caller request with the Upstream that mk builds from it; the handler then
// does what a router does with the result (after, optional).
func frontWith(t *testing.T, rl *Relay, mk func(r *http.Request) Upstream, after func(http.ResponseWriter, Result)) *front {
	t.Helper()
	f := &front{results: make(chan Result, 1)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := rl.Do(r.Context(), w, mk(r))
		f.results <- res
		if after != nil {
			after(w, res)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func postBody(t *testing.T, ctx context.Context, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/audio/transcriptions", body)
	require.NoError(t, err)
	return http.DefaultClient.Do(req)
}

// TestStreamedBodyReachesTheUpstream: a BodyStream goes out chunked, as it is read, with its content
// type; the answer is relayed as for any body.
func TestStreamedBodyReachesTheUpstream(t *testing.T) {
	u := newBodyUpstream(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"ok"}`)
	})
	f := frontWith(t, New(nil, Options{FirstByteTimeout: time.Minute}), func(r *http.Request) Upstream {
		return Upstream{BaseURL: u.URL, Path: "/v1/audio/transcriptions", BodyStream: r.Body,
			ContentType: "multipart/form-data; boundary=xyz", Body: []byte("ignored")}
	}, nil)
	resp, err := postBody(t, guardCtx(t), f.URL, strings.NewReader(strings.Repeat("a", 100<<10)))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `{"text":"ok"}`, string(body))
	res := recv(t, f.results, "relay result")
	assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
	got := recv(t, u.got, "upstream request")
	assert.Equal(t, strings.Repeat("a", 100<<10), got.body)
	assert.Equal(t, "multipart/form-data; boundary=xyz", got.header.Get("Content-Type"))
	assert.Equal(t, "chunked", got.header.Get("X-Transfer-Encoding"))
	assert.Equal(t, int64(1), u.calls.Load())
}

// failingBody yields its data and then fails, as the router's form encoder does when the caller's
// upload breaks a rule mid-way.
type failingBody struct {
	data string
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestRefusedStreamedBody: when the body stream fails, the attempt ends with ErrRequestBody and the
// body_refused outcome, nothing is written (the caller answers), and the upstream never reads a
// complete body.
func TestRefusedStreamedBody(t *testing.T) {
	u := newBodyUpstream(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	refused := errors.New("upload over the limit")
	f := frontWith(t, New(nil, Options{}), func(r *http.Request) Upstream {
		return Upstream{BaseURL: u.URL, Path: "/v1/audio/transcriptions",
			BodyStream: &failingBody{data: strings.Repeat("b", 64<<10), err: refused}, ContentType: "multipart/form-data; boundary=q"}
	}, func(w http.ResponseWriter, res Result) {
		if !res.Wrote {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // the router's own refusal
		}
	})
	resp, err := postBody(t, guardCtx(t), f.URL, strings.NewReader("x"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "the relay wrote nothing")
	res := recv(t, f.results, "relay result")
	assert.Equal(t, decisionlog.OutcomeBodyRefused, res.Outcome)
	assert.ErrorIs(t, res.Err, ErrRequestBody)
	assert.False(t, res.Wrote)
	assert.Equal(t, 1, res.Attempts)
	assert.Zero(t, u.complete.Load(), "the upstream never had a complete body")
}

func TestInvalidContentTypeIsATransportError(t *testing.T) {
	u := newBodyUpstream(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	f := frontWith(t, New(nil, Options{}), func(r *http.Request) Upstream {
		return Upstream{BaseURL: u.URL, Path: "/v1/x", Body: []byte("{}"), ContentType: "a\r\nX-Injected: 1"}
	}, nil)
	resp, err := postBody(t, guardCtx(t), f.URL, strings.NewReader("x"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	res := recv(t, f.results, "relay result")
	assert.Equal(t, decisionlog.OutcomeUpstreamTransportError, res.Outcome)
	assert.Zero(t, u.calls.Load(), "nothing was sent")
}

// TestFirstByteDeadlineStartsAfterAStreamedBody: on fake time, an upload that takes ten first-byte
// timeouts to arrive is not a first-byte timeout; once it has arrived, the deadline runs in full.
func TestFirstByteDeadlineStartsAfterAStreamedBody(t *testing.T) {
	for _, answers := range []bool{true, false} {
		name := map[bool]string{true: "answer after the body", false: "no answer"}[answers]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pn := pipenet.New()
				defer pn.Close()
				var bodyDone time.Time
				answered := make(chan time.Time, 1)
				base := pn.Serve("member:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					if !answers {
						<-r.Context().Done()
						answered <- time.Now()
						return
					}
					_, _ = io.WriteString(w, "{}")
				}))
				pr, pw := io.Pipe()
				go func() {
					_, _ = pw.Write([]byte("first half;"))
					<-time.After(10 * time.Second) // fake time: a slow upload
					_, _ = pw.Write([]byte("second half"))
					bodyDone = time.Now()
					_ = pw.Close()
				}()
				rl := New(pn.Client(), Options{FirstByteTimeout: time.Second})
				rec := httptest.NewRecorder()
				res := rl.Do(context.Background(), rec, Upstream{BaseURL: base, Path: "/v1/audio/transcriptions", BodyStream: pr})
				if answers {
					assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
					assert.Equal(t, http.StatusOK, rec.Code)
					return
				}
				assert.Equal(t, decisionlog.OutcomeUpstreamTimeout, res.Outcome)
				assert.ErrorIs(t, res.Err, ErrFirstByteTimeout)
				assert.Equal(t, time.Second, (<-answered).Sub(bodyDone), "the deadline counts from the body's end")
			})
		})
	}
}

// TestTransportCloseIsNotABodyFailure: the transport closing a piped body it was reading (the
// upstream answered early or its connection broke) leaves the attempt's own failure to classify; only
// the body's producer failing is a refused body.
func TestTransportCloseIsNotABodyFailure(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	closed := &streamBody{r: pr, ended: func() {}}
	require.NoError(t, closed.Close())
	_, err := closed.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
	assert.False(t, closed.failed())

	refused := &streamBody{r: &failingBody{data: "x", err: errors.New("refused")}, ended: func() {}}
	_, err = io.Copy(io.Discard, refused)
	assert.Error(t, err)
	assert.True(t, refused.failed())
}

package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// echoUpstream is a member that echoes the router's Authorization header in a successful answer: it
// serves script, with {KEY} replaced by the bearer token it was sent and {JKEY} by that token as Go's
// encoding/json escapes it, in the pieces the request path names (/cut/3/17: bytes [0,3), [3,17) and
// [17,end)), flushing after each and, between pieces, waiting for the test's go-ahead on next when next
// is not nil.
func echoUpstream(t *testing.T, contentType, script string, next <-chan struct{}) *upstream {
	var p atomic.Pointer[string]
	p.Store(&script)
	return scriptUpstream(t, contentType, &p, next)
}

// scriptUpstream is echoUpstream with a script the test may change between requests.
func scriptUpstream(t *testing.T, contentType string, script *atomic.Pointer[string], next <-chan struct{}) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body := echo(*script.Load(), key)
		w.Header().Set("Content-Type", echo(contentType, key))
		w.WriteHeader(http.StatusOK)
		from := 0
		for _, c := range append(cutsOf(r.URL.Path), len(body)) {
			flushWrite(w, body[from:c])
			from = c
			if next != nil && c < len(body) {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
		}
	})
}

func echo(script, key string) string {
	esc, _ := json.Marshal(key)
	return strings.NewReplacer("{KEY}", key, "{JKEY}", string(esc[1:len(esc)-1])).Replace(script)
}

func cutsOf(path string) []int {
	var cuts []int
	for _, p := range strings.Split(strings.TrimPrefix(path, "/cut"), "/")[1:] {
		n, _ := strconv.Atoi(p)
		cuts = append(cuts, n)
	}
	return cuts
}

func cutPath(cuts ...int) string {
	var b strings.Builder
	b.WriteString("/cut")
	for _, c := range cuts {
		fmt.Fprintf(&b, "/%d", c)
	}
	return b.String()
}

// keyedFront relays every caller request to u with key, the caller's path (its cuts) and mode; a cut
// passed-through body is aborted, as router/server aborts it.
func keyedFront(t *testing.T, u *upstream, key string, stream, pass bool) *front {
	return frontWith(t, New(nil, Options{}), func(r *http.Request) Upstream {
		_, _ = io.Copy(io.Discard, r.Body)
		return Upstream{BaseURL: u.URL, Path: r.URL.Path, Body: []byte(`{"model":"m"}`), Stream: stream, PassThrough: pass, APIKey: key}
	}, abortOnCut)
}

// fetch posts to path and reads the answer to its end or to its abort.
func (f *front) fetch(t *testing.T, path string) (*http.Response, string, Result, error) {
	t.Helper()
	resp, err := postPath(t, f.URL+path)
	require.NoError(t, err)
	body, rerr := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp, string(body), recv(t, f.results, "relay result"), rerr
}

func postPath(t *testing.T, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(guardCtx(t), http.MethodPost, url, strings.NewReader(`{}`))
	require.NoError(t, err)
	return http.DefaultClient.Do(req)
}

const withheldBody = `{"error":{"message":"the upstream server's answer was withheld","type":"upstream_error","param":null,"code":"upstream_http_error"}}`

// TestSuccessfulAnswerCarryingTheKeyIsReplaced: a 2xx ordinary answer that echoes the key, verbatim or
// JSON-escaped, in its body or its Content-Type, becomes the relay's fixed 502; the record an upstream
// HTTP error. The same echo from an upstream without a key is only model output.
func TestSuccessfulAnswerCarryingTheKeyIsReplaced(t *testing.T) {
	cases := []struct {
		name, key, ct, body string
	}{
		{"verbatim in the body", hostileKey, "application/json", `{"choices":[{"message":{"content":"your key is {KEY}"}}]}`},
		{"JSON-escaped in the body", `sk-<Q7vLm2Xa9>&"RtBk4Wz`, "application/json", `{"content":"{JKEY}"}`},
		{"in the Content-Type", hostileKey, "application/json; echo={KEY}", `{"ok":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := echoUpstream(t, c.ct, c.body, nil)
			resp, body, res, rerr := keyedFront(t, u, c.key, false, false).fetch(t, "/cut")
			require.NoError(t, rerr)
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.JSONEq(t, withheldBody, body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
			assert.Equal(t, http.StatusBadGateway, res.Status)
			assert.ErrorIs(t, res.Err, ErrUpstreamKeyEcho)
			assertOneCall(t, u, res)
		})
	}
	t.Run("no key configured: nothing to find", func(t *testing.T) {
		u := echoUpstream(t, "application/json", `{"content":"sk-proj-Q7vLm2Xa9RtBk4Wz{KEY}"}`, nil)
		resp, body, res, rerr := keyedFront(t, u, "", false, false).fetch(t, "/cut")
		require.NoError(t, rerr)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, `{"content":"sk-proj-Q7vLm2Xa9RtBk4Wz"}`, body)
		assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
	})
}

package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

const hostedKey = "sk-proj-Q7vLm2Xa9RtBk4WzHn3"

// TestUpstreamKeyNeverReachesCallers: a hosted upstream behind a direct tier with api_key_env echoes
// the key it was sent, whole and in OpenAI's masked form, in every kind of error. The caller sees a
// fixed error each time; the upstream did receive the key.
func TestUpstreamKeyNeverReachesCallers(t *testing.T) {
	var mode atomic.Int64
	var got atomic.Value
	hosted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		got.Store(key)
		switch mode.Load() {
		case 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s****%s.","code":"invalid_api_key"}}`, key[:8], key[len(key)-4:])
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "upstream auth %s failed", key)
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"role":"assistant"}}]}`+"\n\n")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"quota of ...%s exhausted\"}}\n\n", key[len(key)-4:])
		case 3: // a successful answer that echoes the key
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"you sent %s"}}]}`, key)
		default: // a stream that echoes it in its data, split across flushed writes
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"role":"assistant"}}]}`+"\n\n")
			fmt.Fprintf(w, `data: {"choices":[{"delta":{"content":"%s`, key[:10])
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, `%s"}}]}`+"\n\ndata: [DONE]\n\n", key[10:])
		}
	}))
	defer hosted.Close()
	yaml := fmt.Sprintf(`listen: 127.0.0.1:0
aliases: [{id: hosted, tier: cloud}]
tiers:
  - id: cloud
    kind: direct
    served_model: gpt-test
    endpoint: %s
    api_key_env: HOSTED_KEY
    gates: {max_context_tokens: 8192}
`, hosted.URL)
	cfg, err := load.Parse([]byte(yaml), func(k string) (string, bool) {
		if k == "HOSTED_KEY" {
			return hostedKey, true
		}
		return env(k)
	})
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	done := make(chan struct{}, 8) // a request's record is in once its handler has returned
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		srv.Handler().ServeHTTP(w, r)
	}))
	defer front.Close()

	ask := func(stream bool) (int, string) {
		body := fmt.Sprintf(`{"model":"hosted","messages":[{"role":"user","content":"hi"}],"stream":%t}`, stream)
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		<-done
		return resp.StatusCode, string(b)
	}
	status, body := ask(false)
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, body, "the upstream server refused the router's credentials")
	assert.Equal(t, hostedKey, got.Load(), "the upstream was sent its key")

	mode.Store(1)
	status, body2 := ask(false)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Contains(t, body2, "the upstream server returned an error")

	mode.Store(2)
	status, body3 := ask(true)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body3, `"role":"assistant"`)
	assert.Contains(t, body3, "the upstream server returned an error")

	mode.Store(3)
	status, body4 := ask(false)
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, body4, "the upstream server's answer was withheld")

	mode.Store(4)
	status, body5 := ask(true)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body5, `"role":"assistant"`)
	assert.Contains(t, body5, "the upstream server's answer was withheld")
	assert.NotContains(t, body5, "[DONE]")
	for _, rec := range srv.Decisions().Recent(2) {
		assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, rec.Outcome, "an echo is recorded as the upstream error it is")
	}

	for _, b := range []string{body, body2, body3, body4, body5} {
		assert.NotContains(t, b, hostedKey[len(hostedKey)-4:], "no part of the key: %s", b)
		assert.NotContains(t, b, hostedKey[:8])
	}
}

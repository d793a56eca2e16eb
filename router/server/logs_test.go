package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/router/server"
)

// lockedBuffer is a goroutine-safe log destination.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Planted secrets: each must stay out of every surface the router writes.
const (
	upstreamKey    = "UPSTREAM-KEY-5b7d0c1e9a"
	promptMarker   = "PROMPT-MARKER-7f3a"
	responseMarker = "RESPONSE-MARKER-2c9d"
	metricMarker   = "RAW-METRIC-MARKER-41aa"
	metricHelp     = "RAW-METRIC-HELP-66f1"
	upstreamEnv    = "ANVIL_TEST_UPSTREAM_KEY"
)

// hostedUpstream is a direct tier's upstream that answers with planted response text, and holds a
// request whose prompt says HOLD until released.
type hostedUpstream struct {
	srv     *httptest.Server
	held    chan struct{}
	release chan struct{}
	sawKey  atomic.Bool
}

func startHosted(t *testing.T) *hostedUpstream {
	h := &hostedUpstream{held: make(chan struct{}, 1), release: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.sawKey.Store(r.Header.Get("Authorization") == "Bearer "+upstreamKey)
		if bytes.Contains(body, []byte("HOLD")) {
			h.held <- struct{}{}
			<-h.release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"%s","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}`,
			servedModel, responseMarker)
	}))
	t.Cleanup(func() {
		h.srv.CloseClientConnections()
		h.srv.Close()
	})
	return h
}

// sweepYAML is a capacity tier over real fake members (alias chat) and a keyed direct tier with a
// ceiling of one (alias big), with a JSONL decision sink.
func sweepYAML(ms []*member, hosted *hostedUpstream, sink string) string {
	y := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2, extra: "decision_log:\n  jsonl_path: " + sink + "\n"})
	y = strings.Replace(y, "aliases:\n", "aliases:\n  - id: big\n    tier: hosted\n", 1)
	return y + fmt.Sprintf("  - id: hosted\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    api_key_env: %s\n"+
		"    max_concurrency: 1\n    gates:\n      max_context_tokens: 4096\n", servedModel, hosted.srv.URL, upstreamEnv)
}

// The planted-secret sweep through the real server: a caller token, the admin token, an upstream API
// key, member addresses, prompt text, response text, raw metric text and raw error strings go in
// through success, refusals, upstream errors, a dead member and panics; none of them comes out in the
// log lines (text and JSON handlers), the JSONL sink, the ring (admin decisions), the summary, the
// admission and capacity JSON, /metrics, /readyz or any error body.
func TestNothingSensitiveReachesAnySurface(t *testing.T) {
	ms := startMembers(t, 2)
	hosted := startHosted(t)
	planted := fmt.Sprintf("# HELP planted_info %s\n# TYPE planted_info gauge\nplanted_info{note=%q} 1\n", metricHelp, metricMarker)
	for _, m := range ms {
		m.planted.Store(&planted)
	}
	sink := filepath.Join(t.TempDir(), "decisions.jsonl")
	cfg := sweepYAML(ms, hosted, sink)
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	panicNext := &atomic.Bool{}
	r := startRouterWith(t, cfg, routerOptions{logger: logger, writer: func(w http.ResponseWriter, req *http.Request) http.ResponseWriter {
		if req.Header.Get("X-Test-Panic") == "" {
			return w
		}
		return lazyWriter{panicWriter{ResponseWriter: w, armed: panicNext, onWrite: req.Header.Get("X-Test-Panic") == "write"}, ms}
	}})

	var replies, errorBodies []string
	send := func(auth, path, body string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.http.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		r.wait(t, 1)
		if err != nil {
			return 0 // a response cut by a panic
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		replies = append(replies, string(b))
		if resp.StatusCode >= 400 {
			errorBodies = append(errorBodies, string(b))
		}
		return resp.StatusCode
	}
	caller := "Bearer " + callerToken
	chat := `{"model":"chat","messages":[{"role":"user","content":"` + promptMarker + `"}],"max_tokens":4,"ignore_eos":true}`
	big := strings.Replace(chat, `"model":"chat"`, `"model":"big"`, 1)

	// Successes, on both tiers; the members' pages (with the planted metric text) are scraped.
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		return p["m00"].Freshness() == scheduler.FreshnessFresh && p["m01"].Freshness() == scheduler.FreshnessFresh
	})
	require.Equal(t, http.StatusOK, send(caller, "/v1/chat/completions", chat))
	require.Equal(t, http.StatusOK, send(caller, "/v1/chat/completions", strings.Replace(chat, `"max_tokens":4`, `"max_tokens":4,"stream":true`, 1)))
	require.Equal(t, http.StatusOK, send(caller, "/v1/chat/completions", big))
	require.True(t, hosted.sawKey.Load(), "the upstream key is really sent upstream")
	require.Contains(t, replies[len(replies)-1], responseMarker, "and the response text really reaches its caller")

	// Refusals: authentication, body size, gates, unknown alias, quiesce, exhausted capacity.
	require.Equal(t, http.StatusUnauthorized, send("Bearer wrong-"+callerToken, "/v1/chat/completions", chat))
	require.Equal(t, http.StatusUnauthorized, send("Bearer "+adminToken, "/v1/chat/completions", chat))
	require.Equal(t, http.StatusRequestEntityTooLarge, send(caller, "/v1/chat/completions", strings.Repeat(promptMarker, 1<<17)))
	require.Equal(t, http.StatusBadRequest, send(caller, "/v1/chat/completions", `{"model":"chat","messages":[{"content":"`+promptMarker+`"}],"tools":{}}`))
	require.Equal(t, http.StatusBadRequest, send(caller, "/v1/chat/completions", `{"model":"chat","messages":"`+promptMarker+`"}`))
	require.Equal(t, http.StatusNotFound, send(caller, "/v1/chat/completions", `{"model":"`+promptMarker+`","messages":[{"role":"user","content":"x"}]}`))
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","reason":"sweep"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, http.StatusServiceUnavailable, send(caller, "/v1/chat/completions", chat))
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	held := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(strings.Replace(big, promptMarker, "HOLD", 1)))
		req.Header.Set("Authorization", caller)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			held <- resp.StatusCode
			return
		}
		held <- 0
	}()
	<-hosted.held
	require.Equal(t, http.StatusServiceUnavailable, send(caller, "/v1/chat/completions", big), "the direct tier's one slot is taken")
	close(hosted.release)
	require.Equal(t, http.StatusOK, <-held)
	r.wait(t, 1)

	// Admin refusals.
	status, body = r.admin(t, `{"action":"quiesce","tier":"`+promptMarker+`"}`)
	require.Equal(t, http.StatusBadRequest, status, "an ID outside the grammar: invalid_tier, never echoed")
	errorBodies = append(errorBodies, body)
	code, body := r.get(t, "/admin/v1/capacity", callerToken)
	require.Equal(t, http.StatusUnauthorized, code)
	errorBodies = append(errorBodies, body)

	// Upstream failures, panics, and a member that is gone (a raw transport error).
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}})
	}
	require.Equal(t, http.StatusInternalServerError, send(caller, "/v1/chat/completions", chat), "an upstream 500 passes through")
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{})
		m.arrived.Store(false)
	}
	require.Equal(t, http.StatusInternalServerError, send(caller, "/v1/chat/completions", chat, "X-Test-Panic", "header"))
	require.Equal(t, 0, send(caller, "/v1/chat/completions", chat, "X-Test-Panic", "write"), "a cut response")
	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	require.Equal(t, http.StatusBadGateway, send(caller, "/v1/chat/completions", chat))

	// Every surface.
	require.NoError(t, r.srv.Decisions().Close()) // the server's sink is asynchronous: Close writes out its queue, Flush does not
	jsonl, err := os.ReadFile(sink)
	require.NoError(t, err)
	surfaces := map[string]string{
		"logs":         logs.String(),
		"jsonl":        string(jsonl),
		"error bodies": strings.Join(errorBodies, "\n"),
	}
	for _, path := range []string{"/admin/v1/decisions?n=1000", "/admin/v1/decisions/summary", "/admin/v1/admission",
		"/admin/v1/capacity", "/metrics"} {
		code, body := r.get(t, path, adminToken)
		require.Equal(t, http.StatusOK, code, path)
		surfaces[path] = body
	}
	req, _ := http.NewRequest(http.MethodGet, r.http.URL+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.wait(t, 1)
	surfaces["/readyz"] = string(b)

	require.Contains(t, surfaces["logs"], "level=INFO msg=request", "the text handler wrote the access log")
	require.Contains(t, surfaces["logs"], `"msg":"request"`, "the JSON handler wrote it too")
	require.Contains(t, surfaces["logs"], "handler panic")
	require.Contains(t, surfaces["jsonl"], `"outcome":"internal_error"`, "the panics are in the sink")
	require.Contains(t, surfaces["/metrics"], `outcome="internal_error"`)
	require.GreaterOrEqual(t, strings.Count(surfaces["jsonl"], "\n"), 14, "every front-door request has its line")

	secrets := []string{callerToken, adminToken, upstreamKey, promptMarker, responseMarker, metricMarker, metricHelp,
		"vllm:num_requests", "planted_info", plantedPanic, "connection refused", "dial tcp", "127.0.0.1:"}
	for _, m := range ms {
		secrets = append(secrets, strings.TrimPrefix(m.URL(), "http://"))
	}
	secrets = append(secrets, strings.TrimPrefix(hosted.srv.URL, "http://"))
	routerAddr := strings.TrimPrefix(r.http.URL, "http://")
	for name, text := range surfaces {
		for _, secret := range secrets {
			if secret == "127.0.0.1:" && name == "logs" {
				// The log names the router's own listener nowhere here (httptest serves it), so any
				// loopback address in the logs would be a member's.
				assert.NotContains(t, strings.ReplaceAll(text, routerAddr, ""), secret, "%s leaks %q", name, secret)
				continue
			}
			assert.NotContains(t, text, secret, "%s leaks %q", name, secret)
		}
	}
}

// TestPassiveHealthLogsEachTransition: one warn line per ejection with tier, member, reason, streak
// and the ejection's length, and one info line when the member recovers (here through the readiness
// prober's next pass once the ejection ended: a 100 ms base ejection).
func TestPassiveHealthLogsEachTransition(t *testing.T) {
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4,
		extra: "readiness:\n  interval: 100ms\n  timeout: 100ms\n"})+
		"    passive_health: {consecutive_failures: 2, base_ejection: 100ms, max_ejection: 1s}\n"), env)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { stop(); require.NoError(t, <-served) }()

	fault(t, ms[0], fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 503, Rate: 1}}})
	recovered := "member recovered from passive health ejection"
	for !strings.Contains(logs.String(), recovered) {
		// Route requests until m00 (always picked first while idle) has failed twice, been ejected,
		// and a probe after the 100 ms ejection has made it healthy again. Each round trip paces the
		// loop; the test's own timeout bounds it.
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions",
			strings.NewReader(chatBody(1, false)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	var ejected, recoveredLine map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		switch m["msg"] {
		case "member ejected by passive health":
			if ejected == nil {
				ejected = m
			}
		case recovered:
			recoveredLine = m
		}
	}
	require.NotNil(t, ejected)
	assert.Equal(t, "WARN", ejected["level"])
	assert.Equal(t, "replicas", ejected["tier"])
	assert.Equal(t, "m00", ejected["member"])
	assert.Equal(t, "consecutive_failures", ejected["reason"])
	assert.Equal(t, 2.0, ejected["streak"])
	assert.Equal(t, 0.1, ejected["ejection_s"])
	require.NotNil(t, recoveredLine)
	assert.Equal(t, "m00", recoveredLine["member"])
	assert.Equal(t, "probe_passed", recoveredLine["reason"])
}

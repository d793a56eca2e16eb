package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
)

// headerLog records the headers of every generation request an upstream received.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerLog) record(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, r.Header.Clone())
}

// text is every header name and value received, one per line.
func (h *headerLog) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, hdr := range h.seen {
		for k, vs := range hdr {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ", "))
		}
	}
	return b.String()
}

func (h *headerLog) requestIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, hdr := range h.seen {
		out = append(out, hdr.Values("X-Request-Id")...)
	}
	return out
}

// startRecordingMember is a real fake-vLLM member whose generation requests' headers are recorded.
func startRecordingMember(t *testing.T, seed uint64, log *headerLog) *member {
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: seed})
	require.NoError(t, err)
	h := fake.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			log.record(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		fake.Close()
	})
	return &member{fake: fake, srv: srv}
}

// startRecordingHosted is a keyed direct upstream that answers every chat request and records its
// headers (its Authorization carries the upstream key: that one header is the key's only place).
func startRecordingHosted(t *testing.T, log *headerLog) *hostedUpstream {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		log.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"%s","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, servedModel)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return &hostedUpstream{srv: srv}
}

// sendWithID posts body to path with the token and the caller's X-Request-ID, and returns the
// answer's status and headers once the request has finished.
func (r *router) sendWithID(t *testing.T, method, path, token, id, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.wait(t, 1)
	return resp.StatusCode, resp.Header
}

// TestReusedCallerRequestIDGivesDistinctRecords: two requests with the same caller X-Request-ID are
// two records with two router request IDs, each carrying the caller's ID beside its own; the answer
// and the member carry the router's ID.
func TestReusedCallerRequestIDGivesDistinctRecords(t *testing.T) {
	var got headerLog
	ms := []*member{startRecordingMember(t, 1, &got), startRecordingMember(t, 2, &got)}
	sink := filepath.Join(t.TempDir(), "decisions.jsonl")
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "round_robin", extra: "decision_log:\n  jsonl_path: " + sink + "\n"}))
	var answered []string
	for range 2 {
		status, hdr := r.sendWithID(t, http.MethodPost, "/v1/chat/completions", callerToken, "trace-dup-1", chatBody(2, false))
		require.Equal(t, http.StatusOK, status)
		require.Len(t, hdr.Values("X-Request-ID"), 1)
		answered = append(answered, hdr.Get("X-Request-ID"))
	}
	recs := r.srv.Decisions().Recent(10)
	require.Len(t, recs, 2)
	assert.NotEqual(t, recs[0].RequestID, recs[1].RequestID, "one request, one ID")
	for i, rec := range recs {
		assert.Equal(t, "trace-dup-1", rec.CallerRequestID, "the caller's ID is kept beside the router's")
		assert.Equal(t, answered[i], rec.RequestID, "the answer names the record")
	}
	assert.ElementsMatch(t, answered, got.requestIDs(), "the member gets the router's ID, once per request")
	require.NoError(t, r.srv.Decisions().Close()) // the server's sink is asynchronous: Close writes out its queue, Flush does not
	jsonl, err := os.ReadFile(sink)
	require.NoError(t, err)
	lines, err := decisionlog.ReadJSONL(strings.NewReader(string(jsonl)), 10)
	require.NoError(t, err, "the strict reader takes the new field")
	require.Len(t, lines, 2)
	assert.Equal(t, 2, strings.Count(string(jsonl), `"caller_request_id":"trace-dup-1"`))
	assert.NotEqual(t, lines[0].RequestID, lines[1].RequestID)
}

// TestCredentialAsRequestIDLeaksNowhere: a caller that sends its token, the admin token or an
// upstream key as its X-Request-ID (as it is, or inside a longer ID) has it dropped: it appears in no
// log line (debug included), no JSONL line, no record, no answer header and no header any member or
// upstream receives (but the one Authorization header that carries the upstream key to its own tier).
func TestCredentialAsRequestIDLeaksNowhere(t *testing.T) {
	var got headerLog
	ms := []*member{startRecordingMember(t, 1, &got), startRecordingMember(t, 2, &got)}
	hosted := startRecordingHosted(t, &got)
	sink := filepath.Join(t.TempDir(), "decisions.jsonl")
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r := startRouterWith(t, sweepYAML(ms, hosted, sink), routerOptions{logger: logger})
	chat := chatBody(2, false)
	big := strings.Replace(chat, `"model":"chat"`, `"model":"big"`, 1)

	secrets := []string{callerToken, adminToken, upstreamKey}
	var answers []string
	for _, s := range secrets {
		for _, id := range []string{s, "x-" + s + "-y"} {
			for _, body := range []string{chat, big} {
				status, hdr := r.sendWithID(t, http.MethodPost, "/v1/chat/completions", callerToken, id, body)
				require.Equal(t, http.StatusOK, status)
				answers = append(answers, fmt.Sprint(hdr))
			}
			// An admin request logs its transition line (a refusal here: the tier is not quiesced).
			status, hdr := r.sendWithID(t, http.MethodPost, manage.TransitionPath, adminToken, id, `{"action":"drain","tier":"replicas","dry_run":true}`)
			require.Equal(t, http.StatusConflict, status)
			answers = append(answers, fmt.Sprint(hdr))
			status, hdr = r.sendWithID(t, http.MethodPost, "/v1/chat/completions", "wrong-"+callerToken, id, chat)
			require.Equal(t, http.StatusUnauthorized, status)
			answers = append(answers, fmt.Sprint(hdr))
		}
	}
	// A clean ID is kept, so the drop above is the filter's and not a lost header.
	status, _ := r.sendWithID(t, http.MethodPost, "/v1/chat/completions", callerToken, "clean-trace-1", chat)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "clean-trace-1", r.srv.Decisions().Recent(1)[0].CallerRequestID)

	require.NoError(t, r.srv.Decisions().Close()) // the server's sink is asynchronous: Close writes out its queue, Flush does not
	jsonl, err := os.ReadFile(sink)
	require.NoError(t, err)
	var recs strings.Builder
	for _, rec := range r.srv.Decisions().Recent(100) {
		js, err := rec.JSON()
		require.NoError(t, err)
		recs.Write(append(js, '\n'))
	}
	_, metrics := r.get(t, "/metrics", adminToken)
	withoutAuth := strings.ReplaceAll(got.text(), "Authorization: Bearer "+upstreamKey+"\n", "")
	surfaces := map[string]string{"logs": logs.String(), "jsonl": string(jsonl), "records": recs.String(),
		"answer headers": strings.Join(answers, "\n"), "upstream headers": withoutAuth}
	require.Contains(t, surfaces["logs"], `"msg":"request"`)
	require.Contains(t, surfaces["logs"], "caller request id dropped")
	require.Contains(t, surfaces["logs"], `"msg":"transition"`)
	require.Contains(t, surfaces["logs"], "request refused: authentication")
	require.Contains(t, surfaces["jsonl"], `"caller_request_id":"clean-trace-1"`)
	require.Contains(t, got.text(), "Authorization: Bearer "+upstreamKey, "the key really went to its upstream")
	require.Len(t, got.requestIDs(), 2*len(secrets)*2+1, "every routed request reached an upstream")
	for name, text := range surfaces {
		for _, s := range secrets {
			assert.NotContains(t, text, s, "%s carries a credential sent as a request ID", name)
		}
	}
	// Each of the 6 IDs on 3 authenticated requests; the unauthenticated ones are not checked.
	assert.Contains(t, metrics, `anvil_router_caller_request_ids_total{result="secret"} 18`)
	assert.Contains(t, metrics, `anvil_router_caller_request_ids_total{result="kept"} 1`)
}

// TestRotatedTokenFollowsTheReload: the filter is the generation's. After a reload that rotates the
// caller token, the new token is refused as a request ID and the old one, no longer a credential, is
// an ordinary correlation value.
func TestRotatedTokenFollowsTheReload(t *testing.T) {
	ms := startMembers(t, 2)
	cfg := live{members: ms}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	const newCaller = "caller-token-rotated-0123"
	status, _ := rig.sendWithID(t, http.MethodPost, "/v1/chat/completions", callerToken, newCaller, chatBody(2, false))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, newCaller, rig.srv.Decisions().Recent(1)[0].CallerRequestID, "not a credential yet")

	rig.envs[config.EnvAPIToken] = newCaller
	cfg.top = "# tokens rotated\n"
	rig.apply(t, cfg.yaml())

	status, hdr := rig.sendWithID(t, http.MethodPost, "/v1/chat/completions", newCaller, newCaller, chatBody(2, false))
	require.Equal(t, http.StatusOK, status)
	rec := rig.srv.Decisions().Recent(1)[0]
	assert.Empty(t, rec.CallerRequestID, "the rotated-in token is refused as an ID")
	assert.NotEqual(t, newCaller, rec.RequestID)
	assert.NotContains(t, fmt.Sprint(hdr), newCaller)

	status, _ = rig.sendWithID(t, http.MethodPost, "/v1/chat/completions", newCaller, callerToken, chatBody(2, false))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, callerToken, rig.srv.Decisions().Recent(1)[0].CallerRequestID, "the rotated-out token is no credential now")
}

// TestCallerRequestIDNeedsOneWellFormedHeader: two X-Request-ID headers, or one out of the grammar,
// keep nothing.
func TestCallerRequestIDNeedsOneWellFormedHeader(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for _, ids := range [][]string{{"a-1", "a-2"}, {"has space"}, {"10.0.0.1"}, {strings.Repeat("x", 129)}, {"-lead"}} {
		req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(2, false)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header["X-Request-Id"] = ids
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		r.wait(t, 1)
		require.Equal(t, http.StatusOK, resp.StatusCode, "a dropped ID is no error to the caller")
		rec := r.srv.Decisions().Recent(1)[0]
		assert.Empty(t, rec.CallerRequestID, "%q", ids)
		assert.Equal(t, rec.RequestID, resp.Header.Get("X-Request-ID"))
	}
	_, metrics := r.get(t, "/metrics", adminToken)
	assert.Contains(t, metrics, `anvil_router_caller_request_ids_total{result="malformed"} 5`)
}

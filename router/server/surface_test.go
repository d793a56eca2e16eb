package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// noRedirects returns a client that shows a redirect instead of following it.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func send(t *testing.T, r *router, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirects().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, string(b)
}

// TestAdminAuthenticatesBeforeRouting: without the admin token every path under /admin, existing or
// not, with a trailing slash or the wrong method, gets the same 401 and body: no redirect, no 404 or
// 405 that would reveal which routes exist.
func TestAdminAuthenticatesBeforeRouting(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	_, want := send(t, r, http.MethodGet, "/admin/v1/admission", "")
	require.Contains(t, want, `"code":"invalid_admin_token"`)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/admin/v1/admission/"},
		{http.MethodGet, "/admin/v1/Admission"},
		{http.MethodGet, "/admin/v1/transition"},
		{http.MethodDelete, "/admin/v1/admission"},
		{http.MethodGet, "/admin/v1/nothing"},
		{http.MethodGet, "/admin"},
		{http.MethodPost, "/admin/"},
	} {
		for _, tok := range []string{"", callerToken} {
			status, body := send(t, r, c.method, c.path, tok)
			assert.Equal(t, http.StatusUnauthorized, status, "%s %s", c.method, c.path)
			assert.Equal(t, want, body, "%s %s", c.method, c.path)
		}
	}
	// With the token, the routes answer as routes: no redirect either.
	status, _ := send(t, r, http.MethodGet, "/admin/v1/admission/", adminToken)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = send(t, r, http.MethodGet, "/admin/v1/transition", adminToken)
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	status, _ = send(t, r, http.MethodGet, "/admin/v1/admission", adminToken)
	assert.Equal(t, http.StatusOK, status)
}

// TestHealthRoutesAnswerHEAD: load balancers probe with HEAD.
func TestHealthRoutesAnswerHEAD(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for _, path := range []string{"/healthz", "/readyz"} {
		status, body := send(t, r, http.MethodHead, path, "")
		assert.Equal(t, http.StatusOK, status, path)
		assert.Empty(t, body)
	}
	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	r.srv.ProbeNow(t.Context())
	status, _ := send(t, r, http.MethodHead, "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	status, body := send(t, r, http.MethodGet, "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	var out struct {
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	assert.False(t, out.Ready)
	assert.Equal(t, []string{"tier_without_ready_member"}, out.Reasons)
}

// TestRefusalsAreLogged: 401s (front and admin), 404s for unknown routes and 413s each leave one info
// line with the request ID, and none carries a credential, the caller's path or the body.
func TestRefusalsAreLogged(t *testing.T) {
	const marker = "MARKER-5a1d"
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 1024\n"})), env)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	srv.ProbeNow(context.Background())
	front := httptest.NewServer(srv.Handler())
	defer front.Close()

	cases := []struct {
		id, method, path, token, body string
		status                        int
	}{
		{"req-401-front", http.MethodPost, "/v1/chat/completions", "wrong-" + callerToken, chatBody(2, false), 401},
		{"req-401-admin", http.MethodGet, "/admin/v1/admission/" + marker, callerToken, "", 401},
		{"req-404-route", http.MethodGet, "/" + marker, "", "", 404},
		{"req-413-body", http.MethodPost, "/v1/chat/completions", callerToken, `{"model":"chat","x":"` + strings.Repeat(marker, 200) + `"}`, 413},
	}
	routerIDs := map[string]string{} // the caller's X-Request-ID -> the router's, which the log carries
	for _, c := range cases {
		req, err := http.NewRequest(c.method, front.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("X-Request-ID", c.id)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, c.id)
		routerIDs[c.id] = resp.Header.Get("X-Request-ID")
	}
	lines := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(logs.String())), []byte("\n")) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m))
		if id, ok := m["request_id"].(string); ok {
			lines[id] = m
		}
	}
	for _, c := range cases {
		line, ok := lines[routerIDs[c.id]]
		if !assert.True(t, ok, "no log line for %s", c.id) {
			continue
		}
		assert.Equal(t, "INFO", line["level"], c.id)
		assert.EqualValues(t, c.status, line["status"], c.id)
	}
	text := logs.String()
	assert.NotContains(t, text, callerToken)
	assert.NotContains(t, text, marker)
}

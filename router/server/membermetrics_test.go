package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/server"
)

// getPage sends GET path with token and returns the status, body and headers.
func (r *router) getPage(t *testing.T, method, path, token string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, string(b), resp.Header
}

func memberPage(tier, member string) string { return server.MemberMetricsPrefix + tier + "/" + member }

// The router re-exposes a replica's own page byte for byte, with its Content-Type, for the token that
// opens /metrics; planted text no Prometheus encoder would write comes back verbatim.
func TestMemberMetricsPassesThePageThrough(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	planted := "# anvil pass-through marker\nnot really { a metric\n"
	ms[1].planted.Store(&planted)

	resp, err := http.Get(ms[1].URL() + "/metrics")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()

	code, body, hdr := r.getPage(t, http.MethodGet, memberPage("replicas", "m01"), adminToken, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, resp.Header.Get("Content-Type"), hdr.Get("Content-Type"))
	assert.Contains(t, body, "vllm:num_requests_running{")
	assert.True(t, strings.HasSuffix(body, planted), "the member's bytes, unchanged")
	assert.NotContains(t, body, "anvil_router_", "the member's page, not the router's")

	code, body, _ = r.getPage(t, http.MethodGet, memberPage("replicas", "m00"), adminToken, nil)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, "pass-through marker", "each member its own page")
}

// The member sees a plain GET /metrics: the scraper's Accept header and nothing of the caller's
// credentials or other headers.
func TestMemberMetricsSendsNoCredential(t *testing.T) {
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: 9})
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	var mu sync.Mutex
	var seen []http.Header
	var paths []string
	h := fake.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/metrics" {
			mu.Lock()
			seen, paths = append(seen, req.Header.Clone()), append(paths, req.URL.RequestURI())
			mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r := startRouter(t, replicaYAML([]*member{{srv: srv}, startMember(t, servedModel, 10)}, tierOpts{}))

	accept := "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
	code, _, _ := r.getPage(t, http.MethodGet, memberPage("replicas", "m00")+"?target=http://evil.example/",
		adminToken, http.Header{"Accept": {accept}, "Cookie": {"c=1"}, "X-Forwarded-For": {"10.0.0.1"}})
	require.Equal(t, http.StatusOK, code)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	assert.Equal(t, "/metrics", paths[0], "the configured endpoint's /metrics, no caller query")
	assert.Equal(t, accept, seen[0].Get("Accept"))
	for _, k := range []string{"Authorization", "Cookie", "X-Forwarded-For"} {
		assert.Empty(t, seen[0].Get(k), k)
	}
}

// Only configured replica members, by ID; everything else is a fixed refusal, before or after auth.
func TestMemberMetricsRefusals(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	page := memberPage("replicas", "m00")
	for _, c := range []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"no token", http.MethodGet, page, "", http.StatusUnauthorized, "invalid_admin_token"},
		{"a caller token", http.MethodGet, page, callerToken, http.StatusUnauthorized, "invalid_admin_token"},
		{"an unknown member", http.MethodGet, memberPage("replicas", "m09"), adminToken, http.StatusNotFound, "unknown_member"},
		{"an unknown tier", http.MethodGet, memberPage("nope", "m00"), adminToken, http.StatusNotFound, "unknown_member"},
		{"an alias is not a tier", http.MethodGet, memberPage("chat", "m00"), adminToken, http.StatusNotFound, "unknown_member"},
		{"an encoded path", http.MethodGet, server.MemberMetricsPrefix + "replicas/..%2F..%2Fadmin", adminToken, http.StatusNotFound, ""},
		{"a deeper path", http.MethodGet, page + "/metrics", adminToken, http.StatusNotFound, "not_found"},
		{"no member", http.MethodGet, server.MemberMetricsPrefix + "replicas", adminToken, http.StatusNotFound, "not_found"},
		{"POST", http.MethodPost, page, adminToken, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"HEAD", http.MethodHead, page, adminToken, http.StatusMethodNotAllowed, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := r.getPage(t, c.method, c.path, c.token, nil)
			assert.Equal(t, c.status, code, body)
			if c.code != "" {
				assert.Contains(t, body, `"code":"`+c.code+`"`)
			}
		})
	}
	assert.Zero(t, ms[0].scrapes.Load()+ms[1].scrapes.Load(), "no refused request reached a member")
}

// The observer token, which Prometheus presents, opens a member's page as it opens /metrics: the
// ServiceMonitor never needs the admin token.
func TestMemberMetricsOpenToTheObserver(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	code, body, _ := r.getPage(t, http.MethodGet, memberPage("replicas", "m00"), observerToken, nil)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, int64(1), ms[0].scrapes.Load(), "the page is the member's own")
}

// A member that is down, fails, hangs or sends too much is a 502 with a fixed body, within the bound;
// the member's text never reaches the caller.
func TestMemberMetricsFailuresAre502(t *testing.T) {
	defer server.SetMemberMetricsTimeout(300 * time.Millisecond)()
	ms := startMembers(t, 4)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	fault(t, ms[0], fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsError}})
	fault(t, ms[1], fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsHang}})
	fault(t, ms[2], fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsOversized}})
	ms[3].srv.Close()
	for i, name := range []string{"error", "hang", "oversized", "down"} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, body, _ := r.getPage(t, http.MethodGet, memberPage("replicas", ms2id(i)), adminToken, nil)
			assert.Equal(t, http.StatusBadGateway, code)
			assert.Contains(t, body, `"code":"member_unreachable"`)
			assert.NotContains(t, body, "127.0.0.1")
			assert.NotContains(t, body, "fakevllm")
			assert.Less(t, time.Since(start), 10*time.Second, "bounded")
		})
	}
}

func ms2id(i int) string { return []string{"m00", "m01", "m02", "m03"}[i] }

// Member pages are not front-door requests: no request counter, no decision record.
func TestMemberMetricsAreNotRequests(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for range 3 {
		code, _, _ := r.getPage(t, http.MethodGet, memberPage("replicas", "m00"), adminToken, nil)
		require.Equal(t, http.StatusOK, code)
	}
	code, page, _ := r.getPage(t, http.MethodGet, "/metrics", adminToken, nil)
	require.Equal(t, http.StatusOK, code)
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "anvil_router_requests_total{") {
			assert.True(t, strings.HasSuffix(line, " 0"), "no request counted: %s", line)
		}
	}
	code, decisions, _ := r.getPage(t, http.MethodGet, "/admin/v1/decisions", adminToken, nil)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, decisions, "request_id", "no decision recorded: %s", decisions)
}

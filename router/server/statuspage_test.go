package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/statuspage"
)

// fetch sends one request (token "" sends none) and returns the status, headers and body.
func fetch(t *testing.T, r *router, method, path, token string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, resp.Header, string(b)
}

func assertPageHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
		"connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"} {
		assert.Contains(t, csp, directive)
	}
	assert.NotContains(t, csp, "unsafe-inline")
	assert.NotContains(t, csp, "unsafe-eval")
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
}

// TestStatusPageServesItsFilesWithoutAToken: every file of the page answers without a token, with
// its content type, the security headers and an ETag that revalidates; the bare prefix redirects to
// the page.
func TestStatusPageServesItsFilesWithoutAToken(t *testing.T) {
	r := startRouter(t, replicaYAML(startMembers(t, 2), tierOpts{strategy: "capacity", memberCeiling: 2}))
	want := map[string]string{
		"/admin/ui/":            "text/html; charset=utf-8",
		"/admin/ui/app.js":      "text/javascript; charset=utf-8",
		"/admin/ui/style.css":   "text/css; charset=utf-8",
		"/admin/ui/favicon.svg": "image/svg+xml",
	}
	assert.ElementsMatch(t, mapKeys(want), statuspage.New().Paths(), "the page is exactly these files")
	for path, ctype := range want {
		t.Run(path, func(t *testing.T) {
			code, h, body := fetch(t, r, http.MethodGet, path, "", nil)
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, ctype, h.Get("Content-Type"))
			assertPageHeaders(t, h)
			assert.NotEmpty(t, body)
			assert.NotContains(t, body, adminToken)

			code, h, body = fetch(t, r, http.MethodHead, path, "", nil)
			assert.Equal(t, http.StatusOK, code)
			assert.Empty(t, body)

			code, _, body = fetch(t, r, http.MethodGet, path, "", http.Header{"If-None-Match": {h.Get("ETag")}})
			assert.Equal(t, http.StatusNotModified, code)
			assert.Empty(t, body)
		})
	}
	t.Run("bare prefix", func(t *testing.T) {
		code, h, _ := fetch(t, r, http.MethodGet, "/admin/ui", "", nil)
		assert.Equal(t, http.StatusMovedPermanently, code)
		assert.Equal(t, "/admin/ui/", h.Get("Location"))
		assertPageHeaders(t, h)
	})
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestStatusPageOpensNoAdminRoute: the page's exemption is exactly its files. Every other admin
// route the engine has, and any other path under /admin/ui/ (unknown files, other spellings, dot
// segments), still answers 401 without the token or with a wrong one.
func TestStatusPageOpensNoAdminRoute(t *testing.T) {
	r := startRouter(t, replicaYAML(startMembers(t, 2), tierOpts{strategy: "capacity", memberCeiling: 2}))
	engine, ok := r.srv.Handler().(*gin.Engine)
	require.True(t, ok, "the server's handler is its gin engine")
	public := map[string]bool{statuspage.Bare: true}
	for _, p := range statuspage.New().Paths() {
		public[p] = true
	}
	var guarded []string
	for _, rt := range engine.Routes() {
		if (strings.HasPrefix(rt.Path, "/admin") || rt.Path == "/metrics") && !public[rt.Path] {
			guarded = append(guarded, rt.Method+" "+rt.Path)
		}
	}
	require.Contains(t, guarded, "GET /admin/v1/capacity", "the enumeration sees the admin API")
	require.Contains(t, guarded, "POST /admin/v1/transition")
	for _, p := range []string{"/admin/ui/index.html", "/admin/ui/x", "/admin/ui/app.js/", "/admin/ui//app.js",
		"/admin/ui/APP.JS", "/admin/ui/../v1/capacity", "/admin/ui/%2e%2e/v1/capacity", "/admin/uix", "/admin/ui/assets/app.js"} {
		guarded = append(guarded, "GET "+p)
	}
	for _, route := range guarded {
		method, path, _ := strings.Cut(route, " ")
		t.Run(route, func(t *testing.T) {
			for _, token := range []string{"", "wrong-token-0123456789"} {
				code, h, body := fetch(t, r, method, path, token, nil)
				assert.Equal(t, http.StatusUnauthorized, code, body)
				assert.Contains(t, body, "invalid_admin_token")
				assert.Empty(t, h.Get("Location"))
			}
		})
	}
}

// TestDecisionsAsJSON: format=json answers the ring's records as the sink's canonical JSON objects
// (the status page reads these), the same records as the lines; a format that does not exist is a
// fixed 400.
func TestDecisionsAsJSON(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	for range 3 {
		code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, code, out)
		r.wait(t, 1)
	}
	code, _, body := fetch(t, r, http.MethodGet, "/admin/v1/decisions?n=2&format=json", adminToken, nil)
	require.Equal(t, http.StatusOK, code, body)
	var objects []map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &objects))
	require.Len(t, objects, 2)
	var raw []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	for _, rec := range raw {
		_, err := decisionlog.ReadJSONL(strings.NewReader(string(rec)+"\n"), 1)
		require.NoError(t, err, "each object is a canonical sink line: %s", rec)
	}
	_, _, linesBody := fetch(t, r, http.MethodGet, "/admin/v1/decisions?n=2", adminToken, nil)
	var lines []string
	require.NoError(t, json.Unmarshal([]byte(linesBody), &lines))
	require.Len(t, lines, 2)
	for i, obj := range objects {
		assert.Contains(t, lines[i], "request_id="+obj["request_id"].(string)+" ", "same records, same order")
		assert.Equal(t, "capacity", obj["strategy"])
		assert.Contains(t, obj, "replica_scheduler", "capacity decisions carry their evidence")
	}
	assert.NotRegexp(t, regexp.MustCompile(`127\.0\.0\.1|`+callerToken), body)

	for _, bad := range []string{"xml", "JSON", ""} {
		code, _, body := fetch(t, r, http.MethodGet, "/admin/v1/decisions?format="+bad, adminToken, nil)
		assert.Equal(t, http.StatusBadRequest, code, bad)
		assert.Contains(t, body, `"code":"invalid_format"`)
	}
}
